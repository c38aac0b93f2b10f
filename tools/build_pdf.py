"""Build the printed edition, _build/latex/book.pdf, from the chapters' committed outputs.

    python tools/build_pdf.py            # Sphinx's LaTeX builder, then XeLaTeX (latexmk)

Like the browser test's build, this one does not execute the chapters (strict nbval checks
that their stored outputs are what they compute): the same _config.yml with
``execute_notebooks: off`` and the local extensions' paths made absolute. A LaTeX error stops
the build at once (``-halt-on-error -interaction=nonstopmode``: at a terminal TeX would
otherwise wait at its ``?`` prompt for ever). Exit status: jupyter-book's.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def config_for_print(dest: Path) -> Path:
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())
    cfg["execute"]["execute_notebooks"] = "off"
    for name, path in cfg["sphinx"].get("local_extensions", {}).items():
        cfg["sphinx"]["local_extensions"][name] = str(ROOT / path)
    conf = dest / "_config.yml"
    conf.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return conf


def main() -> int:
    jb = Path(sys.executable).parent / "jupyter-book"
    env = dict(os.environ, LATEXOPTS="-halt-on-error -interaction=nonstopmode")
    t = time.perf_counter()
    # latexmk makes every .tex in the folder: a stale one from an earlier build would fail it
    shutil.rmtree(ROOT / "_build" / "latex", ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        conf = config_for_print(Path(tmp))
        proc = subprocess.run([str(jb), "build", str(ROOT), "--builder", "pdflatex", "-n", "-W", "--keep-going",
                               "--config", str(conf)], env=env, stdin=subprocess.DEVNULL)
    print(f"build_pdf: jupyter-book exit {proc.returncode} in {time.perf_counter() - t:.1f} s")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
