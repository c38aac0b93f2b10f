"""Tests for mutants of scansnap/__main__.py that the suite let survive or reached in no test
(issue 28; mutmut run at d368bf7, ``scansnap.__main__.x_<function>__mutmut_<n>``): the seeds'
messages, the freeze figure's call and resolution, --out's message, the signal exception,
closed streams, a stdout that is gone, the progress bars, the stop line, and what a rank other
than 0 computes. All in-process: descriptors and streams are faked, nothing is closed."""
import argparse
import io
import os
import signal
import sys
from types import SimpleNamespace

import pytest

from scansnap import __main__ as cli


def test_a_backwards_range_has_no_seeds():
    """Kills _seeds 17 (`count < 0`: '5-4' would be the empty tuple)."""
    with pytest.raises(argparse.ArgumentTypeError) as e:
        cli._seeds("5-4")
    assert str(e.value) == "no seeds in '5-4'"


def test_the_seed_messages_to_their_end():
    """Kills _seeds 22-24 (too many) and 52, 53 (a repeated seed)."""
    with pytest.raises(argparse.ArgumentTypeError) as e:
        cli._seeds("1-101")
    assert str(e.value) == ("101 seeds in '1-101': at most 100 (each adds 64 runs to the Syn-Medium sweep; "
                            "the paper uses 10)")
    with pytest.raises(argparse.ArgumentTypeError) as e:
        cli._seeds("3,1,3")
    assert str(e.value) == "seed 3 is listed twice in '3,1,3': a repeated seed repeats a run and shrinks the error bars"


def test_reproduce_freeze_passes_steps_on_and_saves_at_120_dpi(tmp_path, monkeypatch):
    """Kills reproduce_freeze 8, 12 (the steps asked for, or the default when none) and 34, 36,
    40 (the PNG's dpi)."""
    import scansnap.experiments as ex
    import scansnap.plots as plots
    monkeypatch.setenv("SCANSNAP_PROGRESS", "1")          # bars forced on (else: only on a terminal)
    asked, saved = [], []
    monkeypatch.setattr(ex, "lm_freezing", lambda **kw: asked.append(kw) or [(0, 1.0, 0.0, 5.0), (250, 0.9, 0.1, 4.0)])

    class Fig:
        def savefig(self, path, dpi=None):
            saved.append((path.name, dpi))
    monkeypatch.setattr(plots, "freezing", lambda *cols: Fig())
    assert cli.reproduce_freeze(tmp_path, "cpu", 7) == ["freeze.csv", "freeze.png"]
    cli.reproduce_freeze(tmp_path, "cpu", None, data="full")
    assert asked == [dict(steps=7, device="cpu", progress=True, source="shipped"),
                     dict(steps=ex.FREEZE["steps"], device="cpu", progress=True, source="full")]
    assert saved == [("freeze.png", 120)] * 2
    assert (tmp_path / "freeze.csv").read_text().splitlines()[1:] == ["0,1,0,5", "250,0.9,0.1,4"]


def test_an_empty_out_is_refused_with_the_whole_message():
    """Kills _out_dir 3."""
    with pytest.raises(argparse.ArgumentTypeError) as e:
        cli._out_dir("")
    assert str(e.value) == "--out is empty: name a folder ('.' for the working folder)"


def test_a_signal_is_raised_as_signalled_carrying_its_number():
    """Kills _Signalled.__init__ 1, 2 and _raise_signalled 1 (reached by no test in-process)."""
    with pytest.raises(cli._Signalled) as e:
        cli._raise_signalled(signal.SIGTERM, None)
    assert e.value.signum == signal.SIGTERM and e.value.args == (signal.SIGTERM,)


def test_closed_standard_descriptors_are_reopened_on_devnull_and_a_missing_stdout_replaced(monkeypatch):
    """fds 0, 1 and 2 are each checked; a closed one is reopened read-write on /dev/null; a None
    sys.stdout becomes a writable /dev/null. Kills _streams_open 1-3, 5-8, 10-16."""
    checked, opened = [], []

    def fstat(fd):
        checked.append(fd)
        if fd in (0, 2):
            raise OSError(9, "Bad file descriptor")
    monkeypatch.setattr(cli.os, "fstat", fstat)
    monkeypatch.setattr(cli.os, "open", lambda path, flags: opened.append((path, flags)) or 99)
    monkeypatch.setattr(sys, "stdout", None)
    cli._streams_open()
    out = sys.stdout
    monkeypatch.undo()
    try:
        assert checked == [0, 1, 2]
        assert opened == [(os.devnull, os.O_RDWR)] * 2
        assert out.name == os.devnull and out.mode == "w" and out.writable()
    finally:
        out.close()


class _Flushes(io.StringIO):
    flushes = 0

    def flush(self):
        self.flushes += 1
        super().flush()


def test_say_prints_a_line_and_flushes_it(monkeypatch):
    """Kills _say 2, 4, 5 (no flush: a line could sit in a buffer while a figure computes)."""
    out = _Flushes()
    monkeypatch.setattr(sys, "stdout", out)
    cli._say("hello")
    assert out.getvalue() == "hello\n" and out.flushes >= 1


class _Gone:
    """A stdout whose reader has exited: writing raises BrokenPipeError."""
    def __init__(self, fd):
        self.fd = fd

    def write(self, s):
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self):
        raise BrokenPipeError(32, "Broken pipe")

    def fileno(self):
        if self.fd is None:
            raise ValueError("I/O operation on closed file")
        return self.fd


def test_a_gone_stdout_is_pointed_at_devnull(monkeypatch, tmp_path):
    """Kills _say 6-15 (the descriptor redirected to /dev/null: each mutant raises instead)."""
    fd = os.open(tmp_path / "stdout", os.O_WRONLY | os.O_CREAT)
    try:
        gone = _Gone(fd)
        monkeypatch.setattr(sys, "stdout", gone)
        cli._say("lost")
        assert sys.stdout is gone
        st, null = os.fstat(fd), os.stat(os.devnull)
        assert (st.st_dev, st.st_ino) == (null.st_dev, null.st_ino)
    finally:
        os.close(fd)


def test_a_gone_stdout_without_a_descriptor_is_replaced_by_devnull(monkeypatch):
    """Kills _say 16-22 (sys.stdout becomes a writable /dev/null)."""
    monkeypatch.setattr(sys, "stdout", _Gone(None))
    cli._say("lost")
    out = sys.stdout
    monkeypatch.undo()
    try:
        assert out.name == os.devnull and out.mode == "w" and out.writable()
    finally:
        out.close()


def test_close_bars_before_any_bar_was_made(monkeypatch):
    """tqdm makes `_instances` with its first bar. Kills _close_bars 4, 7 (`list(None)`)."""
    from tqdm import tqdm
    monkeypatch.delattr(tqdm, "_instances", raising=False)
    cli._close_bars()
    monkeypatch.undo()
    bar = tqdm(total=3, file=io.StringIO())
    cli._close_bars()
    assert bar.disable                      # closed


def test_the_stop_line_is_flushed(monkeypatch):
    """Kills _stop 12, 15, 18 (the line not flushed: it could land after the bars' last redraw)."""
    err = _Flushes()
    monkeypatch.setattr(sys, "stderr", err)
    assert cli._stop(SimpleNamespace(prog="scansnap"), ["fig3", "fig4"], ["fig3"], "interrupted", 130) == 130
    assert err.getvalue() == ("scansnap: interrupted; written: fig3; not written (previous sets, if any, kept): fig4\n")
    assert err.flushes >= 1


@pytest.mark.parametrize("fig, call", [
    ("fig6", ("_sweep", ("cache", "dev", 9, (1, 2), "grid", "world"))),
    ("fig12", ("_sweep", ("cache", "dev", 9, (1, 2), "grid", "world"))),
    ("fig7", ("_fig7_results", ("dev", 9, "data", "world"))),
    ("fig10", ("_fig10_rows", ("dev", 9, "data", "world"))),
    ("fig3", None),
])
def test_a_rank_other_than_0_computes_its_share_of_the_figure_asked(monkeypatch, fig, call):
    """Kills _share 1-35 (reached by no test in-process: the torchrun tests run subprocesses)."""
    calls = []
    for name in ("_sweep", "_fig7_results", "_fig10_rows"):
        monkeypatch.setattr(cli, name, lambda *a, _n=name: calls.append((_n, a)))
    cli._share(fig, "dev", 9, (1, 2), "cache", "data", "grid", "world")
    assert calls == ([call] if call else [])
