"""``python -m scansnap``: a signal while the package is still importing (torch takes seconds on a
busy machine) ends the command with the line a run prints when stopped, not silently (the
shell's "Terminated") or with a traceback through the imports (Ctrl-C).

Installed by ``scansnap/__init__.py`` before anything heavy is imported, and only for that
command: a library import (a notebook, a script) keeps its handlers. The command line's own
handlers (``scansnap.__main__.main``) replace these as soon as it has parsed its arguments."""
import os
import signal
import sys

_NAMES = ("SIGINT", "SIGTERM", "SIGHUP")


def _is_the_command_line() -> bool:
    """True while ``python -m scansnap`` imports the package: runpy sets ``sys.argv[0]`` to
    ``'-m'`` until it has found the module, and the interpreter's own arguments name it."""
    argv = list(getattr(sys, "orig_argv", None) or [])
    if sys.argv[:1] != ["-m"]:
        return False
    if "-mscansnap" in argv:
        return True
    return "-m" in argv and argv[argv.index("-m") + 1:argv.index("-m") + 2] == ["scansnap"]


def _starting(signum, frame):
    why = "interrupted (Ctrl-C)" if signum == signal.SIGINT else f"stopped by {signal.Signals(signum).name}"
    if os.environ.get("RANK", "0") == "0":             # under torchrun, rank 0 speaks (as the run does)
        os.write(2, f"python -m scansnap: {why} while starting; nothing written\n".encode())
    os._exit(128 + signum)


def install() -> None:
    """The handlers above, for SIGINT, SIGTERM and SIGHUP, when this process is ``python -m
    scansnap``; a signal that was ignored (``nohup``: SIGHUP; a background job: SIGINT) stays ignored."""
    if not _is_the_command_line():
        return
    for name in _NAMES:
        sig = getattr(signal, name, None)
        if sig is not None and signal.getsignal(sig) != signal.SIG_IGN:
            signal.signal(sig, _starting)


def release() -> None:
    """Hand SIGINT back to Python's KeyboardInterrupt (the command line's Ctrl-C) if it is ours."""
    if signal.getsignal(signal.SIGINT) is _starting:
        signal.signal(signal.SIGINT, signal.default_int_handler)
