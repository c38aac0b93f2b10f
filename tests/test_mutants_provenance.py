"""Mutation testing of scansnap/provenance.py (issue 28): what the survivors of `make mutants
MUTANTS='scansnap.provenance.*'` showed no in-process test pinned (the command line's subprocess
tests check some of it end to end, where mutation testing cannot see)."""
import pytest

from scansnap import provenance as pv

NOT_THE_PAPERS = ("These numbers are not the paper's: the book (experiments.book_results, read_results(folder)) "
                  "refuses them; read them with read_results(folder, paper=False)")


def test_the_record_of_the_papers_settings_carries_no_note():
    for fig in ("fig3", "fig4", "fig6", "fig7", "fig10", "freeze"):
        assert pv.paper_notes(fig, pv.settings_for(fig)) == []


def test_other_settings_are_named_in_one_note_with_the_papers_value():
    assert pv.paper_notes("fig4", pv.settings_for("fig4", steps=50)) == [
        "not the paper's settings: steps=50 (the paper's: 100). " + NOT_THE_PAPERS]
    got = pv.paper_notes("fig6", pv.settings_for("fig6", seeds=(1, 2), grid={"eta_z": (1.0,)}))
    assert got == ["not the paper's settings: eta_z=[1.0] (the paper's: [0.5, 1, 2, 3]), "
                   "seeds=[1, 2] (the paper's: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]). " + NOT_THE_PAPERS]


def test_an_empty_out_is_refused_by_name_not_taken_as_the_working_folder():
    with pytest.raises(ValueError) as e:
        pv.check_out_dir("")
    assert str(e.value) == "--out is empty: name a folder ('.' for the working folder)"


def test_the_write_probe_is_named_for_the_clean_up_of_a_killed_run(tmp_path, monkeypatch):
    """The probe that proves --out writable is hidden and carries this process's id, the name
    ``recover`` removes once that process is gone (were it killed between creating and removing
    the probe)."""
    made, real = [], pv.tempfile.mkstemp

    def mkstemp(**kw):
        fd, path = real(**kw)
        made.append(path)
        return fd, path
    monkeypatch.setattr(pv.tempfile, "mkstemp", mkstemp)
    assert pv.check_out_dir(tmp_path / "out") == tmp_path / "out"
    assert len(made) == 1
    m = pv._DEBRIS.match(pv.Path(made[0]).name)
    assert m and int(m["pid"]) == pv.os.getpid()
    assert list((tmp_path / "out").iterdir()) == []


def test_an_unwritable_out_is_named_with_the_systems_reason(tmp_path, monkeypatch):
    def denied(**kw):
        raise PermissionError(13, "Permission denied", str(tmp_path / "probe"))
    monkeypatch.setattr(pv.tempfile, "mkstemp", denied)
    with pytest.raises(ValueError) as e:
        pv.check_out_dir(tmp_path)
    assert str(e.value) == f"cannot write results in {tmp_path}: Permission denied"


def test_a_record_says_the_command_seconds_and_notes(tmp_path, monkeypatch):
    (tmp_path / "fig3.csv").write_text("x\n1\n")
    monkeypatch.setattr(pv.sys, "argv", ["/any/path/scansnap/__main__.py", "reproduce", "fig3", "--out", "my results"])
    rec = pv.record("fig3", tmp_path, ["fig3.csv"], {"kind": "closed form"}, None, {"device": "cpu"}, 1.26,
                    notes=("a note",))
    assert rec["command"] == "python -m scansnap reproduce fig3 --out 'my results'"
    assert rec["seconds"] == 1.3 and rec["notes"] == ["a note"]
    assert rec["files"] == {"fig3.csv": pv.sha256(tmp_path / "fig3.csv")}
    rec = pv.record("fig3", tmp_path, ["fig3.csv"], {}, None, {}, 0.04, argv=["reproduce", "fig3"])
    assert rec["command"] == "python -m scansnap reproduce fig3" and rec["seconds"] == 0.0 and rec["notes"] == []


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "a\\b", "a\0b"])
def test_a_record_naming_anything_but_a_file_beside_it_is_refused(tmp_path, name):
    p = tmp_path / "fig3.provenance.json"
    rec = {"format": 1, "figure": "fig3", "settings": {}, "files": {name: "0" * 64}}
    with pytest.raises(ValueError, match="is not a file name beside the record"):
        pv._check_record(p, rec)
    pv._check_record(p, dict(rec, files={"fig3.csv": "0" * 64}))           # a plain name passes


@pytest.mark.parametrize("drop", ["files", "settings"])
def test_a_record_without_files_or_settings_is_not_a_record(tmp_path, drop):
    p = tmp_path / "fig3.provenance.json"
    rec = {"format": 1, "figure": "fig3", "settings": {}, "files": {"fig3.csv": "0" * 64}}
    del rec[drop]
    with pytest.raises(ValueError) as e:
        pv._check_record(p, rec)
    assert str(e.value) == f"{p} is not a scansnap provenance record of format 1"


def test_the_commit_pause_for_the_fault_tests_sleeps_as_asked(monkeypatch):
    import time
    slept = []
    monkeypatch.setattr(time, "sleep", slept.append)
    monkeypatch.delenv("SCANSNAP_TEST_COMMIT_PAUSE", raising=False)
    pv._pause()
    monkeypatch.setenv("SCANSNAP_TEST_COMMIT_PAUSE", "0.25")
    pv._pause()
    assert slept == [0.25]


def test_someone_elses_live_process_counts_as_alive(monkeypatch):
    """Its debris is kept: os.kill(pid, 0) refused (PermissionError) means the process exists."""
    def kill(pid, sig):
        raise PermissionError(1, "Operation not permitted")
    monkeypatch.setattr(pv.os, "kill", kill)
    assert pv._alive(1) is True

    def gone(pid, sig):
        raise ProcessLookupError(3, "No such process")
    monkeypatch.setattr(pv.os, "kill", gone)
    assert pv._alive(999999999) is False


class _Killed(BaseException):
    """Stands for SIGKILL: nothing after it runs, not even an ``except OSError``."""


def test_a_commit_killed_after_its_switch_is_finished_from_its_own_journal(tmp_path, monkeypatch):
    """The journal ``commit`` itself writes (not a hand-made one) carries what ``recover`` needs:
    killed before its first move, the next reader rolls the new set forward."""
    out = tmp_path / "out"
    out.mkdir()

    def commit_set(gen):
        with pv.staged(out, "fig3") as stage:
            for f in ("fig3.csv", "fig3.png"):
                (stage / f).write_text(gen)
            rec = pv.record("fig3", stage, ["fig3.csv", "fig3.png"], pv.settings_for("fig3"), None, {}, 0.0, argv=[])
            pv.commit(stage, out, "fig3", rec)
    commit_set("old")

    def killed():
        raise _Killed()
    monkeypatch.setattr(pv, "_pause", killed)                   # called before each move, after the switch
    monkeypatch.setattr(pv.shutil, "rmtree", lambda *a, **k: None)   # a killed process cleans nothing up
    with pytest.raises(_Killed):
        commit_set("new")
    monkeypatch.undo()
    assert (out / ".fig3.commit.json").exists() and (out / "fig3.csv").read_text() == "old"
    assert pv.recover(out) == [f"finished the interrupted commit of fig3 in {out}: its new set is in place"]
    recs = pv.read_records(out)
    assert {n: (out / n).read_text() for n in ("fig3.csv", "fig3.png")} == {"fig3.csv": "new", "fig3.png": "new"}
    assert pv.verify(out / "fig3.csv", recs)["figure"] == "fig3"
    assert sorted(p.name for p in out.iterdir()) == ["fig3.csv", "fig3.png", "fig3.provenance.json"]


@pytest.mark.parametrize("unlink_fails", [False, True])
def test_a_journal_that_cannot_be_written_leaves_no_part_and_reports_its_own_error(tmp_path, monkeypatch, unlink_fails):
    import errno

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(pv.os, "fsync", full)
    if unlink_fails:
        def unlink(p):
            raise OSError(errno.EROFS, "Read-only file system")
        monkeypatch.setattr(pv.os, "unlink", unlink)
    with pytest.raises(OSError) as e:
        pv._write_journal(tmp_path, {"figure": "fig3"})
    assert e.value.errno == errno.ENOSPC
    if not unlink_fails:
        assert list(tmp_path.iterdir()) == []
