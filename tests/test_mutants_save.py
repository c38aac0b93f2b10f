"""_save.py's mutation survivors (issue 28): the script line a saved record names
(``_script``), the note and ``seconds`` a record carries, the name the folder is called in
errors, and where the set is staged. In-process, no training: ``save_set`` on a tiny table."""
import json
import sys
import tempfile

import pytest

from scansnap import _save, provenance
from scansnap._save import _script, save_set


def _save_one(folder, **kw):
    save_set(folder, "mine", {"t": (["a"], [[1]])}, {"k": 1}, "cpu", "TrainResult.save('mine')", **kw)
    return json.loads((folder / f"mine{provenance.SUFFIX}").read_text())


@pytest.mark.parametrize("argv", [[""], ["-c"], ["-"], ["/x/site-packages/ipykernel_launcher.py", "-f", "k.json"]])
def test_script_is_none_for_an_interpreter_python_c_stdin_or_a_kernel(monkeypatch, argv):
    """Kills _script mutants 3, 4, 6, 7, 8-11 (the timeouts), 13, 15, 16."""
    monkeypatch.setattr(sys, "argv", argv)
    assert _script() is None


def test_script_names_the_running_script_shell_quoted(monkeypatch):
    """Kills _script mutants 1, 5, 7, 14, 18, 19."""
    monkeypatch.setattr(sys, "argv", ["my_run.py", "--rate", "2", "a b"])
    assert _script() == "python my_run.py --rate 2 'a b'"


def test_script_is_none_for_an_empty_argv(monkeypatch):
    """Kills _script mutant 4 (``not argv and argv[0] ...`` indexes an empty list)."""
    monkeypatch.setattr(sys, "argv", [])
    assert _script() is None


def test_record_command_names_the_call_and_the_script_only_when_there_is_one(monkeypatch, tmp_path):
    """Kills save_set mutants 68, 69."""
    monkeypatch.setattr(sys, "argv", ["-c"])
    assert _save_one(tmp_path / "a", seconds=1.0)["command"] == "python: TrainResult.save('mine')"
    monkeypatch.setattr(sys, "argv", ["run.py", "--x"])
    assert _save_one(tmp_path / "b", seconds=1.0)["command"] == "python: TrainResult.save('mine'), run by `python run.py --x`"


def test_record_with_known_seconds_says_what_it_timed(tmp_path):
    """Kills save_set mutants 1 (``what_seconds`` default), 33, 34."""
    rec = _save_one(tmp_path, seconds=1.23456)
    assert rec["notes"] == ["seconds: the time it took to make (not the time to save)"]
    assert rec["seconds"] == 1.235


def test_record_with_unknown_seconds_records_null_and_says_so(tmp_path):
    """Kills save_set mutants 31, 36, 37, 58, 59, 61, 77 (None reaching ``round``)."""
    rec = _save_one(tmp_path, seconds=None)
    assert rec["seconds"] is None
    assert rec["notes"] == ["seconds: not known (the result does not carry its training time)"]


@pytest.mark.parametrize("what", ["is a file, not a folder"])
def test_save_into_a_file_names_it_the_folder(tmp_path, what):
    """Kills save_set mutants 11, 14, 15 (``check_out_dir``'s ``what``)."""
    f = tmp_path / "f"
    f.write_text("x")
    with pytest.raises(ValueError, match=rf"^folder {f} {what}$"):
        _save_one(f, seconds=1.0)


def test_save_stages_inside_the_folder_under_the_sets_name(monkeypatch, tmp_path):
    """Kills save_set mutants 16 (staged in the system temp folder) and 17 (stage named
    ``.None.staging-``): the stage must sit in the destination (renames stay on one file system)
    and carry the set's name (a later run finds a stale stage by it)."""
    seen = []
    commit = provenance.commit
    monkeypatch.setattr(provenance, "commit", lambda stage, out, name, rec: (seen.append(stage), commit(stage, out, name, rec))[1])
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-temp"))   # a stage there fails
    _save_one(tmp_path / "out", seconds=1.0)
    assert seen[0].parent == tmp_path / "out" and seen[0].name.startswith(".mine.staging-")
