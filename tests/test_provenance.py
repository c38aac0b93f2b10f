"""Issue 11: never a half-written or mislabelled result. `reproduce` checks --out first, writes
each figure's files as one set with its provenance, and the book reads only results made
with the paper's settings."""
import csv
import json
import shutil
from importlib.resources import files
from pathlib import Path

import numpy as np
import pytest

import scansnap
from scansnap import __main__ as cli
from scansnap import experiments as ex
from scansnap import provenance as pv


def _main(capsys, *args):
    """Run the CLI in this process; returns (exit status, stdout, stderr)."""
    try:
        status = cli.main(list(args))
    except SystemExit as e:
        status = e.code
    out = capsys.readouterr()
    return status, out.out, out.err


# ---------------------------------------------------------------------------------------
# --out and --data are checked before anything is computed
# ---------------------------------------------------------------------------------------

def test_out_is_a_file(tmp_path, capsys, monkeypatch):
    called = []
    monkeypatch.setattr(cli, "reproduce_fig3", lambda *a, **k: called.append(1))
    f = tmp_path / "results.csv"
    f.write_text("x")
    status, out, err = _main(capsys, "reproduce", "fig3", "--out", str(f))
    assert status == 2 and err.strip() == f"python -m scansnap: error: --out {f} is a file, not a folder"
    assert not called and "Traceback" not in err


@pytest.mark.parametrize("where", ["/proc", "/proc/scansnap-results"])
def test_out_unwritable_is_one_line_before_any_work(where, capsys, monkeypatch):
    called = []
    monkeypatch.setattr(cli, "reproduce_fig6", lambda *a, **k: called.append(1))
    status, out, err = _main(capsys, "reproduce", "fig6", "--out", where)
    assert status == 2 and err.count("\n") == 1 and err.startswith("python -m scansnap: error: ")
    assert where in err and not called


def test_out_folder_without_write_permission(tmp_path, capsys):
    import os
    if os.geteuid() == 0:
        pytest.skip("root writes anywhere; the /proc cases above cover an unwritable folder")
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o500)
    status, _, err = _main(capsys, "reproduce", "fig3", "--out", str(d))
    assert status == 2 and "cannot write results in" in err


def test_data_full_offline_is_one_line_before_any_work(tmp_path, capsys, monkeypatch):
    import urllib.request

    def offline(*a, **k):
        raise OSError("no network")

    monkeypatch.setenv("SCANSNAP_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(urllib.request, "urlopen", offline)
    monkeypatch.setattr(scansnap.wikitext, "_verified", {})
    called = []
    monkeypatch.setattr(cli, "reproduce_fig3", lambda *a, **k: called.append(1))
    status, out, err = _main(capsys, "reproduce", "all", "--out", str(tmp_path / "o"), "--data", "full")
    assert status == 2 and err.count("\n") == 1 and "could not download" in err and "no network" in err
    assert not called                                     # fig3 comes first in 'all': nothing ran


def test_duplicate_seeds_are_refused(capsys, tmp_path):
    status, _, err = _main(capsys, "reproduce", "fig6", "--out", str(tmp_path), "--seeds", "1,2,1")
    assert status == 2 and "seed 1 is listed twice in '1,2,1'" in err


# ---------------------------------------------------------------------------------------
# Writing: the set with its record, or nothing
# ---------------------------------------------------------------------------------------

def test_fig3_set_and_its_record(tmp_path, capsys):
    status, out, err = _main(capsys, "reproduce", "fig3", "--out", str(tmp_path), "--device", "cpu")
    assert status == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fig3.csv", "fig3.png", "fig3.provenance.json"]
    rec = json.loads((tmp_path / "fig3.provenance.json").read_text())
    assert rec["figure"] == "fig3" and rec["format"] == pv.FORMAT
    assert rec["files"] == {f: pv.sha256(tmp_path / f) for f in ("fig3.csv", "fig3.png")}
    assert rec["settings"] == {"kind": "closed form"} and rec["data"] is None
    assert rec["scansnap"] == scansnap.__version__ and rec["device"] == "cpu"
    assert rec["command"] == f"python -m scansnap reproduce fig3 --out {tmp_path} --device cpu"
    import torch
    assert rec["torch"] == torch.__version__ and rec["date"].endswith("+00:00")
    assert rec["git_commit"] == "unknown" or len(rec["git_commit"].split("+")[0]) == 40
    assert ex.read_results(tmp_path)["fig3"]["t"].shape == (800,)


def test_an_interrupted_figure_leaves_the_previous_set(tmp_path, capsys, monkeypatch):
    assert _main(capsys, "reproduce", "fig3", "--out", str(tmp_path))[0] == 0
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    def interrupted(out, **kw):
        (out / "fig3.csv").write_text("eta_y,t,growth_bound\n1,1,1\n")   # the new CSV is written...
        raise KeyboardInterrupt                                           # ...then Ctrl-C before the PNG

    monkeypatch.setattr(cli, "reproduce_fig3", interrupted)
    status, out, err = _main(capsys, "reproduce", "fig3", "--out", str(tmp_path))
    assert status == 130 and err.count("\n") == 1 and "interrupted (Ctrl-C); nothing written; not written (previous sets, if any, kept): fig3" in err
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert after == before                      # old CSV, old PNG, old record; no staging folder left
    ex.read_results(tmp_path)


def test_commit_holds_interrupts_until_the_set_is_in_place(tmp_path):
    import os
    import signal
    # Ctrl-C as in a terminal, even where this test runs as a background job (SIGINT ignored)
    old_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    stage = tmp_path / "stage"
    stage.mkdir()
    for n in ("a.csv", "a.png"):
        (stage / n).write_text(n)
    rec = {"files": {"a.csv": "x", "a.png": "y"}}
    real = os.replace
    moved = []

    def replace_then_interrupt(src, dst):
        real(src, dst)
        if Path(dst).name.startswith("."):
            return                                         # the commit's journal, not a result file
        moved.append(Path(dst).name)
        if len(moved) == 1:
            os.kill(os.getpid(), signal.SIGINT)           # Ctrl-C between two renames

    os.replace = replace_then_interrupt
    try:
        with pytest.raises(KeyboardInterrupt):
            pv.commit(stage, tmp_path, "a", rec)
    finally:
        os.replace = real
        signal.signal(signal.SIGINT, old_int)
    assert moved == ["a.csv", "a.png", "a.provenance.json"]  # all three moved before the interrupt landed


# ---------------------------------------------------------------------------------------
# Reading: the book's results are checked
# ---------------------------------------------------------------------------------------

def test_the_committed_results_pass_the_check():
    R = ex.book_results()
    expected = {"fig3", "fig4", "fig4_cn", "fig4_right", "fig4_right_cn", "fig5", "fig6", "fig7", "fig8", "fig9", "fig10", "fig11",
                "fig12", "freeze"}
    assert set(R) == expected
    folder = files("scansnap") / "results"
    records = pv.read_records(folder)
    for name in expected:
        rec = records[name + ".csv"]
        assert rec["settings"] == pv.settings_for(rec["figure"])
        assert rec["device"] in ("cpu", "cuda") or rec["device"].startswith("cuda:")
    for name in ("fig7", "fig10", "freeze"):
        assert records[name + ".csv"]["data"]["source"] == "shipped"
    assert len(R["fig6"]["entropy"]) == 640 and len(R["fig4"]["loss"]) == 100


def _copy_results(tmp_path, names=("fig6",)):
    """A results folder with the committed CSVs and records of ``names`` only."""
    d = tmp_path / "results"
    d.mkdir()
    src = Path(str(files("scansnap") / "results"))
    for n in names:
        rec = json.loads((src / f"{n}.provenance.json").read_text())
        for f in [f for f in rec["files"] if f.endswith(".csv")] + [f"{n}.provenance.json"]:
            shutil.copy(src / f, d / f)
        # the PNGs are not package data: a copy lists only the CSVs (read_results refuses a listed file that is missing)
        rec["files"] = {f: h for f, h in rec["files"].items() if f.endswith(".csv")}
        rec[pv.RECORD_HASH] = pv.record_digest(rec)             # the copy's record, re-hashed as a writer would
        (d / f"{n}.provenance.json").write_text(json.dumps(rec, indent=1, sort_keys=True))
    assert set(ex.read_results(d)) >= set(names)              # the copy passes as it is
    return d


def test_results_made_with_other_settings_are_refused(tmp_path, capsys):
    d = tmp_path / "out"
    status, _, err = _main(capsys, "reproduce", "fig4", "--out", str(d), "--steps", "3", "--device", "cpu")
    assert status == 0, err
    with pytest.raises(ValueError, match=r"fig4(_right)?\.csv was not made with the paper's settings: "
                                         r"steps=3 \(the paper's: 100\)"):
        ex.read_results(d)


def test_sweep_with_other_seeds_is_refused(tmp_path):
    d = _copy_results(tmp_path)
    rec = json.loads((d / "fig6.provenance.json").read_text())
    rec["settings"]["seeds"] = [1, 2]
    (d / "fig6.provenance.json").write_text(json.dumps(rec))
    with pytest.raises(ValueError, match=r"fig6\.csv was not made with the paper's settings: "
                                         r"seeds=\[1, 2\] \(the paper's: \[1, 2, 3, 4, 5, 6, 7, 8, 9, 10\]\)"):
        ex.read_results(d)


def test_a_mixed_or_edited_set_is_refused(tmp_path):
    d = _copy_results(tmp_path)
    rows = (d / "fig6.csv").read_text().splitlines()
    (d / "fig6.csv").write_text("\n".join(rows[:65]) + "\n")          # a 64-row CSV beside a 640-run record
    with pytest.raises(ValueError, match=r"fig6\.csv is not the file its provenance \(fig6\.provenance\.json\) "
                                         r"describes"):
        ex.read_results(d)


def test_a_csv_without_a_record_is_refused(tmp_path):
    d = _copy_results(tmp_path, ("fig3", "fig6"))
    (d / "fig6.provenance.json").unlink()
    with pytest.raises(ValueError, match=r"fig6\.csv has no provenance record"):
        ex.read_results(d)
    (d / "fig3.provenance.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"fig3\.provenance\.json is not a readable provenance record"):
        ex.read_results(d)


def test_settings_for_the_paper():
    assert pv.settings_for("fig6")["seeds"] == list(range(1, 11))
    assert pv.settings_for("fig6")["steps"] == 100 and pv.settings_for("fig6", steps=5)["steps"] == 5
    assert pv.settings_for("fig10")["data"] == "shipped" and pv.settings_for("fig10")["steps"] == 300
    assert pv.settings_for("fig7", data="full")["data"] == "full"
    assert pv.settings_for("fig7")["steps"] == 1500 and pv.settings_for("freeze")["steps"] == 6000
    with pytest.raises(ValueError, match="unknown figure 'fig99'"):
        pv.settings_for("fig99")


def test_load_csv_errors(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("a,b\n1,2\n3\n")
    with pytest.raises(ValueError, match=r"x\.csv, line 3: 1 fields, the header has 2"):
        ex.load_csv(p)
    p.write_text("a,b\n1,x\n")
    with pytest.raises(ValueError, match=r"line 2: b = 'x' is not a number"):
        ex.load_csv(p)
    p.write_text("a,b\n")
    with pytest.raises(ValueError, match="has no rows"):
        ex.load_csv(p)
    p.write_text("a,b\n1,nan\n2.5,3\n")
    with pytest.raises(ValueError, match=r"x\.csv, line 2: b = 'nan' is not a finite number"):
        ex.load_csv(p)                                    # never read back as a number without comment
    got = ex.load_csv(p, undefined=("b",))                # where NaN means "not defined" (freeze.csv's first row)
    np.testing.assert_array_equal(got["a"], [1, 2.5]) and np.isnan(got["b"][0])
