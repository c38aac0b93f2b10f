"""Execute chapters top to bottom in a fresh kernel and store their outputs (nbval compares
against these). Usage: python tools/execute_notebooks.py book/01-model.ipynb [...]"""
import sys
import time

import nbformat
from nbclient import NotebookClient

for path in sys.argv[1:] or sys.exit(__doc__):
    nb = nbformat.read(path, as_version=4)
    t = time.perf_counter()
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": "book"}}).execute()
    nbformat.write(nb, path)
    print(f"{path}: executed in {time.perf_counter() - t:.1f} s")
