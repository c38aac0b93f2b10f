"""Where a warning points: at the test's own line, as a user's code would see it.

Under mutmut (``MUTANT_UNDER_TEST`` set) every package function is reached through mutmut's
trampoline (``mutmut/mutation/trampoline.py``), one frame between the caller and the package:
a warning with a fixed ``stacklevel`` that is right then points at that frame instead, so that
frame is accepted, and only under mutmut (a level one off still points elsewhere: killed).
A level found by walking the stack (``metrics._stacklevel``) is thrown off further there, since
``_stacklevel`` is itself reached through a trampoline; for those (``walked=True``) mutmut's run
accepts any frame of the package or the trampoline. Outside mutmut both are exact."""
from __future__ import annotations

import os
from pathlib import Path

import scansnap

_PACKAGE = Path(scansnap.__file__).resolve().parent


def points_at(filename: str, here: str, walked: bool = False) -> bool:
    """True when a warning's ``filename`` is the test file ``here`` (under mutmut, see above)."""
    if Path(filename) == Path(here):
        return True
    if "MUTANT_UNDER_TEST" not in os.environ:
        return False
    p = Path(filename).resolve()
    return p.parts[-3:] == ("mutmut", "mutation", "trampoline.py") or (walked and p.is_relative_to(_PACKAGE))
