"""Mutation survivors of ``scansnap/book.py`` (issue 28): what ``setup`` does in a notebook, and
``show_table``. In-process, with a fake IPython shell: no kernel is started."""
import pytest
import torch

from scansnap import book
from scansnap._validate import default_device, get_default_device


class FakeShell:
    def __init__(self):
        self.magics = []

    def run_line_magic(self, *args):
        self.magics.append(args)


@pytest.mark.device_rule
def test_setup_in_a_notebook_styles_figures_then_runs_matplotlib_inline(monkeypatch):
    """One torch thread by default; the book's style installed in *this* shell, and
    ``%matplotlib inline`` run after it (IPython 9 shows a Figure otherwise as text only)."""
    import IPython

    import scansnap.plots
    shell, styled, threads = FakeShell(), [], []
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell)
    monkeypatch.setattr(scansnap.plots, "inline_figures", lambda ip: styled.append(ip))
    monkeypatch.setattr(torch, "set_num_threads", lambda n: threads.append(n))
    with default_device("auto"):
        book.setup()
        assert get_default_device() == "cpu"
        book.setup(3)
    assert threads == [1, 3]
    assert styled == [shell, shell]
    assert shell.magics == [("matplotlib", "inline")] * 2


@pytest.mark.device_rule
def test_setup_in_plain_python_sets_threads_and_device_only(monkeypatch):
    import IPython
    threads = []
    monkeypatch.setattr(IPython, "get_ipython", lambda: None)
    monkeypatch.setattr(torch, "set_num_threads", lambda n: threads.append(n))
    with default_device("auto"):
        book.setup()
        assert get_default_device() == "cpu"
    assert threads == [1]


def test_show_names_the_type_it_refuses():
    with pytest.raises(TypeError, match=r"^show takes Markdown strings, got int$"):
        book.show("fine", 3)
    with pytest.raises(TypeError, match=r"got list$"):
        book.show(["a"])


def test_show_table_displays_the_markdown_table(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj, raw=False: shown.append(obj))
    book.show_table(["a", "b"], [[1, "$x$"]])
    table = "| a | b |\n|---|---|\n| 1 | $x$ |"
    assert shown == [{"text/markdown": table, "text/plain": table}]
