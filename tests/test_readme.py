"""The README's quickstart runs as written, and says what ``help(scansnap)`` says."""
import re
import shlex
import subprocess
import sys
from pathlib import Path

import scansnap

ROOT = Path(__file__).resolve().parents[1]


def section(title: str) -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 3)
    return text[start:end]


def blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def docstring_blocks() -> list[str]:
    found = re.findall(r"::\n\n((?:    .*\n|\n)+)", scansnap.__doc__)
    return ["\n".join(l[4:] for l in b.rstrip().splitlines()) + "\n" for b in found]


def test_readme_quickstart_is_the_package_docstrings():
    assert blocks(section("Quickstart: your own experiment"), "python") == docstring_blocks()
    assert len(docstring_blocks()) == 2


def test_readme_quickstart_python_runs(tmp_path):
    code = "\n".join(blocks(section("Quickstart: your own experiment"), "python"))
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    out = r.stdout
    assert "SequenceClasses(K=3, M=40, common=5" in out and "'unused'" in out
    assert "TrainResult: 2 runs x 60 steps of sgd (momentum 0.9), init 'zero', K=3, M=40" in out
    assert "loss (2, 60); Y, Z (2, 40, 40)" in out
    assert "LMResult: 1-layer" in out and "per layer (1, 30, 30)" in out
    assert sorted(p.name for p in (tmp_path / "my-results").iterdir()) == [
        "train.csv", "train.provenance.json", "train_attention.csv", "train_classes.csv", "train_loss.csv",
        "train_weights.npz"]
    assert r.stderr.count("\n") < 3, r.stderr          # no warnings, no progress bars outside a terminal


def test_readme_command_line_grid_runs_as_written(tmp_path):
    """The first console line of the quickstart, as printed (16 runs x 100 steps per vocabulary)."""
    line = blocks(section("Quickstart: your own experiment"), "console")[0].splitlines()[0]
    args = shlex.split(line)
    assert args[:3] == ["python", "-m", "scansnap"]
    r = subprocess.run([sys.executable, *args[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    from scansnap.experiments import read_results
    got = read_results(str(tmp_path / "my-grid"), paper=False)
    assert len(got["fig6"]["seed"]) == 2 * 2 * 4 and got["fig6"]["seed"].dtype.kind == "i"
    import json
    rec = json.loads((tmp_path / "my-grid" / "fig6.provenance.json").read_text())
    assert rec["settings"]["eta_z"] == [0.5, 2.0] and rec["settings"]["batch"] == 64
