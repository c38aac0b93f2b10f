"""Where a warning points: at the test's own line, as a user's code would see it.

Under mutmut (``MUTANT_UNDER_TEST`` set) every package function is reached through mutmut's
trampoline (``mutmut/mutation/trampoline.py``), one frame between the caller and the package:
a warning whose ``stacklevel`` is right then points at that frame instead. Accepting exactly
that frame, and only under mutmut, keeps the stacklevel mutants killable there (a level one
off points at the package's own wrapper or past the test)."""
from __future__ import annotations

import os
from pathlib import Path


def points_at(filename: str, here: str) -> bool:
    """True when a warning's ``filename`` is the test file ``here`` (or, under mutmut, its trampoline)."""
    if Path(filename) == Path(here):
        return True
    return "MUTANT_UNDER_TEST" in os.environ and Path(filename).parts[-3:] == ("mutmut", "mutation", "trampoline.py")
