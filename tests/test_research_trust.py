"""Issue 27, a third researcher's trips: the package flags what is off without reading every column.

(1) a run that blew up and then read loss 0 is diverged, in train() and the command line alike;
(2) replay() checks the replayed loss against the saved, hashed loss CSV; (3) compare() gives a
verdict on magnitudes and warns on init="default"; (4) a listed file that is missing is an error;
(5) a torchrun run records how to re-run it; (6) the README and help(scansnap) say what the
objects are."""
import json
import sys
import warnings

import numpy as np
import pytest
import torch

import scansnap
from scansnap import sequence_classes, syn_medium, train
from scansnap.train import DivergenceWarning


@pytest.fixture(scope="module")
def classes():
    return sequence_classes(K=4, M=50, queries=2, num_common=3, num_distinct=6, common_weight=2.0,
                            distinct_weights=[1, 1, 0.5, 0.3, 0.2, 0.1])


# ---------------------------------------------------------------------------------------
# (1) a loss that jumps to 3.9e7 and then reads exactly 0 is a divergence, not a snap
# ---------------------------------------------------------------------------------------

def test_a_run_that_blew_up_then_read_zero_is_diverged(classes):
    """Was "0 diverged": the loss 3.9 -> 3.9e7 -> 0.0, |Z| ~ 7e13 (the softmax saturated)."""
    with pytest.warns(DivergenceWarning, match=r"2 of 2 runs diverged \(loss above 10 x max\(initial loss, ln M\) "
                                               r"at some step") as w:
        res = train(classes, eta_y=[1e9, 1e4], eta_z=1e6, seeds=[1, 2], steps=20)
    assert res.loss[0, 1] > 1e6 and res.loss[0, -1] == 0.0           # the history the researcher saw
    np.testing.assert_array_equal(res.diverged, [True, True])
    assert "run 0 (eta_y=1e+09, eta_z=1e+06, seed=1) from step 1" in str(w[0].message)
    assert "2 diverged (loss ever above 10x its start)" in repr(res)
    assert res.to_frame()["diverged"].all()
    # the command line reads the same flag: one rule
    from scansnap.__main__ import _refuse_diverged
    with pytest.raises(FloatingPointError, match=r"2 run\(s\) of the sweep diverged or saturated"):
        _refuse_diverged({2: (classes, res)})
    # and a comparison with the theory refuses them, naming what to do
    with pytest.raises(ValueError, match=r"run\(s\) 0, 1 of the result diverged .*result\.select\(~result\.diverged\)"):
        res.predict().compare(res)


def test_the_books_largest_rates_are_not_diverged():
    """Fig. 6's corner (eta_Z = 3, ratio 10: eta_Y = 30, momentum 0.9, init 'default') over the
    paper's 100 steps, and Syn-Medium at eta 10: the loss never rises above its start."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DivergenceWarning)
        res = train(syn_medium(1), eta_y=[30.0, 10.0, 1.0], eta_z=[3.0, 10.0, 0.5], seeds=1, steps=100,
                    init="default", path="support")
    assert not res.diverged.any()
    assert res.loss.max() <= 1.01 * np.maximum(res.loss[:, 0], np.log(res.Z.shape[-1])).max()


# ---------------------------------------------------------------------------------------
# (2) replay: the replayed loss against the saved, hashed one
# ---------------------------------------------------------------------------------------

def test_replay_reproduces_the_saved_loss(saved_lm):
    from scansnap.lm import replay
    d, ids, own = saved_lm
    again = replay(d, ids, probe=ids[:6])
    np.testing.assert_array_equal(again.loss, own.loss)


def test_replay_of_an_edited_record_names_both_losses(saved_lm, tmp_path):
    """Was: lr 5 -> 4 in the record re-ran a different experiment without a word."""
    import shutil

    from scansnap.lm import replay
    d, ids, own = saved_lm
    e = tmp_path / "edited"
    shutil.copytree(d, e)
    rec = json.loads((e / "lm.provenance.json").read_text())
    rec["settings"]["lr"] = rec["settings"]["lr"] - 1
    (e / "lm.provenance.json").write_text(json.dumps(rec))
    with pytest.raises(ValueError, match=r"was edited after it was written.*settings\.lr: the record says 4\.0, it was "
                                         r"written with 5"):
        replay(e, ids, probe=ids[:6])                   # the record's own hash first, before any training
    from scansnap import provenance
    rec[provenance.RECORD_HASH] = provenance.record_digest(rec)   # edited and rehashed: the loss check catches it
    (e / "lm.provenance.json").write_text(json.dumps(rec))
    with pytest.raises(ValueError, match=r"the replayed loss is not the saved one: at step 1 replayed [0-9.]+, "
                                         rf"saved {own.loss[1]:.10g} in .*lm_loss\.csv \(sha256 checked") as e_info:
        replay(e, ids, probe=ids[:6])
    assert "'lr': 4.0" in str(e_info.value) and "rtol=0" in str(e_info.value)
    # a loose tolerance accepts it (another machine); a bad one is named
    assert replay(e, ids, probe=ids[:6], rtol=10.0).config["lr"] == 4.0
    with pytest.raises(ValueError, match=r"rtol must be a finite number >= 0, got -1\.0"):
        replay(e, ids, probe=ids[:6], rtol=-1)


def test_replay_refuses_an_edited_or_missing_loss_csv(saved_lm, tmp_path):
    import shutil

    from scansnap.lm import replay
    d, ids, _ = saved_lm
    e = tmp_path / "edited"
    shutil.copytree(d, e)
    rows = (e / "lm_loss.csv").read_text().splitlines()
    (e / "lm_loss.csv").write_text("\n".join(rows[:-1]) + "\n")
    with pytest.raises(ValueError, match=r"lm_loss\.csv is not the file its provenance \(lm\.provenance\.json\) describes"):
        replay(e, ids, probe=ids[:6])
    (e / "lm_loss.csv").unlink()
    with pytest.raises(ValueError, match=r"lm_loss\.csv is missing, though .*lm\.provenance\.json lists it"):
        replay(e, ids, probe=ids[:6])


# ---------------------------------------------------------------------------------------
# (3) compare: a verdict on magnitudes; a warning for init="default"
# ---------------------------------------------------------------------------------------

def test_compare_says_when_magnitudes_do_not_agree(classes):
    """eta_Y = 30, eta_Z = 0.7: every top token as predicted, rank correlation 1, yet a class's
    common mass 0.002 against 0.342 predicted. `agrees` says no; the slow runs agree."""
    from scansnap.theory import COMMON_MASS_TOLERANCE, ENTROPY_TOLERANCE
    res = train(classes, eta_y=[0.3, 3.0, 30.0], eta_z=0.7, seeds=[11, 12, 13], steps=40)
    cmp = res.predict().compare(res)
    for col in ("entropy_ok", "common_mass_ok", "agrees"):
        assert cmp[col].dtype == bool
    fast = cmp[cmp.run == 2]
    assert fast.top_as_predicted.all() and not fast.agrees.all()
    gap = (fast.common_mass - fast.predicted_common_mass).abs()
    np.testing.assert_array_equal(fast.common_mass_ok, gap <= COMMON_MASS_TOLERANCE)
    assert cmp[cmp.run < 2].agrees.all()
    strict = res.predict().compare(res, entropy_tol=1e-6, common_mass_tol=1e-6)
    assert not strict.agrees.any() and strict.top_as_predicted.equals(cmp.top_as_predicted)
    doc = " ".join(type(res.predict()).compare.__doc__.split())
    assert "``agrees``" in doc and "0.002 against a predicted 0.342" in doc
    assert ENTROPY_TOLERANCE == 0.2 and COMMON_MASS_TOLERANCE == 0.15


def test_compare_warns_on_a_random_start(classes):
    from scansnap.theory import InitWarning
    res = train(classes, eta_y=1.0, eta_z=1.0, seeds=[0], steps=5, init="default")
    with pytest.warns(InitWarning, match=r"trained with init='default'; the theory starts at Y = Z = 0"):
        res.predict().compare(res)
    zero = train(classes, eta_y=1.0, eta_z=1.0, seeds=[0], steps=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", InitWarning)
        zero.predict().compare(zero)


# ---------------------------------------------------------------------------------------
# (4) a file a record lists that is missing is an error, a PNG too
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("paper", [False, True])
def test_a_listed_png_that_is_missing_is_named_with_its_command(tmp_path, paper, capsys):
    from scansnap.__main__ import main
    from scansnap.experiments import read_results
    out = tmp_path / "out"
    assert main(["reproduce", "fig3", "--out", str(out), "--device", "cpu"]) == 0
    rec = json.loads((out / "fig3.provenance.json").read_text())
    pngs = [f for f in rec["files"] if f.endswith(".png")]
    assert pngs
    read_results(out, paper=paper)                       # complete: read
    (out / pngs[0]).unlink()
    with pytest.raises(ValueError, match=rf"{pngs[0]} is missing, though its record fig3\.provenance\.json lists it: "
                                         r"an incomplete set; regenerate with the command that made it: "
                                         r"`python -m scansnap reproduce fig3 --out "):
        read_results(out, paper=paper)


# ---------------------------------------------------------------------------------------
# (5) torchrun: the record names the launcher and the command that re-runs it
# ---------------------------------------------------------------------------------------

def test_a_torchrun_record_names_the_launcher_and_its_command():
    from scansnap.distributed import World
    from scansnap.provenance import remake
    w = World(rank=0, size=2, local_rank=0, backend="gloo")
    env = {"LOCAL_WORLD_SIZE": "2", "GROUP_WORLD_SIZE": "1", "TORCHELASTIC_RUN_ID": "x"}
    r = w.record(["reproduce", "fig6", "--out", "my grid"], env)
    assert r["launcher"] == "torchrun --standalone --nproc_per_node 2"
    assert r["command"] == "torchrun --standalone --nproc_per_node 2 -m scansnap reproduce fig6 --out 'my grid'"
    assert r["world_size"] == 2 and r["backend"] == "gloo"
    assert "`torchrun --standalone --nproc_per_node 2 -m scansnap reproduce fig6" in remake(r)
    multi = World(rank=0, size=8, local_rank=0, backend="nccl").record(["reproduce", "fig6"],
                                                                       {"LOCAL_WORLD_SIZE": "4", "GROUP_WORLD_SIZE": "2"})
    assert multi["launcher"] == "torchrun --nnodes 2 --nproc_per_node 4"


# ---------------------------------------------------------------------------------------
# (6) what the README and help(scansnap) say the objects are
# ---------------------------------------------------------------------------------------

def test_readme_says_encode_gives_a_long_tensor_of_the_printed_shape():
    from pathlib import Path

    from scansnap.wikitext import Vocab
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    line = next(l for l in readme.splitlines() if l.startswith("ids = vocab.encode(words)"))
    assert "torch.LongTensor of shape (562,)" in line
    words = ("the cat sat on the mat . the dog sat on the log . " * 40 + "a zebra").split()
    ids = Vocab.build(words, min_freq=2).encode(words)
    assert isinstance(ids, torch.Tensor) and ids.dtype == torch.int64 and tuple(ids.shape) == (562,)


def test_help_says_scansnap_train_is_the_function_and_where_the_module_is():
    import scansnap.train as t
    assert callable(t) and not isinstance(t, type(sys))          # what the note says
    assert isinstance(sys.modules["scansnap.train"], type(sys))
    doc = " ".join(scansnap.__doc__.split())
    assert "``scansnap.train`` is the function" in doc and 'help(sys.modules["scansnap.train"])' in doc
