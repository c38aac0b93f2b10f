"""The book's ledger: which cell derives, checks and trains each numbered result.

Built from the chapters themselves, so it cannot drift: a code cell tagged
``ledger:<Result>:<derive|check|train>`` counts for that result, and it is linked to the
nearest MyST label ``(label)=`` above it.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

RESULTS = ([f"Lemma {i}" for i in range(1, 19)] + [f"Theorem {i}" for i in range(1, 6)]
           + ["Corollary 1", "Corollary 2"])
MOVEMENTS = ("derive", "check", "train")
_LABEL = re.compile(r"^\(([\w\-]+)\)=\s*$", re.M)


def collect(book_dir) -> dict:
    """{result: {movement: [(notebook stem, label), ...]}} over the chapters in ``book_dir``."""
    table: dict = {r: {m: [] for m in MOVEMENTS} for r in RESULTS}
    for path in sorted(Path(book_dir).glob("*.ipynb")):
        nb = json.loads(path.read_text())
        label = None
        for cell in nb["cells"]:
            src = "".join(cell["source"])
            if cell["cell_type"] == "markdown":
                found = _LABEL.findall(src)
                if found:
                    label = found[-1]
                continue
            for tag in cell.get("metadata", {}).get("tags", []):
                if not tag.startswith("ledger:"):
                    continue
                _, result, movement = tag.split(":")
                if result not in table or movement not in MOVEMENTS:
                    raise ValueError(f"{path.name}: bad ledger tag {tag!r}")
                if label is None:
                    raise ValueError(f"{path.name}: ledger tag {tag!r} has no (label)= above it")
                entry = (path.stem, label)
                if entry not in table[result][movement]:
                    table[result][movement].append(entry)
    return table


def markdown(table: dict) -> str:
    """A MyST table with {ref} links to the sections holding each movement's cells."""
    lines = ["| result | derive | check | train |", "|---|---|---|---|"]
    for result in RESULTS:
        cells = []
        for m in MOVEMENTS:
            refs = [f"{{ref}}`{stem.split('-', 1)[-1]} <{label}>`" for stem, label in table[result][m]]
            cells.append(", ".join(refs) if refs else "—")
        lines.append(f"| {result} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
