"""The command line's plumbing, in-process (issue 28's mutation testing): what each figure passes
to the experiment behind it (device, steps, data, progress), the plots' inputs and resolution,
the stop line, the closed-stream and signal helpers, and provenance's environment record. The
fault suite (tests/test_faults_run.py) checks the same end to end in subprocesses, which mutation
testing cannot see into."""
import io
import os
import signal
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from scansnap import __main__ as cli
from scansnap import experiments as ex
from scansnap import plots
from scansnap import provenance as pv
from scansnap.data import syn_small


class _Drawn:
    def __init__(self, log, name, args, kwargs):
        self.log, self.name, self.args, self.kwargs = log, name, args, kwargs

    def savefig(self, path, **kw):
        self.log.append((self.name, self.args, self.kwargs, path.name, kw))
        path.write_bytes(b"png")


@pytest.fixture
def drawn(monkeypatch):
    log = []
    for name in ("growth_factor", "cn_over_training", "cn_final", "entropy_sweep", "recall_curves",
                 "attention_maps", "freezing", "entropy_vs_lr", "h_vs_hstar", "B_fixed_ratio"):
        monkeypatch.setattr(plots, name, lambda *a, _n=name, **k: _Drawn(log, _n, a, k))
    return log


def _fake_train_result(R, M, steps, K=2):
    g = torch.Generator().manual_seed(0)
    Z = torch.randn(R, M, M, generator=g, dtype=torch.float64)
    return SimpleNamespace(eta_y=np.linspace(0.1, 1, R), eta_z=np.ones(R), loss=np.arange(R * steps, dtype=float)
                           .reshape(R, steps), Z=Z, snapshots={0: Z, steps: Z},
                           attention=lambda s: np.full((R, K, M), 1.0 / M))


def test_each_figure_passes_its_settings_on(tmp_path, drawn, monkeypatch):
    seen = {}
    cls = syn_small()

    def fig4(**kw):
        seen.setdefault("fig4", []).append(kw)
        return cls, _fake_train_result(1, cls.M, kw["steps"], cls.K)

    def fig5(**kw):
        seen["fig5"] = kw
        return cls, _fake_train_result(3, cls.M, kw["steps"])
    monkeypatch.setattr(ex, "fig4", fig4)
    monkeypatch.setattr(ex, "fig5", fig5)
    cli.reproduce_fig4(tmp_path, device="dev-x", steps=7)
    assert [k["device"] for k in seen["fig4"]] == ["dev-x"] * 2 and [k["eta_y"] for k in seen["fig4"]] == [1.0, 10.0]
    assert [k["snapshot_steps"] for k in seen["fig4"]] == [[0, 5]] * 2 and {k["steps"] for k in seen["fig4"]} == {7}
    cli.reproduce_fig5(tmp_path, device="dev-x", steps=None)
    assert seen["fig5"] == dict(device="dev-x", steps=100)
    assert drawn[-1][2] == {"title": "Syn-Small, Adam, after 100 steps"}
    assert all(d[4] == {"dpi": 120} for d in drawn)
    for name, args, kw, fname, _ in drawn[:2]:
        assert name == "cn_over_training" and kw["n"] == 0 and args[0] is cls
        np.testing.assert_array_equal(kw["loss"], np.arange(7.0))


def test_the_sweep_and_recall_settings(tmp_path, drawn, monkeypatch):
    seen = []
    monkeypatch.setenv("SCANSNAP_PROGRESS", "1")          # bars forced on (else: only on a terminal)
    monkeypatch.setattr(ex, "syn_medium_sweep", lambda **kw: seen.append(kw) or "the sweep")
    r6 = {k: np.arange(3.0) + i for i, k in enumerate(("num_last", "eta_z", "ratio", "seed", "entropy"))}
    monkeypatch.setattr(ex, "fig6", lambda sweep: r6 if sweep == "the sweep" else None)
    r11 = {k: np.arange(2.0) + i for i, k in enumerate(("num_last", "eta_z", "ratio", "threshold", "recall"))}
    recalls = []
    monkeypatch.setattr(ex, "fig11_12", lambda sweep: recalls.append(sweep) or r11)
    cache = {}
    kw = dict(device="dev-y", steps=None, seeds=(4, 5), cache=cache)
    cli.reproduce_fig6(tmp_path, **kw)
    cli.reproduce_fig11(tmp_path, **kw)
    cli.reproduce_fig12(tmp_path, **kw)
    assert seen == [dict(seeds=(4, 5), device="dev-y", progress=True, steps=100,       # one sweep
                         num_last=ex.FIG6["num_last"], eta_z=ex.FIG6["eta_z"], ratio=ex.FIG6["ratio"])]
    assert recalls == ["the sweep"] and cache["sweep"] == "the sweep" and cache["recall"] is r11   # one recall table
    assert sorted(k for k in cache if k not in ("sweep", "recall")) == [("plotted", "fig11"), ("plotted", "fig12")]
    (n6, a6, k6, f6, d6), (n11, a11, k11, f11, d11), (n12, a12, k12, f12, d12) = drawn
    assert (n6, f6, k6) == ("entropy_sweep", "fig6.png", {}) and len(a6) == 4
    for got, key in zip(a6, ("num_last", "eta_z", "ratio", "entropy")):
        assert got is r6[key]
    for got, key in zip(a11, ("num_last", "eta_z", "ratio", "threshold", "recall")):
        assert got is r11[key]
    # the held rate is the paper's 1 where the grid has it (eta_z 1 of {1, 2}); else every value (ratio 2, 3)
    assert (n11, f11, k11, f12, k12) == ("recall_curves", "fig11.png", {"by": "ratio", "at": [1.0]}, "fig12.png",
                                         {"by": "eta_z", "at": [2.0, 3.0]})
    assert d6 == d11 == d12 == {"dpi": 120}
    assert (tmp_path / "fig12.csv").read_text().splitlines() == ["num_last,eta_z,ratio,threshold,recall",
                                                                 "0,1,2,3,4", "1,2,3,4,5"]


def test_fig7_passes_its_settings_on(tmp_path, drawn, monkeypatch):
    seen = {}
    monkeypatch.setenv("SCANSNAP_PROGRESS", "1")          # bars forced on (else: only on a terminal)
    maps = [torch.full((1, 2, 2), 0.5)]
    res = SimpleNamespace(snapshots={0: maps, 3: maps})
    monkeypatch.setattr(ex, "fig7", lambda **kw: seen.update(kw) or ({1: res}, None, None))
    cli.reproduce_fig7(tmp_path, device="dev-z", steps=None, data="full")
    assert seen == dict(steps=1500, device="dev-z", progress=True, source="full")
    cli.reproduce_fig7(tmp_path, device="dev-z", steps=3)
    assert seen["steps"] == 3 and seen["source"] == "shipped"
    assert drawn[-1][0] == "attention_maps" and drawn[-1][4] == {"dpi": 120}
    assert (tmp_path / "fig7.csv").read_text().splitlines()[1:] == ["1,0,0,0,0.5", "1,0,1,0,0.5", "1,0,1,1,0.5",
                                                                    "1,3,0,0,0.5", "1,3,1,0,0.5", "1,3,1,1,0.5"]


def test_the_closed_forms_are_drawn_at_120_dpi(tmp_path, drawn):
    for f in (cli.reproduce_fig3, cli.reproduce_fig8, cli.reproduce_fig9):
        f(tmp_path)
    assert [d[4] for d in drawn] == [{"dpi": 120}] * 3


# ---------------------------------------------------------------------------------------
# The stop line, streams, signals
# ---------------------------------------------------------------------------------------

def test_the_stop_line(capsys):
    p = SimpleNamespace(prog="prog")
    assert cli._stop(p, ["fig3", "fig4", "fig5"], ["fig3", "fig4"], "why", 7) == 7
    assert capsys.readouterr().err == ("prog: why; written: fig3, fig4; not written (previous sets, if any, kept): "
                                       "fig5\n")
    cli._stop(p, ["fig3", "fig4"], [], "why", 1)
    assert capsys.readouterr().err == "prog: why; nothing written; not written (previous sets, if any, kept): fig3, fig4\n"


def test_say_goes_on_when_stdout_is_gone(monkeypatch, tmp_path):
    class Broken(io.StringIO):
        def write(self, s):
            raise BrokenPipeError(32, "Broken pipe")

        def fileno(self):
            return fd

    target = tmp_path / "stdout"
    fd = os.open(target, os.O_WRONLY | os.O_CREAT)
    try:
        monkeypatch.setattr(sys, "stdout", Broken())
        cli._say("lost")                                  # no exception; stdout's descriptor now /dev/null
        os.write(fd, b"to /dev/null\n")
        assert target.read_text() == ""
    finally:
        os.close(fd)

    class Closed(io.StringIO):
        def write(self, s):
            raise ValueError("I/O operation on closed file")

        def fileno(self):
            raise ValueError("closed")
    monkeypatch.setattr(sys, "stdout", Closed())
    cli._say("lost too")
    assert sys.stdout.name == os.devnull and sys.stdout.mode == "w"
    sys.stdout.close()


def test_say_prints_and_flushes(capsys):
    cli._say("hello")
    assert capsys.readouterr().out == "hello\n"


def test_closed_standard_streams_become_dev_null():
    code = ("import os, sys\nfrom scansnap import __main__ as m\nm._streams_open()\n"
            "print(os.readlink('/proc/self/fd/1'), os.readlink('/proc/self/fd/2'), sys.stdout is not None,"
            " file=sys.stderr)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       preexec_fn=lambda: os.close(1))
    assert r.returncode == 0, r.stderr
    assert r.stderr.split() == ["/dev/null", r.stderr.split()[1], "True"]


def test_streams_open_in_process(monkeypatch):
    calls, real_fstat, real_open, real_stdout = [], os.fstat, os.open, sys.stdout

    def fstat(fd):
        if fd == 1:
            raise OSError(9, "Bad file descriptor")
        return real_fstat(fd)
    os.fstat, os.open, sys.stdout = fstat, (lambda path, flags: calls.append((path, flags)) or 1), None
    try:
        cli._streams_open()
        got = sys.stdout
    finally:
        os.fstat, os.open, sys.stdout = real_fstat, real_open, real_stdout
    assert calls == [(os.devnull, os.O_RDWR)]
    assert got is not None and got.name == os.devnull and got.mode == "w"
    got.close()


def test_signal_handlers(monkeypatch):
    installed = {}
    monkeypatch.setattr(cli.signal, "signal", lambda sig, h: installed.__setitem__(sig, h))
    monkeypatch.setattr(cli.signal, "getsignal", lambda sig: signal.SIG_IGN if sig == signal.SIGHUP else signal.SIG_DFL)
    cli._install_signal_handlers()
    assert installed == {signal.SIGTERM: cli._raise_signalled}          # an ignored SIGHUP (nohup) stays so
    installed.clear()
    monkeypatch.setattr(cli.signal, "getsignal", lambda sig: signal.SIG_DFL)
    cli._install_signal_handlers()
    assert installed == {signal.SIGTERM: cli._raise_signalled, signal.SIGHUP: cli._raise_signalled}
    with pytest.raises(cli._Signalled) as e:
        cli._raise_signalled(signal.SIGHUP, None)
    assert e.value.signum == signal.SIGHUP and e.value.args == (signal.SIGHUP,)
    assert not issubclass(cli._Signalled, Exception)                  # library code's `except Exception` lets it by
    import threading
    installed.clear()
    t = threading.Thread(target=cli._install_signal_handlers)
    t.start()
    t.join()
    assert installed == {}                                            # not from another thread


# ---------------------------------------------------------------------------------------
# provenance: the environment record and the git commit
# ---------------------------------------------------------------------------------------

def test_the_environment_record(monkeypatch):
    import platform

    import scansnap
    monkeypatch.setattr(pv, "git_commit", lambda: "abc+dirty")
    env = pv.environment("cpu:0")
    assert set(env) == {"scansnap", "git_commit", "torch", "numpy", "python", "platform", "device", "date"}
    assert env["scansnap"] == scansnap.__version__ and env["git_commit"] == "abc+dirty"
    assert env["torch"] == torch.__version__ and env["numpy"] == np.__version__
    assert env["python"] == platform.python_version() and env["platform"] == platform.platform()
    assert env["device"] == "cpu" and env["date"].endswith("+00:00") and len(env["date"]) == 25
    assert pv.device_name("cuda:1") == "cuda:1" and pv.device_name(torch.device("cpu", 3)) == "cpu"


def _git(monkeypatch, head=(0, "f00d\n"), dirty=(0, ""), raises=None):
    calls = []

    def run(args, **kw):
        calls.append((args, kw))
        if raises is not None:
            raise raises
        rc, out = head if "rev-parse" in args else dirty
        return SimpleNamespace(returncode=rc, stdout=out)
    monkeypatch.setattr(pv.subprocess, "run", run)
    return calls


def test_git_commit(monkeypatch):
    from pathlib import Path
    here = str(Path(pv.__file__).resolve().parent)
    calls = _git(monkeypatch)
    assert pv.git_commit() == "f00d"
    assert calls == [(["git", "-C", here, "rev-parse", "HEAD"], dict(capture_output=True, text=True, timeout=10)),
                     (["git", "-C", here, "status", "--porcelain", "--untracked-files=no", "--", ".",
                       ":(exclude)results"], dict(capture_output=True, text=True, timeout=10))]
    _git(monkeypatch, dirty=(0, " M scansnap/x.py\n"))
    assert pv.git_commit() == "f00d+dirty"
    _git(monkeypatch, dirty=(1, " M x\n"))                                # status failed: not called dirty
    assert pv.git_commit() == "f00d"
    _git(monkeypatch, dirty=(0, "  \n"))
    assert pv.git_commit() == "f00d"
    calls = _git(monkeypatch, head=(128, ""))
    assert pv.git_commit() == "unknown" and len(calls) == 1
    _git(monkeypatch, head=(1, "x"))
    assert pv.git_commit() == "unknown"
    _git(monkeypatch, raises=FileNotFoundError(2, "no git"))
    assert pv.git_commit() == "unknown"
    _git(monkeypatch, raises=subprocess.TimeoutExpired("git", 10))
    assert pv.git_commit() == "unknown"


def test_old_files_are_kept_by_copy_where_links_fail(tmp_path, monkeypatch):
    src, dst = tmp_path / "a", tmp_path / "b"
    src.write_text("old")
    pv._keep_old(src, dst)
    assert os.path.samefile(src, dst)                                 # a hard link
    dst.unlink()

    def no_links(a, b):
        raise PermissionError(1, "Operation not permitted")
    monkeypatch.setattr(pv.os, "link", no_links)
    pv._keep_old(src, dst)
    assert dst.read_text() == "old" and not os.path.samefile(src, dst)


def test_check_settings_names_every_difference(tmp_path):
    rec = {"figure": "fig4", "settings": dict(pv.settings_for("fig4"), steps=3, extra=1)}
    del rec["settings"]["batch"]
    with pytest.raises(ValueError) as e:
        pv.check_settings(tmp_path / "fig4.csv", rec)
    assert str(e.value) == (f"{tmp_path / 'fig4.csv'} was not made with the paper's settings: batch=None (the paper's: "
                            "128), extra=1 (the paper's: None), steps=3 (the paper's: 100). The book quotes the "
                            "paper's; regenerate with `python -m scansnap reproduce fig4 --out <folder>` with no "
                            "--steps, --seeds, --data or grid flags (--eta-z, --ratio, --num-last, --batch, --T)")
    pv.check_settings(tmp_path / "fig4.csv", {"figure": "fig4", "settings": pv.settings_for("fig4")})
