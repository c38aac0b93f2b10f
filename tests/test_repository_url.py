"""The repository URL in _config.yml is a placeholder until the project has its public home:
while it is, `make book` says so loudly and the README says so (issue 11: impossible to forget)."""
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def _placeholder() -> str:
    m = re.search(r"^PLACEHOLDER_URL := (\S+)$", (ROOT / "Makefile").read_text(), re.M)
    assert m, "the Makefile names the placeholder URL (PLACEHOLDER_URL)"
    return m.group(1)


def _url() -> str:
    return yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]


def test_book_target_runs_the_note():
    book = re.search(r"^book:.*\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(), re.M)
    assert book and book.group(1).count("url-note") == 2      # before and after the build


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_make_prints_the_note_while_the_url_is_the_placeholder():
    out = subprocess.run(["make", "-s", "--no-print-directory", "url-note"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0
    if _url() == _placeholder():
        assert f"still the placeholder {_placeholder()}" in out.stdout
    else:
        assert out.stdout.strip() == ""


def test_readme_says_so_while_the_url_is_the_placeholder():
    readme = (ROOT / "README.md").read_text()
    if _url() == _placeholder():
        section = readme.split("## Repository URL", 1)
        assert len(section) == 2, "README needs its 'Repository URL' section while the URL is a placeholder"
        assert _placeholder() in section[1] and "placeholder" in section[1]
    else:
        pytest.skip("the URL is set: nothing to remind")
