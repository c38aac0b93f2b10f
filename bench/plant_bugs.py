"""Plant the bugs of issue 11's list by hand, one at a time, in a copy of the package; the test
named beside each must fail. Usage: python bench/plant_bugs.py [index ...] (see bench/MUTATION.md).
Each pattern must occur once in the current source: after a rewrite, update the pattern."""
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SRC = Path(__file__).resolve().parents[1]
W = Path(tempfile.mkdtemp(prefix="scansnap-plant-")) / "w"
BUGS = [
 ("lr_grid swaps rate and ratio", "scansnap/train.py", "rows = [(r * z, z, s)", "rows = [(r * z, r, s)", "tests/test_trust.py::test_lr_grid_values_and_order"),
 ("lr_grid off by one (drops a seed)", "scansnap/train.py", "itertools.product(eta_z, ratio, seeds)", "itertools.product(eta_z, ratio, seeds[:-1])", "tests/test_trust.py::test_lr_grid_values_and_order"),
 ("divergence factor 100", "scansnap/train.py", "DIVERGED_FACTOR = 10.0", "DIVERGED_FACTOR = 100.0", "tests/test_trust.py::test_divergence_line_is_ten_times_the_start"),
 ("divergence check never warns", "scansnap/train.py", "    if diverged.any():", "    if False:", "tests/test_trust.py::test_absurd_rates_are_reported_as_diverged"),
 ("snapshot one update late", "scansnap/train.py", "        if s in snaps:\n            snapshots[s]", "        if s - 1 in snaps:\n            snapshots[s - 1]", "tests/test_train.py::test_snapshots_are_taken_after_that_many_updates"),
 ("class sampler skips the last class", "scansnap/data.py", "cls = torch.randint(classes.K, (batch,)", "cls = torch.randint(max(1, classes.K - 1), (batch,)", "tests/test_data.py::test_class_sampler_is_uniform_and_contexts_follow_P"),
 ("counts include the query", "scansnap/data.py", "    ctx = tokens[..., :-1]\n    if ctx.numel()", "    ctx = tokens\n    if ctx.numel()", "tests/test_data.py::test_sample_counts_is_the_same_batch"),
 ("recall averaged over tokens, not classes", "scansnap/metrics.py", "return (hit.sum(-1) / mask.sum(-1)).mean(-1)", "return hit.sum((-1, -2)) / mask.sum()", "tests/test_metrics.py::test_recall_threshold_is_a_mean_over_classes"),
 ("distinct entropy max instead of mean", "scansnap/metrics.py", "return _entropy(d).mean(axis=-1)", "return _entropy(d).max(axis=-1)", "tests/test_metrics.py::test_distinct_entropy_averages_over_classes"),
 ("attention entropy NaN read as 0", "scansnap/metrics.py", "    a = finite(what, attn)", "    a = np.nan_to_num(np.asarray(attn, float))", "tests/test_metrics.py::test_attention_entropy_refuses_what_is_not_attention"),
 ("Eq. 12 lower bound without the square", "scansnap/theory.py", "np.exp(2 * f0_sq * B)", "np.exp(2 * np.sqrt(f0_sq) * B)", "tests/test_theory.py::test_eq12_growth_factor_bounds_values"),
 ("transition time constant 2 -> 4", "scansnap/theory.py", "return 2 * (1 + omega1(M)) * K", "return 4 * (1 + omega1(M)) * K", "tests/test_theory.py::test_transition_time_from_the_upper_zero"),
 ("omega1 wrong constant (M-2)", "scansnap/theory.py", "np.log((1 + w) * (M - 1) * np.log(M) / M)", "np.log((1 + w) * (M - 2) * np.log(M) / M)", "tests/test_theory.py::test_transition_time_from_the_upper_zero"),
 ("h_closed old cancelling formula", "scansnap/theory.py", "u = np.log((M - 1) * np.real(wrightomega(y)))", "u = A / (M - 1) - np.real(wrightomega(y))", "tests/test_trust.py::test_h_closed_exact_for_huge_t"),
 ("positional encoding 1000 not 10000", "scansnap/model.py", "(-math.log(10000.0) / d)", "(-math.log(1000.0) / d)", "tests/test_trust.py::test_sinusoidal_encoding_values"),
 ("positional encoding sin/cos swapped", "scansnap/model.py", "pe[:, 0::2] = torch.sin(pos * div)", "pe[:, 0::2] = torch.cos(pos * div)", "tests/test_trust.py::test_sinusoidal_encoding_values"),
 ("Lemma 3 without the E' correction", "scansnap/theory.py", "u = f - F @ Ep[:, n] if modified else f", "u = f", "tests/test_theory.py::test_lemma3_modified_dynamics_give_the_scalar_form"),
 ("Theorem 5 W without (M-1)", "scansnap/theory.py", "W = np.stack([(M - 1) * hs[c]", "W = np.stack([M * hs[c]", "tests/test_theory.py::test_theorem5_closed_form_and_corollary1"),
 ("Theorem 1 beta with the printed sign", "scansnap/theory.py", "else q1 * Ep[n, m] - q0 * (1 - s)", "else q1 * Ep[n, m] + q0 * (1 + s)", "tests/test_theory.py::test_theorem1_coefficients_and_xi"),
 ("Lemma 4 missing the -I", "scansnap/theory.py", "out += f * (f * (f @ v) - v)", "out += f * (f * (f @ v))", "tests/test_theory.py::test_lemma4_zdot_is_the_expected_gradient"),
 ("forward_counts lets all-zero counts through", "scansnap/model.py", "        if len(empty):\n", "        if False:\n", "tests/test_trust.py::test_forward_counts_rejects_what_would_be_nan_or_wrong"),
 ("Adam betas not passed on", "scansnap/train.py", "optimizer, momentum, betas)", "optimizer, momentum)", "tests/test_train.py::test_adam_betas_reach_the_optimizer"),
 ("duplicate runs allowed", "scansnap/train.py", "    _no_duplicate_runs(ey, ez, seed_arr)\n", "", "tests/test_trust.py::test_bad_training_arguments_named"),
 ("shipped checksum not checked", "scansnap/wikitext.py", "    if digest != SHA256[name]:", "    if False:", "tests/test_wikitext.py::test_a_corrupt_shipped_file_is_refused"),
 ("cache written in place", "scansnap/wikitext.py", "            _write_atomic(zpath, blob)", "            zpath.parent.mkdir(parents=True, exist_ok=True); zpath.write_bytes(blob[:10]); _write_atomic(zpath.with_suffix('.x'), blob)", "tests/test_wikitext.py::test_full_is_verified_cached_atomically_and_reused"),
 ("book_results skips the settings check", "scansnap/experiments.py", "        provenance.check_settings(p, rec)\n", "", "tests/test_provenance.py::test_results_made_with_other_settings_are_refused"),
 ("book_results skips the hash check", "scansnap/provenance.py", "    if digest != rec[\"files\"][path.name]:", "    if False:", "tests/test_provenance.py::test_a_mixed_or_edited_set_is_refused"),
 ("reproduce writes straight into --out", "scansnap/__main__.py", "files = globals()[f\"reproduce_{fig}\"](stage,", "files = globals()[f\"reproduce_{fig}\"](out,", "tests/test_provenance.py::test_an_interrupted_figure_leaves_the_previous_set"),
 ("side-by-side LM runs share torch's dropout stream", "scansnap/lm.py", "        m.generator = gen\n", "        pass\n", "tests/test_lm.py::test_runs_side_by_side_equal_runs_alone_bit_for_bit"),
 ("LM dropout generator not the seeded stream's continuation", "scansnap/lm.py", "        gen.set_state(torch.get_rng_state() if", "        (torch.get_rng_state() if", "tests/test_lm.py::test_train_lm_draws_what_a_plain_seeded_script_draws"),
 ("train_lm ignores stop", "scansnap/lm.py", "        if stop is not None and stop.is_set():\n            return None\n        if s in snaps:", "        if s in snaps:", "tests/test_lm.py::test_a_failed_run_stops_the_runs_beside_it"),
 ("side-by-side runs on all torch threads", "scansnap/_cpu.py", "        torch.set_num_threads(1)     #", "        pass     #", "tests/test_lm.py::test_runs_side_by_side_equal_runs_alone_bit_for_bit"),
 ("threads started later keep one torch thread", "scansnap/_cpu.py", "        torch.set_num_threads(caller)", "        pass", "tests/test_lm.py::test_runs_side_by_side_equal_runs_alone_bit_for_bit"),
 ("a failed run does not stop the others", "scansnap/_cpu.py", "        except BaseException:\n            stop.set()\n            raise\n", "        except BaseException:\n            raise\n", "tests/test_lm.py::test_a_failed_run_stops_the_runs_beside_it"),
 ("runs queued after a failure still start", "scansnap/_cpu.py", "        if stop.is_set():            #", "        if False:            #", "tests/test_lm.py::test_a_failed_run_stops_the_runs_beside_it"),
 ("LM runs one per run, not per torch thread", "scansnap/experiments.py", "min(torch.get_num_threads(), runs)", "runs", "tests/test_lm.py::test_lm_workers_rule"),
 ("a stopped run counted done", "scansnap/experiments.py", "        if res is not None:      #", "        if True:      #", "tests/test_lm.py::test_lm_runs_counts_only_finished_runs"),
]
only = sys.argv[1:]
env = dict(os.environ, PYTHONPATH=str(W), SCANSNAP_TEST_THREADS="1", OMP_NUM_THREADS="1")
for i, (what, f, old, new, test) in enumerate(BUGS):
    if only and str(i) not in only:
        continue
    if W.exists():
        shutil.rmtree(W)
    for d in ("scansnap", "tests"):
        shutil.copytree(SRC / d, W / d, ignore=shutil.ignore_patterns("__pycache__", "*.png"))
    shutil.copy(SRC / "pyproject.toml", W)
    src = (W / f).read_text()
    if src.count(old) != 1:
        print(f"{i:2d} SKIPPED {what}: the pattern occurs {src.count(old)} times in {f} now", flush=True)
        continue
    (W / f).write_text(src.replace(old, new))
    r = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", test],
                       cwd=W, env=env, capture_output=True, text=True)
    verdict = "CAUGHT" if r.returncode == 1 else ("MISSED" if r.returncode == 0 else f"rc={r.returncode}")
    print(f"{i:2d} {verdict:7s} {what}  [{test.split('::')[1]}]", flush=True)
    if verdict != "CAUGHT":
        print(r.stdout[-1500:], r.stderr[-1500:])
