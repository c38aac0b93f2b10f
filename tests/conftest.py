import os

import numpy as np
import pytest
import torch

# SCANSNAP_TEST_THREADS=1 for many test processes at once (make mutants): 2 threads each would spin
torch.set_num_threads(int(os.environ.get("SCANSNAP_TEST_THREADS", "2")))


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
