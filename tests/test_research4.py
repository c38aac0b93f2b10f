"""Researcher 2's report (a first-time user, README and help only): the fixes, each with the
trip it came from."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np

from scansnap import sequence_classes, train


# ---------------------------------------------------------------------------------------
# Trip 4: predicted winners differ from a run's without any tie (the docs said: at ties)
# ---------------------------------------------------------------------------------------

def test_a_random_start_flips_winners_without_ties_as_the_docs_say():
    """From init="default", 40 steps, linspace weights (no ties): some classes' top tokens are
    not the predicted winners; from Y = Z = 0 every one is. What predict's docs now say."""
    import scansnap.theory as th
    c = sequence_classes(K=3, M=40, num_common=5, num_distinct=8)
    rand = train(c, eta_y=1.0, eta_z=1.0, seeds=[0, 1], steps=40, init="default")
    df = rand.predict().compare(rand)
    assert not df.tied.any() and (~df.top_as_predicted).sum() >= 2
    zero = train(c, eta_y=1.0, eta_z=1.0, seeds=[0, 1], steps=40)
    assert zero.predict().compare(zero).top_as_predicted.all()
    for doc in (th.predict.__doc__, th.Prediction.compare.__doc__, type(rand).predict.__doc__):
        doc = " ".join(doc.split())
        assert "not only" in doc and 'init="default"' in doc and "converged" in doc and "close" in doc
