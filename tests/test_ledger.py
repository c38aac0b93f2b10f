import json
from pathlib import Path

import pytest

from scansnap.ledger import RESULTS, collect, markdown

BOOK = Path(__file__).parents[1] / "book"


def test_every_result_is_checked_in_the_book():
    table = collect(BOOK)
    assert len(RESULTS) == 25
    missing = [r for r in RESULTS if not table[r]["check"]]
    assert not missing, f"results without a check cell: {missing}"
    text = markdown(table)
    assert text.count("\n") == 26 and "{ref}`" in text


def test_bad_tags_are_errors(tmp_path):
    nb = {"cells": [{"cell_type": "code", "source": ["1"], "metadata": {"tags": ["ledger:Lemma 99:check"]}}]}
    (tmp_path / "x.ipynb").write_text(json.dumps(nb))
    with pytest.raises(ValueError, match="bad ledger tag 'ledger:Lemma 99:check'"):
        collect(tmp_path)
