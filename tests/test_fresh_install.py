"""Each chapter, run top to bottom in a fresh virtual environment, as a reader's Colab would.

The environment starts with only a kernel (ipykernel) and torch==2.13.0 (the CPU wheel on
these machines; Colab has its own torch): everything else must come from the chapter's first
cell, which installs scansnap and its declared dependencies when scansnap is not importable.
SCANSNAP_SOURCE points that cell at a wheel built from this checkout instead of the
repository URL, so a dependency missing from pyproject.toml fails here, not for a reader.
Each chapter gets its own environment (one shared base with the kernel and torch, linked in
with a .pth file), so no chapter benefits from another's install.
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
INSTALL_MARK = "SCANSNAP_SOURCE"


def _chapters() -> list[str]:
    toc = (ROOT / "_toc.yml").read_text()
    return [f for f in re.findall(r"file:\s*(\S+)", toc) if (ROOT / f"{f}.ipynb").exists()]


def _run(cmd, **kw):
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def _venv(path: Path) -> Path:
    # The interpreter the project's venv was made from, not the venv's own python.
    _run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", str(path)])
    return path / "bin" / "python"


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A kernel and torch, nothing else; shared (read-only) by every chapter's environment."""
    root = tmp_path_factory.mktemp("fresh")
    py = _venv(root / "base")
    _run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", "torch==2.13.0", "ipykernel"])
    # Build from a copy of the checkout's tracked files: building in place would write build/ there.
    src = root / "src"
    files = _run(["git", "ls-files"], cwd=ROOT).stdout.split()
    for f in files:
        if f.startswith(("scansnap/", "pyproject.toml", "README.md")):
            (src / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, src / f)
    wheel_dir = root / "wheel"
    _run([str(py), "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "--no-deps", "-w", str(wheel_dir), str(src)])
    wheel = next(wheel_dir.glob("scansnap-*.whl"))
    site = _run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    return root, site, wheel


def test_every_chapter_has_the_install_cell():
    """The first code cell of every chapter installs from the URL that _config.yml names."""
    url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
    for ch in _chapters():
        nb = nbformat.read(ROOT / f"{ch}.ipynb", as_version=4)
        first = next(c for c in nb.cells if c.cell_type == "code")
        assert INSTALL_MARK in first.source and f"git+{url}" in first.source, (ch, first.source)
        assert "%matplotlib inline" in first.source, ch  # figures as PNG, not as their repr
        assert "hide-input" in first.metadata.get("tags", []), ch


@pytest.mark.parametrize("chapter", _chapters())
def test_chapter_runs_in_a_fresh_venv(base, chapter, tmp_path):
    from nbclient import NotebookClient

    root, base_site, wheel = base
    py = _venv(tmp_path / "venv")
    site = _run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    Path(site, "zz_fresh_base.pth").write_text(base_site + "\n")  # after the venv's own packages
    probe = subprocess.run([str(py), "-c", "import scansnap"], capture_output=True, cwd=ROOT / "book")
    assert probe.returncode != 0, "scansnap must not be importable before the install cell runs"
    _run([str(py), "-m", "ipykernel", "install", "--prefix", str(tmp_path / "venv"), "--name", "fresh"])

    nb = nbformat.read(ROOT / f"{chapter}.ipynb", as_version=4)
    env = {**os.environ, "SCANSNAP_SOURCE": str(wheel),
           "JUPYTER_PATH": str(tmp_path / "venv" / "share" / "jupyter"), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    old = dict(os.environ)
    os.environ.update(env)  # the kernel manager reads JUPYTER_PATH; the kernel inherits the rest
    try:
        NotebookClient(nb, timeout=900, kernel_name="fresh",
                       resources={"metadata": {"path": str(ROOT / "book")}}).execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    listed = _run([str(py), "-m", "pip", "list", "--format=freeze"]).stdout
    assert re.search(r"^scansnap==", listed, re.M), "the install cell did not install scansnap"
