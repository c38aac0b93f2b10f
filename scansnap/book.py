"""What every chapter does first, in one place (the chapters call :func:`setup` and nothing else)."""
from __future__ import annotations

import torch


def setup(threads: int = 2) -> None:
    """Figures inline as PNG, and ``threads`` CPU threads for torch.

    Two threads: the book is measured on a 2-core laptop CPU, and more threads than cores
    make torch's OpenMP workers spin against each other.
    """
    torch.set_num_threads(threads)
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
