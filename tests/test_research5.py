"""Researcher 5's report (review/researcher5_report.md): the fixes, each with its trip."""
from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

from scansnap import sequence_classes, train
from scansnap import metrics, provenance
from scansnap.experiments import read_results
from scansnap.metrics import UndefinedEntropyWarning

import scansnap.theory as th


@pytest.fixture(scope="module")
def own():
    """The researcher's classes: K=4, M=40, 2 queries, 4 common tokens (weight 2), distinct [1,1,2,3,5,5]."""
    return sequence_classes(K=4, M=40, queries=2, num_common=4, num_distinct=6, common_weight=2,
                            distinct_weights=[1, 1, 2, 3, 5, 5])


@pytest.fixture(scope="module")
def hot(own):
    """eta_Z = 300 at eta_Y = 2: class 1 of the second run puts all its attention on a common token."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return train(own, eta_y=2.0, eta_z=[2.0, 300.0], seeds=1, steps=50)


# Trip 1: all the attention on a common token read as perfectly sparse (entropy 3.5e-10)

def test_distinct_entropy_is_nan_when_the_distinct_mass_is_negligible(own, hot):
    assert hot.common_mass()[1, 1] > 1 - 1e-12                          # all of it on the common tokens
    with pytest.warns(UndefinedEntropyWarning, match=r"run 1, class 1: its attention on its distinct tokens is .* "
                                                     r"below 1e-06"):
        ent = hot.class_entropy()
    assert np.isnan(ent[1, 1])                                           # was 3.5e-10: "snapped"
    assert np.isfinite(np.delete(ent.ravel(), 5)).all()                  # the other classes keep theirs
    with pytest.warns(UndefinedEntropyWarning, match="class 1"):
        assert np.isnan(metrics.distinct_entropy(own, hot.Z.double().numpy())[1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")                                   # a healthy run: no warning, numbers
        assert np.isfinite(metrics.class_entropy(own, hot.Z[0].double().numpy())).all()
    assert metrics.DISTINCT_MASS_MIN == 1e-6


def test_compare_row_is_nan_and_disagrees(hot):
    with pytest.warns(UndefinedEntropyWarning, match="run 1, class 1"):
        cmp = hot.predict().compare(hot)
    row = cmp[(cmp.run == 1) & (cmp["class"] == 1)].iloc[0]
    assert np.isnan(row.distinct_entropy) and not row.entropy_ok and not row.agrees


# Trip 2: no reason given for rows outside the theory

def test_compare_names_why_a_row_is_outside_the_theory(own, hot):
    with pytest.warns(UndefinedEntropyWarning):
        cmp = hot.predict().compare(hot)
    assert (cmp[cmp.run == 0].why == "").all()                           # inside: no reason
    out = cmp[cmp.run == 1]
    assert out.why.str.contains(r"eta_Z = 300 > eta_Y = 2 \(outside Assumption 1\(c\)", regex=True).all()
    assert "saturated attention" in out[out["class"] == 1].why.iloc[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        short = train(own, eta_y=2.0, eta_z=1.0, seeds=1, steps=20, T=4, batch=1)
        why = short.predict().compare(short).why
    assert why.str.contains("short sequences (T=4 < M=40", regex=False).all()
    assert why.str.contains("batch 1 (noisy SGD", regex=False).all()


# Trip 4 (wording): ties shown in the ranking; the summary line of a saturated run

def test_ranking_text_shows_ties(hot):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pred = hot.predict()
    assert pred.ranking_text[0] == "8=9 > 7 > 6 > 4=5"
    assert pred.ranking[0].tolist() == [8, 9, 7, 6, 4, 5]                # the arrays are unchanged


# Trip 3: an edited setting in a record is refused; the hint names the folder read

@pytest.fixture()
def saved(own, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = train(own, eta_y=2.0, eta_z=1.0, seeds=1, steps=5)
    res.save(tmp_path / "grid", "mine")
    return tmp_path / "grid"


def test_record_hash_refuses_an_edited_setting(saved):
    p = saved / "mine.provenance.json"
    rec = json.loads(p.read_text())
    assert rec[provenance.RECORD_HASH] == provenance.record_digest(rec)
    read_results(saved, paper=False)                                     # as written: reads
    rec["settings"]["steps"] = 100 if rec["settings"].get("steps") != 100 else 50
    p.write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
    with pytest.raises(ValueError, match=r"mine\.provenance\.json was edited after it was written: its record_sha256"):
        read_results(saved, paper=False)


def test_regenerate_hint_names_the_folder_read():
    rec = {"figure": "fig6", "command": "python -m scansnap reproduce fig6 --out ../work/grid --steps 50"}
    hint = provenance.remake(rec, Path("copied"))
    assert f"--out {Path('copied').resolve()}" in hint and "../work/grid" not in hint
    assert "--out ../work/grid" in provenance.remake(rec)                 # no folder: as recorded
    rec["command"] = "python -m scansnap reproduce fig6 --out=../work/grid"
    assert f"--out={Path('copied').resolve()}" in provenance.remake(rec, "copied")


def test_shipped_records_carry_and_match_their_hash():
    folder = Path(provenance.__file__).parent / "results"
    for p in sorted(folder.glob("*" + provenance.SUFFIX)):
        rec = json.loads(p.read_text())
        assert rec.get(provenance.RECORD_HASH) == provenance.record_digest(rec), p.name
    read_results(folder)


def test_progress_bar_says_one_vocabulary(monkeypatch):
    """Was "1 vocabularies x 5 steps"."""
    from scansnap import experiments
    descs = []

    class Stop(Exception):
        pass

    def fake_tqdm(*a, desc="", **k):
        descs.append(desc)
        raise Stop                                                       # the bar is all this test needs

    monkeypatch.setattr(experiments, "tqdm", fake_tqdm)
    for nl in ([1], [1, 3]):
        with pytest.raises(Stop):
            experiments.syn_medium_sweep(num_last=nl, eta_z=[1.0], ratio=[1.0], seeds=[1], steps=5)
    assert descs == ["Syn-Medium sweep, 1 vocabulary x 5 steps", "Syn-Medium sweep, 2 vocabularies x 5 steps"]


def test_summary_line_names_one_flag_and_its_causes(own):
    """Was "1 diverged (loss ever above 10x its start)" then "... or saturated: 1": one run, read as two."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = train(own, eta_y=[1e8, 2.0], eta_z=1.0, seeds=1, steps=5)
    text = repr(res)
    assert "1 flagged (diverged or saturated, see .diverged)" in text
    assert "of them 0 diverged (loss ever above 10x its start), 1 saturated (loss exactly 0 within 2 steps)" in text
    assert "or saturated:" not in text
