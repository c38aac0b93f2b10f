"""Saving a result object as a result set: the CSV files, their provenance record, written
atomically by the same code as ``python -m scansnap reproduce`` (:mod:`scansnap.provenance`).

``TrainResult.save`` and ``LMResult.save`` call :func:`save_set`; read the set back with
``scansnap.experiments.read_results(folder, paper=False)``, which checks every file against
its record (sha256) and returns the CSVs as {name: {column: array}}.
"""
from __future__ import annotations

import csv
import re
from pathlib import Path

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def write_csv(path, header, rows):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)


def save_set(folder, name: str, tables: dict, settings: dict, device: str, what: str,
             seconds: float | None = None, what_seconds: str = "", data=None) -> list[Path]:
    """Write ``tables`` ({file stem: (header, rows)}) as CSVs in ``folder`` together with
    ``<name>.provenance.json``: staged, then moved into place as one set (an interrupt leaves
    the previous set or this one). Returns the paths written.

    ``seconds``: how long the result took to make (the training), recorded as the record's
    ``seconds`` (as the command line records a figure's run time), with a note saying what it
    timed; None (not known: a result made by hand) records null and says so. ``data``: the
    record's ``data`` (what the result was made from; None: nothing beyond the settings)."""
    from . import provenance
    if not isinstance(name, str) or not _NAME.match(name) or name.endswith(provenance.SUFFIX):
        raise ValueError(f"name must be a plain file stem (letters, digits, '_', '-', '.'), got {name!r}")
    out = provenance.check_out_dir(folder, what="folder")
    with provenance.staged(out, name) as stage:
        files = []
        for stem, (header, rows) in tables.items():
            write_csv(stage / f"{stem}.csv", header, rows)
            files.append(f"{stem}.csv")
        note = (f"seconds: {what_seconds or 'the time it took to make'} (not the time to save)"
                if seconds is not None else "seconds: not known (the result does not carry its training time)")
        rec = provenance.record(name, stage, files, settings, data, provenance.environment(device),
                                0.0 if seconds is None else seconds, [note], [])
        rec["command"] = f"python: {what}"
        rec["seconds"] = None if seconds is None else round(float(seconds), 3)   # a small run takes < 0.05 s
        names = provenance.commit(stage, out, name, rec)
    return [out / n for n in names]
