"""Issue 28, the commit itself (in-process): a rename that fails half way is rolled back; a
journal left in either state is finished by the next run; debris of dead processes is removed,
that of live ones kept; the lock serialises commits."""
import errno
import json
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from scansnap import __main__ as cli
from scansnap import experiments as ex
from scansnap import provenance as pv


def _set(out, fig, gen, names=("csv", "png")):
    """Commit a set of ``fig`` whose files say ``gen``."""
    out.mkdir(exist_ok=True)
    with pv.staged(out, fig) as stage:
        files = [f"{fig}.{x}" for x in names]
        for f in files:
            (stage / f).write_text(f"{gen}\n")
        rec = pv.record(fig, stage, files, pv.settings_for(fig), None, {"device": "cpu"}, 0.0, argv=[])
        return pv.commit(stage, out, fig, rec)


def _state(out):
    return {p.name: p.read_text() for p in out.iterdir()}


def _gens(out):
    recs = pv.read_records(out)
    for name in recs:
        pv.verify(out / name, recs)
    return {n: (out / n).read_text() for n in recs}


def test_a_rename_that_fails_half_way_is_rolled_back(tmp_path, monkeypatch):
    out = tmp_path / "out"
    _set(out, "fig3", "old")
    before = _state(out)
    real = os.replace
    moved = []

    def fail_second(src, dst):
        if Path(dst).parent == out and not Path(dst).name.startswith(".") and Path(src).parent.name != ".prev":
            moved.append(Path(dst).name)
            if len(moved) == 2:
                raise OSError(errno.EROFS, "Read-only file system")
        return real(src, dst)

    monkeypatch.setattr(pv.os, "replace", fail_second)
    with pytest.raises(OSError, match=r"could not move fig3's files into .*out \(Read-only file system\); its "
                                      r"previous set is back in place"):
        _set(out, "fig3", "new", names=("csv", "png", "json"))         # a new file too: removed again
    assert moved == ["fig3.csv", "fig3.png"]
    assert _state(out) == before                                        # old files, no journal, no stage
    assert _gens(out) == {"fig3.csv": "old\n", "fig3.png": "old\n"}


def test_the_command_line_reports_a_failed_commit_in_one_line(tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    _set(out, "fig3", "old")

    def fake_fig3(stage, **kw):
        for f in ("fig3.csv", "fig3.png"):
            (stage / f).write_text("new\n")
        return ["fig3.csv", "fig3.png"]

    monkeypatch.setattr(cli, "reproduce_fig3", fake_fig3)
    real = os.replace

    def fail_png(src, dst):
        if Path(dst) == out / "fig3.png" and Path(src).parent.name != ".prev":
            raise OSError(errno.EIO, "Input/output error")
        return real(src, dst)

    monkeypatch.setattr(pv.os, "replace", fail_png)
    try:
        status = cli.main(["reproduce", "fig3", "--out", str(out)])
    except SystemExit as e:
        status = e.code
    err = capsys.readouterr().err
    assert status == 1 and err.count("\n") == 1 and "Traceback" not in err
    assert "error: could not write fig3 in" in err and "its previous set is back in place" in err
    assert _gens(out) == {"fig3.csv": "old\n", "fig3.png": "old\n"}
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


def _journal(out, stage, names, had, state):
    (out / ".fig3.commit.json").write_text(json.dumps({"figure": "fig3", "stage": stage.name, "names": names,
                                                          "had": had, "state": state, "pid": 999999999}))


def _interrupted(tmp_path, state):
    """fig3's old set, and a new one half moved in by a process that is gone, journal in ``state``."""
    out = tmp_path / "out"
    _set(out, "fig3", "old")
    names = ["fig3.csv", "fig3.png", "fig3.extra", "fig3.provenance.json"]
    old = _state(out)
    stage = out / ".fig3.staging-999999999-x"
    (stage / ".prev").mkdir(parents=True)
    for n, text in old.items():
        (stage / ".prev" / n).write_text(text)
    rec = json.loads(old["fig3.provenance.json"])
    for n in names[:3]:
        (stage / n).write_text("new\n")
    rec["files"] = {n: pv.sha256(stage / n) for n in names[:3]}
    (stage / "fig3.provenance.json").write_text(json.dumps(rec))
    _journal(out, stage, names, sorted(old), state)
    for n in names[:3]:                                   # the CSV, the PNG and the new file moved
        os.replace(stage / n, out / n)
    if state == "back":                                   # and the roll-back had begun: the CSV restored
        os.replace(stage / ".prev" / "fig3.csv", out / "fig3.csv")
    return out, old


def test_a_journal_rolling_forward_is_finished(tmp_path):
    out, _ = _interrupted(tmp_path, "forward")
    assert pv.recover(out) == [f"finished the interrupted commit of fig3 in {out}: its new set is in place"]
    assert _gens(out) == {"fig3.csv": "new\n", "fig3.png": "new\n", "fig3.extra": "new\n"}
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


def test_a_journal_rolling_back_is_finished(tmp_path):
    out, old = _interrupted(tmp_path, "back")
    assert pv.recover(out) == [f"rolled back the failed commit of fig3 in {out}: its previous set is in place"]
    assert _state(out) == old                                                  # fig3.extra removed again


def test_a_roll_forward_that_fails_again_rolls_back(tmp_path, monkeypatch):
    out, old = _interrupted(tmp_path, "forward")
    real = os.replace

    def staged_fail(src, dst):
        if ".staging-" in str(src) and Path(src).parent.name != ".prev":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(pv.os, "replace", staged_fail)
    notes = pv.recover(out)
    assert notes == [f"could not finish the interrupted commit of fig3 in {out} (No space left on device); "
                     "its previous set is back in place"]
    assert _state(out) == old


def test_the_next_run_finishes_it_and_says_so(tmp_path, monkeypatch, capsys):
    out, _ = _interrupted(tmp_path, "forward")
    monkeypatch.setattr(cli, "reproduce_fig8", lambda stage, **kw: [
        (stage / "fig8.csv").write_text("x\n"), (stage / "fig8.png").write_text("x\n")] and ["fig8.csv", "fig8.png"])
    assert cli.main(["reproduce", "fig8", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert err == f"note: finished the interrupted commit of fig3 in {out}: its new set is in place\n"
    assert _gens(out)["fig3.csv"] == "new\n"


def test_debris_of_dead_processes_goes_that_of_live_ones_stays(tmp_path):
    """A live process of our own (not the test runner's parent: asking whether a process lives
    must not signal it, and a mutant that sent SIGHUP would end the runner)."""
    child = subprocess.Popen(["sleep", "60"])
    try:
        _debris_of_dead_processes_goes_that_of_live_ones_stays(tmp_path, child.pid)
        with pytest.raises(subprocess.TimeoutExpired):  # asked, not signalled: still running 0.3 s later
            child.wait(timeout=0.3)
    finally:
        child.kill()
        child.wait()


def _debris_of_dead_processes_goes_that_of_live_ones_stays(tmp_path, live):
    out = tmp_path / "out"
    out.mkdir()
    dead = 999999999
    for name in (f".fig3.staging-{dead}-a", f".fig3.staging-{live}-b", f".fig6.staging-{os.getpid()}-c"):
        (out / name).mkdir()
        (out / name / "fig.csv").write_text("x")
    for name in (f".fig3.commit.json.{dead}.part", f".scansnap-write-test.{dead}.q", f".fig3.commit.json.{live}.part",
                 ".fig3.staging-old-format", "notes.txt", ".hidden-by-the-user"):
        (out / name).write_text("x")
    assert pv.recover(out) == []
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [f".fig3.staging-{live}-b", f".fig6.staging-{os.getpid()}-c", f".fig3.commit.json.{live}.part",
         ".fig3.staging-old-format", "notes.txt", ".hidden-by-the-user"])


def test_commits_into_one_folder_take_turns(tmp_path, monkeypatch):
    """While one commit holds the folder's lock, a second waits: their renames never interleave."""
    out = tmp_path / "out"
    _set(out, "fig3", "old")
    log, real = [], os.replace

    def logged(src, dst):                                # a slow disk: each rename takes a while
        log.append((threading.current_thread().name, Path(dst).name))
        real(src, dst)
        time.sleep(0.05)

    monkeypatch.setattr(pv.os, "replace", logged)
    threads = [threading.Thread(target=_set, args=(out, "fig3", g), name=g) for g in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    writers = [w for w, n in log if not n.startswith(".") and "staging" not in n]
    first = writers[0]
    assert writers == [first] * (len(writers) // 2) + [w for w in writers if w != first]   # one block each
    assert set(_gens(out).values()) in ({"a\n"}, {"b\n"})


def test_a_reader_of_a_results_folder_by_str(tmp_path):
    out = tmp_path / "out"
    _set(out, "fig3", "eta_y,t,growth_bound\n1,1,1")
    assert ex.read_results(str(out))["fig3"]["t"].tolist() == [1.0]


def test_fsync_of_a_folder_that_cannot_be_opened_is_best_effort(tmp_path, monkeypatch):
    """On Windows os.open refuses a folder (PermissionError) whatever the flags; the commit's folder
    fsync is best effort there, as on file systems without it, while a file's fsync still must work."""
    from scansnap import provenance

    real_open = os.open

    def no_folders(path, flags, *a):
        if os.path.isdir(path):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *a)

    monkeypatch.setattr(provenance.os, "open", no_folders)
    assert provenance._fsync(tmp_path, directory=True) is None
    f = tmp_path / "a.csv"
    f.write_text("x\n")
    provenance._fsync(f)                                   # a file is still synced
    with pytest.raises(FileNotFoundError):
        provenance._fsync(tmp_path / "missing.csv")       # and a file's failure is not swallowed
