"""The book's figures are numbered per chapter: "Fig. 3.2" is chapter 3's second figure.

Sphinx does the numbering: the Theory and Experiments parts of ``_toc.yml`` are numbered one
level deep (``numbered: 1``: the chapters get 1-7, their headings and appendix sub-pages
none), ``sphinx_multitoc_numbering`` carries the count from one part to the next (Sphinx
alone restarts it at 1 in every part), and ``numfig_secnum_depth: 1`` prefixes each figure
with its chapter's number. An appendix page (3A, a ``sections:`` sub-page of chapter 3)
continues its chapter's figures: its first figure after 3.6 is Fig. 3.7.

A page outside the numbered chapters (the intro, the back matter) has no chapter number, and
Sphinx would number its figures 1, 2, ...: the form the paper's own figures take ("the
paper's Fig. 4"). Such figures stay unnumbered here (their caption is kept); a ``{numref}``
to one is then a build warning, as for any figure without a number. tests/test_fig_refs.py
checks the built pages.
"""
from __future__ import annotations

_NUMBERED_KINDS = ("figure", "table", "code-block")


def _drop_unqualified(app, env):
    for by_type in env.toc_fignumbers.values():
        for kind in _NUMBERED_KINDS:
            numbers = by_type.get(kind, {})
            for target, number in list(numbers.items()):
                if len(number) < 2:          # (n,): no chapter in front of it
                    del numbers[target]
    return []


def setup(app):
    # after Sphinx assigned its figure numbers (TocTreeCollector, env-get-updated, priority 500)
    app.connect("env-get-updated", _drop_unqualified, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
