"""Re-check mutmut mutants against a test selection, without a new `mutmut run`.

`make mutants` takes hours on two cores. After writing a test meant to kill some survivors,
this applies each named mutant to the working tree's source (the diff `mutmut show` prints,
from the directory of the last `make mutants`), runs the given tests, and restores the file:

    python tools/try_mutant.py --mutants-dir /path/to/run \\
        scansnap.data.x_support_table__mutmut_7 ... -- tests/test_mutants_data.py -x -q

A mutant name may also be a file of names (``@survivors.txt``), one per line. It prints
``killed`` or ``SURVIVED`` per mutant and exits 1 if any survived. The original file is
restored even when the tests crash or are interrupted.
"""
from __future__ import annotations

import argparse
import pathlib
import re
import subprocess
import sys


def mutant_diff(name: str, mutants_dir: pathlib.Path) -> str:
    mutmut = pathlib.Path(sys.executable).with_name("mutmut")
    out = subprocess.run([str(mutmut), "show", name], cwd=mutants_dir, capture_output=True,
                         text=True, check=True).stdout
    if "--- " not in out:
        raise SystemExit(f"mutmut show {name}: no diff in its output:\n{out}")
    return out


def hunks(diff: str) -> tuple[str, list[tuple[str, str]]]:
    """The source file and the (original, mutated) text of each hunk of a function diff."""
    path = re.search(r"^--- (\S+)", diff, re.M).group(1)
    pairs, old, new = [], None, None
    for line in diff.splitlines()[diff.splitlines().index(next(
            l for l in diff.splitlines() if l.startswith("+++ "))) + 1:]:
        if line.startswith("@@"):
            if old is not None:
                pairs.append(("".join(old), "".join(new)))
            old, new = [], []
            continue
        tag, body = line[:1], line[1:] + "\n"
        if tag in (" ", ""):
            old.append(body), new.append(body)
        elif tag == "-":
            old.append(body)
        elif tag == "+":
            new.append(body)
    if old is not None:
        pairs.append(("".join(old), "".join(new)))
    return path, pairs


def indent(text: str, by: int) -> str:
    return "".join(" " * by + l if l.strip() else l for l in text.splitlines(True))


def apply(source: str, pairs: list[tuple[str, str]], name: str) -> str:
    for old, new in pairs:
        # `mutmut show` prints a method dedented: find the indentation it has in the file
        by = next((b for b in (0, 4, 8) if source.count(indent(old, b)) == 1), 0)
        old, new = indent(old, by), indent(new, by)
        n = source.count(old)
        if n != 1:
            raise SystemExit(f"{name}: the hunk's original text occurs {n} times in the source, "
                             f"not once; apply it by hand:\n{old}")
        source = source.replace(old, new)
    return source


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mutants-dir", type=pathlib.Path, required=True,
                    help="the checkout where `make mutants` ran (it holds mutants/)")
    ap.add_argument("names", nargs="+", help="mutant names, or @file of names")
    argv = sys.argv[1:] if argv is None else argv
    if "--" not in argv:
        ap.error("give the tests to run after `--`")
    cut = argv.index("--")
    args, pytest_args = ap.parse_args(argv[:cut]), argv[cut + 1:]
    names = []
    for n in args.names:
        names += pathlib.Path(n[1:]).read_text().split() if n.startswith("@") else [n]
    survived = []
    for name in names:
        path, pairs = hunks(mutant_diff(name, args.mutants_dir))
        target = pathlib.Path(path)
        original = target.read_text()
        try:
            target.write_text(apply(original, pairs, name))
            rc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                                 "-x", *pytest_args], capture_output=True, text=True).returncode
        finally:
            target.write_text(original)
        if rc not in (0, 1, 2):
            raise SystemExit(f"{name}: pytest exited {rc} (5: no tests collected); check the "
                             f"test selection {pytest_args}")
        verdict = "killed" if rc != 0 else "SURVIVED"
        if rc == 0:
            survived.append(name)
        print(f"{verdict:9s} {name}", flush=True)
    print(f"{len(names) - len(survived)} of {len(names)} killed")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
