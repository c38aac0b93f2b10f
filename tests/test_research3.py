"""A first researcher's third review (4/5): the trips and defects of its report, each pinned.

fig11/fig12 plot every requested value of the held rate and say which (``plotted``); the
language model's record holds what re-runs an own-text run; own text with ``<unk>``;
``Prediction.compare`` refuses another optimiser or momentum; the promised line on SIGTERM
(also during a real sweep's progress bar, and while the command starts); every file a
record hashes is checked, and the CSV against its record's grid; error hints that point at
the folder asked about."""
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
import torch

from scansnap import plots, provenance as pv, sequence_classes, theory as th, train
from scansnap.__main__ import main, parser
from scansnap.experiments import load_csv, read_results
from scansnap.wikitext import Vocab


@pytest.fixture
def handlers_kept():
    """main() installs its SIGTERM/SIGHUP handlers in this process: put pytest's back after."""
    sigs = [s for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)]
    saved = {s: signal.getsignal(s) for s in sigs}
    yield
    for s, h in saved.items():
        signal.signal(s, h)


def _drawn_recalls(monkeypatch):
    """The figures the command line draws with plots.recall_curves, kept for inspection."""
    drawn, real = [], plots.recall_curves

    def keep(*a, **k):
        drawn.append(real(*a, **k))
        return drawn[-1]
    monkeypatch.setattr(plots, "recall_curves", keep)
    return drawn


def _panels(fig):
    return [ax for ax in fig.axes if ax.get_visible() and ax.get_title()]


TINY = ["--num-last", "1,3", "--seeds", "1", "--steps", "2", "--batch", "8", "--T", "16", "--device", "cpu"]


def _curve(table, nl, ez, ratio):
    sel = (table["num_last"] == nl) & np.isclose(table["eta_z"], ez, rtol=1e-6) & np.isclose(table["ratio"], ratio, rtol=1e-6)
    return table["threshold"][sel], table["recall"][sel]


# ---------------------------------------------------------------------------------------
# 1. fig11/fig12: every requested value of the held rate, said in the figure and the record
# ---------------------------------------------------------------------------------------

def test_fig11_fig12_plot_every_requested_held_value_and_record_it(tmp_path, monkeypatch, handlers_kept):
    drawn = _drawn_recalls(monkeypatch)
    assert main(["reproduce", "fig11", "fig12", "--eta-z", "0.5,2", "--ratio", "1,10", *TINY,
                 "--out", str(tmp_path)]) == 0
    f11, f12 = drawn
    for fig, name, held, key, held_sym, key_sym in (
            (f11, "fig11", (0.5, 2.0), (1.0, 10.0), r"$\eta_Z$", r"\eta_Y/\eta_Z"),
            (f12, "fig12", (1.0, 10.0), (0.5, 2.0), r"$\eta_Y/\eta_Z$", r"\eta_Z")):
        table = load_csv(tmp_path / f"{name}.csv")
        panels = _panels(fig)
        assert len(panels) == 2 * 2, [ax.get_title() for ax in panels]       # 2 held values x 2 vocabularies
        seen = set()
        for ax in panels:
            m = re.fullmatch(r"#last/next tokens = (\d+)/(\d+), (.+) = ([\d.]+)", ax.get_title())
            assert m and m.group(3) == held_sym, ax.get_title()
            nl, h = int(m.group(1)), float(m.group(4))
            assert int(m.group(2)) == 2 * nl
            seen.add((nl, h))
            lines = ax.get_lines()
            assert [ln.get_label() for ln in lines] == [f"${key_sym}={k:g}$" for k in key]
            for ln, k in zip(lines, key):          # each curve is its setting's rows of the CSV
                ez, ratio = (h, k) if name == "fig11" else (k, h)
                x, y = _curve(table, nl, ez, ratio)
                np.testing.assert_allclose(ln.get_xdata(), x, rtol=1e-5)
                np.testing.assert_allclose(ln.get_ydata(), y, rtol=1e-5, atol=1e-6)
        assert seen == {(nl, h) for nl in (1, 3) for h in held}
        rec = json.loads((tmp_path / f"{name}.provenance.json").read_text())
        word = "eta_Z" if name == "fig11" else "eta_Y/eta_Z"
        assert f"one panel per {word} and num_last" in rec["plotted"], rec["plotted"]
        assert f"{word} = 0.5, 2" in rec["plotted"] or f"{word} = 1, 10" in rec["plotted"], rec["plotted"]
        assert "mean recall over the seeds" in rec["plotted"]


def test_fig11_fig12_at_the_papers_held_value_say_which_and_what_else_the_csv_has(tmp_path, monkeypatch,
                                                                                   handlers_kept):
    """No --eta-z (fig11) or --ratio (fig12): the held rate is the paper's 1, as the paper's
    Figs. 11-12 show; the figure and the record say so, and name the CSV's other values."""
    drawn = _drawn_recalls(monkeypatch)
    assert main(["reproduce", "fig11", "--ratio", "1,10", *TINY, "--out", str(tmp_path / "a")]) == 0
    assert main(["reproduce", "fig12", "--eta-z", "0.5,1", *TINY, "--out", str(tmp_path / "b")]) == 0
    f11, f12 = drawn
    for fig, held in ((f11, r"$\eta_Z$ = 1"), (f12, r"$\eta_Y/\eta_Z$ = 1")):
        panels = _panels(fig)
        assert [ax.get_title() for ax in panels] == ["#last/next tokens = 1/2", "#last/next tokens = 3/6"]
        assert fig.legends[0].get_title().get_text() == f"at {held}"
    r11 = json.loads((tmp_path / "a" / "fig11.provenance.json").read_text())["plotted"]
    assert "at eta_Z = 1 (the paper's Fig. 11)" in r11 and "fig11.csv also has eta_Z = 0.5, 2, 3" in r11
    r12 = json.loads((tmp_path / "b" / "fig12.provenance.json").read_text())["plotted"]
    assert "at eta_Y/eta_Z = 1 (the paper's Fig. 12)" in r12 and "fig12.csv also has eta_Y/eta_Z = 2, 5, 10" in r12


def test_the_books_own_fig11_fig12_plot_what_the_papers_show():
    """The book's results (the paper's grid, no grid flags): eta_Z = 1 in Fig. 11, eta_Y/eta_Z = 1
    in Fig. 12, every other rate as a curve, one panel per num_last (2 x 2)."""
    from scansnap.__main__ import _recall_plan
    from scansnap.experiments import book_results
    R = book_results()
    for name, by, curves in (("fig11", "ratio", [1, 2, 5, 10]), ("fig12", "eta_z", [0.5, 1, 2, 3])):
        r = R[name]
        at, plotted = _recall_plan(r, by, grid={})
        assert at == [1.0]
        fig = plots.recall_curves(r["num_last"], r["eta_z"], r["ratio"], r["threshold"], r["recall"], by=by, at=at)
        panels = _panels(fig)
        assert len(panels) == 4 and all(len(ax.get_lines()) == len(curves) for ax in panels)
        assert "the paper's Fig. 1" in plotted


def test_recall_curves_refuses_a_held_value_the_data_lacks():
    thr = np.tile(np.geomspace(0.01, 0.1, 3), 2)
    args = (np.ones(6), np.repeat([0.5, 2.0], 3), np.ones(6), thr, np.linspace(1, 0, 6))
    with pytest.raises(ValueError, match=r"no rows with eta_Z = 1 \(the data has eta_Z = 0.5, 2\)"):
        plots.recall_curves(*args, by="ratio", at=1.0)


# ---------------------------------------------------------------------------------------
# 2-3. The language model's record re-runs an own-text run; own text with <unk>
# ---------------------------------------------------------------------------------------

TEXT = ("the cat sat on the mat . the dog sat on the log . a cat saw a dog and the dog saw a cat . "
        "the bird sang . ") * 12 + "zebra "


def _digest(ids):
    return hashlib.sha256(np.asarray(ids, dtype="<i8").tobytes()).hexdigest()


def test_an_own_text_runs_record_holds_what_re_runs_it(tmp_path):
    import inspect

    from scansnap.lm import replay, train_lm
    words = TEXT.split()
    vocab = Vocab.build(words, min_freq=2)
    ids = vocab.encode(words)
    probe = ids[:9]
    kw = dict(layers=1, heads=2, d=16, d_hidden=24, dropout=0.1, positional=None, lr=0.5, steps=4, batch=4,
              bptt=6, clip=0.7, seed=3, dtype=torch.float64)
    res = train_lm(ids, len(vocab), probe=probe, snapshot_steps=[0, 4], progress=False, **kw)
    res.save(tmp_path / "a", "own", vocab=vocab)
    rec = json.loads((tmp_path / "a" / "own.provenance.json").read_text())
    s, data = rec["settings"], rec["data"]
    # the settings are train_lm's keyword arguments, exactly: all but the data and where it runs
    kwonly = {n for n, p in inspect.signature(train_lm).parameters.items() if p.kind is p.KEYWORD_ONLY}
    assert set(s) == kwonly - {"probe", "device", "progress", "stop"}
    assert s == dict(kw, dtype="float64", snapshot_steps=[0, 4])
    assert data["vocab_size"] == len(vocab)
    assert data["train_ids"] == {"sha256": _digest(ids), "length": len(ids)}
    assert data["probe"] == {"sha256": _digest(probe), "length": 9}
    assert data["vocab"] == {"size": len(vocab), "min_freq": 2,
                             "sha256": hashlib.sha256(json.dumps(vocab.itos).encode()).hexdigest(),
                             "text": {"sha256": hashlib.sha256(json.dumps(words).encode()).hexdigest(),
                                      "length": len(words)}}
    # the trip: runs with d = 16 and d = 32 had identical settings
    wide = train_lm(ids, len(vocab), probe=probe, snapshot_steps=[4], progress=False, **dict(kw, d=32))
    wide.save(tmp_path / "b", "own")
    rec2 = json.loads((tmp_path / "b" / "own.provenance.json").read_text())
    assert {k for k in s if s[k] != rec2["settings"].get(k)} == {"d", "snapshot_steps"}
    assert rec2["data"]["vocab"] is None and rec2["data"]["train_ids"] == data["train_ids"]
    # re-run from the record alone, by hand and by replay: the same numbers, bit for bit
    again = train_lm(ids, data["vocab_size"], probe=probe, progress=False, **s)
    np.testing.assert_array_equal(again.loss, res.loss)
    np.testing.assert_array_equal(again.attention(4), res.attention(4))
    rebuilt = Vocab.build(words, min_freq=data["vocab"]["min_freq"])
    for source in (tmp_path / "a", tmp_path / "a" / "own.provenance.json", rec):
        back = replay(source, rebuilt.encode(words), probe=probe, vocab=rebuilt, progress=False)
        np.testing.assert_array_equal(back.loss, res.loss)
        np.testing.assert_array_equal(back.attention(0), res.attention(0))
        np.testing.assert_array_equal(back.attention(4), res.attention(4))
        assert back.settings == s
    # other ids, another probe, another vocabulary, a missing probe: refused, naming both
    other = ids.clone()
    other[5] = (other[5] + 1) % len(vocab)
    with pytest.raises(ValueError, match=rf"train_ids are not the ones .* given sha256 {_digest(other)}, length "
                                         rf"{len(ids)}; the record's sha256 {_digest(ids)}, length {len(ids)}"):
        replay(tmp_path / "a", other, probe=probe)
    with pytest.raises(ValueError, match=rf"train_ids .* length {len(ids) - 1}; .* length {len(ids)}"):
        replay(tmp_path / "a", ids[:-1], probe=probe)
    with pytest.raises(ValueError, match=rf"the probe's ids .* length 8; the record's sha256 {_digest(probe)}"):
        replay(tmp_path / "a", ids, probe=ids[:8])
    with pytest.raises(ValueError, match=r"with a probe \(sha256 [0-9a-f]{64}, length 9\): pass it"):
        replay(tmp_path / "a", ids)
    once = Vocab.build(words, min_freq=1)          # the same size: 'zebra' in place of '<unk>'
    assert len(once) == len(vocab)
    with pytest.raises(ValueError, match=rf"vocab is not the vocabulary .* given {len(once)} words \(sha256 "
                                         rf"{once.describe()['sha256']}\); the record's {len(vocab)} words \(sha256 "
                                         rf"{vocab.describe()['sha256']}, min_freq 2\)"):
        replay(tmp_path / "a", ids, probe=probe, vocab=once)
    with pytest.raises(ValueError, match=rf"vocab has {len(vocab) + 1} words but this run was trained with "
                                         rf"vocab_size {len(vocab)}"):
        res.save(tmp_path / "c", "own", vocab=Vocab(vocab.itos + ["yak"]))
    both = tmp_path / "b"
    wide.save(both, "other")
    with pytest.raises(ValueError, match=r"holds 2 LMResult records \(other.provenance.json, own.provenance.json\)"):
        replay(both, ids, probe=probe)
    assert replay(both, ids, probe=probe, name="own", progress=False).loss.tolist() == wide.loss.tolist()
    old = dict(rec, settings=dict(res.config, snapshots=[0, 4]), data=None)     # an older scansnap's record
    old.pop("record_sha256")                           # (written before records were hashed; replay checks a hash)
    with pytest.raises(ValueError, match=r"not a record of LMResult.save that can be replayed: .*'optimizer'"):
        replay(old, ids, probe=probe)
    with pytest.raises(ValueError, match=r"dtype must be a floating torch dtype or its name .* got 'float63'"):
        train_lm(ids, len(vocab), probe=probe, **dict(s, dtype="float63"))


def test_train_lms_records_the_same_settings_as_train_lm():
    from scansnap.lm import train_lm, train_lms
    words = TEXT.split()
    vocab = Vocab.build(words)
    ids = vocab.encode(words)
    kw = dict(d=8, d_hidden=8, steps=2, batch=2, bptt=4, progress=False)
    one = train_lm(ids, len(vocab), lr=1.0, seed=1, **kw)
    many = train_lms(ids, len(vocab), [1.0, 2.0], [1, 1], **kw)
    assert many[0].config == one.config and many[1].config == dict(one.config, lr=2.0)
    assert one.config["train_ids"]["length"] == len(ids) and one.config["probe"] is None


def test_vocab_min_freq_adds_unk_so_the_same_text_encodes():
    words = "a a a b b c".split()
    v = Vocab.build(words, min_freq=2)
    assert v.itos == ["a", "b", "<unk>"]
    assert v.encode(words).tolist() == [0, 0, 0, 1, 1, 2] and v.encode(["zebra"]).tolist() == [2]
    assert Vocab.build(words).itos == ["a", "b", "c"]                       # nothing dropped: no <unk>
    assert Vocab.build(words + ["<unk>"] * 4, min_freq=2).itos == ["<unk>", "a", "b"]   # already a word: kept
    with pytest.raises(ValueError, match="word 'zebra' is not in the vocabulary and there is no <unk>"):
        Vocab.build(words).encode(["zebra"])
    with pytest.raises(ValueError, match="min_freq must be an integer >= 1, got 0"):
        Vocab.build(words, min_freq=0)


def test_the_figures_vocabulary_is_unchanged():
    """The shipped text already has <unk> among its words: the figures' ids are what they were."""
    from scansnap.lm import wikitext_data
    tr, va, vocab = wikitext_data()
    assert len(vocab) == 10111 and vocab.stoi["<unk>"] == 0
    assert _digest(tr) == "29fed4403e137846337fef94233cc1048e085bc65b5d6aea127860bd873b8c39"
    assert _digest(va) == "56beb1562cf6ccc028e36616a7b9513f642ae13b48295a9bcef2530bcbf33ef5"


def test_the_own_text_example_of_help_lm_runs_and_is_in_the_readme(tmp_path, monkeypatch):
    import scansnap.lm as lm
    from pathlib import Path
    blocks = re.findall(r"::\n\n((?:    .*\n|\n)+)", lm.__doc__)
    own = [textwrap.dedent(b) for b in blocks if "Vocab.build" in b]
    assert len(own) == 1 and "min_freq" in own[0] and "<unk>" in own[0]
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(own[0], scope)
    assert isinstance(scope["own"], lm.LMResult) and (tmp_path / "my-lm" / "lm.provenance.json").is_file()
    assert scope["again"].loss.tolist() == scope["own"].loss.tolist()          # replayed from its record, bit for bit
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert own[0].strip() in readme


# ---------------------------------------------------------------------------------------
# 4. compare refuses a run of another optimiser or momentum
# ---------------------------------------------------------------------------------------

def test_compare_refuses_another_momentum_or_optimiser():
    c = sequence_classes(K=2, M=30, num_common=2, num_distinct=4)
    res = train(c, eta_y=1.0, seeds=0, steps=5)                               # SGD, momentum 0.9
    with pytest.raises(ValueError, match=r"for momentum 0, .* momentum 0\.9"):
        th.predict(c, steps=5, momentum=0.0).compare(res)
    assert len(th.predict(c, steps=5, momentum=0.9).compare(res)) == 2       # the same momentum: compared
    adam = train(c, eta_y=1.0, seeds=0, steps=5, optimizer="adam")
    with pytest.raises(ValueError, match=r"SGD .* optimizer='adam'"):
        th.predict(c, steps=5).compare(adam)
    res.config.pop("momentum")
    with pytest.raises(ValueError, match="does not record its momentum"):
        th.predict(c, steps=5).compare(res)


# ---------------------------------------------------------------------------------------
# 5. The promised line on SIGTERM: during a real sweep (its progress bar) and while starting
# ---------------------------------------------------------------------------------------

def _reader(stream, buf):
    def read():
        for ch in iter(lambda: stream.read(1), ""):
            buf.append(ch)
    t = threading.Thread(target=read, daemon=True)
    t.start()
    return t


def _popen(*args, **kw):
    def child():
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_DFL)
    return subprocess.Popen([sys.executable, "-m", "scansnap", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=dict(os.environ, OMP_NUM_THREADS="1", SCANSNAP_PROGRESS="1"), preexec_fn=child, **kw)


@pytest.mark.parametrize("name, status, why", [("SIGTERM", 143, "stopped by SIGTERM"),
                                               ("SIGINT", 130, "interrupted (Ctrl-C)")])
def test_a_signal_during_the_sweeps_progress_bar_ends_with_the_line(tmp_path, name, status, why):
    """The report's trip 4: the line was printed after the bar's text on its line, then the bar
    was drawn again below it (the bar closed only when the process exited), so the last line on
    stderr was the bar. The fault suite's stubs draw no bar, so it never saw this."""
    p = _popen("reproduce", "fig6", "--num-last", "1", "--eta-z", "1", "--ratio", "1", "--seeds", "1", "--batch", "4",
               "--T", "8", "--steps", "100000", "--device", "cpu", "--out", str(tmp_path))
    buf: list = []
    t = _reader(p.stderr, buf)
    t0 = time.monotonic()
    while "Syn-Medium sweep" not in "".join(buf):
        assert p.poll() is None and time.monotonic() - t0 < 120, "".join(buf)
        time.sleep(0.01)
    time.sleep(0.2)
    p.send_signal(getattr(signal, name))
    p.wait(timeout=60)
    t.join(timeout=10)
    err = "".join(buf)
    assert p.returncode == status, err
    lines = [l for l in re.split(r"[\r\n]", err) if l.strip()]
    line = f"python -m scansnap: {why}; nothing written; not written (previous sets, if any, kept): fig6"
    assert lines[-1] == line, err[-600:]
    assert ("\n" + line + "\n") in err, err[-600:]                  # a line of its own, not after the bar's text
    assert not any(f.name.endswith((".csv", ".png", ".json")) for f in tmp_path.iterdir())


def test_the_sweep_closes_its_bar_however_it_ends(monkeypatch):
    from scansnap import experiments as ex
    bars = []
    real = ex.tqdm
    monkeypatch.setattr(ex, "tqdm", lambda *a, **k: bars.append(real(*a, **k)) or bars[-1])

    def fails(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(ex, "train", fails)
    with pytest.raises(KeyboardInterrupt):
        ex.syn_medium_sweep(num_last=(1,), eta_z=(1.0,), ratio=(1.0,), seeds=(1,), steps=2, progress=True)
    assert len(bars) == 1 and bars[0].disable          # tqdm.close() disables the bar: closed


def test_the_stop_line_closes_open_bars_first(capsys):
    from tqdm import tqdm
    from scansnap.__main__ import _stop
    bar = tqdm(total=3, desc="a bar")
    bar.update()
    assert _stop(parser(), ["fig6", "fig11"], ["fig6"], "stopped by SIGTERM", 143) == 143
    err = capsys.readouterr().err
    assert bar.disable and err.endswith("\npython -m scansnap: stopped by SIGTERM; written: fig6; not written "
                                        "(previous sets, if any, kept): fig11\n"), err


@pytest.mark.parametrize("where", ["distributed.init", "provenance.environment"])
@pytest.mark.parametrize("sig, status, why", [(signal.SIGTERM, 143, "stopped by SIGTERM"),
                                              (signal.SIGINT, 130, "interrupted (Ctrl-C)")])
def test_a_signal_before_the_first_figure_is_the_line_too(tmp_path, monkeypatch, capsys, handlers_kept, where, sig,
                                                          status, why):
    """Between parsing and the first figure (the folder checked, the text loaded, the versions
    read) a signal was a traceback: the handlers came after."""
    from scansnap import __main__ as cli, distributed
    from scansnap.__main__ import _Signalled

    def hit(*a, **k):
        raise KeyboardInterrupt if sig == signal.SIGINT else _Signalled(sig)
    monkeypatch.setattr(distributed if where.startswith("distributed") else cli.provenance, where.split(".")[1], hit)
    assert main(["reproduce", "fig3", "--out", str(tmp_path)]) == status
    err = capsys.readouterr().err
    assert err == f"python -m scansnap: {why}; nothing written; not written (previous sets, if any, kept): fig3\n"
    assert signal.getsignal(signal.SIGTERM) is cli._raise_signalled      # installed before anything ran


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs /proc to see when torch loads")
def test_sigterm_while_the_command_starts_says_so(tmp_path):
    """SIGTERM while `python -m scansnap` still imports torch (seconds on a busy machine) ended
    the process silently (killed by the signal, no line)."""
    p = _popen("reproduce", "fig3", "--out", str(tmp_path))
    t0 = time.monotonic()
    while True:
        assert p.poll() is None, p.communicate()
        try:
            with open(f"/proc/{p.pid}/maps") as fh:
                if "libtorch" in fh.read():
                    break
        except FileNotFoundError:
            pass
        assert time.monotonic() - t0 < 120, "torch never loaded"
        time.sleep(0.002)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 143, (p.returncode, err)
    assert err.count("\n") == 1 and err.startswith("python -m scansnap: stopped by SIGTERM"), err
    assert "nothing written" in err and not any(tmp_path.iterdir())


# ---------------------------------------------------------------------------------------
# 6, 8 (report item 8). Every hashed file is checked; the CSV against its record's grid
# ---------------------------------------------------------------------------------------

def _set(out, name="mine", png=b"png bytes"):
    out.mkdir(parents=True, exist_ok=True)
    with pv.staged(out, name) as stage:
        (stage / f"{name}.csv").write_text("step,loss\n0,1\n")
        (stage / f"{name}.png").write_bytes(png)
        rec = pv.record(name, stage, [f"{name}.csv", f"{name}.png"], {"kind": "mine"}, None, {"device": "cpu"}, 0.0,
                        argv=["reproduce", name])
        pv.commit(stage, out, name, rec)


def test_read_results_checks_every_file_its_record_lists(tmp_path):
    _set(tmp_path)
    assert list(read_results(tmp_path, paper=False)) == ["mine"]
    with open(tmp_path / "mine.png", "ab") as fh:
        fh.write(b"x")
    with pytest.raises(ValueError, match=r"mine.png is not the file its provenance \(mine.provenance.json\) describes"):
        read_results(tmp_path, paper=False)
    (tmp_path / "mine.png").unlink()              # listed but missing: an incomplete set (issue 27)
    with pytest.raises(ValueError, match=r"mine\.png is missing, though its record mine\.provenance\.json lists it"):
        read_results(tmp_path, paper=False)


@pytest.fixture(scope="module")
def grid_set(tmp_path_factory):
    out = tmp_path_factory.mktemp("grid")
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        assert main(["reproduce", "fig6", "--eta-z", "0.5,2", "--ratio", "1,10", *TINY, "--out", str(out)]) == 0
    finally:
        for s, h in saved.items():
            signal.signal(s, h)
    return out


def test_a_record_edited_to_another_grid_is_refused(grid_set, tmp_path):
    """The report's item 8: a record edited to the paper's settings around a 1-seed, 8-row CSV
    was read as the paper's."""
    import shutil
    forged = tmp_path / "forged"
    shutil.copytree(grid_set, forged)
    p = forged / "fig6.provenance.json"
    rec = json.loads(p.read_text())
    rec["notes"] = []
    rec["settings"] = pv.settings_for("fig6")                                   # the paper's, every one
    p.write_text(json.dumps(rec))
    for paper in (True, False):
        with pytest.raises(ValueError, match=r"fig6.csv has num_last 1, 3 but its record's settings say num_last "
                                             r"\[1, 3, 5, 10\]: the record does not describe this file"):
            read_results(forged, paper=paper)
    mine = json.loads((grid_set / "fig6.provenance.json").read_text())["settings"]
    rec["settings"] = dict(mine, seeds=list(range(1, 11)))                       # the seeds alone
    p.write_text(json.dumps(rec))
    with pytest.raises(ValueError, match=r"fig6.csv has seed 1 but its record's settings say seeds "
                                         r"\[1, 2, 3, 4, 5, 6, 7, 8, 9, 10\]"):
        read_results(forged, paper=False)
    rec["settings"] = dict(json.loads((grid_set / "fig6.provenance.json").read_text())["settings"], ratio=[1.0, 5.0])
    p.write_text(json.dumps(rec))
    with pytest.raises(ValueError, match=r"fig6.csv has ratio 1, 10 but its record's settings say ratio \[1.0, 5.0\]"):
        read_results(forged, paper=False)
    assert len(read_results(grid_set, paper=False)["fig6"]["seed"]) == 2 * 2 * 2    # the real one reads


# ---------------------------------------------------------------------------------------
# 7. The README's torchrun example
# ---------------------------------------------------------------------------------------

def test_the_readme_torchrun_example_is_small_and_has_its_own_folder():
    from pathlib import Path
    import shlex
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    lines = [l for l in readme.splitlines() if l.startswith("torchrun ") or l.startswith("python -m scansnap reproduce fig6 fig11")]
    grid, tr = (shlex.split(l) for l in lines[:2])
    assert tr[0] == "torchrun"
    out = lambda args: args[args.index("--out") + 1]                          # noqa: E731
    assert out(tr) != out(grid) and "fig10" not in tr and "fig7" not in tr
    steps = int(tr[tr.index("--steps") + 1])
    assert steps <= 10
    args = parser().parse_args(tr[tr.index("scansnap") + 1:])                # a valid command line
    assert args.figure and args.steps == steps


# ---------------------------------------------------------------------------------------
# 8. Hints aimed at the folder asked about
# ---------------------------------------------------------------------------------------

def test_an_empty_or_missing_folder_says_it_has_no_results(tmp_path):
    """The hint named the book's own folder (`reproduce all --out scansnap/results`, 15 minutes)."""
    (tmp_path / "empty").mkdir()
    for where, says in (("empty", "has no results (no CSV files in it)"), ("missing", "is not a results folder (it "
                                                                                     "does not exist)")):
        with pytest.raises((ValueError, FileNotFoundError)) as e:
            read_results(tmp_path / where, paper=False)
        msg = str(e.value)
        assert msg.startswith(f"{tmp_path / where} {says}: make one with `python -m scansnap reproduce <figure> "
                              f"--out {tmp_path / where}` or a result's .save("), msg
        assert "scansnap/results" not in msg and "reproduce all" not in msg, msg


def test_a_deleted_csvs_hint_quotes_the_records_command(grid_set, tmp_path):
    import shutil
    gone = tmp_path / "gone"
    shutil.copytree(grid_set, gone)
    (gone / "fig6.csv").unlink()
    with pytest.raises(ValueError, match=r"fig6.csv is missing, though its record fig6.provenance.json lists it.*"
                                         r"`python -m scansnap reproduce fig6 --eta-z 0.5,2 --ratio 1,10 --num-last 1,3 "
                                         r"--seeds 1 --steps 2 --batch 8 --T 16 --device cpu --out "):
        read_results(gone, paper=False)


def test_saving_a_result_onto_a_file_does_not_speak_of_out(tmp_path):
    res = train(sequence_classes(K=2, M=30, num_common=2, num_distinct=4), steps=2)
    (tmp_path / "a_file").write_text("x")
    with pytest.raises(ValueError) as e:
        res.save(tmp_path / "a_file")
    assert "--out" not in str(e.value) and f"{tmp_path / 'a_file'} is a file, not a folder" in str(e.value)


# ---------------------------------------------------------------------------------------
# 9. Smaller ones
# ---------------------------------------------------------------------------------------

def test_the_panel_titles_wording_is_explained_in_help():
    help_text = " ".join(parser()._subparsers._group_actions[0].choices["reproduce"].format_help().split())
    assert "#last/next tokens = 3/6" in help_text and "2 next tokens" in help_text


def test_one_class_with_common_tokens_is_refused():
    with pytest.raises(ValueError, match=r"K = 1 class has no common tokens .* num_common=2"):
        sequence_classes(K=1, num_common=2)
    assert len(sequence_classes(K=1, num_common=0, num_distinct=3).common_tokens) == 0


def test_a_train_results_record_has_its_dtype_and_gradients(tmp_path):
    c = sequence_classes(K=2, M=30, num_common=2, num_distinct=4)
    for dtype, name in ((torch.float32, "float32"), (torch.float64, "float64")):
        res = train(c, steps=2, dtype=dtype)
        assert res.config["dtype"] == name and res.config["grad"] == "lemma1"
        res.save(tmp_path / name)
        s = json.loads((tmp_path / name / "train.provenance.json").read_text())["settings"]
        assert s["dtype"] == name and s["grad"] == "lemma1"


def test_a_diverged_run_of_the_sweep_is_refused_not_written(tmp_path, capsys):
    """A second researcher's trip: eta 1e9 exited 0 and wrote entropy 0 (a perfect 'snap') for a
    diverged run. Now the figure is not made: one line naming the run, exit 1, nothing written."""
    import warnings

    from scansnap.__main__ import main

    out = tmp_path / "out"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        status = main(["reproduce", "fig6", "--out", str(out), "--eta-z", "1e9", "--ratio", "1",
                       "--num-last", "1", "--seeds", "1", "--steps", "5", "--batch", "8", "--T", "16"])
    err = capsys.readouterr().err
    assert status == 1, err
    last = err.strip().splitlines()[-1]
    assert "fig6: 1 run(s) of the sweep diverged or saturated (num_last 1, eta_z 1e+09, ratio 1, seed 1)" in last, last
    assert "not written (previous sets, if any, kept): fig6" in last
    assert not list(out.glob("fig6*"))
