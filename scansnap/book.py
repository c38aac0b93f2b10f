"""What every chapter does first, in one place (the chapters call :func:`setup` and nothing else).

The device rule
---------------
Every trainer of the package takes ``device=None``, meaning the process-wide default
(``scansnap._validate.get_default_device()``, ``"auto"`` = CUDA when present, else the CPU).
:func:`setup`, which every chapter's install cell calls, sets that default to ``"cpu"``: the
Y/Z models are tiny, and so every number a chapter prints, and that ``pytest --nbval``
compares, is the CPU's on every machine, with or without a GPU. Interactive work that prints
nothing nbval compares (a slider redrawing its figure in a live kernel, a chapter's optional
long run) asks for the GPU when there is one by running inside :func:`interactive_device`::

    with scansnap.book.interactive_device():
        res = train(classes, ...)        # on CUDA when present

The command line (``python -m scansnap reproduce``) passes its ``--device`` (default
``auto``) explicitly to every trainer and records the device it used beside its results.
"""
from __future__ import annotations

import contextlib

import torch

from ._validate import default_device, set_default_device

BOOK_DEVICE = "cpu"          # what device=None means in a chapter (see the rule above)


def setup(threads: int = 1) -> None:
    """Figures inline as PNG, ``threads`` CPU threads for torch, and the book's device rule.

    One thread: the chapters' tensors are small (models of at most a few hundred tokens), so a
    second thread mostly waits, and on a machine whose cores are busy (a browser, a second
    job) waiting threads made a chapter's runs up to 10x slower; the numbers are the same with
    one thread or two. The default device becomes the CPU (see the module's docstring): a
    chapter's printed numbers never depend on a GPU.
    """
    torch.set_num_threads(threads)
    set_default_device(BOOK_DEVICE)
    try:
        from IPython import get_ipython
    except ImportError:  # plain Python: nothing to set up for figures
        return
    ip = get_ipython()
    if ip is not None:
        # the book's figure style (scansnap.plots.STYLE); 2x PNGs shown at half size (sharp on
        # high-density screens); it runs %matplotlib inline, which the next line repeats harmlessly
        from .plots import inline_figures
        inline_figures(ip)
        # without it IPython 9 gives a Figure only a text repr: the static book would show no figure
        ip.run_line_magic("matplotlib", "inline")


@contextlib.contextmanager
def interactive_device(device="auto"):
    """Inside the block, trainers called with ``device=None`` use ``device`` (default ``"auto"``:
    the GPU when there is one). For sliders and long optional runs whose output nbval does not
    compare; the previous default comes back on leaving, even after an error. Yields the
    ``torch.device`` that ``device=None`` now resolves to."""
    from ._validate import resolve_device
    with default_device(device):
        yield resolve_device(None)


def show(*paragraphs: str) -> None:
    """Display a cell's results as Markdown (math typeset on the page and in the PDF), the
    paragraphs separated by a blank line. The plain-text form is the same source, so strict
    nbval compares every number in it (``IPython.display.Markdown`` would leave nbval only
    ``<IPython.core.display.Markdown object>`` to compare)."""
    from IPython.display import display

    for p in paragraphs:
        if not isinstance(p, str):
            raise TypeError(f"show takes Markdown strings, got {type(p).__name__}")
    text = "\n\n".join(paragraphs)
    display({"text/markdown": text, "text/plain": text}, raw=True)


def md_table(header, rows) -> str:
    """A Markdown table: ``header`` and every row already formatted as text (math allowed).
    A row of the wrong length is a ValueError naming it."""
    header = [str(h) for h in header]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for i, row in enumerate(rows):
        row = [str(v) for v in row]
        if len(row) != len(header):
            raise ValueError(f"row {i} has {len(row)} cells, the header {len(header)}: {row!r}")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def show_table(header, rows) -> None:
    """:func:`show` of :func:`md_table`."""
    show(md_table(header, rows))
