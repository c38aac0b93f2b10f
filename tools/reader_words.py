"""Words a reader reads on a built page: the article's text with headings, admonitions,
proof statements, tables and figure captions, but without code inputs, math, or (unless
--outputs) what the code cells print. It counts more than tools/prose_words.py, which reads
only the notebooks' Markdown cells (captions kept in cell metadata are not there).

    python tools/reader_words.py [--outputs] _build/html/book/03-decoder.html [...]
"""
import re, sys
from bs4 import BeautifulSoup

WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*")

def reader_words(path, outputs=False):
    art = BeautifulSoup(open(path, encoding="utf-8").read(), "html.parser")
    art = art.find("article") or art
    drop = ["div.cell_input", "script", "style", "div.math", "span.math", "a.headerlink"]
    if not outputs:
        drop.append("div.cell_output")  # MyST-NB puts figure captions outside it: they stay
    for sel in drop:
        for el in art.select(sel):
            el.decompose()
    text = art.get_text(" ")
    text = re.sub(r"\\\(.*?\\\)|\\\[.*?\\\]|\$\$.*?\$\$", " ", text, flags=re.S)
    return len(WORD.findall(text))

if __name__ == "__main__":
    args = sys.argv[1:]
    outputs = "--outputs" in args
    for p in [a for a in args if a != "--outputs"]:
        print(f"{reader_words(p, outputs):6,d}  {p}")
