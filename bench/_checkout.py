"""Shared by the benches' ``--before DIR``: time code at an earlier commit checked out in DIR."""
from __future__ import annotations

import os
import subprocess
import sys


def run_at(checkout: str, code: str) -> tuple[list[float], str]:
    """Run ``code`` (it prints numbers) in a fresh Python process that imports the package of
    ``checkout`` (a git worktree); return the numbers it printed and the commit, short."""
    env = dict(os.environ, PYTHONPATH=os.path.abspath(checkout))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         cwd=checkout).stdout.split()
    rev = subprocess.run(["git", "-C", checkout, "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True).stdout.strip()
    return [float(x) for x in out], rev
