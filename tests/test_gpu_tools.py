"""The GPU-machine tools, checked where no GPU is: a lent GPU's minutes are too few to find a
broken script there (tools/gpu_check.sh, bench/bench_gpu.py; their record is bench/gpu.md)."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools" / "gpu_check.sh"


def test_gpu_check_is_valid_bash_with_its_three_modes():
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True)
    text = SCRIPT.read_text()
    for mode in ("tests)", "bench)", "figures)"):
        assert f"\n{mode}\n" in text, mode


def test_figures_mode_neutralises_exactly_chapter_6s_device_assert(tmp_path):
    """The figures mode runs chapter 6 on GPU-made results with one assert (made on a CPU)
    switched off: the snippet must still find that assert, and leave the cell valid Python."""
    snippet = re.search(r"\$PY - <<'EOF'\n(.*?)\nEOF\n", SCRIPT.read_text(), re.S).group(1)
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "06-figures.ipynb").write_text((ROOT / "book" / "06-figures.ipynb").read_text())
    subprocess.run([sys.executable, "-c", snippet], cwd=tmp_path, check=True)
    nb = json.loads((tmp_path / "book" / "06-figures-gpu.ipynb").read_text())
    cells = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    hit = [c for c in cells if "assert True or all(rec[\"device\"] == \"cpu\"" in c]
    assert len(hit) == 1
    compile("\n".join(line for line in hit[0].splitlines() if not line.lstrip().startswith("%")), "cell", "exec")
    original = json.loads((ROOT / "book" / "06-figures.ipynb").read_text())
    assert len(original["cells"]) == len(nb["cells"])


def test_bench_gpu_runs_end_to_end_as_a_dry_run_on_the_cpu(tmp_path):
    """bench_gpu.py --quick with BENCH_GPU_DEVICE=cpu: the script's frame (arguments, sections,
    JSON after each, the report) and its Fig. 6 section, a few steps. The WikiText sections are
    left out here (full-size models: ~40 s on 2 cores); they call train_lm/train_lms and
    validation_attention_entropy, which tests/test_lm.py and tests/test_cuda.py cover."""
    env = dict(os.environ, BENCH_GPU_DEVICE="cpu")
    out = tmp_path / "gpu.json"
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_gpu.py"), "--quick", "--no-all",
                        "--only", "fig6", "--json", str(out)],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    rec = json.loads(out.read_text())
    assert set(rec) == {"machine", "fig6"} and len(rec["fig6"]["rows"]) == 4
    assert all(r[1] > 0 for r in rec["fig6"]["rows"])
    assert "Fig. 6 sweep" in r.stdout and "mean_entropy" in rec["fig6"]
