"""Issue 27, the researcher's last trips (review/researcher6_report.md, brief fix27g): each test
failed before its fix.

1. The command line's tqdm bars flooded a log or a pipe with carriage-return frames.
2. A saved TrainResult could not be read back as a result (``TrainResult.load``).
3. compare() had the theory's t0_steps but no observed transition step beside it.
4. An edited record was refused as "edited" without saying which field.
5. README: the CSVs' line endings and the hash; the quickstart shows compare()'s margin.
6. lm.replay re-ran an edited record before saying it was edited.
"""
from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from scansnap import TrainResult, provenance, sequence_classes, syn_medium, syn_small, train
from scansnap.experiments import read_results

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


# ---------------------------------------------------------------------------------------
# 1. Progress bars: on a terminal only, unless SCANSNAP_PROGRESS says otherwise
# ---------------------------------------------------------------------------------------

class _Tty(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("env, tty, want", [(None, False, False), (None, True, True), ("1", False, True),
                                            ("0", True, False), ("yes", False, False)])
def test_command_line_bars_follow_the_terminal_or_the_variable(monkeypatch, env, tty, want):
    from scansnap import __main__ as cli
    if env is None:
        monkeypatch.delenv("SCANSNAP_PROGRESS", raising=False)
    else:
        monkeypatch.setenv("SCANSNAP_PROGRESS", env)
    monkeypatch.setattr(sys, "stderr", _Tty() if tty else io.StringIO())
    assert cli._bar() is want


def _cli(tmp_path, progress):
    env = {k: v for k, v in os.environ.items() if k != "SCANSNAP_PROGRESS"}
    if progress is not None:
        env["SCANSNAP_PROGRESS"] = progress
    return subprocess.run([sys.executable, "-m", "scansnap", "reproduce", "fig6", "--num-last", "1", "--eta-z", "1",
                           "--ratio", "1", "--seeds", "1", "--batch", "4", "--T", "8", "--steps", "3",
                           "--device", "cpu", "--out", str(tmp_path)], capture_output=True,
                          env=dict(env, OMP_NUM_THREADS="1"), timeout=300)   # bytes: text=True reads \r as \n


def test_a_piped_run_draws_no_bar_unless_asked(tmp_path):
    quiet = _cli(tmp_path / "a", None)
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == b"" and b"fig6: wrote" in quiet.stdout, quiet.stderr   # no frames; the line stays
    loud = _cli(tmp_path / "b", "1")
    assert loud.returncode == 0 and b"Syn-Medium sweep" in loud.stderr and b"\r" in loud.stderr, loud.stderr


def test_help_and_readme_say_how_to_force_the_bars(capsys):
    from scansnap.__main__ import main
    with pytest.raises(SystemExit):
        main(["reproduce", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "SCANSNAP_PROGRESS=1" in out and "only when it is a terminal" in out
    assert "SCANSNAP_PROGRESS=1" in README and "SCANSNAP_PROGRESS=0" in README


# ---------------------------------------------------------------------------------------
# 2. TrainResult.load, the inverse of save
# ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def own():
    return sequence_classes(K=3, M=40, num_common=5, num_distinct=8)


@pytest.fixture(scope="module")
def run(own):
    return train(own, eta_y=[1.0, 5.0, 1.0], eta_z=[1.0, 1.0, 2.0], seeds=[0, 0, 1], steps=20,
                 snapshot_steps=[0, 5, 10, 20])


def test_load_returns_the_saved_result(run, tmp_path):
    run.save(tmp_path, "mine")
    train(syn_small(), steps=2).save(tmp_path, "other")                # another set beside it
    back = TrainResult.load(str(tmp_path), "mine")
    assert np.array_equal(back.loss, run.loss) and back.loss.dtype == run.loss.dtype
    assert torch.equal(back.Y, run.Y) and torch.equal(back.Z, run.Z)
    assert sorted(back.snapshots) == [0, 5, 10, 20]
    assert all(torch.equal(back.snapshots[s], run.snapshots[s]) for s in run.snapshots)
    for k in ("eta_y", "eta_z", "seed", "diverged"):
        assert np.array_equal(getattr(back, k), getattr(run, k)), k
    assert back.seed.dtype == run.seed.dtype and back.diverged.dtype == bool
    assert back.config == run.config
    assert np.array_equal(back.classes.probs, run.classes.probs)
    assert np.array_equal(back.classes.query, run.classes.query)
    assert back.seconds == pytest.approx(run.seconds, abs=1e-3)
    # what a result is for: the same readings, the same prediction and comparison
    np.testing.assert_array_equal(back.attention(10), run.attention(10))
    np.testing.assert_array_equal(back.distinct_entropy(), run.distinct_entropy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b = run.predict().compare(run), back.predict().compare(back)
    assert a.equals(b)
    assert "not saved" in TrainResult.load.__doc__.lower() and "optimiser's state" in TrainResult.load.__doc__


def test_load_refuses_an_edited_or_missing_file_by_name(run, tmp_path):
    run.save(tmp_path / "s", "mine")
    for f in ("mine_loss.csv", "mine_weights.npz"):
        e = tmp_path / f"edited-{f}"
        shutil.copytree(tmp_path / "s", e)
        p = e / f
        data = bytearray(p.read_bytes())
        data[-3] ^= 1
        p.write_bytes(bytes(data))
        with pytest.raises(ValueError, match=rf"{re.escape(f)} is not the file its provenance \(mine\.provenance"
                                             r"\.json\) describes.*re-run the code that saved it"):
            TrainResult.load(e, "mine")
    (tmp_path / "s" / "mine_weights.npz").unlink()
    with pytest.raises(ValueError, match=r"mine_weights\.npz is missing, though its record mine\.provenance\.json"):
        TrainResult.load(tmp_path / "s", "mine")
    with pytest.raises(ValueError, match=r"holds no saved result 'nope' \(no nope\.provenance\.json; "
                                         r"mine\.provenance\.json there\)"):
        TrainResult.load(tmp_path / "s", "nope")


def test_save_lists_the_weights_and_read_results_checks_them(run, tmp_path):
    paths = run.save(tmp_path, "w")
    assert [p.name for p in paths] == ["w.csv", "w_classes.csv", "w_loss.csv", "w_attention.csv", "w_weights.npz",
                                       "w.provenance.json"]
    rec = json.loads((tmp_path / "w.provenance.json").read_text())
    assert rec["files"]["w_weights.npz"] == provenance.sha256(tmp_path / "w_weights.npz")
    read_results(tmp_path, paper=False)
    (tmp_path / "w_weights.npz").write_bytes(b"not the weights")
    with pytest.raises(ValueError, match=r"w_weights\.npz is not the file its provenance"):
        read_results(tmp_path, paper=False)


# ---------------------------------------------------------------------------------------
# 3. compare(): the observed transition step beside t0_steps
# ---------------------------------------------------------------------------------------

def test_compare_has_the_observed_transition_step_beside_t0(own):
    from scansnap.metrics import transition_step
    r = train(own, eta_y=[2.0, 10.0], eta_z=2.0, seeds=1, steps=30, snapshot_steps=range(31))
    cmp = r.predict().compare(r)
    cols = list(cmp.columns)
    assert cols[cols.index("t0_steps") + 1] == "transition_step"
    by_hand = [1 + np.argmin(np.diff([r.common_mass(s)[i].mean() for s in range(31)])) for i in range(2)]
    assert transition_step(r).tolist() == by_hand
    assert cmp.groupby("run")["transition_step"].first().tolist() == by_hand
    # fewer snapshots: the end of the interval of the steepest fall (an upper bound); none: NaN
    sparse = r.select([0])
    sparse.snapshots = {s: z for s, z in sparse.snapshots.items() if s in (0, 10, 20, 30)}
    assert transition_step(sparse)[0] == 10 * np.ceil(by_hand[0] / 10)
    sparse.snapshots = {}
    assert np.isnan(transition_step(sparse)[0])
    doc = " ".join(type(r.predict()).compare.__doc__.split())
    assert "``transition_step`` (observed on the run" in doc


def test_transition_step_is_within_2x_of_t0_at_the_papers_settings():
    """Fig. 4 (Syn-Small, eta_Y = eta_Z = 1, batch 128, T 128, SGD momentum 0.9) and the paper's
    Syn-Medium rates (eta_Z 0.5-3, eta_Y/eta_Z 1-10) at num_last = 5."""
    from scansnap import lr_grid
    fig4 = train(syn_small(), eta_y=1.0, eta_z=1.0, seeds=[1, 2, 3], steps=100, snapshot_steps=range(101))
    cmp = fig4.predict().compare(fig4)
    ratio = cmp.transition_step / cmp.t0_steps
    assert ((0.5 <= ratio) & (ratio <= 2)).all(), ratio.tolist()
    ey, ez, sd = lr_grid(eta_z=[0.5, 1.0, 2.0, 3.0], ratio=[1, 2, 5, 10], seeds=[1])
    med = train(syn_medium(5), eta_y=ey, eta_z=ez, seeds=sd, steps=60, snapshot_steps=range(61))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                # some of these rates are outside 1(c): a RegimeWarning
        cmp = med.predict().compare(med)
    ratio = cmp.transition_step / cmp.t0_steps
    assert ((0.5 <= ratio) & (ratio <= 2)).all(), sorted(set(np.round(ratio, 2)))


# ---------------------------------------------------------------------------------------
# 4. An edited record names the field(s) that differ
# ---------------------------------------------------------------------------------------

def _edit(path, **changes):
    rec = json.loads(path.read_text())
    rec["settings"].update(changes)
    path.write_text(json.dumps(rec))


def test_an_edited_saved_record_names_its_field(run, tmp_path):
    run.save(tmp_path / "a", "mine")
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    _edit(tmp_path / "a" / "mine.provenance.json", steps=100)          # the CSVs say 20
    with pytest.raises(ValueError, match=r"settings\.steps: the record says 100, mine_loss\.csv has 20 steps"):
        TrainResult.load(tmp_path / "a", "mine")
    with pytest.raises(ValueError, match=r"was edited after it was written.*settings\.steps: the record says 100"):
        read_results(tmp_path / "a", paper=False)
    _edit(tmp_path / "b" / "mine.provenance.json", batch=64)           # no CSV says it: found by its hash
    with pytest.raises(ValueError, match=r"changed: settings\.batch: the record says 64, it was written with 128"):
        TrainResult.load(tmp_path / "b", "mine")


def test_an_edited_figure_record_names_its_field(tmp_path):
    from scansnap.__main__ import main
    assert main(["reproduce", "fig6", "--num-last", "1", "--eta-z", "1", "--ratio", "1", "--seeds", "1",
                 "--batch", "4", "--T", "8", "--steps", "3", "--device", "cpu", "--out", str(tmp_path)]) == 0
    _edit(tmp_path / "fig6.provenance.json", batch=128)                # made with --batch 4 (its note says so)
    with pytest.raises(ValueError, match=r"changed: settings\.batch: the record says 128, it was written with 4"):
        read_results(tmp_path, paper=False)


# ---------------------------------------------------------------------------------------
# 5. README: line endings and the hash; the quickstart's margin; the quickstart is help(scansnap)'s
# ---------------------------------------------------------------------------------------

def test_readme_says_how_csvs_are_hashed_and_it_holds(run, tmp_path):
    flat = " ".join(README.split())
    assert "CRLF line ends" in flat and "byte for byte" in flat
    run.save(tmp_path, "mine")
    p = tmp_path / "mine_loss.csv"
    raw = p.read_bytes()
    assert raw.count(b"\r\n") == raw.count(b"\n")                       # written with CRLF, as the README says
    p.write_bytes(raw.replace(b"\r\n", b"\n"))                          # dos2unix: another file, refused
    with pytest.raises(ValueError, match=r"mine_loss\.csv is not the file its provenance"):
        read_results(tmp_path, paper=False)


def test_quickstart_shows_the_margin_and_load():
    import scansnap
    start = README.index("## Quickstart: your own experiment")
    quick = README[start:README.index("\n## ", start + 3)]
    assert '"margin"' in quick and "TrainResult.load(" in quick
    assert '"margin"' in scansnap.__doc__ and "TrainResult.load(" in scansnap.__doc__


# ---------------------------------------------------------------------------------------
# 6. lm.replay checks the record's hash before it trains
# ---------------------------------------------------------------------------------------

def test_replay_refuses_an_edited_record_before_training(tmp_path, monkeypatch):
    from scansnap import lm
    from scansnap.wikitext import Vocab
    words = ("the cat sat on the mat . the dog sat on the log . " * 20).split()
    vocab = Vocab.build(words, min_freq=2)
    ids = vocab.encode(words)
    lm.train_lm(ids, len(vocab), steps=2, d=8, d_hidden=8, batch=2, bptt=4, progress=False).save(tmp_path, "lm")
    _edit(tmp_path / "lm.provenance.json", lr=4.0)                    # train_lm's default lr is 5
    import functools

    @functools.wraps(lm.train_lm)
    def spy(*a, **k):
        pytest.fail("replay trained an edited record")
    monkeypatch.setattr(lm, "train_lm", spy)
    with pytest.raises(ValueError, match=r"lm\.provenance\.json was edited after it was written.*"
                                         r"settings\.lr: the record says 4\.0, it was written with 5"):
        lm.replay(tmp_path, ids)
