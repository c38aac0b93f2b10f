"""``torchrun --nproc_per_node 2 -m scansnap reproduce ...`` on the CPU (gloo): the same files as one
process, bit for bit; a rank that fails or dies leaves ``--out`` as it was.

Each torchrun here starts 3 Python processes that import torch: the tests are kept few and
small (a few training steps)."""
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from scansnap import distributed

TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]


def env(extra=None):
    e = dict(os.environ, PYTHONUNBUFFERED="1")
    e.pop("OMP_NUM_THREADS", None)           # torchrun's own default for its ranks (1), one process's (2 cores)
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        e.pop(k, None)
    e.update(extra or {})
    return e


def run(cmd, extra_env=None, timeout=300):
    """The command in its own process group: on a timeout the launcher *and* its ranks are ended."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env(extra_env),
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def files_of(folder: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_two_ranks_write_what_one_process_writes(tmp_path):
    """Figs. 6 (the Syn-Medium sweep, split by seed), 7 (a model a rank) and 10 (a run a unit):
    every CSV and PNG equal byte for byte to one process's; the record names the world size and
    otherwise says what one process's says, so the book would read it alike. Fig. 3 (theory, not
    split) is made by rank 0 alone, and its record and the printed line say so."""
    args = ["reproduce", "fig6", "fig7", "fig10", "fig3", "--steps", "5", "--seeds", "1-3", "--device", "cpu"]
    one = run([sys.executable, "-m", "scansnap", *args, "--out", str(tmp_path / "one")])
    assert one.returncode == 0, one.stderr[-2000:]
    two = run([*TORCHRUN, "-m", "scansnap", *args, "--out", str(tmp_path / "two")])
    assert two.returncode == 0, two.stderr[-3000:]
    a, b = files_of(tmp_path / "one"), files_of(tmp_path / "two")
    assert sorted(a) == sorted(b)
    for name in a:
        if name.endswith(".provenance.json"):
            ra, rb = json.loads(a[name]), json.loads(b[name])
            assert rb["world_size"] == 2 and rb["backend"] == "gloo"
            assert rb["launcher"] == "torchrun --standalone --nproc_per_node 2"      # how to re-run it
            assert rb["command"].startswith("torchrun --standalone --nproc_per_node 2 -m scansnap reproduce fig6 fig7 fig10")
            assert rb["split"] is (not name.startswith("fig3"))       # researcher 7: fig3 is rank 0's alone
            assert ra["world_size"] == 1 and "split" not in ra
            assert ra["settings"] == rb["settings"] and ra["files"] == rb["files"]   # the same sha256 for each file
        else:
            assert a[name] == b[name], f"{name} differs between 1 and 2 processes"
    rows = (tmp_path / "two" / "fig10.csv").read_text().splitlines()
    assert len(rows) == 26 and rows[0] == "lr,seed,entropy,final_loss"
    assert two.stdout.count("fig10: wrote") == 1 and "(2 ranks, gloo)" in two.stdout    # rank 0 alone writes
    assert "(rank 0 alone: fig3 is not split over the 2 ranks)" in two.stdout


def test_an_uneven_split_of_seeds_gives_the_same_bytes(tmp_path):
    """Seeds 1-3 on 2 ranks: rank 0 trains seeds 1 and 3 (8 runs a vocabulary), rank 1 seed 2 (4
    runs), one process all 12 in one batch. A first user's grid (M = 33 at num_last 1) showed a
    rank's batch changing a run's last bits (the fused SGD kernel's scalar tail); 20 steps carry
    that into the CSV's 10 digits, which 5 steps (the test above) do not."""
    args = ["reproduce", "fig6", "fig11", "--eta-z", "0.5,2", "--ratio", "1,10", "--num-last", "1,3",
            "--seeds", "1-3", "--steps", "20", "--device", "cpu"]
    one = run([sys.executable, "-m", "scansnap", *args, "--out", str(tmp_path / "one")])
    assert one.returncode == 0, one.stderr[-2000:]
    two = run([*TORCHRUN, "-m", "scansnap", *args, "--out", str(tmp_path / "two")])
    assert two.returncode == 0, two.stderr[-3000:]
    a, b = files_of(tmp_path / "one"), files_of(tmp_path / "two")
    assert sorted(a) == sorted(b) == ["fig11.csv", "fig11.png", "fig11.provenance.json",
                                      "fig6.csv", "fig6.png", "fig6.provenance.json"]
    for name in ("fig6.csv", "fig6.png", "fig11.csv", "fig11.png"):
        assert a[name] == b[name], f"{name} differs between 1 and 2 processes"
    assert len(a["fig6.csv"].decode().splitlines()) == 1 + 2 * 2 * 2 * 3


PLANT = """
import os
if os.environ.get("RANK") == "1":
    import scansnap.experiments as ex
    def syn_medium_sweep(*a, **k):
        {action}
    ex.syn_medium_sweep = syn_medium_sweep
"""
TINY = ["reproduce", "fig6", "--steps", "2", "--seeds", "1,2", "--num-last", "1", "--eta-z", "1", "--ratio", "1,2",
        "--device", "cpu"]


@pytest.mark.parametrize("action, says", [
    ("raise FloatingPointError('planted: the run diverged')",
     "the Syn-Medium sweep: rank 1 of 2 failed: FloatingPointError: planted: the run diverged"),
    ("os._exit(9)", None),                         # a rank that dies: torchrun stops the others
])
def test_a_failed_rank_leaves_out_untouched(tmp_path, action, says):
    out = tmp_path / "out"
    first = run([sys.executable, "-m", "scansnap", *TINY, "--out", str(out)])
    assert first.returncode == 0, first.stderr[-2000:]
    before = files_of(out)
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(textwrap.dedent(PLANT.format(action=action)))
    r = run([*TORCHRUN, "-m", "scansnap", *TINY, "--out", str(out)], {"PYTHONPATH": str(site)})
    assert r.returncode != 0
    if says:
        assert says in r.stderr, r.stderr[-3000:]
        line = next(l for l in r.stderr.splitlines() if says in l)
        assert line.startswith("python -m scansnap: error:") and "nothing written" in line
        assert r.stderr.count("python -m scansnap: error:") == 1
    assert files_of(out) == before                                  # the previous set, whole
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no staging left behind


def test_a_bad_out_stops_every_rank_with_one_line(tmp_path):
    (tmp_path / "file").write_text("x")
    r = run([*TORCHRUN, "-m", "scansnap", "reproduce", "fig10", "--steps", "1", "--device", "cpu",
             "--out", str(tmp_path / "file")])
    assert r.returncode != 0
    assert f"python -m scansnap: error: rank 0: --out {tmp_path / 'file'} is a file, not a folder" in r.stderr
    assert r.stderr.count("python -m scansnap: error:") == 1          # rank 0 says it, once
    assert "scansnap/__main__.py" not in r.stderr                    # no traceback of ours (torchrun prints its report)


def test_torchrun_variables_are_checked():
    assert distributed.from_env({}) is None
    assert distributed.from_env({"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0"}) is None   # one process: plain
    assert distributed.from_env({"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1"}) == (3, 4, 1)
    with pytest.raises(ValueError, match="WORLD_SIZE='two' is not an integer"):
        distributed.from_env({"RANK": "0", "WORLD_SIZE": "two"})
    with pytest.raises(ValueError, match="RANK=4, WORLD_SIZE=4"):
        distributed.from_env({"RANK": "4", "WORLD_SIZE": "4", "LOCAL_RANK": "0"})


def test_one_device_a_rank():
    assert distributed.device_for("cpu", 3) == torch.device("cpu")
    with pytest.raises(ValueError, match="--device cuda:1 under torchrun: use --device cuda"):
        distributed.device_for("cuda:1", 0)
    if not torch.cuda.is_available():
        assert distributed.device_for("auto", 1) == torch.device("cpu")
        with pytest.raises(ValueError, match="CUDA is not available"):
            distributed.device_for("cuda", 0)
    else:
        n = torch.cuda.device_count()
        assert distributed.device_for("cuda", n - 1) == torch.device("cuda", n - 1)
        with pytest.raises(ValueError, match=f"local rank {n} has no GPU of its own: this machine has {n}"):
            distributed.device_for("cuda", n)


def test_shares_cover_every_unit_once():
    for size in (1, 2, 3, 7):
        worlds = [distributed.World(r, size, r, "gloo") for r in range(size)]
        shares = [distributed.share(10, w) for w in worlds]
        assert sorted(i for s in shares for i in s) == list(range(10))
        assert max(map(len, shares)) - min(map(len, shares)) <= 1
    assert distributed.share(4, None) == [0, 1, 2, 3]


def test_the_torchrun_launcher_is_there():
    """The documented command: torchrun is torch's own launcher, installed with it."""
    exe = shutil.which("torchrun", path=str(Path(sys.executable).parent)) or shutil.which("torchrun")
    assert exe is not None
