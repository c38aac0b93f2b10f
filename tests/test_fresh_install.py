"""Every chapter, run top to bottom in a fresh virtual environment, as a reader's Colab would.

The environment starts with only a kernel (ipykernel) and torch==2.13.0 (the CPU wheel on
these machines; Colab brings its own torch). Everything else must come from the chapters'
install cell, which installs scansnap and its declared dependencies when scansnap is not
importable. SCANSNAP_SOURCE points that cell at a wheel built from this checkout instead of
the repository URL, so a dependency missing from pyproject.toml fails here, not for a reader.

Every chapter's install cell is the same text (asserted below), so it is run once, for real,
in the new environment; then every chapter runs in that environment, which holds exactly the
kernel, torch and what the install cell installed.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def _chapters() -> list[str]:
    """The notebook pages of the table of contents: the root page (when it is a notebook) and
    every ``file:`` entry."""
    toc = (ROOT / "_toc.yml").read_text()
    pages = re.findall(r"^root:\s*(\S+)", toc, re.M) + re.findall(r"file:\s*(\S+)", toc)
    return [f for f in pages if (ROOT / f"{f}.ipynb").exists()]


def _install_cell(chapter: str):
    nb = nbformat.read(ROOT / f"{chapter}.ipynb", as_version=4)
    return next(c for c in nb.cells if c.cell_type == "code")


def _run(cmd, **kw):
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def _execute(nb, env: dict):
    from nbclient import NotebookClient

    old = dict(os.environ)
    os.environ.update(env)  # the kernel manager reads JUPYTER_PATH; the kernel inherits the rest
    try:
        NotebookClient(nb, timeout=900, kernel_name="fresh",
                       resources={"metadata": {"path": str(ROOT / "book")}}).execute()
    finally:
        os.environ.clear()
        os.environ.update(old)


def test_every_chapter_has_the_same_install_cell():
    """The first code cell of every chapter: one text, installing this version of the package
    from the URL that _config.yml names, pinned to the version's tag (an immutable reference:
    a reader of version X never gets whatever the branch holds today)."""
    import scansnap

    url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
    version = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    assert scansnap.__version__ == version, (scansnap.__version__, version)
    cells = {ch: _install_cell(ch) for ch in _chapters()}
    first = next(iter(cells.values())).source
    for ch, cell in cells.items():
        assert cell.source == first, f"{ch}: install cell differs from the others"
        assert "remove-cell" in cell.metadata.get("tags", []), ch   # the page shows no empty toggle
    assert "SCANSNAP_SOURCE" in first and f"git+{url}@v{version}\"" in first
    assert "scansnap.book.setup()" in first  # figures as PNG (not their text repr), 2 threads


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """A new venv with a kernel and torch, then the install cell run in it (from a local wheel)."""
    root = tmp_path_factory.mktemp("fresh")
    venv = root / "venv"
    _run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", str(venv)])
    py = venv / "bin" / "python"
    _run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", "torch==2.13.0", "ipykernel"])
    _run([str(py), "-m", "ipykernel", "install", "--prefix", str(venv), "--name", "fresh"])
    # The wheel, from a copy of the tracked files (building in place would write build/ here).
    src = root / "src"
    for f in _run(["git", "ls-files"], cwd=ROOT).stdout.split():
        if f.startswith(("scansnap/", "pyproject.toml", "README.md")):
            (src / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, src / f)
    _run([str(py), "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "--no-deps", "-w", str(root), str(src)])
    wheel = next(root.glob("scansnap-*.whl"))
    env = {"SCANSNAP_SOURCE": str(wheel), "JUPYTER_PATH": str(venv / "share" / "jupyter"),
           "PIP_DISABLE_PIP_VERSION_CHECK": "1"}

    probe = subprocess.run([str(py), "-c", "import scansnap"], capture_output=True, cwd=ROOT / "book")
    assert probe.returncode != 0, "scansnap must not be importable before the install cell runs"
    nb = nbformat.v4.new_notebook(cells=[_install_cell(_chapters()[0])])
    _execute(nb, env)
    listed = _run([str(py), "-m", "pip", "list", "--format=freeze"]).stdout
    assert re.search(r"^scansnap==", listed, re.M), "the install cell did not install scansnap"
    return env


@pytest.mark.parametrize("chapter", _chapters())
def test_chapter_runs_in_the_fresh_environment(fresh, chapter):
    _execute(nbformat.read(ROOT / f"{chapter}.ipynb", as_version=4), fresh)
