"""The execution-status table says "passed" / "failed" in words.

MyST-NB's ``{nb-exec-table}`` marks each notebook with the emoji U+2705 / U+274C, which is an
empty box on a machine without an emoji font. This post-transform runs right after MyST-NB
builds the table (its priority 8) and swaps each mark for the word (the failure keeps the
error message MyST-NB attaches to it as a tooltip).
"""
from __future__ import annotations

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

WORDS = {"\u2705": "passed", "\u274c": "failed"}


class ExecTableWords(SphinxPostTransform):
    default_priority = 9      # after myst_nb's ExecutionStatsPostTransform (8), before references (10)

    def run(self, **kwargs) -> None:
        for table in self.document.findall(nodes.table):
            for text in list(table.findall(nodes.Text)):
                word = WORDS.get(str(text).strip())
                if word is not None:
                    text.parent.replace(text, nodes.Text(word))


def setup(app):
    app.add_post_transform(ExecTableWords)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
