"""The book's ledger: which cell derives, checks, trains or plots each numbered result.

Built from the chapters themselves, so it cannot drift: a code cell tagged
``ledger:<Result>:<movement>`` counts for that result, and it is linked to the nearest MyST
label ``(label)=`` above it. A tag is a claim about what the cell does, so it is verified:

- ``derive``: the cell does algebra with sympy (it calls ``sp.<...>`` or ``sympy.<...>``) and
  asserts its result;
- ``check``: the cell asserts (an ``assert`` statement), so a false claim fails the build;
- ``train``: the cell trains a model: it calls one of the package's trainers
  (:data:`TRAINERS`) or a function of the same notebook that does, directly or not;
- ``plot``: the cell draws a figure (a PNG among its stored outputs) from a closed form or a
  solved ODE; no model is trained.

A statement of the result (``{prf:lemma}`` etc. with ``:label: lemma-5``) is linked from the
result's name when a chapter has one.
"""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

RESULTS = ([f"Lemma {i}" for i in range(1, 19)] + [f"Theorem {i}" for i in range(1, 6)]
           + ["Corollary 1", "Corollary 2"] + [f"Remark {i}" for i in range(1, 5)])
MOVEMENTS = ("derive", "check", "train", "plot")
# the package's functions that train a model (Y/Z, extended Y/Z, or the embedding transformer)
TRAINERS = frozenset({"train", "fit", "train_lm", "train_lms", "syn_medium_sweep", "decoder_sweep", "fig4", "fig5",
                      "fig6", "fig7", "fig10", "lm_freezing"})
_LABEL = re.compile(r"^\(([\w\-]+)\)=\s*$", re.M)
_STATEMENT = re.compile(r"^:label:\s*((?:lemma|theorem|corollary|remark)-\d+)\s*$", re.M)


def statement_label(result: str) -> str:
    """'Lemma 5' -> 'lemma-5', the label of its ``{prf:lemma}`` statement."""
    kind, number = result.split()
    return f"{kind.lower()}-{number}"


def _called_names(tree: ast.AST) -> set[str]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name):
                out.add(f.id)
            elif isinstance(f, ast.Attribute):
                out.add(f.attr)
    return out


def _parse(src: str, where: str) -> ast.AST:
    # IPython magics are not Python: blank them before parsing
    src = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in src.splitlines())
    try:
        return ast.parse(src)
    except SyntaxError as e:
        raise ValueError(f"{where}: cannot parse the cell ({e})") from None


def _training_functions(trees: list[ast.AST]) -> set[str]:
    """Names of the notebook's functions that (transitively) call a trainer."""
    calls = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                calls[node.name] = _called_names(node)
    training = set(TRAINERS)
    changed = True
    while changed:
        changed = False
        for name, called in calls.items():
            if name not in training and called & training:
                training.add(name)
                changed = True
    return training


def _verify(movement: str, tree: ast.AST, cell: dict, training: set[str], where: str) -> None:
    if movement == "derive":
        uses_sympy = any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                         and n.value.id in ("sp", "sympy") for n in ast.walk(tree))
        if not uses_sympy:
            raise ValueError(f"{where}: tagged derive, but the cell does no sympy algebra")
    if movement in ("derive", "check"):
        if not any(isinstance(n, ast.Assert) for n in ast.walk(tree)):
            raise ValueError(f"{where}: tagged {movement}, but the cell asserts nothing")
    elif movement == "train":
        if not _called_names(tree) & training:
            raise ValueError(f"{where}: tagged train, but the cell trains no model "
                             f"(it calls none of {sorted(TRAINERS)} nor a function that does)")
    elif movement == "plot":
        if not any("image/png" in o.get("data", {}) or "image/svg+xml" in o.get("data", {})
                   for o in cell.get("outputs", [])):
            raise ValueError(f"{where}: tagged plot, but the cell shows no figure")


def collect(book_dir) -> dict:
    """{result: {movement: [(notebook stem, label), ...]}} over the chapters in ``book_dir``.

    Raises ValueError for an unknown tag, a tag with no label above it, or a tag that the
    cell does not live up to (see the module's docstring).
    """
    table: dict = {r: {m: [] for m in MOVEMENTS} for r in RESULTS}
    for path in sorted(Path(book_dir).glob("*.ipynb")):
        nb = json.loads(path.read_text())
        code = [c for c in nb["cells"] if c["cell_type"] == "code"]
        trees = [_parse("".join(c["source"]), f"{path.name}, code cell {i}") for i, c in enumerate(code)]
        training = _training_functions(trees)
        trees_by_id = {id(c): t for c, t in zip(code, trees)}
        label = None
        for cell in nb["cells"]:
            src = "".join(cell["source"])
            if cell["cell_type"] == "markdown":
                found = _LABEL.findall(src)
                if found:
                    label = found[-1]
                continue
            if cell["cell_type"] != "code":
                continue
            for tag in cell.get("metadata", {}).get("tags", []):
                if not tag.startswith("ledger:"):
                    continue
                parts = tag.split(":")
                if len(parts) != 3 or parts[1] not in table or parts[2] not in MOVEMENTS:
                    raise ValueError(f"{path.name}: bad ledger tag {tag!r}")
                _, result, movement = parts
                if label is None:
                    raise ValueError(f"{path.name}: ledger tag {tag!r} has no (label)= above it")
                _verify(movement, trees_by_id[id(cell)], cell, training, f"{path.name}, {tag!r}")
                entry = (path.stem, label)
                if entry not in table[result][movement]:
                    table[result][movement].append(entry)
    return table


def statements(book_dir) -> set[str]:
    """The statement labels (``lemma-5`` ...) that the chapters in ``book_dir`` define."""
    found = set()
    for path in Path(book_dir).glob("*.ipynb"):
        nb = json.loads(path.read_text())
        for cell in nb["cells"]:
            if cell["cell_type"] == "markdown":
                found.update(_STATEMENT.findall("".join(cell["source"])))
    for path in Path(book_dir).glob("*.md"):
        found.update(_STATEMENT.findall(path.read_text()))
    return found


_PAGE = re.compile(r"^(\d+)([a-z]?)-(.+)$")


def page_name(stem: str) -> str:
    """How the table names a page: a chapter by its short name ('03-decoder' -> 'decoder'), an
    appendix page by its number ('03a-decoder-proofs' -> '3A'), so that a result whose cells
    span a chapter and its appendix reads 'decoder, 3A'; any other page by its stem."""
    m = _PAGE.match(stem)
    if not m:
        return stem
    number, appendix, name = m.groups()
    return f"{int(number)}{appendix.upper()}" if appendix else name.split("-")[0]


def _links(entries) -> str:
    """{ref} links to the sections of one movement, grouped by page in the order they come:
    the first section of a page is linked from the page's name, its further sections from
    '(2)', '(3)', ... right after it ('decoder (2), 3A')."""
    pages: dict[str, list[str]] = {}
    for stem, label in entries:
        pages.setdefault(stem, []).append(label)
    out = []
    for stem, labels in pages.items():
        refs = [f"{{ref}}`{page_name(stem)} <{labels[0]}>`"]
        refs += [f"{{ref}}`({i}) <{label}>`" for i, label in enumerate(labels[1:], start=2)]
        out.append(" ".join(refs))
    return ", ".join(out)


def markdown(table: dict, defined: set[str] | frozenset = frozenset()) -> str:
    """A MyST table: the result (linked to its statement when ``defined`` has its label), then
    {ref} links to the sections holding each movement's cells (see :func:`_links`)."""
    lines = ["| result | " + " | ".join(MOVEMENTS) + " |", "|---" * (len(MOVEMENTS) + 1) + "|"]
    for result in RESULTS:
        lab = statement_label(result)
        name = f"{{prf:ref}}`{result} <{lab}>`" if lab in defined else result
        cells = [_links(table[result][m]) or "—" for m in MOVEMENTS]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
