"""Issue 28, a run meets the faults a user meets: signals at each phase (SIGINT, SIGTERM, SIGHUP,
SIGKILL; while a figure computes, inside the commit, after one figure's commit), two writers
into one folder, a full disk (RLIMIT_FSIZE), a closed stdout, a read-only --out.

Each case runs the real command line in a subprocess and asserts the outcome: the exit status,
one line on stderr (no traceback), every figure's set either the previous one or the complete
new one (never a mix: each file is the one its record describes, all of one generation), and
no debris that a later run trips on (a later run succeeds and leaves no hidden entries).

The figure functions are replaced in the subprocess by stubs that write a small CSV and PNG
marked with a generation (FAULT_GEN), and can block while computing (FAULT_BLOCK) so a signal
lands there; the commit's window is widened with SCANSNAP_TEST_COMMIT_PAUSE (seconds before
each rename), an environment variable only tests set. Short windows keep it fast."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scansnap import __main__ as cli
from scansnap import provenance as pv

PAUSE = 0.4          # seconds before each rename of a commit, in the cases that aim inside it

DRIVER = r"""
import os, sys, time
from pathlib import Path
import scansnap.__main__ as m
gen = os.environ.get("FAULT_GEN", "new")
def stub(name):
    def run(out, **kw):
        (out / f"{name}.csv").write_text(f"gen\n{gen}\n")
        if os.environ.get("FAULT_BLOCK") == name:
            ready = Path(os.environ["FAULT_READY"])
            ready.write_text("computing")
            t0 = time.monotonic()
            while not ready.with_suffix(".go").exists() and time.monotonic() - t0 < 60:
                time.sleep(0.01)
        size = 60000 if os.environ.get("FAULT_BIG") == name else 200
        (out / f"{name}.png").write_bytes((gen * size)[:size].encode())
        return [f"{name}.csv", f"{name}.png"]
    return run
m.reproduce_fig3 = stub("fig3")
m.reproduce_fig8 = stub("fig8")
sys.exit(m.main(sys.argv[1:]))
"""


def _env(**kw):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.pop("SCANSNAP_TEST_COMMIT_PAUSE", None)
    env.update({k: str(v) for k, v in kw.items()})
    return env


def _start(out, *figures, stdout=subprocess.PIPE, preexec_fn=None, **env):
    def child():
        # as from a terminal: a shell's background job (make test &) starts with SIGINT ignored,
        # and Python keeps an ignored SIGINT ignored (as the command line does: see nohup below)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        if preexec_fn is not None:
            preexec_fn()
    return subprocess.Popen([sys.executable, "-c", DRIVER, "reproduce", *figures, "--out", str(out)],
                            stdout=stdout, stderr=subprocess.PIPE, text=True, env=_env(**env),
                            preexec_fn=child)


def _wait_for(cond, what, proc=None, timeout=60):
    t0 = time.monotonic()
    while not cond():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the run ended before {what}: {proc.returncode}\n{proc.stderr.read()}")
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def _previous(out, figures=("fig3", "fig8")):
    """A complete previous set of each figure, generation 'old', committed as a run commits."""
    out.mkdir(parents=True, exist_ok=True)
    for fig in figures:
        with pv.staged(out, fig) as stage:
            (stage / f"{fig}.csv").write_text("gen\nold\n")
            (stage / f"{fig}.png").write_bytes(b"old" * 66 + b"ol")        # as the stub writes it
            rec = pv.record(fig, stage, [f"{fig}.csv", f"{fig}.png"], pv.settings_for(fig), None,
                            {"device": "cpu"}, 0.0, argv=["reproduce", fig])
            pv.commit(stage, out, fig, rec)


def _sets(out) -> dict:
    """{figure: generation} of every set in ``out``, after checking each is complete and unmixed:
    every file its record lists is there and is the file the record describes, and all are of
    one generation. (read_records first finishes a commit a killed run left half done.)"""
    records = pv.read_records(out)
    gens = {}
    for name, rec in records.items():
        pv.verify(out / name, records)
        if name.endswith(".csv"):
            gens[rec["figure"]] = (out / name).read_text().split("\n")[1]
    for name, rec in records.items():
        if name.endswith(".png"):
            png, g = (out / name).read_bytes(), gens[rec["figure"]]
            assert png == (g * len(png))[:len(png)].encode(), f"a mixed set: {name} is not of generation {g}"
    return gens


def _hidden(out):
    return sorted(p.name for p in out.iterdir() if p.name.startswith("."))


def _one_line(err):
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("python -m scansnap: "), err


def _a_later_run_is_clean(out):
    """A later run into ``out`` succeeds and leaves no hidden entry (staging, journal, probe)."""
    r = subprocess.run([sys.executable, "-c", DRIVER, "reproduce", "fig3", "--out", str(out)], capture_output=True,
                       text=True, env=_env(FAULT_GEN="later"), timeout=120)
    assert r.returncode == 0, r.stderr
    assert _hidden(out) == [], _hidden(out)
    assert _sets(out)["fig3"] == "later"


SIGNALS = {"SIGINT": (signal.SIGINT, 130, "interrupted (Ctrl-C)"),
           "SIGTERM": (signal.SIGTERM, 143, "stopped by SIGTERM"),
           "SIGHUP": (signal.SIGHUP, 129, "stopped by SIGHUP")}


# ---------------------------------------------------------------------------------------
# Signals held or handled: one line, the previous or the new set, no debris
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(SIGNALS))
@pytest.mark.parametrize("phase", ["computing", "committing", "after a commit"])
def test_a_signal_at_each_phase(tmp_path, name, phase):
    sig, status, why = SIGNALS[name]
    out = tmp_path / "out"
    _previous(out)
    ready = tmp_path / "ready"
    if phase == "computing":          # fig3 computes (its CSV staged) when the signal lands
        p = _start(out, "fig3", "fig8", FAULT_BLOCK="fig3", FAULT_READY=ready)
        _wait_for(ready.exists, "fig3 to compute", p)
        want = {"fig3": "old", "fig8": "old"}
        said = "nothing written; not written (previous sets, if any, kept): fig3, fig8"
    elif phase == "committing":       # between fig3's renames: held until the set is in place
        p = _start(out, "fig3", "fig8", SCANSNAP_TEST_COMMIT_PAUSE=PAUSE)
        _wait_for((out / ".fig3.commit.json").exists, "fig3's commit", p)
        time.sleep(PAUSE * 1.5)       # the CSV moved, the PNG and record not yet
        want = {"fig3": "new", "fig8": "old"}
        said = "written: fig3; not written (previous sets, if any, kept): fig8"
    else:                             # fig3 committed, fig8 computing
        p = _start(out, "fig3", "fig8", FAULT_BLOCK="fig8", FAULT_READY=ready)
        _wait_for(ready.exists, "fig8 to compute", p)
        want = {"fig3": "new", "fig8": "old"}
        said = "written: fig3; not written (previous sets, if any, kept): fig8"
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode == status, err
    _one_line(err)
    assert f"{why}; {said}" in err, err
    assert _hidden(out) == []                          # the staging folder went with the figure
    assert _sets(out) == want


@pytest.mark.parametrize("phase", ["computing", "committing", "after a commit"])
def test_sigkill_at_each_phase(tmp_path, phase):
    """SIGKILL cannot be held: inside the commit it leaves a journal and a half-moved set, which
    the next reader (or run) finishes: the new set, never a mix. Its staging folder is debris
    that the next run removes (its process is gone)."""
    out = tmp_path / "out"
    _previous(out)
    ready = tmp_path / "ready"
    if phase == "computing":
        p = _start(out, "fig3", "fig8", FAULT_BLOCK="fig3", FAULT_READY=ready)
        _wait_for(ready.exists, "fig3 to compute", p)
        want = {"fig3": "old", "fig8": "old"}
    elif phase == "committing":
        p = _start(out, "fig3", "fig8", SCANSNAP_TEST_COMMIT_PAUSE=PAUSE)
        _wait_for((out / ".fig3.commit.json").exists, "fig3's commit", p)
        time.sleep(PAUSE * 1.5)
        want = {"fig3": "new", "fig8": "old"}
    else:
        p = _start(out, "fig3", "fig8", FAULT_BLOCK="fig8", FAULT_READY=ready)
        _wait_for(ready.exists, "fig8 to compute", p)
        want = {"fig3": "new", "fig8": "old"}
    p.kill()
    p.communicate(timeout=60)
    assert p.returncode == -signal.SIGKILL
    if phase == "committing":                          # on disk, a mix the journal can finish
        assert (out / ".fig3.commit.json").exists()
        assert (out / "fig3.csv").read_text() == "gen\nnew\n" and (out / "fig3.png").read_bytes()[:3] == b"old"
    assert any(n.startswith((".fig3.staging-", ".fig8.staging-")) for n in _hidden(out))
    assert _sets(out) == want                          # the reader finished the commit, if one was cut
    assert not (out / ".fig3.commit.json").exists()
    _a_later_run_is_clean(out)


def test_sighup_under_nohup_is_still_ignored(tmp_path):
    """A run started with SIGHUP ignored (nohup) keeps it ignored: the terminal closing does not
    stop it, and the commit's hold does not turn it back on."""
    out = tmp_path / "out"
    _previous(out, ("fig3",))
    ready = tmp_path / "ready"
    p = _start(out, "fig3", FAULT_BLOCK="fig3", FAULT_READY=ready,
               preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    _wait_for(ready.exists, "fig3 to compute", p)
    p.send_signal(signal.SIGHUP)
    time.sleep(0.2)
    assert p.poll() is None                            # still computing
    p.send_signal(signal.SIGTERM)                      # end it the other way
    _, err = p.communicate(timeout=60)
    assert p.returncode == 143 and "stopped by SIGTERM" in err


# ---------------------------------------------------------------------------------------
# Two writers, a full disk, a closed stdout, a read-only --out
# ---------------------------------------------------------------------------------------

def test_two_writers_into_one_folder(tmp_path):
    """Both commit (one after the other, under the folder's lock) and both say so; the folder
    holds one writer's complete set, and its record describes every file of it."""
    out = tmp_path / "out"
    _previous(out, ("fig3",))
    a = _start(out, "fig3", FAULT_GEN="aaa", SCANSNAP_TEST_COMMIT_PAUSE=0.2)
    b = _start(out, "fig3", FAULT_GEN="bbb", SCANSNAP_TEST_COMMIT_PAUSE=0.2)
    for p in (a, b):
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    assert _sets(out)["fig3"] in ("aaa", "bbb")
    assert _hidden(out) == []


def _fsize(limit):
    import resource
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def test_a_full_disk_after_one_figure(tmp_path):
    """fig8's PNG passes the file-size limit (EFBIG, as a full disk's ENOSPC): fig3's new set
    stays committed, fig8's previous set is kept, one line says which, no staging is left."""
    out = tmp_path / "out"
    _previous(out)
    p = _start(out, "fig3", "fig8", FAULT_BIG="fig8", preexec_fn=_fsize(20_000))
    _, err = p.communicate(timeout=120)
    assert p.returncode == 1, err
    _one_line(err)
    assert "error: could not write fig8 in" in err and "(File too large); written: fig3; not written" in err
    assert _sets(out) == {"fig3": "new", "fig8": "old"}
    assert _hidden(out) == []


def test_a_full_disk_under_the_real_fig3(tmp_path):
    """The real figure code (matplotlib's savefig) meets the limit: fig3's CSV fits, its PNG
    (~60 kB) does not. The previous set stays; one line."""
    out = tmp_path / "out"
    _previous(out, ("fig3",))
    r = subprocess.run([sys.executable, "-m", "scansnap", "reproduce", "fig3", "--out", str(out)],
                       capture_output=True, text=True, env=_env(), preexec_fn=_fsize(30_000), timeout=120)
    assert r.returncode == 1, r.stderr
    _one_line(r.stderr)
    assert "could not write fig3" in r.stderr and "File too large" in r.stderr
    assert _sets(out) == {"fig3": "old"} and _hidden(out) == []


def test_a_closed_stdout_does_not_stop_the_run(tmp_path):
    """`reproduce ... | head -1`: the pipe closes; the messages stop, the figures are still written."""
    out = tmp_path / "out"
    p = _start(out, "fig3", "fig8")
    p.stdout.close()                                    # the reader is gone before the first line
    _, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert _sets(out) == {"fig3": "new", "fig8": "new"}


def test_stdout_closed_as_a_descriptor(tmp_path):
    """`reproduce ... >&-`: no descriptor 1 at all. Nothing may land in a result file that took it."""
    out = tmp_path / "out"
    p = _start(out, "fig3", "fig8", stdout=None, preexec_fn=lambda: os.close(1))
    _, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert _sets(out) == {"fig3": "new", "fig8": "new"}
    assert (out / "fig3.csv").read_text() == "gen\nnew\n"


def _read_only(path: Path, on: bool) -> None:
    """Make a folder unwritable (or writable again) for this user: chmod, or for root (who
    writes through any mode) the immutable attribute; skip where neither is possible."""
    if os.geteuid() != 0:
        path.chmod(0o555 if on else 0o755)
        return
    r = subprocess.run(["chattr", "+i" if on else "-i", str(path)], capture_output=True, text=True)
    if r.returncode != 0 and on:
        pytest.skip(f"root cannot make a folder read-only here (chattr: {r.stderr.strip()})")


UNWRITABLE = ("Permission denied", "Operation not permitted")     # chmod, chattr +i


def test_a_read_only_out(tmp_path):
    out = tmp_path / "out"
    _previous(out, ("fig3",))
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    _read_only(out, True)
    try:
        p = _start(out, "fig3")
        _, err = p.communicate(timeout=120)
    finally:
        _read_only(out, False)
    assert p.returncode == 2, err
    _one_line(err)
    assert f"error: cannot write results in {out}: " in err and any(w in err for w in UNWRITABLE), err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_out_turns_read_only_during_the_run(tmp_path):
    """Writable when checked, read-only when fig3 commits: the journal cannot be written, the
    previous set stays, one line; the staging folder it could not remove is cleaned by the next
    run once the folder is writable again."""
    out = tmp_path / "out"
    _previous(out, ("fig3",))
    ready = tmp_path / "ready.txt"
    p = _start(out, "fig3", FAULT_BLOCK="fig3", FAULT_READY=ready)
    try:
        _wait_for(ready.exists, "fig3 to compute", p)
        _read_only(out, True)
        ready.with_suffix(".go").write_text("go on")
        _, err = p.communicate(timeout=120)
    finally:
        _read_only(out, False)
        if p.poll() is None:
            p.kill()
    assert p.returncode == 1, err
    _one_line(err)
    assert "could not write fig3" in err and any(w in err for w in UNWRITABLE), err
    assert _sets(out) == {"fig3": "old"}
    assert any(n.startswith(".fig3.staging-") for n in _hidden(out))     # it could not remove it
    _a_later_run_is_clean(out)
