"""Researcher 2's report (a first-time user, README and help only): the fixes, each with the
trip it came from."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

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
    with pytest.warns(th.InitWarning):                 # issue 27: the theory starts at Z = 0
        df = rand.predict().compare(rand)
    assert not df.tied.any() and (~df.top_as_predicted).sum() >= 2
    zero = train(c, eta_y=1.0, eta_z=1.0, seeds=[0, 1], steps=40)
    assert zero.predict().compare(zero).top_as_predicted.all()
    for doc in (th.predict.__doc__, th.Prediction.compare.__doc__, type(rand).predict.__doc__):
        doc = " ".join(doc.split())
        assert "not only" in doc and 'init="default"' in doc and "converged" in doc and "close" in doc


# ---------------------------------------------------------------------------------------
# Trip 5: a Python save recorded "python: TrainResult.save('train')", not the script that ran it
# ---------------------------------------------------------------------------------------

SAVE = textwrap.dedent("""
    import sys
    from scansnap import sequence_classes, train
    train(sequence_classes(K=2, M=20, num_common=2, num_distinct=4), steps=2).save(sys.argv[-1], "t")
""")


def test_a_python_save_records_the_script_and_its_arguments(tmp_path):
    from scansnap.experiments import read_results
    script = tmp_path / "my run.py"
    script.write_text(SAVE)
    subprocess.run([sys.executable, str(script), "--rate", "2", str(tmp_path / "a")], check=True, timeout=120)
    rec = json.loads((tmp_path / "a" / "t.provenance.json").read_text())
    assert rec["argv"] == [str(script), "--rate", "2", str(tmp_path / "a")]
    assert rec["command"] == (f"python: TrainResult.save('t'), run by `python '{script}' --rate 2 "
                              f"{tmp_path / 'a'}`")
    (tmp_path / "a" / "t_loss.csv").write_text("run,step,loss\n")
    with pytest.raises(ValueError, match=re.escape(f"run by `python '{script}' --rate 2")):
        read_results(tmp_path / "a", paper=False)          # the way to make it again names the script
    # no script (python -c): the call alone, and argv as it was
    subprocess.run([sys.executable, "-c", SAVE, str(tmp_path / "b")], check=True, timeout=120)
    rec = json.loads((tmp_path / "b" / "t.provenance.json").read_text())
    assert rec["command"] == "python: TrainResult.save('t')" and rec["argv"] == ["-c", str(tmp_path / "b")]


# ---------------------------------------------------------------------------------------
# Trip 3: which record fields are checked against the files (the README now says)
# ---------------------------------------------------------------------------------------

def test_the_readme_says_which_fields_are_the_records_word(tmp_path):
    """A record's batch, steps or device were taken on its word; since researcher 5 the record is
    hashed (record_sha256) and an edit to them is refused: the README says so."""
    from pathlib import Path

    from scansnap.experiments import read_results
    train(sequence_classes(K=2, M=20, num_common=2, num_distinct=4), steps=2).save(tmp_path, "t")
    p = tmp_path / "t.provenance.json"
    rec = json.loads(p.read_text())
    rec["settings"]["batch"] += 1
    rec["device"] = "an edited device"
    p.write_text(json.dumps(rec))
    with pytest.raises(ValueError, match=r"t\.provenance\.json was edited after it was written"):
        read_results(tmp_path, paper=False)
    readme = " ".join((Path(__file__).resolve().parents[1] / "README.md").read_text().split())
    assert "each file's sha256 and the settings a figure's CSV repeats in its columns" in readme
    assert "every record carries `record_sha256`, the sha256 of its canonical JSON without that field" in readme
