"""Page weight of the chapters' panels, from the committed notebooks (no build, no browser).

- the precomputed slider grid each chapter carries as saved widget state (``metadata.widgets``
  of the executed notebook: the PNGs of every grid point, base64), beside the notebook's size;
- one JavaScript live panel (``scansnap.live.panel``): its HTML without the static figure.

    python bench/page_weight.py
"""
from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main():
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


if __name__ == "__main__":
    main()
