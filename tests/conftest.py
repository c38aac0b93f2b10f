import os

import numpy as np
import pytest
import torch

# SCANSNAP_TEST_THREADS=1 for many test processes at once (make mutants): 2 threads each would spin
torch.set_num_threads(int(os.environ.get("SCANSNAP_TEST_THREADS", "2")))


@pytest.fixture(autouse=True)
def _tests_compute_on_the_cpu(request):
    """The suite's numbers are the CPU's on every machine: in a test, device=None means the CPU.
    (With CUDA present the package's "auto" would train on the GPU, whose random streams and
    sums differ, and the bit-for-bit tests would compare another computation.) CUDA is tested
    where it is named: tests/test_cuda.py. Tests of the device rule itself opt out with
    @pytest.mark.device_rule."""
    if request.node.get_closest_marker("device_rule"):
        yield
        return
    from scansnap._validate import default_device
    with default_device("cpu"):
        yield


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture(scope="session")
def saved_lm(tmp_path_factory):
    """A small embedding transformer trained on a toy text and saved: (folder, ids, result).

    Shared by the tests that read an LM's saved set back (replay, thread counts, edits)."""
    from scansnap.lm import train_lm
    from scansnap.wikitext import Vocab
    words = ("the cat sat on the mat . the dog sat on the log . " * 40 + "a zebra").split()
    vocab = Vocab.build(words, min_freq=2)
    ids = vocab.encode(words)
    d = tmp_path_factory.mktemp("lm") / "my-lm"
    own = train_lm(ids, len(vocab), steps=12, d=16, d_hidden=16, batch=4, bptt=6, probe=ids[:6], snapshot_steps=[12])
    own.save(d, vocab=vocab)
    return d, ids, own


def pytest_collection_modifyitems(config, items):
    """Under `make mutants` only: run each mutant's tests fastest first.

    mutmut runs a mutant's tests with ``-x`` in collection order, so a mutant of a function
    that the multi-process tests also reach (tests/test_distributed.py, minutes) waited for them
    before the second-long test that kills it ran. Its stats file has every test's duration;
    the order changes nothing that is tested, only when the first failure comes."""
    if "MUTANT_UNDER_TEST" not in os.environ or os.environ["MUTANT_UNDER_TEST"] in ("stats", "fail"):
        return
    import json
    from pathlib import Path
    stats = Path("mutmut-stats.json")
    if not stats.is_file():
        return
    duration = json.loads(stats.read_text()).get("duration_by_test", {})
    items.sort(key=lambda item: duration.get(item.nodeid, float("inf")))
