"""Mutation survivors of ``scansnap/_startup.py`` (issue 28): the signal handler of a command line
still importing, called in-process with ``os.write`` and ``os._exit`` replaced (the real ones
would end the test process)."""
import signal
import sys

import pytest

from scansnap import _startup


class Exited(Exception):
    pass


@pytest.fixture
def handler(monkeypatch):
    def fake_exit(code):
        raise Exited(code)

    def call(signum, rank=None):
        if rank is None:
            monkeypatch.delenv("RANK", raising=False)
        else:
            monkeypatch.setenv("RANK", rank)
        written = []
        with monkeypatch.context() as m:       # the real os.write and os._exit only outside the call
            m.setattr(_startup.os, "write", lambda fd, data: written.append((fd, data)))
            m.setattr(_startup.os, "_exit", fake_exit)
            with pytest.raises(Exited) as e:
                _startup._starting(signum, None)
        return e.value.args[0], written
    return call


def test_ctrl_c_while_starting_says_so_on_stderr_and_exits_130(handler):
    assert handler(signal.SIGINT) == (130, [(2, b"python -m scansnap: interrupted (Ctrl-C) while starting; "
                                             b"nothing written\n")])


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_termination_while_starting_names_the_signal(handler, sig):
    line = f"python -m scansnap: stopped by {signal.Signals(sig).name} while starting; nothing written\n"
    assert handler(sig) == (128 + sig, [(2, line.encode())])
    assert handler(sig, rank="0") == (128 + sig, [(2, line.encode())])


def test_only_rank_0_speaks_under_torchrun(handler):
    assert handler(signal.SIGTERM, rank="1") == (128 + signal.SIGTERM, [])


# ---------------------------------------------------------------------------------------------
# when the handlers go in (python -m scansnap only) and come out
# ---------------------------------------------------------------------------------------------

@pytest.fixture
def argv(monkeypatch):
    def put(argv, orig):
        monkeypatch.setattr(sys, "argv", argv)
        if orig is None:
            monkeypatch.delattr(sys, "orig_argv", raising=False)
        else:
            monkeypatch.setattr(sys, "orig_argv", orig, raising=False)
        return _startup._is_the_command_line()
    return put


def test_the_command_line_is_python_dash_m_scansnap_while_runpy_imports_it(argv):
    assert argv(["-m", "reproduce", "fig6"], ["python", "-m", "scansnap", "reproduce", "fig6"])
    assert argv(["-m"], ["python3", "-mscansnap"])
    assert argv(["-m", "-h"], ["python", "-X", "dev", "-u", "-m", "scansnap", "-h"])


def test_anything_else_is_not_the_command_line(argv):
    assert not argv(["-m", "x"], ["python", "-m", "other", "scansnap"])
    assert not argv(["-m"], ["python", "-m", "scansnapx"])
    assert not argv(["-m"], ["python", "-m"])
    assert not argv(["script.py"], ["python", "-m", "scansnap"])      # runpy has found the module: too late
    assert not argv(["-c"], ["python", "-c", "import scansnap"])
    assert not argv(["-m"], None)                                     # no sys.orig_argv: not claimed
    assert not argv(["-m"], [])


class Signals:
    """signal.signal and signal.getsignal, recorded instead of done."""

    def __init__(self, monkeypatch, ignored=()):
        self.set, self.current = [], {s: signal.SIG_DFL for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
        for s in ignored:
            self.current[s] = signal.SIG_IGN
        monkeypatch.setattr(signal, "signal", lambda s, h: self.set.append((s, h)))
        monkeypatch.setattr(signal, "getsignal", lambda s: self.current[s])


def test_install_takes_sigint_sigterm_and_sighup_on_the_command_line_only(argv, monkeypatch):
    sig = Signals(monkeypatch)
    argv(["-m", "reproduce"], ["python", "-m", "scansnap", "reproduce"])
    _startup.install()
    assert sig.set == [(signal.SIGINT, _startup._starting), (signal.SIGTERM, _startup._starting),
                       (signal.SIGHUP, _startup._starting)]
    sig.set.clear()
    argv(["ipykernel_launcher.py"], ["python", "-m", "ipykernel_launcher"])
    _startup.install()
    assert sig.set == []                              # a library import keeps its handlers


def test_install_leaves_an_ignored_signal_ignored(argv, monkeypatch):
    sig = Signals(monkeypatch, ignored=(signal.SIGHUP,))       # nohup
    argv(["-m"], ["python", "-m", "scansnap"])
    _startup.install()
    assert sig.set == [(signal.SIGINT, _startup._starting), (signal.SIGTERM, _startup._starting)]


def test_install_skips_a_signal_the_platform_lacks(argv, monkeypatch):
    sig = Signals(monkeypatch)
    monkeypatch.delattr(signal, "SIGHUP")                      # as on Windows
    argv(["-m"], ["python", "-m", "scansnap"])
    _startup.install()
    assert sig.set == [(signal.SIGINT, _startup._starting), (signal.SIGTERM, _startup._starting)]


def test_release_gives_ctrl_c_back_to_python_only_if_the_handler_is_ours(monkeypatch):
    sig = Signals(monkeypatch)
    sig.current[signal.SIGINT] = _startup._starting
    _startup.release()
    assert sig.set == [(signal.SIGINT, signal.default_int_handler)]
    sig.set.clear()
    sig.current[signal.SIGINT] = signal.SIG_IGN
    _startup.release()
    assert sig.set == []
