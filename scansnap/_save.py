"""Saving a result object as a result set: the CSV files, their provenance record, written
atomically by the same code as ``python -m scansnap reproduce`` (:mod:`scansnap.provenance`).

``TrainResult.save`` and ``LMResult.save`` call :func:`save_set`; read the set back with
``scansnap.experiments.read_results(folder, paper=False)``, which checks every file against
its record (sha256) and returns the CSVs as {name: {column: array}}.
"""
from __future__ import annotations

import csv
import re
import time
from pathlib import Path

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def write_csv(path, header, rows):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)


def save_set(folder, name: str, tables: dict, settings: dict, device: str, what: str) -> list[Path]:
    """Write ``tables`` ({file stem: (header, rows)}) as CSVs in ``folder`` together with
    ``<name>.provenance.json``: staged, then moved into place as one set (an interrupt leaves
    the previous set or this one). Returns the paths written."""
    from . import provenance
    if not isinstance(name, str) or not _NAME.match(name) or name.endswith(provenance.SUFFIX):
        raise ValueError(f"name must be a plain file stem (letters, digits, '_', '-', '.'), got {name!r}")
    out = provenance.check_out_dir(folder)
    t0 = time.perf_counter()
    with provenance.staged(out, name) as stage:
        files = []
        for stem, (header, rows) in tables.items():
            write_csv(stage / f"{stem}.csv", header, rows)
            files.append(f"{stem}.csv")
        rec = provenance.record(name, stage, files, settings, None, provenance.environment(device),
                                time.perf_counter() - t0, (), [])
        rec["command"] = f"python: {what}"
        names = provenance.commit(stage, out, name, rec)
    return [out / n for n in names]
