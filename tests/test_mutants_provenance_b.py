"""More mutants of scansnap/provenance.py (issue 28; mutmut run at d368bf7,
``scansnap.provenance.x_<function>__mutmut_<n>``) that earlier notes called equivalent on
Linux: how ``_fsync`` opens what it syncs, and the record's layout on disk."""
import json
import os

import pytest

from scansnap import provenance as pv


def test_fsync_of_a_folder_refuses_a_file(tmp_path):
    """A folder is opened with O_DIRECTORY, so a file given as one is an error. Kills _fsync 7,
    8, 10, 16, 17 (O_DIRECTORY dropped: the file would be opened and synced)."""
    f = tmp_path / "f"
    f.write_text("x")
    with pytest.raises(NotADirectoryError):
        pv._fsync(f, directory=True)
    pv._fsync(f)
    pv._fsync(tmp_path, directory=True)


def test_files_are_synced_read_only_and_the_journal_folder_as_a_folder(tmp_path, monkeypatch):
    """Kills _fsync 19 (a file opened write-only) and _write_journal 27, 29, 30 (the folder
    synced without O_DIRECTORY)."""
    opened, real = [], os.open
    monkeypatch.setattr(pv.os, "open", lambda path, flags, *a: opened.append((str(path), flags)) or real(path, flags, *a))
    f = tmp_path / "f"
    f.write_text("x")
    pv._fsync(f)
    pv._write_journal(tmp_path, {"figure": "fig3", "stage": "s", "names": [], "had": [], "state": "forward"})
    assert opened == [(str(f), os.O_RDONLY), (str(tmp_path), os.O_RDONLY | os.O_DIRECTORY)]


def test_a_committed_record_is_sorted_json_one_field_a_line(tmp_path):
    """The records are committed to git (scansnap/results): sorted keys, one per line, so a
    regenerated record diffs line by line. Kills commit 16 (`indent=None`) and 17
    (`sort_keys=None`)."""
    out = tmp_path / "out"
    out.mkdir()
    with pv.staged(out, "fig3") as stage:
        (stage / "fig3.csv").write_text("a\n1\n")
        rec = pv.record("fig3", stage, ["fig3.csv"], pv.settings_for("fig3"), None, {"z": 1, "a": 2}, 0.0, argv=[])
        pv.commit(stage, out, "fig3", rec)
    text = (out / "fig3.provenance.json").read_text()
    written = json.loads(text)
    assert text == json.dumps(written, indent=1, sort_keys=True) + "\n"
    assert list(written) == sorted(written) and text.count("\n") > len(written)
