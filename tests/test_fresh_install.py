"""Every chapter, run top to bottom in a fresh virtual environment, as a reader's Colab would.

The environment starts with only a kernel (ipykernel) and torch==2.13.0 (the CPU wheel on
these machines; Colab brings its own torch; linked from this environment with what torch itself
requires, rather than unpacked again). Everything else must come from the chapters'
install cell, which installs scansnap and its declared dependencies when scansnap is not
importable. SCANSNAP_SOURCE points that cell at a wheel built from this checkout instead of
the repository URL, so a dependency missing from pyproject.toml fails here, not for a reader.

Every chapter's install cell is the same text (asserted below), so it is run once, for real,
in the new environment, which then holds exactly the kernel, torch and what the install cell
installed. In it, every module any chapter or the package imports must import, and the root
page runs end to end (strict nbval executes every chapter in the project's environment).
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
    assert "scansnap.book.setup()" in first  # figures as PNG (not their text repr), 1 thread


def _torch_closure() -> list:
    """torch and every distribution it requires (recursively), as installed in this environment."""
    from importlib.metadata import distribution

    from packaging.requirements import Requirement

    seen, todo = {}, ["torch"]
    while todo:
        name = todo.pop().lower().replace("_", "-")
        if name in seen:
            continue
        dist = seen[name] = distribution(name)
        for req in map(Requirement, dist.requires or []):
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return list(seen.values())


def _link_torch(links: Path, py: Path):
    """The new environment sees this environment's torch (and what torch itself requires, as
    pip would install with it) through a folder of links, so that `pip install torch==2.13.0`
    there finds it installed instead of unpacking ~1 GB again; nothing else is visible."""
    links.mkdir()
    for dist in _torch_closure():
        base = Path(dist.locate_file(""))
        for top in {Path(f).parts[0] for f in dist.files or [] if not str(f).startswith("..")}:
            if (base / top).exists() and not (links / top).exists():
                (links / top).symlink_to(base / top)
    site = _run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    (Path(site) / "zz_torch.pth").write_text(f"{links}\n")


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """A new venv with a kernel and torch, then the install cell run in it (from a local wheel)."""
    root = tmp_path_factory.mktemp("fresh")
    venv = root / "venv"
    _run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", str(venv)])
    py = venv / "bin" / "python"
    _link_torch(root / "torch-links", py)
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


def _imported_modules() -> set[str]:
    """Top-level names of every module the package and the chapters import (stdlib excluded)."""
    import ast

    sources = [p.read_text() for p in (ROOT / "scansnap").rglob("*.py")]
    for ch in _chapters():
        nb = nbformat.read(ROOT / f"{ch}.ipynb", as_version=4)
        sources += ["\n".join(line for line in c.source.splitlines() if not line.lstrip().startswith(("%", "!")))
                    for c in nb.cells if c.cell_type == "code"]
    names = set()
    for src in sources:
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n != "scansnap"}


def test_every_import_resolves_in_the_fresh_environment(fresh):
    """Every third-party module that any chapter or any part of the package imports (at the
    top or lazily inside a function) is importable after the install cell alone, and so is
    every scansnap module, with its package data (the live panels' JavaScript, the results
    chapter 6 reads). This is what a dependency missing from pyproject.toml breaks; it is
    checked for all of them at once instead of by executing every chapter a third time
    (strict nbval executes them all in the project's environment)."""
    wanted = sorted(_imported_modules())
    assert {"numpy", "torch", "sympy", "scipy", "matplotlib", "ipywidgets"} <= set(wanted), wanted
    code = (
        "import importlib, pkgutil, sys, scansnap\n"
        f"bad = []\nfor m in {wanted!r}:\n"
        "    try:\n        importlib.import_module(m)\n"
        "    except Exception as e:\n        bad.append(f'{m}: {e!r}')\n"
        "for info in pkgutil.walk_packages(scansnap.__path__, 'scansnap.'):\n"
        "    if not info.name.endswith('__main__'):\n"
        "        try:\n            importlib.import_module(info.name)\n"
        "        except Exception as e:\n            bad.append(f'{info.name}: {e!r}')\n"
        "from importlib.resources import files\n"
        "for f in ('js/yzlive.js', 'js/panel.js', 'js/panel.css'):\n"
        "    if not files('scansnap').joinpath(f).is_file():\n        bad.append('package data missing: ' + f)\n"
        "from scansnap.experiments import book_results\n"
        "try:\n    book_results()\nexcept Exception as e:\n    bad.append(f'book_results: {e!r}')\n"
        "print('\\n'.join(bad)); sys.exit(1 if bad else 0)\n")
    py = Path(fresh["JUPYTER_PATH"]).parents[1] / "bin" / "python"
    proc = subprocess.run([str(py), "-c", code], capture_output=True, text=True, cwd=ROOT / "book")
    assert proc.returncode == 0, "not importable after the install cell:\n" + proc.stdout + proc.stderr[-2000:]


def test_the_root_page_runs_in_the_fresh_environment(fresh):
    """One page end to end in the fresh environment, as a reader's Colab runs it: the book's
    root page (the intro: it trains the hero run and builds a live panel)."""
    root = _chapters()[0]
    _execute(nbformat.read(ROOT / f"{root}.ipynb", as_version=4), fresh)
