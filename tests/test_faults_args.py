"""Issue 28, the command line's arguments: every mistake is one line on stderr and exit 2, before
anything is computed or written; every bound is stated; what a run records says what it did.

In-process (``scansnap.__main__.main``) with the figure functions replaced where only the
arguments matter: fast, and a call to a figure function is itself the failure."""
import json
import shlex
from pathlib import Path

import pytest

from scansnap import __main__ as cli
from scansnap import provenance as pv

PROG = "python -m scansnap"


def _main(capsys, *args):
    try:
        status = cli.main(list(args))
    except SystemExit as e:
        status = e.code
    out = capsys.readouterr()
    return status, out.out, out.err


@pytest.fixture
def nothing_runs(monkeypatch):
    """Every figure function fails the test if it is called."""
    called = []
    for name in cli.FIGURES + cli.EXTRAS:
        monkeypatch.setattr(cli, f"reproduce_{name}", lambda *a, _n=name, **k: called.append(_n))
    yield called
    assert not called, f"a refused command computed {called}"


def _refused(capsys, tmp_path, *args, match):
    out = tmp_path / "out"
    status, stdout, err = _main(capsys, "reproduce", *args, *([] if "--out" in args else ["--out", str(out)]))
    assert status == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err        # one line
    assert err.startswith(f"{PROG}") and ": error: " in err
    assert match in err, err
    assert not out.exists() or not any(out.iterdir())                   # nothing written
    return err


@pytest.mark.parametrize("args, match", [
    # --seeds: format, emptiness, duplicates, bounds (each checked while parsing, in linear time)
    (("fig6", "--seeds", "1-200000"), "200000 seeds in '1-200000': at most 100"),       # hung 47 s+ before
    (("fig6", "--seeds", "18446744073709551615"),
     "seed 18446744073709551615 in '18446744073709551615' is out of range: a seed is an integer in [0, 2**63 - 1]"),
    (("fig6", "--seeds", "9223372036854775807-9223372036854775808"), "seed 9223372036854775808"),
    (("fig6", "--seeds", "5-1"), "no seeds in '5-1'"),
    (("fig6", "--seeds", "1-2-3"), "seeds must look like '1-10' or '1,2,5', got '1-2-3'"),
    (("fig6", "--seeds", "1,,2"), "seeds must look like"),
    (("fig6", "--seeds", "a"), "seeds must look like"),
    (("fig6", "--seeds", ""), "seeds must look like"),
    (("fig6", "--seeds", "1,2,1"), "seed 1 is listed twice in '1,2,1'"),
    # --steps: bounds
    (("fig4", "--steps", "0"), "steps must be an integer >= 1, got 0"),
    (("fig4", "--steps", "-3"), "steps must be an integer >= 1, got -3"),
    (("fig4", "--steps", "100001"), "steps must be at most 100,000"),
    (("fig4", "--steps", "1000000000000"), "steps must be at most 100,000"),            # asked 7.3 TiB before
    (("fig4", "--steps", "1.5"), "argument --steps: invalid int value: '1.5'"),
    # a flag no figure of the command uses: silently ignored before
    (("fig3", "--seeds", "1,2"), "--seeds applies to fig6, fig11 and fig12 (the Syn-Medium sweep); fig3 would ignore it"),
    (("fig4", "fig5", "--seeds", "1"), "fig4, fig5 would ignore it"),
    (("fig3", "fig8", "--steps", "5"), "--steps applies to the trained figures"),
    (("fig6", "--data", "full"), "--data applies to fig7, fig10 and freeze (WikiText-2); fig6 would ignore it"),
    # the rest
    (("fig99",), "argument figure: invalid choice: 'fig99'"),
    (("fig4", "--device", "tpu"), "unknown device 'tpu'"),
    (("fig4", "--data", "wikitext-3"), "argument --data: invalid choice: 'wikitext-3'"),
    (("fig3", "--out", ""), "--out is empty: name a folder ('.' for the working folder)"),  # was the working folder
    (("fig3", "--out", "/proc/scansnap-results"), "cannot write results in /proc/scansnap-results"),
])
def test_a_bad_argument_is_one_line_and_exit_2(capsys, tmp_path, nothing_runs, args, match):
    _refused(capsys, tmp_path, *args, match=match)


def test_a_missing_command_or_figure_is_one_line_too(capsys, tmp_path):
    for args in ((), ("reproduce",), ("reproduce", "fig3")):
        status, _, err = _main(capsys, *args)
        assert status == 2 and err.count("\n") == 1 and "error:" in err, err


def test_cuda_asked_for_without_cuda(capsys, tmp_path, nothing_runs):
    import torch
    if torch.cuda.is_available():
        pytest.skip("CUDA is present here")
    _refused(capsys, tmp_path, "fig4", "--device", "cuda:1", match="device 'cuda:1' asked for, but CUDA is not available")


def test_an_out_that_is_a_file(capsys, tmp_path, nothing_runs):
    f = tmp_path / "results"
    f.write_text("x")
    _refused(capsys, tmp_path, "fig3", "--out", str(f), match=f"--out {f} is a file, not a folder")
    assert f.read_text() == "x"


def test_the_bounds_themselves_are_accepted():
    assert cli._seeds("0") == (0,)
    assert cli._seeds(f"{2 ** 63 - 1}") == (2 ** 63 - 1,)
    assert cli._seeds("1-100") == tuple(range(1, 101))
    assert cli._seeds("3,1,2") == (3, 1, 2)


def _fake_fig3(out, **kw):
    (out / "fig3.csv").write_text("eta_y,t,growth_bound\n1,1,1\n")
    (out / "fig3.png").write_bytes(b"png")
    return ["fig3.csv", "fig3.png"]


def test_cpu_0_is_recorded_as_the_cpu(capsys, tmp_path, monkeypatch):
    """--device cpu:0 was recorded as 'cpu:0', which chapter 6's check called 'made on a GPU'."""
    monkeypatch.setattr(cli, "reproduce_fig3", _fake_fig3)
    status, out, err = _main(capsys, "reproduce", "fig3", "--out", str(tmp_path), "--device", "cpu:0")
    assert status == 0, err
    assert json.loads((tmp_path / "fig3.provenance.json").read_text())["device"] == "cpu"
    assert out.strip().endswith("on cpu")


def test_the_recorded_command_is_shell_quoted(capsys, tmp_path, monkeypatch):
    """A path with spaces (or quotes) could not be re-run as recorded: the command is shlex-joined."""
    monkeypatch.setattr(cli, "reproduce_fig3", _fake_fig3)
    d = tmp_path / "my results" / "it's here"
    status, _, err = _main(capsys, "reproduce", "fig3", "--out", str(d))
    assert status == 0, err
    cmd = json.loads((d / "fig3.provenance.json").read_text())["command"]
    assert shlex.split(cmd) == ["python", "-m", "scansnap", "reproduce", "fig3", "--out", str(d)]


# ---------------------------------------------------------------------------------------
# The book's own results: never replaced by a run with other settings without --force
# ---------------------------------------------------------------------------------------

def test_the_real_book_results_are_refused_other_settings(capsys, nothing_runs):
    """`reproduce fig4 --steps 3 --out scansnap/results` replaced the paper-setting set, no copy kept."""
    book = cli._book_results_folder()
    before = {p.name: (p.stat().st_mtime_ns, p.stat().st_size) for p in book.iterdir()}
    for args in (("fig4", "--steps", "3"), ("fig6", "--seeds", "1,2"), ("fig10", "--data", "shipped", "--steps", "2")):
        status, _, err = _main(capsys, "reproduce", *args, "--out", str(book))
        assert status == 2 and err.count("\n") == 1, err
        assert f"--out {book} holds the book's own results, made with the paper's settings: {args[0]} would be " \
               "replaced by a run with other settings" in err and "add --force" in err
    after = {p.name: (p.stat().st_mtime_ns, p.stat().st_size) for p in book.iterdir()}
    assert after == before


def test_force_and_the_paper_settings_pass_the_guard(capsys, tmp_path, monkeypatch):
    book = tmp_path / "book-results"
    book.mkdir()
    monkeypatch.setattr(cli, "_book_results_folder", lambda: book)
    ran = []

    def fake_fig4(out, steps, **kw):
        ran.append(steps)
        for n in ("fig4.csv", "fig4.png"):
            (out / n).write_text(f"{steps}\n")
        return ["fig4.csv", "fig4.png"]

    monkeypatch.setattr(cli, "reproduce_fig4", fake_fig4)
    status, _, err = _main(capsys, "reproduce", "fig4", "--steps", "3", "--out", str(book))
    assert status == 2 and "add --force" in err and not ran
    # the paper's own settings, spelled out, are not "other settings"; --force lets others through
    assert _main(capsys, "reproduce", "fig4", "--steps", "100", "--out", str(book))[0] == 0
    assert _main(capsys, "reproduce", "fig4", "--steps", "3", "--out", str(book), "--force")[0] == 0
    assert ran == [100, 3]
    # any other folder takes any settings
    assert _main(capsys, "reproduce", "fig4", "--steps", "3", "--out", str(tmp_path / "mine"))[0] == 0


def test_help_states_the_bounds(capsys):
    status, out, _ = _main(capsys, "reproduce", "--help")
    assert status == 0
    text = " ".join(out.split())
    assert "at most 100,000" in text and "at most 100" in text and "--force" in text


def test_every_help_text_is_shown(capsys):
    """Each flag's help (HELP) is what --help prints for it, and the top level names the command."""
    status, out, _ = _main(capsys, "reproduce", "--help")
    text = " ".join(out.split())
    for key in ("figure", "--out", "--device", "--steps", "--seeds", "--data", "--force", "grid", "grid-note",
                "--eta-z", "--ratio", "--num-last", "--batch", "--T", "epilog"):
        assert " ".join(cli.HELP[key].split()) in text, key
    assert text.startswith("usage: python -m scansnap reproduce [-h]")
    status, out, _ = _main(capsys, "--help")
    text = " ".join(out.split())
    assert status == 0 and cli.HELP["prog"] in text and cli.HELP["reproduce"] in text
