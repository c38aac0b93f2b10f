import json
from pathlib import Path

import pytest

from scansnap.ledger import MOVEMENTS, RESULTS, collect, markdown, statement_label, statements

BOOK = Path(__file__).parents[1] / "book"


def test_every_result_is_checked_in_the_book():
    table = collect(BOOK)
    assert len(RESULTS) == 29
    missing = [r for r in RESULTS if not table[r]["check"]]
    assert not missing, f"results without a check cell: {missing}"
    text = markdown(table, statements(BOOK))
    assert text.count("\n") == len(RESULTS) + 1 and "{ref}`" in text


def _nb(tmp_path, cells):
    nb = {"cells": [{"cell_type": "markdown", "source": ["(sec-x)=\n## x"], "metadata": {}}] + cells}
    (tmp_path / "x.ipynb").write_text(json.dumps(nb))


def _code(src, tag, outputs=()):
    return {"cell_type": "code", "source": [src], "metadata": {"tags": [tag]}, "outputs": list(outputs)}


def test_bad_tags_are_errors(tmp_path):
    _nb(tmp_path, [_code("1", "ledger:Lemma 99:check")])
    with pytest.raises(ValueError, match="bad ledger tag 'ledger:Lemma 99:check'"):
        collect(tmp_path)


@pytest.mark.parametrize("src, tag, why", [
    ("", "ledger:Lemma 1:check", "asserts nothing"),                      # an empty check cell
    ("x = 1\nprint(x)", "ledger:Lemma 1:check", "asserts nothing"),
    ("assert 1 + 1 == 2", "ledger:Lemma 1:derive", "no sympy algebra"),
    ("import sympy as sp\nx = sp.Symbol('x')", "ledger:Lemma 1:derive", "asserts nothing"),
    ("import numpy as np\nnp.exp(1)", "ledger:Lemma 1:train", "trains no model"),
    ("plt.plot([1])", "ledger:Lemma 1:plot", "shows no figure"),
])
def test_a_tag_the_cell_does_not_live_up_to_is_an_error(tmp_path, src, tag, why):
    _nb(tmp_path, [_code(src, tag)])
    with pytest.raises(ValueError, match=why):
        collect(tmp_path)


def test_tags_that_hold(tmp_path):
    _nb(tmp_path, [
        _code("import sympy as sp\nassert sp.simplify(sp.sin(1)**2 + sp.cos(1)**2) == 1", "ledger:Lemma 1:derive"),
        _code("def run():\n    return inner()\ndef inner():\n    return train(c)", "ledger:Lemma 2:check".replace("check", "plot"),
              outputs=[{"data": {"image/png": "x"}}]),
        _code("res = run()", "ledger:Lemma 2:train"),                      # through two local functions
        _code("assert abs(0.1 + 0.2 - 0.3) < 1e-12", "ledger:Lemma 2:check"),
    ])
    table = collect(tmp_path)
    assert table["Lemma 1"]["derive"] == [("x", "sec-x")]
    assert {m for m in MOVEMENTS if table["Lemma 2"][m]} == {"plot", "train", "check"}


def test_results_link_to_their_statements():
    table = {r: {m: [] for m in MOVEMENTS} for r in RESULTS}
    text = markdown(table, {"lemma-5"})
    assert "{prf:ref}`Lemma 5 <lemma-5>`" in text and "| Lemma 6 |" in text
    assert statement_label("Corollary 2") == "corollary-2"


def test_pages_are_named_for_a_reader():
    from scansnap.ledger import page_name
    assert [page_name(s) for s in ("01-model", "03-decoder", "03a-decoder-proofs", "05a-snap-proofs",
                                   "errata")] == ["model", "decoder", "3A", "5A", "errata"]


def test_a_result_spanning_a_chapter_and_its_appendix(tmp_path):
    """Cells of one result in a main line and in its appendix page (issue 25's split): one entry
    per page, main line first, each further section of a page linked from '(2)', '(3)'."""
    def nb(name, sections):
        cells = []
        for label, tag in sections:
            cells.append({"cell_type": "markdown", "source": [f"({label})=\n## x"], "metadata": {}})
            cells.append(_code("assert 1 + 1 == 2", tag))
        (tmp_path / name).write_text(json.dumps({"cells": cells}))

    nb("03-decoder.ipynb", [("sec-lemma-9", "ledger:Lemma 9:check")])
    nb("03a-decoder-proofs.ipynb", [("sec-lemma-9-stage-1", "ledger:Lemma 9:check"),
                                    ("sec-lemma-9-stage-2", "ledger:Lemma 9:check")])
    table = collect(tmp_path)
    assert table["Lemma 9"]["check"] == [("03-decoder", "sec-lemma-9"),
                                         ("03a-decoder-proofs", "sec-lemma-9-stage-1"),
                                         ("03a-decoder-proofs", "sec-lemma-9-stage-2")]
    row = next(r for r in markdown(table).splitlines() if r.startswith("| Lemma 9 |"))
    assert row == ("| Lemma 9 | — | {ref}`decoder <sec-lemma-9>`, {ref}`3A <sec-lemma-9-stage-1>` "
                   "{ref}`(2) <sec-lemma-9-stage-2>` | — | — |")
