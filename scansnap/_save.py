"""Saving a result object as a result set: the CSV files, their provenance record, written
atomically by the same code as ``python -m scansnap reproduce`` (:mod:`scansnap.provenance`).

``TrainResult.save`` and ``LMResult.save`` call :func:`save_set`; read the set back with
``scansnap.experiments.read_results(folder, paper=False)``, which checks every file against
its record (sha256) and returns the CSVs as {name: {column: array}}.
"""
from __future__ import annotations

import csv
import re
import shlex
import sys
from pathlib import Path

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def write_csv(path, header, rows):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)


def _script() -> str | None:
    """The command that ran the saving script, shell-quoted (``python my_run.py --rate 2``), or
    None where there is no script: an interactive interpreter (``sys.argv[0]`` is ``''``),
    ``python -c`` (``'-c'``) or a Jupyter kernel (its launcher is not the user's code)."""
    argv = list(sys.argv)
    if not argv or argv[0] in ("", "-c", "-") or Path(argv[0]).name == "ipykernel_launcher.py":
        return None
    return shlex.join(["python", *argv])


def save_set(folder, name: str, tables: dict, settings: dict, device: str, what: str,
             seconds: float | None = None, what_seconds: str = "", data=None, arrays=None) -> list[Path]:
    """Write ``tables`` ({file stem: (header, rows)}) as CSVs in ``folder`` together with
    ``<name>.provenance.json``: staged, then moved into place as one set (an interrupt leaves
    the previous set or this one). Returns the paths written.

    ``seconds``: how long the result took to make (the training), recorded as the record's
    ``seconds`` (as the command line records a figure's run time), with a note saying what it
    timed; None (not known: a result made by hand) records null and says so. The record's
    ``command`` names the call that saved it and, where a script ran it, the script's command
    line (``python: TrainResult.save('mine'), run by `python my_run.py --rate 2```); ``argv``
    holds ``sys.argv`` as it was. ``data``: the
    record's ``data`` (what the result was made from; None: nothing beyond the settings).
    ``arrays``: {file stem: {name: array}}, written as ``<stem>.npz`` beside the CSVs and hashed
    with them (a result's exact weights, for ``TrainResult.load``)."""
    from . import provenance
    if not isinstance(name, str) or not _NAME.match(name) or name.endswith(provenance.SUFFIX):
        raise ValueError(f"name must be a plain file stem (letters, digits, '_', '-', '.'), got {name!r}")
    out = provenance.check_out_dir(folder, what="folder")
    with provenance.staged(out, name) as stage:
        files = []
        for stem, (header, rows) in tables.items():
            write_csv(stage / f"{stem}.csv", header, rows)
            files.append(f"{stem}.csv")
        for stem, named in (arrays or {}).items():         # {file stem: {array name: ndarray}}: one .npz each
            import numpy as np
            np.savez(stage / f"{stem}.npz", **named)
            files.append(f"{stem}.npz")
        note = (f"seconds: {what_seconds or 'the time it took to make'} (not the time to save)"
                if seconds is not None else "seconds: not known (the result does not carry its training time)")
        rec = provenance.record(name, stage, files, settings, data, provenance.environment(device),
                                0.0 if seconds is None else seconds, [note], [])
        script = _script()
        rec["command"] = f"python: {what}" + (f", run by `{script}`" if script else "")
        rec["argv"] = list(sys.argv)
        rec["seconds"] = None if seconds is None else round(float(seconds), 3)   # a small run takes < 0.05 s
        names = provenance.commit(stage, out, name, rec)
    return [out / n for n in names]
