"""Statements keep the paper's numbers: ``{prf:lemma}`` with ``:label: lemma-5`` is "Lemma 5".

sphinx-proof numbers statements in order of appearance (the first lemma of the book would be
"Lemma 1"); the book follows the paper (arXiv 2305.16380v4), so the number is read off the
label instead: ``<kind>-<number>`` for lemma, theorem, corollary, remark, assumption,
definition. A statement whose label does not have that form keeps sphinx-proof's number;
two statements claiming the same number are a build error.
"""
from __future__ import annotations

import re

from sphinx.errors import ExtensionError

_LABEL = re.compile(r"^(lemma|theorem|corollary|remark|assumption|definition|proposition)-(\d+)$")


def _renumber(app, env):
    seen: dict[tuple, str] = {}
    for docname, by_type in env.toc_fignumbers.items():
        for figtype, numbers in by_type.items():
            for target in list(numbers):
                m = _LABEL.match(target)
                if not m or m.group(1) != figtype:
                    continue
                key = (figtype, int(m.group(2)))
                if key in seen and seen[key] != target:
                    raise ExtensionError(f"{figtype} {key[1]} is labelled twice ({seen[key]}, {target})")
                seen[key] = target
                numbers[target] = (int(m.group(2)),)
    return []


def setup(app):
    app.setup_extension("sphinx_proof")
    # after Sphinx assigned its figure numbers (TocTreeCollector, env-get-updated, priority 500)
    app.connect("env-get-updated", _renumber, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
