"""The package as a research tool (issue 27): results that explain themselves, theory on the
optimiser's clock, per-class metrics, results read back, grids from the command line, docs."""
import json
import pydoc
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
import torch

import scansnap
from scansnap import metrics, theory as th
from scansnap.data import ClassLayoutWarning, SequenceClasses, make_classes, sequence_classes, syn_small
from scansnap.experiments import INTEGER_COLUMNS, load_csv, read_results
from scansnap.train import TrainResult, train


@pytest.fixture(scope="module")
def run():
    return train(syn_small(), eta_y=[1.0, 10.0, 1.0], eta_z=1.0, seeds=[0, 0, 1], steps=40,
                 snapshot_steps=[0, 20, 40])


# ---------------------------------------------------------------------------------------
# Results that explain themselves
# ---------------------------------------------------------------------------------------

def test_train_result_repr_is_short_and_names_the_shapes(run):
    r = repr(run)
    assert len(r) < 400 and max(len(line) for line in r.splitlines()) <= 80   # fits a book column
    assert r.startswith("TrainResult: 3 runs x 40 steps of sgd (momentum 0.9), init 'zero', K=2, M=34")
    assert "loss (3, 40); Y, Z (3, 34, 34)" in r and "snapshots {step: Z} at [0, 20, 40]" in r
    doc = TrainResult.__doc__
    for says in ("``loss``: (R, steps)", "*before* update s", "{step: (R, M, M) Z", ":meth:`attention` (R, K, M)"):
        assert says in doc


def test_attention_and_metrics_methods(run):
    c = run.attention()
    assert c.shape == (3, 2, 34)
    np.testing.assert_allclose(c.sum(-1), 1, atol=1e-12)
    np.testing.assert_allclose(c, th.attention_limit_all(syn_small(), run.Z.numpy()), rtol=1e-12)
    np.testing.assert_allclose(run.attention(20), th.attention_limit_all(syn_small(), run.snapshots[20].numpy()))
    np.testing.assert_allclose(run.class_entropy().mean(1), run.distinct_entropy(), rtol=1e-10)
    assert run.class_entropy("support").shape == (3, 2)
    assert np.all(run.class_entropy("support") > run.class_entropy())   # more tokens, more entropy here
    np.testing.assert_allclose(run.common_mass(0), 20 / 31, rtol=1e-12)  # at Z = 0: the common tokens' share of P
    assert np.all(run.common_mass() < 20 / 31)                          # the scan moves attention off them
    with pytest.raises(ValueError, match=r"no snapshot at step 7: this result has snapshots at \[0, 20, 40\]"):
        run.attention(7)


def test_to_frame_per_run_and_per_class(run):
    df = run.to_frame()
    assert isinstance(df, pd.DataFrame) and len(df) == 3
    assert list(df.columns) == ["run", "eta_y", "eta_z", "seed", "loss_first", "loss_last", "diverged",
                                "distinct_entropy", "support_entropy", "common_mass"]
    np.testing.assert_allclose(df["distinct_entropy"], run.distinct_entropy())
    np.testing.assert_allclose(df["loss_last"], run.loss[:, -1])
    dc = run.to_frame("class")
    assert len(dc) == 6 and list(dc["class"]) == [0, 1] * 3 and list(dc["seed"]) == [0, 0, 0, 0, 1, 1]
    np.testing.assert_allclose(dc["common_mass"], run.common_mass().ravel())
    with pytest.raises(ValueError, match="per must be 'run' or 'class'"):
        run.to_frame("token")


def test_select_and_concat_give_the_runs_back(run):
    a, b = run.select([2]), run.select([0, 1])
    both = TrainResult.concat([b, a])
    np.testing.assert_array_equal(both.loss, run.loss)
    torch.testing.assert_close(both.snapshots[20], run.snapshots[20])
    assert both.classes is run.classes and list(both.seed) == [0, 0, 1]
    with pytest.raises(ValueError, match="differ in their settings"):
        TrainResult.concat([run, train(syn_small(), steps=3)])


def test_save_writes_an_atomic_set_that_reads_back(run, tmp_path):
    paths = run.save(str(tmp_path / "out"), "mine")
    assert [p.name for p in paths] == ["mine.csv", "mine_classes.csv", "mine_loss.csv", "mine_attention.csv",
                                       "mine.provenance.json"]
    back = read_results(tmp_path / "out", paper=False)
    np.testing.assert_allclose(back["mine"]["distinct_entropy"], run.distinct_entropy(), rtol=1e-9)
    assert back["mine"]["seed"].dtype == np.int64 and back["mine_loss"]["step"].dtype == np.int64
    loss = back["mine_loss"]
    np.testing.assert_allclose(loss["loss"].reshape(3, 40), run.loss, rtol=1e-9)
    att = back["mine_attention"]
    sel = (att["run"] == 1) & (att["step"] == 20) & (att["class"] == 0)
    np.testing.assert_allclose(att["c"][sel], run.attention(20)[1, 0, syn_small().support(0)], rtol=1e-9)
    rec = json.loads((tmp_path / "out" / "mine.provenance.json").read_text())
    assert rec["command"] == "python: TrainResult.save('mine')"
    assert rec["settings"]["eta_y"] == [1.0, 10.0, 1.0] and rec["settings"]["classes"]["M"] == 34
    with pytest.raises(ValueError, match="not one of the paper's figures .* paper=False"):
        read_results(tmp_path / "out")
    (tmp_path / "out" / "mine_loss.csv").write_text("run,step,loss\n0,0,1\n")
    with pytest.raises(ValueError, match="mine_loss.csv is not the file its provenance"):
        read_results(tmp_path / "out", paper=False)
    with pytest.raises(ValueError, match="name must be a plain file stem"):
        run.save(tmp_path, "../x")


def test_read_results_takes_a_str_and_refuses_a_missing_folder(tmp_path):
    got = read_results(str(scansnap.experiments.__file__).replace("experiments.py", "results"))
    assert got["fig6"]["seed"].dtype == np.int64 and got["fig6"]["entropy"].dtype == np.float64
    with pytest.raises(FileNotFoundError, match="no results folder"):
        read_results(tmp_path / "nowhere")


def test_integer_columns_stay_integers(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("seed,ratio,step,token\n1,2,3,4\n5,10,6,7\n")
    t = load_csv(p)
    assert [t[k].dtype.kind for k in ("seed", "ratio", "step", "token")] == ["i", "f", "i", "i"]
    p.write_text("seed,step\n1,2.5\n")
    assert load_csv(p)["step"].dtype.kind == "f"          # not a whole number: kept as it is
    assert {"seed", "num_last", "step", "token"} <= INTEGER_COLUMNS and "ratio" not in INTEGER_COLUMNS


def test_lm_result_is_documented_and_its_maps_are_forwards():
    from scansnap.lm import LMResult, train_lm, wikitext_data
    from scansnap.model import EmbeddingTransformer
    tr, va, vocab = wikitext_data()
    res = train_lm(tr, len(vocab), steps=3, d=32, d_hidden=32, heads=2, probe=va[:12], snapshot_steps=[0, 3])
    assert repr(res).startswith("LMResult: 1-layer, 2 heads, lr 5, seed 0, 3 steps") and len(repr(res)) < 300
    assert "per layer (2, 12, 12)" in repr(res)
    assert res.attention(3, head=1).shape == (12, 12)
    res.model.eval()
    with torch.no_grad():
        _, maps = res.model(va[:12][None])
    assert maps[0].shape == (1, 2, 12, 12) and res.snapshots[3][0].shape == (2, 12, 12)
    torch.testing.assert_close(res.snapshots[3][0], maps[0][0])
    assert 0 < res.attention_entropy(3) < np.log(12)
    assert list(res.to_frame().columns) == ["step", "loss", "entropy"]
    for says in ("``loss``: (steps,)", "list of ``layers`` tensors (heads, T, T)"):
        assert says in LMResult.__doc__
    assert "(B, heads, T, T)" in EmbeddingTransformer.forward.__doc__
    assert "``max_len``" in EmbeddingTransformer.__init__.__doc__
    with pytest.raises(ValueError, match="head 2 out of range"):
        res.attention(3, head=2)


def test_wikitext_data_is_found_from_lm_and_wikitext():
    import scansnap.lm
    import scansnap.wikitext
    a, b = scansnap.lm.wikitext_data(), scansnap.wikitext.wikitext_data()
    assert torch.equal(a[0], b[0]) and len(a[2]) == len(b[2])
    assert "wikitext_data" in scansnap.wikitext.__doc__ and "wikitext_data" in scansnap.lm.__doc__


def test_train_lm_progress_shows_in_a_terminal_only(monkeypatch):
    from scansnap.lm import _progress

    class Tty:
        def __init__(self, tty):
            self.tty = tty

        def isatty(self):
            return self.tty
    monkeypatch.setattr(sys, "stderr", Tty(True))
    assert _progress(None) is True and _progress(False) is False
    monkeypatch.setattr(sys, "stderr", Tty(False))
    assert _progress(None) is False and _progress(True) is True
    import inspect
    from scansnap.lm import train_lm
    assert inspect.signature(train_lm).parameters["progress"].default is None
    assert "1,500 steps take" in train_lm.__doc__


# ---------------------------------------------------------------------------------------
# Theory on the optimiser's clock
# ---------------------------------------------------------------------------------------

def test_transition_time_on_both_clocks():
    t0 = th.transition_time(34, 2, 1.0)
    assert abs(t0 - 20.528) < 1e-3                                    # gradient-flow time, as before
    assert th.transition_time(34, 2, 1.0, momentum=0) == pytest.approx(t0, rel=1e-12)
    s = th.transition_time(34, 2, 1.0, momentum=0.9)
    assert s == pytest.approx(float(th.momentum_clock_steps(t0, 0.9)), rel=1e-12) and abs(s - 6.517) < 1e-3
    assert th.momentum_clock(np.floor(s), 0.9) <= t0 <= th.momentum_clock(np.ceil(s), 0.9)   # between steps 6 and 7
    with pytest.raises(ValueError, match="momentum"):
        th.transition_time(34, 2, 1.0, momentum=1.0)


def test_predict_returns_what_a_run_is_compared_with(run):
    c = syn_small()
    p = th.predict(c, eta_y=[1.0, 10.0, 1.0], eta_z=1.0, steps=40, snapshot_steps=[20])
    np.testing.assert_allclose(p.t0, [th.transition_time(34, 2, e) for e in (1, 10, 1)])
    np.testing.assert_allclose(p.t0_steps, [th.transition_time(34, 2, e, momentum=0.9) for e in (1, 10, 1)])
    assert [list(r) for r in p.ranking] == [list(range(19, 9, -1)), list(range(29, 19, -1))]   # by P(l|n)
    pop = th.population_sgd(c, [1.0, 10.0], 1.0, 40, 0.9)
    np.testing.assert_allclose(p.attention[:2], th.attention_limit_all(c, pop.Z), rtol=1e-12)
    np.testing.assert_allclose(p.attention[2], p.attention[0])         # same rates, same prediction
    assert p.attention.shape == (3, 2, 34) and p.snapshots[20].shape == (3, 2, 34) and p.loss.shape == (3, 40)
    assert repr(p).startswith("Prediction: 3 runs, K=2, M=34, 40 steps of SGD with momentum 0.9")
    assert "winners (class: token) 0: 19, 1: 29" in repr(p) and max(map(len, repr(p).splitlines())) <= 80
    cmp = run.predict().compare(run)
    assert len(cmp) == 6
    assert (cmp["top_token"] == cmp["predicted_top"]).all() and (cmp["rank_correlation"] > 0.9).all()
    gap = np.abs(cmp["common_mass"] - cmp["predicted_common_mass"])
    assert gap.max() < 0.05 and gap.mean() < 0.025            # sampling noise only (batch 128, T 128)
    with pytest.raises(ValueError, match="at step 20, the prediction at step 40"):
        run.predict().compare(run, step=20)
    adam = train(c, steps=3, optimizer="adam")
    with pytest.raises(ValueError, match="SGD with LN and no residual"):
        adam.predict()


# ---------------------------------------------------------------------------------------
# Metrics per class
# ---------------------------------------------------------------------------------------

def test_class_entropy_has_no_zero_over_zero():
    c = syn_small()
    Z = np.zeros((34, 34))
    Z[c.query, :10] = 1000.0                   # the common tokens take all of c_n; the distinct underflow
    np.testing.assert_allclose(metrics.class_entropy(c, Z), 2.15128172, rtol=1e-7)   # the true value
    np.testing.assert_allclose(metrics.common_mass(c, Z), 1.0)
    assert np.all(metrics.class_entropy(c, np.zeros((34, 34)), "support") < np.log(20) + 1e-12)
    with pytest.raises(ValueError, match="over must be one of"):
        metrics.class_entropy(c, Z, over="common")
    with pytest.raises(ValueError, match="not finite at run 1"):
        metrics.common_mass(c, np.stack([Z, Z * np.nan]))


# ---------------------------------------------------------------------------------------
# Your own classes
# ---------------------------------------------------------------------------------------

def test_sequence_classes_layout_and_a_larger_vocabulary():
    c = sequence_classes(3, 40, num_common=5, num_distinct=8)
    roles = c.roles()
    assert c.K == 3 and c.M == 40 and list(roles[[0, 4, 5, 13, 28, 29, 30, 32, 33, 39]]) == [
        "common", "common", "distinct 0", "distinct 1", "distinct 2", "query", "next 0", "next 2", "unused", "unused"]
    assert np.all(c.probs[:, 33:] == 0)
    assert make_classes(2, M=40).M == 40 and np.array_equal(make_classes(2, M=40).probs[:, :34], syn_small().probs)
    two = sequence_classes(4, queries=2, num_distinct=3, distinct_weights=[1, 1, 2])
    assert list(two.query) == [22, 22, 23, 23]
    np.testing.assert_allclose(two.probs[0, 10:13], [1 / 14, 1 / 14, 2 / 14])
    with pytest.raises(ValueError, match="M = 30 is smaller than the 33 tokens this layout uses"):
        sequence_classes(2, 30)
    with pytest.raises(ValueError, match="K = 3 classes cannot share 2 query tokens"):
        sequence_classes(3, queries=2)
    with pytest.raises(ValueError, match="distinct_weights must be 10 positive numbers"):
        sequence_classes(2, distinct_weights=[1, 2])


def test_a_query_or_next_token_inside_a_context_is_warned_about():
    P = np.zeros((2, 5))
    P[:, 0] = P[0, 1] = P[1, 2] = 0.5
    with pytest.warns(ClassLayoutWarning, match="class 0's query token 2 is also a contextual token of class 1"):
        SequenceClasses(P, [2, 2], [3, 4])
    with pytest.warns(ClassLayoutWarning, match="class 1's next token 1 is also a contextual token of class 0"):
        SequenceClasses(P, [3, 3], [4, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        syn_small(), scansnap.syn_medium(10), sequence_classes(3, 50)


# ---------------------------------------------------------------------------------------
# Documentation
# ---------------------------------------------------------------------------------------

def test_help_texts():
    text = pydoc.render_doc(scansnap.theory, renderer=pydoc.plaintext)
    assert "Wright Omega" not in text and "wrightomega" not in text.lower().split("functions")[-1]
    assert "Quickstart" not in scansnap.theory.__doc__ and "quickstart" in scansnap.__doc__
    assert "sequence_classes(K=3, M=40" in pydoc.render_doc(scansnap, renderer=pydoc.plaintext)
    for says in ('``init``: ``"zero"``', '``"default"``', "nn.Linear"):
        assert says in train.__doc__


def test_the_sweeps_recorded_init_is_what_train_did(tmp_path):
    from scansnap.experiments import syn_medium_sweep
    from scansnap.provenance import settings_for
    sweep = syn_medium_sweep(num_last=(1,), eta_z=(1.0,), ratio=(1.0,), seeds=(1,), steps=2)
    assert sweep[1][1].config["init"] == settings_for("fig6")["init"] == "default"


# ---------------------------------------------------------------------------------------
# The command line's grid
# ---------------------------------------------------------------------------------------

def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "scansnap", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


def test_grid_flags_are_recorded_and_refused_as_the_papers(tmp_path):
    r = cli("reproduce", "fig6", "fig4", "--eta-z", "0.5,2", "--ratio", "1,3", "--num-last", "1,3", "--seeds", "1,2",
            "--batch", "16", "--T", "32", "--steps", "3", "--device", "cpu", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    rec = json.loads((tmp_path / "fig6.provenance.json").read_text())
    assert {k: rec["settings"][k] for k in ("eta_z", "ratio", "num_last", "batch", "T", "seeds", "steps")} == dict(
        eta_z=[0.5, 2.0], ratio=[1.0, 3.0], num_last=[1, 3], batch=16, T=32, seeds=[1, 2], steps=3)
    assert rec["world_size"] == 1
    f6 = load_csv(tmp_path / "fig6.csv")
    assert len(f6["seed"]) == 2 * 2 * 2 * 2 and set(f6["ratio"]) == {1.0, 3.0} and set(f6["num_last"]) == {1, 3}
    from scansnap.experiments import fig6
    ref = fig6(num_last=(1, 3), eta_z=(0.5, 2.0), ratio=(1.0, 3.0), seeds=(1, 2), steps=3, batch=16, T=32,
               device="cpu")
    np.testing.assert_allclose(f6["entropy"], ref["entropy"], rtol=1e-8)
    rec4 = json.loads((tmp_path / "fig4.provenance.json").read_text())
    assert rec4["settings"]["batch"] == 16 and rec4["settings"]["T"] == 32 and "eta_z" not in rec4["settings"]
    (tmp_path / "fig4.provenance.json").unlink()
    for f in ("fig4.csv", "fig4_cn.csv", "fig4_right.csv", "fig4_right_cn.csv"):
        (tmp_path / f).unlink()
    with pytest.raises(ValueError, match=r"fig6.csv was not made with the paper's settings: T=32 \(the paper's: 128\), "
                                         r"batch=16 .*eta_z=\[0.5, 2.0\] \(the paper's: \[0.5, 1, 2, 3\]\).*grid flags"):
        read_results(tmp_path)


def cli_here(capsys, *args):
    """The command line in this process (argument errors exit before anything runs): (status, stderr)."""
    from scansnap.__main__ import main
    with pytest.raises(SystemExit) as e:
        main(list(args))
    return e.value.code, capsys.readouterr().err


@pytest.mark.parametrize("args, says", [
    (["--eta-z", "0"], "argument --eta-z: must be positive numbers; got 0 in '0'"),
    (["--eta-z", "a,1"], "argument --eta-z: must be numbers separated by commas"),
    (["--ratio", "1,1"], "argument --ratio: '1,1' lists a value twice"),
    (["--num-last", "0"], "argument --num-last: must be integers >= 1; got 0"),
    (["--num-last", "1.5"], "argument --num-last: must be whole numbers"),
    (["--batch", "0"], "argument --batch: --batch must be an integer >= 1, got 0"),
    (["--T", "1"], "argument --T: --T must be an integer >= 2, got 1"),
])
def test_bad_grid_flags_are_one_line_and_exit_2(tmp_path, capsys, args, says):
    code, err = cli_here(capsys, "reproduce", "fig6", *args, "--out", str(tmp_path))
    assert code == 2 and says in err, err
    assert err.strip().splitlines()[-1].startswith("python -m scansnap reproduce: error:")
    assert not list(tmp_path.iterdir())


def test_a_grid_flag_for_no_figure_that_has_it(tmp_path, capsys):
    code, err = cli_here(capsys, "reproduce", "fig3", "fig10", "--eta-z", "1", "--out", str(tmp_path))
    assert code == 2 and err.strip() == (
        "python -m scansnap: error: --eta-z applies to fig6, fig11, fig12; none of them is asked for (fig3 fig10)")
    code, err = cli_here(capsys, "reproduce", "fig3", "--batch", "8", "--out", str(tmp_path))
    assert code == 2 and "--batch applies to fig4, fig5, fig6, fig11, fig12" in err
