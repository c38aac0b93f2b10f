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
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

try:
    import fcntl
except ImportError:                 # Windows: no flock; commits there are not serialised
    fcntl = None

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


def device_name(device) -> str:
    """How a record names a device: ``cpu`` for any CPU (``cpu:0`` is the same one), else
    torch's name (``cuda``, ``cuda:1``)."""
    import torch
    d = torch.device(device)
    return "cpu" if d.type == "cpu" else str(d)


def environment(device: str) -> dict:
    """Package and library versions, commit, device and date: the second half of a record."""
    import numpy
    import torch

    from . import __version__
    return {"scansnap": __version__, "git_commit": git_commit(), "torch": torch.__version__,
            "numpy": numpy.__version__, "python": platform.python_version(),
            "platform": platform.platform(), "device": device_name(device),
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}


def sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ---------------------------------------------------------------------------------------
# Writing: check the folder first, stage, then switch the set into place as one step
# ---------------------------------------------------------------------------------------
#
# A figure's set is switched by a journal, as a database commits: its files are staged in
# ``.<figure>.staging-<pid>-*`` inside --out, the old files are kept as hard links beside
# them, then ``.<figure>.commit.json`` (the journal) is written atomically. That rename is the
# switch: before it the old set stands, after it the new one does. The files are then moved
# into place and the journal removed. A process killed in between (SIGKILL, a power cut)
# leaves the journal, and the next run into the folder, or the next read of it, finishes the
# moves (rolls forward) before anything else; a move that fails in the process (a file
# became a folder, the disk went read-only) puts the old files back (rolls back) and says so.
# An exclusive lock on the folder (flock) serialises commits, so two writers into one --out
# each leave a complete set, the later one's; staging folders and journal parts whose process
# is gone are removed by the next run. Ctrl-C, SIGTERM and SIGHUP are held back while the files
# move: one switch is never cut in half by the process itself.

_STAGING = re.compile(r"^\.(?P<figure>[A-Za-z0-9_]+)\.staging-(?P<pid>\d+)-")
_DEBRIS = re.compile(r"^\.(?:[A-Za-z0-9_]+\.commit\.json|scansnap-write-test)\.(?P<pid>\d+)\.")
_JOURNAL = re.compile(r"^\.(?P<figure>[A-Za-z0-9_]+)\.commit\.json$")
HELD_SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))


def check_out_dir(out, what: str = "--out") -> Path:
    """Make ``out`` if missing and prove it writable now (before any computation); a file
    in the way, an empty name or a folder that cannot be written is a ValueError saying which.
    ``what``: how the message names the folder (the command line's ``--out``; ``folder`` for
    a result's ``save``)."""
    if str(out) == "":
        raise ValueError(f"{what} is empty: name a folder ('.' for the working folder)")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{what} {out} is a file, not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=out, prefix=f".scansnap-write-test.{os.getpid()}.")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise ValueError(f"cannot write results in {out}: {e.strerror or e}") from None
    return out


@contextlib.contextmanager
def staged(out: Path, figure: str):
    """A fresh staging folder inside ``out`` for one figure's files, named by this process's id
    (so a later run can tell it is stale once the process is gone); removed on leaving
    (whatever happened). Move its files into ``out`` with :func:`commit`."""
    stage = Path(tempfile.mkdtemp(dir=out, prefix=f".{figure}.staging-{os.getpid()}-"))
    try:
        yield stage
    finally:
        shutil.rmtree(stage, ignore_errors=True)


@contextlib.contextmanager
def _signals_held():
    """Hold back SIGINT, SIGTERM and SIGHUP until the block is done, then act on them as before:
    a set of renames is not cut in the middle. (Python handlers, not a thread signal mask:
    another thread, torch's for one, could take a process-directed signal.) A signal that is
    ignored (``nohup``: SIGHUP) stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending, old = [], {}
    for sig in HELD_SIGNALS:
        if signal.getsignal(sig) != signal.SIG_IGN:
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
            elif handler in (signal.SIG_DFL, None):
                os.kill(os.getpid(), sig)


@contextlib.contextmanager
def locked(folder):
    """An exclusive lock on ``folder`` (``flock`` on the folder itself: no lock file left
    behind, released by the kernel if the process dies) for the block."""
    if fcntl is None:
        yield
        return
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _pause():
    """Tests widen the commit's window with SCANSNAP_TEST_COMMIT_PAUSE (seconds) to send a
    signal or SIGKILL into it; unset, nothing."""
    pause = os.environ.get("SCANSNAP_TEST_COMMIT_PAUSE")
    if pause:
        import time
        time.sleep(float(pause))


def _fsync(path, directory=False):
    try:
        fd = os.open(path, os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if directory else 0))
    except PermissionError:
        if directory:               # Windows cannot open a folder at all: its renames go unsynced there
            return
        raise
    try:
        os.fsync(fd)
    except OSError:                 # a file system without fsync on folders: best effort
        pass
    finally:
        os.close(fd)


def _write_journal(out: Path, plan: dict) -> Path:
    """Write ``.<figure>.commit.json`` atomically (a part file named by pid, fsynced, renamed)."""
    journal = out / f".{plan['figure']}.commit.json"
    part = out / f".{plan['figure']}.commit.json.{os.getpid()}.part"
    try:
        with open(part, "w") as fh:
            json.dump(plan, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(part, journal)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(part)
        raise
    _fsync(out, directory=True)
    return journal


def _keep_old(src: Path, dst: Path) -> None:
    """Keep the current file for a roll-back: a hard link (no copy), or a copy where links fail."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _roll_forward(out: Path, stage: Path, names) -> None:
    for n in names:
        if (stage / n).exists():
            os.replace(stage / n, out / n)


def _roll_back(out: Path, stage: Path, names, had) -> None:
    for n in names:
        if n in had:
            if (stage / ".prev" / n).exists():
                os.replace(stage / ".prev" / n, out / n)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(out / n)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:         # someone else's live process
        return True
    return True


def recover(out) -> list[str]:
    """Finish what a killed writer left in ``out`` (call with :func:`locked` held): an
    interrupted commit rolled forward (back, if it had started rolling back or the moves
    fail again), then staging folders and journal parts of processes that are gone removed.
    Returns a note per commit finished."""
    out = Path(out)
    notes = []
    for journal in sorted(p for p in out.iterdir() if _JOURNAL.match(p.name)):
        try:
            plan = json.loads(journal.read_text())
            stage, names, had = out / plan["stage"], list(plan["names"]), list(plan["had"])
            figure, state = plan["figure"], plan["state"]
            if not _STAGING.match(plan["stage"]) or "/" in plan["stage"] or \
                    not all(isinstance(n, str) and _plain_name(n) for n in names + had):
                raise ValueError("it names files outside the folder")
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ValueError(f"{journal} is an unreadable commit journal ({e}): the files of that figure may "
                             "be a mix; delete the journal and regenerate the figure") from None
        if state == "forward":
            try:
                _roll_forward(out, stage, names)
                notes.append(f"finished the interrupted commit of {figure} in {out}: its new set is in place")
            except OSError as e:
                _write_journal(out, dict(plan, state="back"))
                _roll_back(out, stage, names, had)
                notes.append(f"could not finish the interrupted commit of {figure} in {out} ({e.strerror or e}); "
                             "its previous set is back in place")
        else:
            _roll_back(out, stage, names, had)
            notes.append(f"rolled back the failed commit of {figure} in {out}: its previous set is in place")
        os.unlink(journal)
        shutil.rmtree(stage, ignore_errors=True)
    for p in out.iterdir():
        m = _STAGING.match(p.name) or _DEBRIS.match(p.name)
        if m and not _alive(int(m["pid"])):
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(p)
    return notes


def record(figure: str, stage: Path, files, settings: dict, data, env: dict, seconds: float,
           notes=(), argv=None) -> dict:
    """The provenance record of one figure: its files' sha256 (as staged), how they were made.
    The command is shell-quoted: it can be pasted back into a shell as recorded (under torchrun,
    ``env`` brings its own: the torchrun line, ``distributed.World.record``)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    return _plain({"format": FORMAT, "figure": figure,
                   "command": shlex.join(["python", "-m", "scansnap", *argv]),
                   "files": {f: sha256(stage / f) for f in files},
                   "settings": settings, "data": data, **env, "seconds": round(seconds, 1),
                   "notes": list(notes)})


def commit(stage: Path, out: Path, figure: str, rec: dict) -> list[str]:
    """Write the record into the stage, then switch the staged set into ``out`` (see above:
    a journal, the moves, the record last), under the folder's lock with interrupts held
    back. Returns the names moved; an OSError (the previous set back in place) if it fails."""
    name = figure + SUFFIX
    rec = dict(rec)
    rec[RECORD_HASH] = record_digest(rec)
    with open(stage / name, "w") as fh:
        json.dump(rec, fh, indent=1, sort_keys=True)
        fh.write("\n")
    names = list(rec["files"]) + [name]
    for n in names:
        _fsync(stage / n)
    with _signals_held(), locked(out):
        recover(out)
        (stage / ".prev").mkdir()
        had = []
        for n in names:
            if os.path.lexists(out / n):
                _keep_old(out / n, stage / ".prev" / n)
                had.append(n)
        plan = {"figure": figure, "stage": stage.name, "names": names, "had": had, "state": "forward",
                "pid": os.getpid()}
        journal = _write_journal(out, plan)          # the switch: from here on the new set stands
        try:
            for n in names:
                _pause()
                os.replace(stage / n, out / n)
            _fsync(out, directory=True)
        except OSError as e:
            _write_journal(out, dict(plan, state="back"))
            _roll_back(out, stage, names, had)
            os.unlink(journal)
            raise OSError(e.errno, f"could not move {figure}'s files into {out} ({e.strerror or e}); "
                                   "its previous set is back in place") from None
        _pause()
        os.unlink(journal)
    return names


# ---------------------------------------------------------------------------------------
# Reading: every CSV with a record that vouches for it, made with the paper's settings
# ---------------------------------------------------------------------------------------

def _plain_name(name: str) -> bool:
    return name not in ("", ".", "..") and "/" not in name and "\\" not in name and "\0" not in name


_SHA = re.compile(r"^[0-9a-f]{64}$")


# The record's own sha256: of its canonical JSON (sorted keys, no spaces) without this field.
# It covers the settings (steps, batch, rates, ...) and everything else the record says, so an
# edited setting is refused, not taken on the record's word. Records written before it existed
# have no such field and are read as before (their files' sha256 still checked).
RECORD_HASH = "record_sha256"


class UnhashedRecordWarning(UserWarning):
    """A record without its own ``record_sha256``: its settings cannot be checked against an edit."""


def record_digest(rec: dict) -> str:
    """The sha256 of ``rec``'s canonical JSON without its ``record_sha256`` field."""
    body = {k: v for k, v in rec.items() if k != RECORD_HASH}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":"),
                                     ensure_ascii=False).encode()).hexdigest()


def check_record_hash(p: Path, rec: dict) -> None:
    """ValueError naming the record ``p`` when its ``record_sha256`` does not match its contents
    (read_results checks it last, so the more specific refusals, a grid or seeds other than the
    CSV's, are named first). A record without the field (an older one, or one whose field was
    deleted) passes on its word, with an :class:`UnhashedRecordWarning` naming it."""
    if RECORD_HASH not in rec:
        import warnings
        warnings.warn(f"{p} has no {RECORD_HASH}: written before records were hashed, or the field was removed: "
                      "its settings are taken on its word (its files' sha256 are still checked); "
                      f"{remake(rec, Path(str(p)).parent)}", UnhashedRecordWarning, stacklevel=3)
    elif RECORD_HASH in rec and rec[RECORD_HASH] != record_digest(rec):
        named = edited_fields(p, rec)
        which = (f"changed: {'; '.join(named)}" if named else
                 "a setting such as steps, batch or the rates changed by hand?")
        raise ValueError(f"{p} was edited after it was written: its {RECORD_HASH} does not match its contents "
                         f"({which}); its files' numbers are not the ones it describes; "
                         f"{remake(rec, Path(str(p)).parent)}")


def _show(v) -> str:
    return json.dumps(v) if not isinstance(v, str) else repr(v)


def edited_fields(p, rec: dict) -> list[str]:
    """The fields of an edited record (its ``record_sha256`` no longer matches), named where they
    can be found, as ``"settings.steps: the record says 100, it was written with 40"``: (1) a
    saved result's settings that its own CSVs contradict (:func:`saved_set_differences`), and
    (2) any one setting whose original value is found by trying the values the files show,
    the paper's value for a figure and ``train()``'s defaults: the one that makes the record's
    hash match again. Empty where nothing can be named (an edit of another kind)."""
    p = Path(str(p))
    out, candidates = [], {}
    figure = rec.get("figure", "")
    try:
        for k, v in settings_for(figure).items():
            candidates.setdefault(k, []).append(v)
    except (ValueError, KeyError, TypeError):
        pass
    import ast                                       # the record's own note, "steps=50 (the paper's: 100)", as written
    for note in rec.get("notes") or ():
        if isinstance(note, str) and note.startswith("not the paper's settings: "):
            for m in re.finditer(r"(?:: |\), )(\w+)=(.+?) \(the paper's: ", note):
                try:
                    candidates.setdefault(m[1], []).append(ast.literal_eval(m[2]))
                except (ValueError, SyntaxError):
                    pass
    settings = rec.get("settings")
    import inspect
    saved_yz = isinstance(settings, dict) and "classes" in settings and "eta_y" in settings
    if isinstance(rec.get("data"), dict) and "train_ids" in rec["data"]:     # an LMResult.save record
        from .lm import train_lm
        for k, prm in inspect.signature(train_lm).parameters.items():
            if prm.default is not inspect.Parameter.empty and isinstance(prm.default, (int, float, str, bool)):
                candidates.setdefault(k, []).append(prm.default)
    if saved_yz and f"{figure}_loss.csv" in rec.get("files", {}):   # a TrainResult.save set: its CSVs say some settings
        try:
            from .experiments import load_csv
            tables = {f[:-4]: load_csv(p.parent / f) for f in rec["files"] if f.endswith(".csv")}
            derived = _saved_set_values(figure, tables)
        except (OSError, ValueError, KeyError):
            derived = {}
        for k, v in derived.items():
            candidates.setdefault(k, []).append(v)
        from .train import train
        for k, prm in inspect.signature(train).parameters.items():
            if prm.default is not inspect.Parameter.empty and isinstance(prm.default, (int, float, str, bool)):
                candidates.setdefault(k, []).append(prm.default)
        out += saved_set_differences(figure, rec, tables) if derived else []
    if isinstance(settings, dict):
        for k, values in candidates.items():
            values = [w for v in values for w in ([v, float(v)] if type(v) is int else [v])]   # 5 or 5.0 as written
            for v in values:
                v = _plain(v)
                if k in settings and settings[k] != v:
                    trial = dict(rec, settings=dict(settings, **{k: v}))
                    if record_digest(trial) == rec.get(RECORD_HASH):
                        line = f"settings.{k}: the record says {_show(settings[k])}, it was written with {_show(v)}"
                        if not any(o.startswith(f"settings.{k}:") for o in out):
                            out.append(line)
                        break
    return out


def _saved_set_values(name: str, tables: dict) -> dict:
    """The settings a TrainResult.save set's CSVs show: steps (the loss CSV's steps), the rates and
    seeds (a row per run), the snapshot steps (the attention CSV's, less the last step)."""
    import numpy as np
    loss, runs, att = tables[f"{name}_loss"], tables[name], tables.get(f"{name}_attention")
    steps = int(np.max(loss["step"])) + 1 if len(loss["step"]) else 0
    out = {"steps": steps, "eta_y": [float(x) for x in runs["eta_y"]], "eta_z": [float(x) for x in runs["eta_z"]],
           "seeds": [int(x) for x in runs["seed"]]}
    if att is not None:
        out["snapshots_with_end"] = sorted(int(x) for x in np.unique(att["step"]))
    return out


def saved_set_differences(name: str, rec: dict, tables: dict) -> list[str]:
    """Each setting of a TrainResult.save record (``<name>.provenance.json``) that its own CSVs
    contradict, in words (empty: none): steps (the loss CSV's rows), eta_y, eta_z and seeds
    (``<name>.csv``, a row per run) and the snapshot steps (the attention CSV's)."""
    import numpy as np
    st = rec.get("settings", {})
    have = _saved_set_values(name, tables)
    out = []
    if st.get("steps") != have["steps"]:
        out.append(f"settings.steps: the record says {_show(st.get('steps'))}, {name}_loss.csv has "
                   f"{have['steps']} steps")
    for k in ("eta_y", "eta_z", "seeds"):
        want, got = st.get(k), have[k]
        try:
            same = len(want) == len(got) and np.allclose(np.asarray(want, float), got, rtol=1e-9, atol=0)
        except (TypeError, ValueError):
            same = False
        if not same:
            out.append(f"settings.{k}: the record says {_show(want)}, {name}.csv has {_show(got)}")
    if "snapshots_with_end" in have and isinstance(st.get("snapshots"), list):
        want = sorted(set(int(s) for s in st["snapshots"]) | {have["steps"]})
        if want != have["snapshots_with_end"]:
            out.append(f"settings.snapshots: the record says {_show(st['snapshots'])}, {name}_attention.csv has "
                       f"steps {_show(have['snapshots_with_end'])}")
    return out


def check_saved_set(p, rec: dict, tables: dict) -> None:
    """ValueError naming the record ``p`` and each setting its CSVs contradict (a TrainResult.save
    set: :func:`saved_set_differences`)."""
    diff = saved_set_differences(rec["figure"], rec, tables)
    if diff:
        raise ValueError(f"{p} does not describe its files ({'; '.join(diff)}): an edited record or a mixed set; "
                         f"{remake(rec, Path(str(p)).parent)}")


def _check_record(p: Path, rec) -> None:
    """ValueError naming ``p`` unless ``rec`` is a record ``reproduce`` could have written there:
    an object of this format, named after its figure, mapping plain file names to sha256s."""
    if not isinstance(rec, dict):
        raise ValueError(f"{p} is not a scansnap provenance record (a JSON {type(rec).__name__}, not an object)")
    if rec.get("format") != FORMAT or "files" not in rec or "settings" not in rec:
        raise ValueError(f"{p} is not a scansnap provenance record of format {FORMAT}")
    figure = rec.get("figure")
    if not isinstance(figure, str) or p.name != figure + SUFFIX:
        raise ValueError(f"{p} records figure {figure!r} but is not named {figure}{SUFFIX}: a stale or renamed "
                         "copy, which could stand for the current record; delete it (or move it out of the folder)")
    files = rec["files"]
    if not isinstance(files, dict) or not files:
        raise ValueError(f"{p}: 'files' must map each file name to its sha256, got {files!r}")
    for f, digest in files.items():
        if not _plain_name(f) or f == p.name:
            raise ValueError(f"{p}: {f!r} is not a file name beside the record")
        if not isinstance(digest, str) or not _SHA.match(digest):
            raise ValueError(f"{p}: the sha256 of {f} must be 64 hex digits, got {digest!r}")
    if not isinstance(rec["settings"], dict):
        raise ValueError(f"{p}: 'settings' must be an object, got {rec['settings']!r}")


def make_some(folder) -> str:
    """How to put results into ``folder``, in words (that folder, not the book's)."""
    return (f"make one with `python -m scansnap reproduce <figure> --out {folder}` or a result's "
            f".save({str(folder)!r})")


def results_folder(folder) -> Path:
    """``folder`` (a path, a str, an importlib resource) as a Path, or a ValueError saying it is
    not a results folder and how to make one."""
    folder = Path(str(folder))
    if not folder.is_dir():
        raise ValueError(f"{folder} is not a results folder (it is a file): name the folder that holds the results"
                         if folder.exists() else
                         f"{folder} is not a results folder (it does not exist): {make_some(folder)}")
    return folder


def read_records(folder) -> dict:
    """{file name: record} for every file listed by a ``*.provenance.json`` in ``folder``.

    Every record is checked (a malformed one, one named after another figure, two records
    claiming one file, a CSV a record lists but the folder lacks: a ValueError naming the
    file), and a commit that a killed writer left half done is finished first (under the
    folder's lock), or, where the folder cannot be written, refused by name."""
    folder = results_folder(folder)
    journals = sorted(p.name for p in folder.iterdir() if _JOURNAL.match(p.name))
    if journals:
        try:
            with locked(folder):
                recover(folder)
        except OSError as e:
            raise ValueError(f"{folder} holds an interrupted commit ({journals[0]}) that cannot be finished "
                             f"here ({e.strerror or e}): run `python -m scansnap reproduce` into it once, "
                             "with write access, to finish it") from None
    by_file, owner = {}, {}
    for p in sorted(folder.glob("*" + SUFFIX)):
        try:
            rec = json.loads(p.read_text())
        except (OSError, ValueError) as e:
            raise ValueError(f"{p} is not a readable provenance record ({e})") from None
        _check_record(p, rec)
        for f in rec["files"]:
            if f in owner:
                raise ValueError(f"{folder / f} is claimed by two records, {owner[f]} and {p.name}: "
                                 "delete the stale one, or regenerate")
            if f.endswith(".csv") and not (folder / f).is_file():
                raise ValueError(f"{folder / f} is missing, though its record {p.name} lists it: an incomplete "
                                 f"set; {remake(rec, folder)}")
            owner[f] = p.name
            by_file[f] = rec
    return by_file


def verify(path, records: dict) -> dict:
    """The record that lists ``path``, after checking that the file is the one it describes."""
    path = Path(str(path))
    rec = records.get(path.name)
    if rec is None:
        missing = missing_record(path)
        said = (f"its record {missing} is missing (deleted or moved?)" if missing is not None else
                "it is not part of a result set (a file of your own? move it out of the folder)")
        raise ValueError(f"{path} has no provenance record (no *{SUFFIX} beside it lists it): {said}")
    try:
        digest = sha256(path)
    except OSError as e:
        raise ValueError(f"{path} cannot be read ({e.strerror or e})") from None
    if digest != rec["files"][path.name]:
        raise ValueError(f"{path} is not the file its provenance ({rec['figure']}{SUFFIX}) describes "
                         f"(sha256 {digest[:12]}..., recorded {rec['files'][path.name][:12]}...): a mixed "
                         f"or edited set; {remake(rec, path.parent)}")
    return rec


# The CSVs TrainResult.save and LMResult.save write beside <name>.csv: <name>_<part>.csv
_SET_PARTS = ("_classes", "_loss", "_attention", "_cn", "_right", "_right_cn")


def missing_record(path) -> str | None:
    """The record (``<name>.provenance.json``) a CSV no record lists would have, when its name
    says it belongs to a result set: a figure's (``fig6.csv``, ``fig4_cn.csv``, ``freeze.csv``),
    one with its PNG or sibling CSVs beside it (``<name>.png``, ``<name>_loss.csv``), or a saved
    result's part (``<name>_loss.csv``); None for a file named like no set (``notes.csv``)."""
    path = Path(str(path))
    stem, folder = path.name[:-len(".csv")] if path.name.endswith(".csv") else path.stem, path.parent
    parts = stem.split("_")
    for i in range(len(parts), 0, -1):
        name = "_".join(parts[:i])
        figure = re.fullmatch(r"fig\d+|freeze", name) is not None
        beside = (folder / f"{name}.png").is_file() or any(
            q != path for q in folder.glob(f"{name}_*.csv")) or (i < len(parts) and (folder / f"{name}.csv").is_file())
        part = i < len(parts) and stem[len(name):] in _SET_PARTS
        if figure or beside or part:
            return name + SUFFIX
    return None


def _out_to(cmd: str, folder) -> str:
    """``cmd`` with its ``--out`` value replaced by ``folder``'s absolute path (the folder being
    read, which may be a copy, or the command may have named it relative to another directory)."""
    try:
        words = shlex.split(cmd)
    except ValueError:
        return cmd
    out = str(Path(str(folder)).resolve())
    for i, w in enumerate(words):
        if w == "--out" and i + 1 < len(words):
            words[i + 1] = out
            return shlex.join(words)
        if w.startswith("--out="):
            words[i] = "--out=" + out
            return shlex.join(words)
    return cmd


def remake(rec: dict, folder=None) -> str:
    """How to make a record's set again, in words: the command it records (your own grid's
    flags, or the Python call that saved it), not the paper's default. With ``folder`` (the
    folder the record was read from) the command's ``--out`` names that folder's absolute path,
    so the hint works from any directory and for a copied folder."""
    cmd = rec.get("command")
    if isinstance(cmd, str) and folder is not None and not cmd.startswith("python: "):
        cmd = _out_to(cmd, folder)
    if isinstance(cmd, str) and cmd.startswith("python: "):
        return f"re-run the code that saved it ({cmd[len('python: '):]})"
    if isinstance(cmd, str) and cmd.strip():
        size = rec.get("world_size", 1)
        where = f" (it ran under torchrun, {size} processes)" if isinstance(size, int) and size > 1 else ""
        return f"regenerate with the command that made it{where}: `{cmd}`"
    return f"regenerate with `python -m scansnap reproduce {rec.get('figure', '<figure>')}`"


# Where a figure's CSV repeats its record's settings: {figure: {CSV column: settings key}}. The
# values must agree (read_results checks): a record edited to other settings around a CSV (the
# paper's, say) no longer describes it, though every sha256 still matches.
GRID_COLUMNS = {"fig5": {"eta": "etas"},
                "fig6": {"num_last": "num_last", "eta_z": "eta_z", "ratio": "ratio", "seed": "seeds"},
                "fig7": {"layers": "layers"},
                "fig10": {"lr": "lrs", "seed": "seeds"},
                "fig11": {"num_last": "num_last", "eta_z": "eta_z", "ratio": "ratio"},
                "fig12": {"num_last": "num_last", "eta_z": "eta_z", "ratio": "ratio"}}


def check_columns(path, rec: dict, table: dict) -> None:
    """ValueError unless the CSV ``path`` (read as ``table``, {column: array}) holds exactly the
    values its record's settings list in the columns of :data:`GRID_COLUMNS` (the CSV writes
    6 significant digits: equal to a relative 1e-5)."""
    import numpy as np
    path = Path(str(path))
    if path.name != f"{rec['figure']}.csv":
        return
    for col, key in GRID_COLUMNS.get(rec["figure"], {}).items():
        want = rec["settings"].get(key)
        have = np.unique(np.asarray(table[col], float)) if col in table else np.array([])
        try:
            w = np.unique(np.asarray(want, float))
        except (TypeError, ValueError):
            w = None
        if w is None or w.shape != have.shape or not np.allclose(have, w, rtol=1e-5, atol=0):
            raise ValueError(f"{path} has {col} {', '.join(f'{v:g}' for v in have) or '(no column)'} but its "
                             f"record's settings say {key} {want!r}: the record does not describe this file (an "
                             f"edited record or a mixed set); {remake(rec, Path(str(path)).parent)}")
    _check_full_grid(path, rec, table)


def _check_full_grid(path, rec: dict, table: dict) -> None:
    """ValueError unless every combination of the record's grid values (the product over
    :data:`GRID_COLUMNS`'s columns, e.g. every (num_last, eta_z, ratio, seed) of fig6) has the
    same number of rows in the CSV (one each for fig6 and fig10; one per step for fig11, fig12):
    a dropped or duplicated grid cell is refused, naming it. Run after each column's values
    were checked to be the record's."""
    import itertools

    import numpy as np
    cols = GRID_COLUMNS.get(rec["figure"], {})
    if len(cols) < 2:
        return
    names, idx, values = list(cols), [], []
    for col in names:
        w = np.unique(np.asarray(rec["settings"][cols[col]], float))
        v = np.asarray(table[col], float)
        idx.append(np.abs(v[:, None] - w[None, :]).argmin(1))
        values.append(w)
    shape = tuple(len(w) for w in values)
    counts = np.bincount(np.ravel_multi_index(tuple(idx), shape), minlength=int(np.prod(shape))).reshape(shape)
    want = int(np.max(counts)) if counts.size else 0
    if counts.size and (counts != want).any():
        cells = [c for c in itertools.product(*(range(n) for n in shape)) if counts[c] != want]
        name = lambda c: "(" + ", ".join(f"{n}={values[i][c[i]]:g}" for i, n in enumerate(names)) + ")"  # noqa: E731
        listed = "; ".join(f"{name(c)} has {int(counts[c])} row{'' if counts[c] == 1 else 's'}" for c in cells[:5])
        raise ValueError(f"{path} does not hold its record's full grid: {len(cells)} of {counts.size} combinations "
                         f"of {', '.join(names)} have not {want} row{'s' * (want != 1)} as the others do ({listed}"
                         f"{'; ...' if len(cells) > 5 else ''}): rows were dropped or duplicated, or the record "
                         f"does not describe this file; {remake(rec, Path(str(path)).parent)}")


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
