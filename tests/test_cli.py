"""The command line, run as a user would (subprocess)."""
import csv
import subprocess
import sys

import numpy as np


def run(*args):
    return subprocess.run([sys.executable, "-m", "scansnap", *args], capture_output=True, text=True,
                          timeout=600)


def test_help():
    r = run("--help")
    assert r.returncode == 0 and "reproduce" in r.stdout


def test_reproduce_fig4(tmp_path):
    r = run("reproduce", "fig4", "--out", str(tmp_path), "--device", "cpu")
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(open(tmp_path / "fig4.csv")))
    assert [int(x["step"]) for x in rows] == list(range(100))
    loss = np.array([float(x["loss"]) for x in rows])
    assert abs(loss[0] - np.log(34)) < 1e-5 and loss[-1] < 1e-3
    from scansnap.experiments import fig4
    np.testing.assert_allclose(loss, fig4(device="cpu")[1].loss[0], rtol=1e-9, atol=1e-12)
    assert (tmp_path / "fig4.png").stat().st_size > 10_000


def test_reproduce_fig6_small(tmp_path):
    r = run("reproduce", "fig6", "--out", str(tmp_path), "--seeds", "1,2", "--steps", "5", "--device", "cpu")
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(open(tmp_path / "fig6.csv")))
    assert len(rows) == 4 * 4 * 4 * 2
    assert set(rows[0]) == {"num_last", "eta_z", "ratio", "seed", "entropy"}
    assert {int(x["num_last"]) for x in rows} == {1, 3, 5, 10}
    assert all(0 < float(x["entropy"]) < np.log(10) for x in rows)
    assert (tmp_path / "fig6.png").exists()
    # the numbers are the package's own, row for row: rates from lr_grid, entropies from training
    from scansnap.experiments import FIG6, fig6
    from scansnap.train import lr_grid
    ref = fig6(seeds=(1, 2), steps=5, device="cpu")
    ey, ez, sd = lr_grid(FIG6["eta_z"], FIG6["ratio"], (1, 2))
    got = {k: np.array([float(x[k]) for x in rows]) for k in rows[0]}
    np.testing.assert_array_equal(got["num_last"], np.repeat([1, 3, 5, 10], 32))
    np.testing.assert_array_equal(got["eta_z"], np.tile(ez, 4))
    np.testing.assert_array_equal(got["ratio"], np.tile(ey / ez, 4))
    np.testing.assert_array_equal(got["seed"], np.tile(sd, 4))
    np.testing.assert_allclose(got["entropy"], ref["entropy"], rtol=1e-9, atol=0)
    assert np.ptp(got["entropy"]) > 0.01                      # the runs differ: not one value for all
    rec = __import__("json").loads((tmp_path / "fig6.provenance.json").read_text())
    assert rec["settings"]["steps"] == 5 and rec["settings"]["seeds"] == [1, 2]


def test_bad_device_is_a_clear_error(tmp_path):
    r = run("reproduce", "fig4", "--out", str(tmp_path), "--device", "tpu")
    assert r.returncode == 2 and "unknown device 'tpu'" in r.stderr
    r = run("reproduce", "fig99", "--out", str(tmp_path))
    assert r.returncode == 2 and "invalid choice: 'fig99'" in r.stderr
    r = run("reproduce", "fig4", "--out", str(tmp_path), "--steps", "0")
    assert r.returncode == 2 and "steps must be an integer >= 1, got 0" in r.stderr
    assert not list(tmp_path.iterdir())                        # nothing written for a refused command


def test_reproduce_all_quick(tmp_path):
    """Every figure's code path, end to end, at 2 steps a run (Fig. 10: 25 models x 2 steps)."""
    r = run("reproduce", "all", "--out", str(tmp_path), "--seeds", "1", "--steps", "2")
    assert r.returncode == 0, r.stderr
    for n in (3, 4, 5, 6, 7, 8, 9, 10, 11, 12):
        assert (tmp_path / f"fig{n}.csv").stat().st_size > 0 and (tmp_path / f"fig{n}.png").stat().st_size > 5000
    assert (tmp_path / "fig4_right.csv").exists()
    rows = list(csv.DictReader(open(tmp_path / "fig11.csv")))
    assert len(rows) == 4 * 16 * 17 and all(0 <= float(x["recall"]) <= 1 for x in rows)
    rows = list(csv.DictReader(open(tmp_path / "fig10.csv")))
    assert len(rows) == 25 and {x["lr"] for x in rows} == {"1", "2", "3", "4", "5"}
    rows = list(csv.DictReader(open(tmp_path / "fig7.csv")))
    assert {x["layers"] for x in rows} == {"1", "3"} and {x["iteration"] for x in rows} == {"0", "1", "2"}
    rows = list(csv.DictReader(open(tmp_path / "fig5.csv")))
    assert {x["eta"] for x in rows} == {"0.1", "0.5", "1"} and len(rows) == 3 * 20
    # what data was used: on the terminal and in each WikiText figure's record
    assert "data: the shipped WikiText-2 valid+test splits (sha256 checked)" in r.stdout
    import json
    for name in ("fig7", "fig10"):
        rec = json.loads((tmp_path / f"{name}.provenance.json").read_text())
        assert rec["data"]["source"] == "shipped" and rec["data"]["asked"] == "shipped"
        assert rec["settings"]["steps"] == 2 and rec["settings"]["data"] == "shipped"
    assert json.loads((tmp_path / "fig6.provenance.json").read_text())["data"] is None
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]      # no staging left behind


def test_reproduce_freeze_quick(tmp_path):
    r = run("reproduce", "freeze", "--out", str(tmp_path), "--steps", "6", "--device", "cpu")
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(open(tmp_path / "freeze.csv")))
    assert [int(x["iteration"]) for x in rows] == [0, 6]
    assert float(rows[1]["change"]) > 0 and 0 < float(rows[1]["entropy"]) < float(rows[0]["entropy"]) + 1
    assert (tmp_path / "freeze.png").stat().st_size > 5000
