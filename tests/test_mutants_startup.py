"""Mutation survivors of ``scansnap/_startup.py`` (issue 28): the signal handler of a command line
still importing, called in-process with ``os.write`` and ``os._exit`` replaced (the real ones
would end the test process)."""
import signal

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
