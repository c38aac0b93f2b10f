"""scansnap: the package behind the executable book on *Scan and Snap* (Tian et al., 2023)."""
from .data import (SequenceClasses, make_classes, syn_small, syn_medium, sample_tokens,
                   sample_counts, counts_from_tokens)
from .model import YZModel, EmbeddingTransformer
from .train import train, lr_grid, TrainResult
from . import book

__version__ = "0.2.0"
__all__ = ["SequenceClasses", "make_classes", "syn_small", "syn_medium", "sample_tokens",
           "sample_counts", "counts_from_tokens", "YZModel", "EmbeddingTransformer", "train",
           "lr_grid", "TrainResult"]
