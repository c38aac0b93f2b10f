"""scansnap: the package behind the executable book on *Scan and Snap* (Tian et al., 2023)."""
import os

# torch's OpenMP threads sleep, not spin, while they wait (read once, when torch loads; so only
# if scansnap is imported first, as every chapter does). The same numbers; on a machine whose
# cores are busy with other work (a browser, a second job) small steps are not several times
# slower (bench/RESULTS.md). OMP_WAIT_POLICY set by the caller wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
from .data import (SequenceClasses, make_classes, syn_small, syn_medium, sample_tokens,
                   sample_counts, counts_from_tokens)
from .model import YZModel, EmbeddingTransformer
from .train import train, lr_grid, TrainResult
from . import book

__version__ = "0.2.0"
__all__ = ["SequenceClasses", "make_classes", "syn_small", "syn_medium", "sample_tokens",
           "sample_counts", "counts_from_tokens", "YZModel", "EmbeddingTransformer", "train",
           "lr_grid", "TrainResult"]
