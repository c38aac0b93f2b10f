"""Headless Debian Chromium for the browser tests: one launcher, one set of flags."""
from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("SCANSNAP_CHROMIUM", "/usr/bin/chromium")
# Flags measured on these machines (Debian chromium, headless): without the background-networking
# ones Chromium keeps trying (and failing) to reach Google's hosts.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@contextlib.contextmanager
def launched():
    """A launched browser (Playwright driving CHROMIUM), closed on exit."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"no browser at {CHROMIUM}: `make test` installs Debian's chromium "
                    "(apt-get install chromium), or set SCANSNAP_CHROMIUM")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            yield b
        finally:
            b.close()
