"""Page weight of the chapters: what a reader downloads, and what figures for phones would cost.

- the precomputed slider grid each chapter carries as saved widget state (``metadata.widgets``
  of the executed notebook: the PNGs of every grid point, base64), beside the notebook's size;
- one JavaScript live panel (``scansnap.live.panel``): its HTML without the static figure;
- with ``--built``: each built page (``_build/html``): its HTML and the figure PNGs it loads;
- with ``--variants``: what a phone variant of every figure would add (issue 26's alternative to
  the legible scroll box the book uses). The chapters are executed in memory (nothing is saved)
  with the figure hook wrapped: beside each figure's PNG it renders the same figure 4.9 in wide
  with the same fonts (the widest figure whose 9 pt text reads 9 CSS px in a 358 px phone
  column), the cheapest phone variant there is (no panels restacked), and counts its bytes.
  A few variants are written to ``--out`` to be looked at.

    python bench/page_weight.py [--built] [--variants [--out DIR]]
"""
from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PHONE_IN = 4.9

# run in the kernel before the chapter: wrap the figure hook to measure a phone variant of each figure
HOOK = r'''
import io, json, os
import scansnap.plots as _p
_orig = _p._retina_png
def _measured(fig):
    out = _orig(fig)
    if out is None:
        return out
    w, h = fig.get_size_inches()
    rec = {"desktop": len(out[0]), "width_in": round(float(w), 2)}
    if w > %(phone)s:
        fig.set_size_inches(%(phone)s, h)
        try:
            rec["phone"] = len(_orig(fig)[0])
            n = len(open(%(log)r).read().splitlines()) if os.path.exists(%(log)r) else 0
            if %(out)r and n %% 7 == 0:
                open(os.path.join(%(out)r, f"variant-{n}.png"), "wb").write(_orig(fig)[0])
                open(os.path.join(%(out)r, f"desktop-{n}.png"), "wb").write(out[0])
        finally:
            fig.set_size_inches(w, h)
    with open(%(log)r, "a") as f:
        f.write(json.dumps(rec) + "\n")
    return out
_p._retina_png = _measured
'''


def grids():
    from scansnap import live

    rows = []
    for nb in sorted((ROOT / "book").glob("*.ipynb")):
        d = json.loads(nb.read_text())
        w = d.get("metadata", {}).get("widgets")
        if w:
            rows.append((nb.stem, len(json.dumps(w).encode()), nb.stat().st_size))
    print("| chapter | slider grid as saved widget state | whole notebook |")
    print("|---|---|---|")
    for name, ws, size in rows:
        print(f"| {name} | {ws / 1000:.0f} kB | {size / 1000:.0f} kB |")
    print(f"| all | {sum(r[1] for r in rows) / 1000:.0f} kB | {sum(r[2] for r in rows) / 1000:.0f} kB |")
    print()
    print(f"One live panel (`scansnap.live.panel(['cn']).html()`, no static figure): "
          f"{len(live.panel(['cn']).html().encode()) / 1000:.0f} kB")


def built():
    html = ROOT / "_build" / "html"
    if not html.is_dir():
        raise SystemExit("no built book: jupyter-book build . first")
    print()
    print("| built page | HTML (inline panels and widget state included) | figure PNGs it loads | total |")
    print("|---|---|---|---|")
    tot = [0, 0]
    for page in sorted((html / "book").glob("*.html")):
        text = page.read_text(encoding="utf-8")
        imgs = set(re.findall(r'src="\.\./_images/([^"]+\.png)"', text))
        ib = sum((html / "_images" / i).stat().st_size for i in imgs)
        tot[0] += len(text.encode())
        tot[1] += ib
        print(f"| {page.stem} | {len(text.encode()) / 1000:.0f} kB | {ib / 1000:.0f} kB ({len(imgs)}) | "
              f"{(len(text.encode()) + ib) / 1000:.0f} kB |")
    print(f"| all | {tot[0] / 1000:.0f} kB | {tot[1] / 1000:.0f} kB | {sum(tot) / 1000:.0f} kB |")


def variants(out: str):
    import tempfile

    import nbformat
    from nbclient import NotebookClient

    log = Path(tempfile.mkdtemp()) / "figures.jsonl"
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
    rows = []
    for path in sorted((ROOT / "book").glob("*.ipynb")):
        before = len(log.read_text().splitlines()) if log.exists() else 0
        nb = nbformat.read(path, as_version=4)
        nb.cells.insert(0, nbformat.v4.new_code_cell(HOOK % {"phone": PHONE_IN, "log": str(log), "out": out}))
        NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": "book"}}).execute()
        recs = [json.loads(x) for x in log.read_text().splitlines()[before:]] if log.exists() else []
        rows.append((path.stem, recs))
    print()
    print(f"| chapter | figures | their PNGs | wider than {PHONE_IN} in | phone variants of those | added |")
    print("|---|---|---|---|---|---|")
    all_d = all_p = 0
    for name, recs in rows:
        d = sum(r["desktop"] for r in recs)
        ph = [r for r in recs if "phone" in r]
        p = sum(r["phone"] for r in ph)
        all_d += d
        all_p += p
        print(f"| {name} | {len(recs)} | {d / 1000:.0f} kB | {len(ph)} | {p / 1000:.0f} kB | "
              f"{100 * p / max(d, 1):.0f}% |")
    print(f"| all | {sum(len(r) for _, r in rows)} | {all_d / 1000:.0f} kB | | {all_p / 1000:.0f} kB | "
          f"{100 * all_p / max(all_d, 1):.0f}% |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--built", action="store_true", help="weigh the built pages (_build/html)")
    ap.add_argument("--variants", action="store_true", help="measure phone variants of every figure (executes the chapters)")
    ap.add_argument("--out", default="", help="with --variants: write some variants here, to look at")
    a = ap.parse_args()
    grids()
    if a.built:
        built()
    if a.variants:
        variants(a.out)


if __name__ == "__main__":
    main()
