"""Tests for mutants of scansnap/ledger.py that the suite let survive (issue 28).

Each test builds a tiny notebook in a temporary folder and pins what ``collect`` /
``statements`` / ``page_name`` / ``markdown`` make of it. The mutant names are those of the
mutmut run at d368bf7 (``scansnap.ledger.x_<function>__mutmut_<n>``).
"""
import json
import signal
from contextlib import contextmanager

import pytest

from scansnap.ledger import MOVEMENTS, RESULTS, collect, markdown, page_name, statements


@contextmanager
def deadline(seconds=2.0):
    """Fail (instead of hanging) when the body loops forever."""
    def on_alarm(signum, frame):
        raise TimeoutError(f"still running after {seconds} s")
    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _md(*lines):
    return {"cell_type": "markdown", "source": list(lines), "metadata": {}}


def _code(src, *tags, outputs=()):
    return {"cell_type": "code", "source": [src], "metadata": {"tags": list(tags)}, "outputs": list(outputs)}


def _write(tmp_path, cells, name="x"):
    (tmp_path / f"{name}.ipynb").write_text(json.dumps({"cells": cells}))


def _collect(tmp_path, cells):
    _write(tmp_path, [_md("(sec-x)=\n", "## x")] + cells)
    with deadline():
        return collect(tmp_path)


def test_a_trainer_called_as_an_attribute_counts_as_training(tmp_path):
    """`sc.train(c)` trains, like `train(c)`. Kills _called_names 5 (attribute name dropped)."""
    table = _collect(tmp_path, [_code("res = sc.train(c)", "ledger:Lemma 1:train")])
    assert table["Lemma 1"]["train"] == [("x", "sec-x")]


def test_shell_and_magic_lines_are_blanked_before_parsing(tmp_path):
    """`!pip ...` and `%time` lines are not Python; the rest of the cell is. Kills _parse 10."""
    table = _collect(tmp_path, [_code("!pip install nothing\n%time 1\nassert 1 + 1 == 2", "ledger:Lemma 1:check")])
    assert table["Lemma 1"]["check"] == [("x", "sec-x")]


def test_an_unparsable_cell_is_named_by_notebook_and_code_cell_number(tmp_path):
    """Kills _parse 12 (message None) and collect 19 (the `where` dropped)."""
    with pytest.raises(ValueError, match=r"^x\.ipynb, code cell 1: cannot parse the cell \("):
        _collect(tmp_path, [_code("x = 1"), _code("def (:")])


def test_a_local_function_that_trains_nothing_does_not_make_a_train_cell(tmp_path):
    """A helper that calls no trainer is not a trainer. Kills _training_functions 11 (`or`) and
    13 (`called | training`, always true)."""
    with pytest.raises(ValueError, match="tagged train, but the cell trains no model"):
        _collect(tmp_path, [_code("def helper():\n    return 1\nhelper()", "ledger:Lemma 1:train")])


def test_training_is_found_through_a_chain_of_local_functions_in_finite_time(tmp_path):
    """outer -> middle -> inner -> train, defined so that one pass over the definitions finds
    only `inner`: the closure needs further passes, and must stop. Kills _training_functions 10
    (`changed = True`: loops forever), 14 (adds None: loops forever) and 15 (stops after one
    pass)."""
    src = ("def outer():\n    return middle()\n"
           "def middle():\n    return inner()\n"
           "def inner():\n    return train(c)\n")
    table = _collect(tmp_path, [_code(src), _code("outer()", "ledger:Lemma 3:train")])
    assert table["Lemma 3"]["train"] == [("x", "sec-x")]


def test_derive_accepts_sympy_by_its_full_name(tmp_path):
    """`import sympy` then `sympy.simplify` is sympy algebra. Kills _verify 11, 12."""
    table = _collect(tmp_path, [_code("import sympy\nassert sympy.simplify(sympy.Integer(2) - 2) == 0",
                                      "ledger:Lemma 1:derive")])
    assert table["Lemma 1"]["derive"] == [("x", "sec-x")]


def test_plot_accepts_an_svg_figure_after_a_stream_output(tmp_path):
    """A stream output has no "data"; an SVG is a figure. Kills _verify 43, 45 (`in None` on the
    stream output), 48, 49 (SVG key misspelt), 51-56 (SVG looked up under another key / None)."""
    outputs = [{"output_type": "stream", "name": "stdout", "text": "hi"},
               {"output_type": "display_data", "data": {"image/svg+xml": "<svg/>"}}]
    table = _collect(tmp_path, [_code("plt.plot([1])", "ledger:Lemma 1:plot", outputs=outputs)])
    assert table["Lemma 1"]["plot"] == [("x", "sec-x")]


def test_plot_with_only_text_output_shows_no_figure(tmp_path):
    """A text/plain output is not a figure. Kills _verify 50 (`not in` for the SVG key)."""
    outputs = [{"output_type": "execute_result", "data": {"text/plain": "1"}}]
    with pytest.raises(ValueError, match="tagged plot, but the cell shows no figure"):
        _collect(tmp_path, [_code("1", "ledger:Lemma 1:plot", outputs=outputs)])


def test_plot_cell_without_an_outputs_key_is_a_value_error(tmp_path):
    """Kills _verify 58, 60 (iterating None when the cell has no "outputs")."""
    cell = _code("plt.plot([1])", "ledger:Lemma 1:plot")
    del cell["outputs"]
    with pytest.raises(ValueError, match="shows no figure"):
        _collect(tmp_path, [cell])


def test_a_verify_error_names_the_notebook_and_the_tag(tmp_path):
    """Kills collect 96 (the `where` passed to _verify dropped)."""
    with pytest.raises(ValueError, match=r"^x\.ipynb, 'ledger:Lemma 1:check': tagged check, but the cell asserts nothing$"):
        _collect(tmp_path, [_code("x = 1", "ledger:Lemma 1:check")])


def test_a_tag_with_no_label_above_it_is_an_error(tmp_path):
    """Kills collect 35 (label starts as "") and 91 (message None)."""
    _write(tmp_path, [_md("## no label"), _code("assert True", "ledger:Lemma 1:check")])
    with pytest.raises(ValueError, match=r"^x\.ipynb: ledger tag 'ledger:Lemma 1:check' has no \(label\)= above it$"):
        collect(tmp_path)


def test_a_label_on_a_later_line_of_a_markdown_cell_is_found(tmp_path):
    """The cell's source is a list of lines, joined with nothing. Kills collect 40."""
    _write(tmp_path, [_md("Some text.\n", "(sec-late)=\n", "## late"), _code("assert True", "ledger:Lemma 1:check")])
    assert collect(tmp_path)["Lemma 1"]["check"] == [("x", "sec-late")]


def test_cells_after_a_raw_cell_still_count(tmp_path):
    """Kills collect 59 (`break` at a cell that is neither markdown nor code)."""
    table = _collect(tmp_path, [{"cell_type": "raw", "source": ["raw"], "metadata": {}},
                                _code("assert True", "ledger:Lemma 1:check")])
    assert table["Lemma 1"]["check"] == [("x", "sec-x")]


def test_a_code_cell_without_metadata_is_skipped(tmp_path):
    """Kills collect 65, 67 (`.get("metadata", None)` fails on a cell with no metadata)."""
    bare = {"cell_type": "code", "source": ["1"], "outputs": []}
    table = _collect(tmp_path, [bare, _code("assert True", "ledger:Lemma 1:check")])
    assert table["Lemma 1"]["check"] == [("x", "sec-x")]


def test_a_ledger_tag_after_another_tag_counts(tmp_path):
    """Kills collect 71 ("TAGS") and 76 (`break` at the first non-ledger tag)."""
    table = _collect(tmp_path, [_code("assert True", "hide-input", "ledger:Lemma 1:check")])
    assert table["Lemma 1"]["check"] == [("x", "sec-x")]


def test_statements_come_from_markdown_cells_and_md_pages(tmp_path):
    """A statement label on a later line of a markdown cell counts, one in a code cell does not,
    and one in a .md page counts. Kills statements 4, 5, 12, 13, 14, 18, 23, 24."""
    _write(tmp_path, [_md("```{prf:lemma}\n", ":label: lemma-5\n", "text\n", "```"),
                      _code(":label: theorem-2\n")])
    (tmp_path / "notation.md").write_text("```{prf:remark}\n:label: remark-3\n```\n")
    assert statements(tmp_path) == {"lemma-5", "remark-3"}


def test_page_name_of_a_chapter_is_its_first_word():
    """Kills page_name 9 (split on whitespace) and 10 (split on "XX-XX")."""
    assert page_name("05-snap-dynamics") == "snap"
    assert page_name("03a-decoder-proofs") == "3A"
    assert page_name("intro") == "intro"


def test_markdown_header_rows_are_pinned():
    """Kills markdown 4, 5, 7, 8, 11, 12, 13, 14 (the header and rule rows)."""
    table = {r: {m: [] for m in MOVEMENTS} for r in RESULTS}
    lines = markdown(table).splitlines()
    assert lines[0] == "| result | derive | check | train | plot |"
    assert lines[1] == "|---|---|---|---|---|"
    assert lines[2] == "| Lemma 1 | — | — | — | — |"
