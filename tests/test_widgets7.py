"""The slider panel under ipywidgets 7.7, as on Colab (which has long shipped ipywidgets 7).

A fresh virtual environment gets ``ipywidgets==7.7.*`` from the package index; then a wheel of
this checkout is installed into it *without* ``--upgrade``: if ``pyproject.toml`` asked for
ipywidgets 8, pip would upgrade it here and the test fails. The panel is then built there, a
slider is moved from Python, and the figure must have changed (one ``Image`` whose value the
kernel swaps: ipywidgets 7 has no ``Stack``): the stored one, or a redrawn one without a grid.

Speed: the heavy, version-independent dependencies (torch, numpy, scipy, sympy, matplotlib,
the kernel) are not reinstalled: the new environment sees the project's .venv through a
folder of links to its installed packages, minus ipywidgets and its front-end packages
(``widgetsnbextension``, ``jupyterlab_widgets``), so pip resolves ipywidgets 7.7 and its own
dependencies for real, from the pip cache. The environment is kept under _build/ and reused
while the project's lock is unchanged.
"""
from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HIDDEN = ("ipywidgets", "widgetsnbextension", "jupyterlab_widgets")   # the project's 8.x, not linked

SCRIPT = r'''
import ipywidgets, numpy as np
from matplotlib.figure import Figure
import scansnap
from scansnap.ui import slider_panel
assert ipywidgets.__version__.startswith("7.7."), ipywidgets.__version__
assert not hasattr(ipywidgets, "Stack")
calls = []
def draw(eta_y=1.0, seed=0):
    calls.append((eta_y, seed))
    fig = Figure(figsize=(4, 2.5)); ax = fig.subplots()
    x = np.linspace(0, 1, 30); ax.plot(x, eta_y * x + 0.1 * seed, color="C0")
    return fig
for precompute in (True, False):
    calls.clear()
    panel = slider_panel(draw, precompute=precompute, progress=False,
                         eta_y=ipywidgets.SelectionSlider(options=(0.5, 1.0, 2.0), value=1.0, description="η_Y"),
                         seed=ipywidgets.SelectionSlider(options=(0, 1), value=0, description="seed"),
                         title="A title", question="Raise η<sub>Y</sub>: what changes?")
    controls, figure, status = panel.controls, panel.figure, panel.status
    head = panel.children[0]                                    # the title and question, as HTML
    assert isinstance(head, ipywidgets.HTML) and "A title" in head.value and "what changes?" in head.value
    assert scansnap.ui.ACCENT in controls.children[0].children[0].value      # accent knobs: the panel's own CSS
    assert isinstance(figure, ipywidgets.Image), type(figure)
    assert len(calls) == (6 if precompute else 1), calls
    row = controls.children[0]                                  # an HTML label beside the slider
    label = row.children[0].value.replace(scansnap.ui.ACCENT_CSS_7, "")
    assert isinstance(row.children[0], ipywidgets.HTML) and label.startswith("η<span") and "vertical-align:sub" in label
    slider = row.children[1]
    assert slider.description == ""
    before = figure.value
    slider.value = 2.0                                          # the reader moves the slider
    assert figure.value != before, "the figure did not change"
    if precompute:                                              # the stored figure, nothing re-drawn
        assert len(calls) == 6, calls
    else:
        assert calls[-1] == (2.0, 0), calls
        assert "redrawn" in status.value and status.layout.display == ""
print("OK", ipywidgets.__version__, scansnap.__version__)
'''


def _run(cmd, **kw):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def _key() -> str:
    h = hashlib.sha256()
    for f in ("requirements.lock",):
        p = ROOT / f
        h.update(p.read_bytes() if p.exists() else b"")
    h.update(sys.executable.encode())
    return h.hexdigest()[:12]


@pytest.fixture(scope="module")
def env7(tmp_path_factory):
    """(python of the ipywidgets-7.7 environment, the wheel of this checkout)."""
    base = ROOT / "_build" / "widgets7"
    venv = base / f"venv-{_key()}"
    py = venv / "bin" / "python"
    if not (venv / ".ready").exists():
        shutil.rmtree(base, ignore_errors=True)
        _run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", venv])
        site = Path(_run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
        # outside the venv: pip never uninstalls what lies outside its environment, so it cannot
        # reach through these links into the project's .venv
        links = base / f"project-packages-{_key()}"
        links.mkdir(parents=True)
        for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
            name = entry.name.lower().replace("-", "_")
            if name.startswith(HIDDEN) or name.startswith(("scansnap", "__editable__", "_scansnap")) \
                    or entry.suffix == ".pth" or name.startswith(("pip", "setuptools", "_distutils_hack", "distutils-precedence")):
                continue
            (links / entry.name).symlink_to(entry)
        # after the venv's own site-packages on sys.path: what pip installs here wins
        (site / "zz_project_packages.pth").write_text(str(links) + "\n")
        # with Colab's classic notebook (ipywidgets 7's widgetsnbextension needs one; 6.5 is lighter than 7)
        _run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "ipywidgets==7.7.*", "notebook==6.5.*"])
        (venv / ".ready").touch()
    # The wheel, from a copy of the tracked files (building in place would write build/ here).
    root = tmp_path_factory.mktemp("wheel7")
    src = root / "src"
    for f in _run(["git", "ls-files", "scansnap", "pyproject.toml", "README.md"], cwd=ROOT).stdout.split():
        (src / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, src / f)
    for f in (ROOT / "scansnap").rglob("*.py"):        # files not yet committed count too
        rel = f.relative_to(ROOT)
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(f, src / rel)
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "--no-deps",
          "--no-build-isolation", "-w", root, src])
    return py, next(root.glob("scansnap-*.whl"))


def test_slider_panel_works_with_ipywidgets_7(env7, tmp_path):
    py, wheel = env7
    subprocess.run([py, "-m", "pip", "uninstall", "-q", "-y", "scansnap"], capture_output=True)   # a reused env
    # no --upgrade: pip keeps ipywidgets 7.7 unless the package's requirements refuse it
    _run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", wheel])
    listed = _run([py, "-m", "pip", "list", "--format=freeze"]).stdout
    assert "ipywidgets==7.7." in listed, "installing the package upgraded ipywidgets:\n" + listed
    out = _run([py, "-c", SCRIPT], cwd=tmp_path).stdout
    assert out.startswith("OK 7.7."), out
