"""Researcher 6's report (review/researcher6_report.md): the fixes, each with its trip."""
from __future__ import annotations

import csv
import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from scansnap import provenance, sequence_classes, train
from scansnap.experiments import read_results

import scansnap.theory as th

RESULTS = Path(provenance.__file__).parent / "results"


# Trip 1: an LM replay at another torch thread count said "here: device cpu, torch X; recorded: the same"

def _edited(d, tmp_path, threads):
    e = tmp_path / "edited"
    shutil.copytree(d, e)
    rec = json.loads((e / "lm.provenance.json").read_text())
    rec["settings"]["lr"] = rec["settings"]["lr"] - 1         # some difference in the loss to report
    if threads is None:
        del rec["data"]["torch_threads"]
    else:
        rec["data"]["torch_threads"] = threads
    rec[provenance.RECORD_HASH] = provenance.record_digest(rec)   # as a run on that machine wrote it (replay checks the hash)
    (e / "lm.provenance.json").write_text(json.dumps(rec))
    return e


def test_lm_record_holds_the_thread_count(saved_lm):
    d, _, _ = saved_lm
    rec = json.loads((d / "lm.provenance.json").read_text())
    assert rec["data"]["torch_threads"] == torch.get_num_threads()


def test_replay_names_both_thread_counts(saved_lm, tmp_path):
    from scansnap.lm import replay
    d, ids, _ = saved_lm
    now = torch.get_num_threads()
    e = _edited(d, tmp_path, now + 3)
    with pytest.raises(ValueError, match=rf"{now} torch threads.*{now + 3} torch threads.*thread count differs "
                                         rf"\({now + 3} recorded, {now} now\): a different thread count changes "
                                         r"how float sums"):
        replay(e, ids, probe=ids[:6])


def test_replay_says_when_the_record_lacks_the_thread_count(saved_lm, tmp_path):
    from scansnap.lm import replay
    d, ids, _ = saved_lm
    e = _edited(d, tmp_path, None)
    with pytest.raises(ValueError, match=r"torch threads not recorded.*changes float sums"):
        replay(e, ids, probe=ids[:6])


# Trip 2: a record without record_sha256 was trusted silently; a dropped grid cell passed

def _copy(tmp_path, names=("fig6",)):
    """The shipped CSVs and records of ``names`` (the PNGs are not package data: dropped from the record)."""
    d = tmp_path / "res"
    d.mkdir()
    for n in names:
        rec = json.loads((RESULTS / f"{n}.provenance.json").read_text())
        rec["files"] = {f: h for f, h in rec["files"].items() if f.endswith(".csv")}
        for f in rec["files"]:
            shutil.copy(RESULTS / f, d / f)
        rec[provenance.RECORD_HASH] = provenance.record_digest(rec)
        (d / f"{n}.provenance.json").write_text(json.dumps(rec, indent=1, sort_keys=True))
    return d


def test_record_without_its_hash_is_read_with_a_warning(tmp_path):
    d = _copy(tmp_path)
    p = d / "fig6.provenance.json"
    rec = json.loads(p.read_text())
    del rec[provenance.RECORD_HASH]
    p.write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
    with pytest.warns(provenance.UnhashedRecordWarning,
                      match=r"fig6\.provenance\.json has no record_sha256: written before records were hashed, or "
                            r"the field was removed: its settings are taken on its word"):
        read_results(d)


def test_shipped_results_read_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = read_results(RESULTS)
    assert "fig6" in out and "fig11" in out


def _drop_cell(d, figure, cell):
    p = d / f"{figure}.csv"
    rows = list(csv.reader(p.open()))
    head, body = rows[0], rows[1:]
    keep = [r for r in body if not all(float(r[head.index(k)]) == v for k, v in cell.items())]
    assert len(keep) < len(body)
    with p.open("w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows([head] + keep)
    rec = json.loads((d / f"{figure}.provenance.json").read_text())      # re-hashed, as a careful editor would
    rec["files"][f"{figure}.csv"] = provenance.sha256(p)
    rec[provenance.RECORD_HASH] = provenance.record_digest(rec)
    (d / f"{figure}.provenance.json").write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")


def test_a_dropped_grid_cell_is_refused_naming_it(tmp_path):
    d = _copy(tmp_path)
    _drop_cell(d, "fig6", {"num_last": 3, "eta_z": 2, "ratio": 5, "seed": 7})
    with pytest.raises(ValueError, match=r"fig6\.csv does not hold its record's full grid: 1 of 640 combinations "
                                         r".*\(num_last=3, eta_z=2, ratio=5, seed=7\) has 0 rows"):
        read_results(d)


def test_a_dropped_cell_of_a_per_step_grid_is_refused(tmp_path):
    d = _copy(tmp_path, ("fig11",))
    _drop_cell(d, "fig11", {"num_last": 5, "eta_z": 1, "ratio": 10})
    with pytest.raises(ValueError, match=r"\(num_last=5, eta_z=1, ratio=10\) has 0 rows"):
        read_results(d)


# Trip 3: absurd eta_Z "agreed" without a warning; near-ties and rank correlation 0 read as agreement

@pytest.fixture(scope="module")
def own():
    return sequence_classes(K=4, M=40, num_common=3, num_distinct=6, common_weight=2,
                            distinct_weights=[1, 1, 2, 3, 5, 8])


def test_compare_warns_on_saturated_or_far_outside_rows(own):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = train(own, eta_y=2.0, eta_z=[1.0, 1e6], seeds=1, steps=30)
        pred = res.predict()
    with pytest.warns(th.RegimeWarning, match=r"compare: .*4 of 8 rows have eta_Z > 10 eta_Y"):
        cmp = pred.compare(res)
    assert (cmp.eta_z > 10 * cmp.eta_y).sum() == 4


def test_compare_inside_the_regime_gives_no_regime_warning(own):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = train(own, eta_y=2.0, eta_z=1.0, seeds=1, steps=30)
        pred = res.predict()
    with warnings.catch_warnings():
        warnings.simplefilter("error", th.RegimeWarning)
        cmp = pred.compare(res)
    assert np.all((cmp.margin > 0) & (cmp.margin < 1))


def test_margin_is_small_for_close_probabilities():
    close = sequence_classes(K=2, M=30, num_common=3, num_distinct=4, distinct_weights=[1.0, 1.01, 1.02, 1.03])
    far = sequence_classes(K=2, M=30, num_common=3, num_distinct=4, distinct_weights=[1, 2, 4, 8])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = {}
        for k, cl in (("close", close), ("far", far)):
            res = train(cl, eta_y=2.0, eta_z=1.0, seeds=1, steps=40)
            m[k] = res.predict().compare(res).margin.to_numpy()
    assert np.all(m["close"] < 0.05) and np.all(m["far"] > 0.2)


def test_agrees_needs_the_rank_correlation(own, monkeypatch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = train(own, eta_y=2.0, eta_z=1.0, seeds=1, steps=30)
        pred = res.predict()
        base = pred.compare(res)
        assert base.agrees.all() and (base.rank_correlation >= th.RANK_CORRELATION_MIN).all()
        monkeypatch.setattr(th, "RANK_CORRELATION_MIN", 1.01)        # no row reaches it: none agrees
        assert not pred.compare(res).agrees.any()


# Trip 6: plots.entropy_sweep(..., res.distinct_entropy) (no call) was an IndexError deep in plots.py

def test_entropy_sweep_names_a_method_passed_without_a_call():
    from scansnap import plots
    x = np.array([1, 1]), np.array([1.0, 1.0]), np.array([1.0, 2.0])
    with pytest.raises(TypeError, match=r"entropy is a function \('distinct_entropy'\), not numbers: call it"):
        plots.entropy_sweep(*x, _Fake().distinct_entropy)
    with pytest.raises(ValueError, match=r"flat arrays of one length"):
        plots.entropy_sweep(*x, np.ones((2, 3)))


class _Fake:
    def distinct_entropy(self):
        return np.ones(2)

