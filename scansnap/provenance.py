"""Results with a pedigree: how each result file of ``python -m scansnap reproduce`` was made.

Every figure's files (its CSVs and PNG) are written into a staging folder inside ``--out``
and moved into place together, the provenance record (``<figure>.provenance.json``) last,
with Ctrl-C and SIGTERM held back while they move: an interrupt leaves the previous set or
the new one, never a mix. The record lists each file's sha256, so a reader can also tell a
set that was mixed some other way (a crash, a copy by hand): :func:`read_results` checks
the hashes, and :func:`check_settings` that the results were made with the paper's settings
(what chapter 6 quotes).
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

FORMAT = 1
SUFFIX = ".provenance.json"
PAPER_SEEDS = tuple(range(1, 11))   # the Syn-Medium sweep's seeds (Figs. 6, 11, 12)
LM_FIGURES = ("fig7", "fig10", "freeze")
SWEEP_FIGURES = ("fig6", "fig11", "fig12")
CLOSED_FORM = ("fig3", "fig8", "fig9")


def settings_for(figure: str, steps=None, seeds=PAPER_SEEDS, data="shipped", grid=None) -> dict:
    """The settings that decide a figure's numbers, as ``reproduce`` runs it.

    ``steps=None`` means the figure's default (the paper's); ``seeds`` matter for the
    Syn-Medium sweep only, ``data`` for the WikiText figures only; ``grid`` ({name: value},
    from ``--eta-z``, ``--ratio``, ``--num-last``, ``--batch``, ``--T``) replaces the paper's
    value of each setting it names (the figures that have it). With the defaults this is
    the paper's setting, which :func:`check_settings` asks of the book's results.
    """
    s = _settings_for(figure, steps, seeds, data)
    for k, v in (grid or {}).items():
        if k in s and v is not None:
            s[k] = _plain(v)
    return s


def _settings_for(figure: str, steps, seeds, data) -> dict:
    from . import experiments as ex
    if figure in CLOSED_FORM:
        return {"kind": "closed form"}
    if figure in ("fig4", "fig5"):
        s = dict(ex.COMMON, steps=steps or ex.COMMON["steps"], seed=2, init="zero")
        if figure == "fig4":
            s.update(eta=[[1.0, 1.0], [10.0, 1.0]], snapshots=list(ex.FIG4_SNAPSHOTS))
        else:
            s.update(optimizer="adam", etas=[0.1, 0.5, 1.0])
        return _plain(s)
    if figure in SWEEP_FIGURES:
        s = dict(ex.COMMON, steps=steps or ex.COMMON["steps"], init="default",
                 num_last=ex.FIG6["num_last"], eta_z=ex.FIG6["eta_z"], ratio=ex.FIG6["ratio"],
                 seeds=sorted(int(x) for x in seeds))
        return _plain(s)
    if figure == "fig7":
        return _plain(dict(ex.FIG7, steps=steps or ex.FIG7["steps"], layers=[1, 3], data=data,
                           min_freq=ex.LM_MIN_FREQ))
    if figure == "fig10":
        return _plain(dict(ex.FIG10, steps=steps or ex.FIG10["steps"], data=data, min_freq=ex.LM_MIN_FREQ))
    if figure == "freeze":
        return _plain(dict(ex.FREEZE, steps=steps or ex.FREEZE["steps"], data=data, min_freq=ex.LM_MIN_FREQ))
    raise ValueError(f"unknown figure {figure!r}")


def _plain(obj):
    """Tuples to lists, numpy scalars to Python: the form a JSON round trip gives."""
    return json.loads(json.dumps(obj, default=lambda o: o.item() if hasattr(o, "item") else str(o)))


# ---------------------------------------------------------------------------------------
# Where and with what the numbers were made
# ---------------------------------------------------------------------------------------

def git_commit() -> str:
    """The commit of the checkout the package runs from (``+dirty`` with uncommitted code
    changes; results folders do not count), or ``"unknown"`` outside a git checkout."""
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=10)
        if head.returncode != 0:
            return "unknown"
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no",
                                "--", ".", ":(exclude)results"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head.stdout.strip() + ("+dirty" if dirty.returncode == 0 and dirty.stdout.strip() else "")


def environment(device: str) -> dict:
    """Package and library versions, commit, device and date: the second half of a record."""
    import numpy
    import torch

    from . import __version__
    return {"scansnap": __version__, "git_commit": git_commit(), "torch": torch.__version__,
            "numpy": numpy.__version__, "python": platform.python_version(),
            "platform": platform.platform(), "device": str(device),
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}


def sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ---------------------------------------------------------------------------------------
# Writing: check the folder first, stage, then move the set into place together
# ---------------------------------------------------------------------------------------

def check_out_dir(out) -> Path:
    """Make ``out`` if missing and prove it writable now (before any computation); a file
    in the way or a folder that cannot be written is a ValueError saying which."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file, not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=out, prefix=".scansnap-write-test-")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise ValueError(f"cannot write results in {out}: {e.strerror or e}") from None
    return out


@contextlib.contextmanager
def staged(out: Path, figure: str):
    """A fresh staging folder inside ``out`` for one figure's files; removed on leaving
    (whatever happened). Move its files into ``out`` with :func:`commit`."""
    stage = Path(tempfile.mkdtemp(dir=out, prefix=f".{figure}.staging-"))
    try:
        yield stage
    finally:
        shutil.rmtree(stage, ignore_errors=True)


@contextlib.contextmanager
def _signals_held():
    """Hold back SIGINT and SIGTERM until the block is done, then act on them as before: a set
    of renames is not cut in the middle. (Python handlers, not a thread signal mask: another
    thread, torch's for one, could take a process-directed signal.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending, old = [], {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        old[sig] = signal.signal(sig, lambda s, frame: pending.append(s))
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        for sig in pending:
            handler = old[sig]
            if callable(handler):
                handler(sig, None)                 # SIGINT: KeyboardInterrupt, now
            elif handler == signal.SIG_DFL:
                os.kill(os.getpid(), sig)


def record(figure: str, stage: Path, files, settings: dict, data, env: dict, seconds: float,
           notes=(), argv=None) -> dict:
    """The provenance record of one figure: its files' sha256 (as staged), how they were made."""
    argv = sys.argv[1:] if argv is None else list(argv)
    return _plain({"format": FORMAT, "figure": figure,
                   "command": " ".join(["python -m scansnap", *argv]),
                   "files": {f: sha256(stage / f) for f in files},
                   "settings": settings, "data": data, **env, "seconds": round(seconds, 1),
                   "notes": list(notes)})


def commit(stage: Path, out: Path, figure: str, rec: dict) -> list[str]:
    """Write the record into the stage, then move every staged file into ``out``, the record
    last, with interrupts held back. Returns the names moved."""
    name = figure + SUFFIX
    with open(stage / name, "w") as fh:
        json.dump(rec, fh, indent=1, sort_keys=True)
        fh.write("\n")
    names = list(rec["files"]) + [name]
    with _signals_held():
        for n in names:
            os.replace(stage / n, out / n)
    return names


# ---------------------------------------------------------------------------------------
# Reading: every CSV with a record that vouches for it, made with the paper's settings
# ---------------------------------------------------------------------------------------

def read_records(folder) -> dict:
    """{file name: record} for every file listed by a ``*.provenance.json`` in ``folder``."""
    by_file = {}
    for p in sorted(Path(str(folder)).glob("*" + SUFFIX)):
        try:
            rec = json.loads(p.read_text())
        except (OSError, ValueError) as e:
            raise ValueError(f"{p} is not a readable provenance record ({e})") from None
        if rec.get("format") != FORMAT or "files" not in rec or "settings" not in rec:
            raise ValueError(f"{p} is not a scansnap provenance record of format {FORMAT}")
        for f in rec["files"]:
            by_file[f] = rec
    return by_file


def verify(path, records: dict) -> dict:
    """The record that lists ``path``, after checking that the file is the one it describes."""
    path = Path(str(path))
    rec = records.get(path.name)
    if rec is None:
        raise ValueError(f"{path} has no provenance record (no *{SUFFIX} beside it lists it): "
                         "it was not written by `python -m scansnap reproduce`; regenerate it")
    digest = sha256(path)
    if digest != rec["files"][path.name]:
        raise ValueError(f"{path} is not the file its provenance ({rec['figure']}{SUFFIX}) describes "
                         f"(sha256 {digest[:12]}..., recorded {rec['files'][path.name][:12]}...): a mixed "
                         f"or edited set; {remake(rec)}")
    return rec


def remake(rec: dict) -> str:
    """How to make a record's set again, in words: the command it records (your own grid's
    flags, or the Python call that saved it), not the paper's default."""
    cmd = rec.get("command")
    if isinstance(cmd, str) and cmd.startswith("python: "):
        return f"re-run the code that saved it ({cmd[len('python: '):]})"
    if isinstance(cmd, str) and cmd.strip():
        size = rec.get("world_size", 1)
        where = f" (it ran under torchrun, {size} processes)" if isinstance(size, int) and size > 1 else ""
        return f"regenerate with the command that made it{where}: `{cmd}`"
    return f"regenerate with `python -m scansnap reproduce {rec.get('figure', '<figure>')}`"


def differences(figure: str, settings: dict) -> list[str]:
    """Each setting of ``settings`` that is not the paper's for ``figure``, as
    ``"steps=50 (the paper's: 100)"``; empty for the paper's settings."""
    want = settings_for(figure)
    return [f"{k}={settings.get(k)!r} (the paper's: {want.get(k)!r})"
            for k in sorted(set(settings) | set(want)) if settings.get(k) != want.get(k)]


def paper_notes(figure: str, settings: dict) -> list[str]:
    """The record's note, in words, when a figure was not made with the paper's settings."""
    diff = differences(figure, settings)
    if not diff:
        return []
    return [f"not the paper's settings: {', '.join(diff)}. These numbers are not the paper's: the book "
            "(experiments.book_results, read_results(folder)) refuses them; read them with "
            "read_results(folder, paper=False)"]


def check_settings(path, rec: dict) -> None:
    """ValueError unless ``rec`` (the record of ``path``) was made with the paper's settings."""
    figure = rec["figure"]
    got = rec["settings"]
    if got != settings_for(figure):
        diff = ", ".join(differences(figure, got))
        raise ValueError(f"{path} was not made with the paper's settings: {diff}. The book quotes the "
                         f"paper's; regenerate with `python -m scansnap reproduce {figure} --out <folder>` "
                         "with no --steps, --seeds, --data or grid flags (--eta-z, --ratio, --num-last, --batch, --T)")
