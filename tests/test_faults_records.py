"""Issue 28, reading results back: a malformed, stale or incomplete record, a CSV gone, a missing
folder, a commit a killed writer left half done: each is a ValueError naming the file (or is
finished), never an AttributeError, a KeyError three calls later, or a silent override."""
import json
import shutil
from importlib.resources import files
from pathlib import Path

import pytest

from scansnap import experiments as ex
from scansnap import provenance as pv

SRC = Path(str(files("scansnap") / "results"))


def _results(tmp_path, names=("fig3", "fig6")):
    d = tmp_path / "results"
    d.mkdir()
    for n in names:
        rec = json.loads((SRC / f"{n}.provenance.json").read_text())
        for f in [f for f in rec["files"] if f.endswith(".csv")] + [f"{n}.provenance.json"]:
            shutil.copy(SRC / f, d / f)                     # the PNGs are not package data
        # the PNGs are not package data: a copy lists only the CSVs (read_results refuses a listed file that is missing)
        rec["files"] = {f: h for f, h in rec["files"].items() if f.endswith(".csv")}
        rec[pv.RECORD_HASH] = pv.record_digest(rec)             # the copy's record, re-hashed as a writer would
        (d / f"{n}.provenance.json").write_text(json.dumps(rec, indent=1, sort_keys=True))
    assert set(ex.read_results(d)) == set(names)
    return d


def _edit(d, name, fn):
    p = d / f"{name}.provenance.json"
    rec = json.loads(p.read_text())
    p.write_text(json.dumps(fn(rec)))


@pytest.mark.parametrize("edit, match", [
    (lambda r: [r], r"fig6\.provenance\.json is not a scansnap provenance record \(a JSON list, not an object\)"),
    (lambda r: "fig6", r"fig6\.provenance\.json is not a scansnap provenance record \(a JSON str"),
    (lambda r: dict(r, files=dict(r["files"], **{"fig6.csv": None})),
     r"fig6\.provenance\.json: the sha256 of fig6\.csv must be 64 hex digits, got None"),        # TypeError before
    (lambda r: dict(r, files=list(r["files"])), r"fig6\.provenance\.json: 'files' must map each file name"),  # AttributeError
    (lambda r: dict(r, files={}), r"'files' must map each file name to its sha256, got \{\}"),
    (lambda r: dict(r, files={"../fig6.csv": "0" * 64}), r"'\.\./fig6\.csv' is not a file name beside the record"),
    (lambda r: dict(r, settings=None), r"fig6\.provenance\.json: 'settings' must be an object, got None"),
    (lambda r: dict(r, format=2), r"fig6\.provenance\.json is not a scansnap provenance record of format 1"),
    (lambda r: dict(r, figure="fig3"), r"fig6\.provenance\.json records figure 'fig3' but is not named fig3\.provenance\.json"),
    (lambda r: dict(r, figure=None), r"records figure None"),
])
def test_a_malformed_record_is_named(tmp_path, edit, match):
    d = _results(tmp_path)
    _edit(d, "fig6", edit)
    with pytest.raises(ValueError, match=match):
        ex.read_results(d)


def test_a_stale_copy_of_a_record_does_not_override_the_current_one(tmp_path):
    """`old-fig6.provenance.json` (sorted after `fig6.`) silently replaced fig6's record."""
    d = _results(tmp_path)
    rec = json.loads((d / "fig6.provenance.json").read_text())
    (d / "old-fig6.provenance.json").write_text(json.dumps(dict(rec, settings=dict(rec["settings"], steps=3))))
    with pytest.raises(ValueError, match=r"old-fig6\.provenance\.json records figure 'fig6' but is not named "
                                         r"fig6\.provenance\.json: a stale or renamed copy"):
        ex.read_results(d)
    (d / "old-fig6.provenance.json").unlink()
    assert ex.read_results(d)["fig6"]["entropy"].shape == (640,)


def test_two_records_claiming_one_file(tmp_path):
    d = _results(tmp_path)
    _edit(d, "fig3", lambda r: dict(r, files=dict(r["files"], **{"fig6.csv": pv.sha256(d / "fig6.csv")})))
    with pytest.raises(ValueError, match=r"fig6\.csv is claimed by two records, fig3\.provenance\.json and "
                                         r"fig6\.provenance\.json: delete the stale one, or regenerate$"):
        ex.read_results(d)


def test_a_csv_gone_while_its_record_lists_it(tmp_path):
    """Not noticed before: chapter 6 then failed with KeyError: 'fig6'."""
    d = _results(tmp_path)
    (d / "fig6.csv").unlink()
    with pytest.raises(ValueError, match=r"fig6\.csv is missing, though its record fig6\.provenance\.json lists "
                                         r"it: an incomplete set; regenerate with the command that made it: "
                                         r"`python -m scansnap reproduce fig6 "):
        ex.read_results(d)


def test_a_missing_or_misplaced_results_folder(tmp_path):
    with pytest.raises(ValueError, match=r"nowhere is not a results folder \(it does not exist\): make one with"):
        ex.read_results(tmp_path / "nowhere")                         # a raw FileNotFoundError before
    (tmp_path / "f").write_text("x")
    with pytest.raises(ValueError, match=r"f is not a results folder \(it is a file\)"):
        ex.read_results(tmp_path / "f")
    with pytest.raises(ValueError, match=r"nowhere is not a results folder"):
        pv.read_records(tmp_path / "nowhere")


def test_an_unreadable_csv_is_named(tmp_path, monkeypatch):
    d = _results(tmp_path)
    real = pv.sha256

    def denied(path):
        if Path(path).name == "fig6.csv":
            raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.setattr(pv, "sha256", denied)
    with pytest.raises(ValueError, match=r"fig6\.csv cannot be read \(Permission denied\)"):
        ex.read_results(d)


# ---------------------------------------------------------------------------------------
# A commit cut by SIGKILL, as the reader finds it
# ---------------------------------------------------------------------------------------

def _half_committed(tmp_path):
    """fig3's folder as a writer killed between two renames leaves it: the new CSV in place, the
    new PNG and record still staged, the journal saying 'forward'."""
    d = _results(tmp_path, ("fig3",))
    old = {p.name: p.read_bytes() for p in d.iterdir()}
    stage = d / ".fig3.staging-999999999-abcd1234"
    stage.mkdir()
    (stage / ".prev").mkdir()
    new = {"fig3.csv": b"eta_y,t,growth_bound\n1,1,2\n", "fig3.png": b"new png"}
    for n, b in new.items():
        (stage / n).write_bytes(b)
    rec = json.loads(old["fig3.provenance.json"])
    rec["files"] = {n: pv.hashlib.sha256(b).hexdigest() for n, b in new.items()}
    rec[pv.RECORD_HASH] = pv.record_digest(rec)                       # as commit() writes it
    (stage / "fig3.provenance.json").write_text(json.dumps(rec))
    names = ["fig3.csv", "fig3.png", "fig3.provenance.json"]
    for n in old:                                                      # the PNG is new: no old one
        (stage / ".prev" / n).write_bytes(old[n])
    (d / ".fig3.commit.json").write_text(json.dumps({"figure": "fig3", "stage": stage.name, "names": names,
                                                       "had": sorted(old), "state": "forward", "pid": 999999999}))
    (stage / "fig3.csv").rename(d / "fig3.csv")                       # the one rename that happened
    with pytest.raises(ValueError, match="is not the file its provenance"):   # a mix, as the hashes show
        pv.verify(d / "fig3.csv", {n: json.loads(old["fig3.provenance.json"]) for n in ("fig3.csv",)})
    return d, new


def test_a_reader_finishes_an_interrupted_commit(tmp_path):
    d, new = _half_committed(tmp_path)
    got = ex.read_results(d)                                           # rolls forward first, under the lock
    assert got["fig3"]["growth_bound"].tolist() == [2.0]
    assert (d / "fig3.png").read_bytes() == new["fig3.png"]
    assert sorted(p.name for p in d.iterdir()) == ["fig3.csv", "fig3.png", "fig3.provenance.json"]


def test_an_interrupted_commit_in_a_folder_that_cannot_be_written(tmp_path, monkeypatch):
    d, _ = _half_committed(tmp_path)

    def read_only(*a, **k):
        raise PermissionError(30, "Read-only file system")

    monkeypatch.setattr(pv.os, "replace", read_only)
    monkeypatch.setattr(pv, "_write_journal", read_only)
    with pytest.raises(ValueError, match=r"results holds an interrupted commit \(\.fig3\.commit\.json\) that "
                                         r"cannot be finished here \(Read-only file system\): run `python -m "
                                         r"scansnap reproduce` into it once, with write access, to finish it$"):
        ex.read_results(d)


def test_a_damaged_journal_is_named(tmp_path):
    d, _ = _half_committed(tmp_path)
    (d / ".fig3.commit.json").write_text('{"figure": "fig3", "stage": "../../etc", "names": [], "had": [], "state": "forward"}')
    with pytest.raises(ValueError, match=r"\.fig3\.commit\.json is an unreadable commit journal \(it names files "
                                         r"outside the folder\)"):
        ex.read_results(d)
    (d / ".fig3.commit.json").write_text("{cut")
    with pytest.raises(ValueError, match=r"\.fig3\.commit\.json is an unreadable commit journal"):
        ex.read_results(d)
