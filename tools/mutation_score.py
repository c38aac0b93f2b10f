"""The score of a `make mutants` run, module by module, from mutmut's own records
(mutants/scansnap/<module>.py.meta): killed (a test failed, or the mutant ran past its time
limit), survived, reached by no test, not yet run. Usage: python tools/mutation_score.py [--markdown]
(run from the repository root, after `make mutants`)."""
import json
import sys
from collections import Counter
from pathlib import Path

STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", 34: "skipped",
          36: "timeout", -24: "timeout", 24: "timeout", 152: "timeout", 255: "timeout", None: "not run",
          37: "type check", -11: "crashed", -9: "crashed"}


def scores(root=Path("mutants")) -> dict:
    out = {}
    for meta in sorted((root / "scansnap").glob("*.py.meta")):
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        out[meta.name[:-5]] = Counter(STATUS.get(c, "suspicious") for c in codes.values())
    return out


def main():
    markdown = "--markdown" in sys.argv
    rows = scores()
    if not rows:
        sys.exit("no mutmut results under mutants/: run `make mutants` first")
    total = Counter()
    if markdown:
        print("| module | mutants | killed | timeout | survived | no tests | not run | killed % |")
        print("|---|---|---|---|---|---|---|---|")
    for name, c in rows.items():
        total += c
        ran = sum(c.values()) - c["not run"] - c["skipped"]
        killed = c["killed"] + c["timeout"]
        pct = f"{100 * killed / ran:.1f}%" if ran else "-"
        if markdown:
            print(f"| {name} | {sum(c.values()):,} | {c['killed']:,} | {c['timeout']} | {c['survived']} | "
                  f"{c['no tests']} | {c['not run']:,} | {pct} |")
        else:
            print(f"{name:16s} {killed:5d} of {ran:5d} killed ({pct:>6s}); {c['survived']} survived, "
                  f"{c['no tests']} reached by no test, {c['not run']} not run")
    ran = sum(total.values()) - total["not run"] - total["skipped"]
    killed = total["killed"] + total["timeout"]
    print(f"{'all':16s} {killed:5d} of {ran:5d} killed ({100 * killed / max(ran, 1):.1f}%); "
          f"{total['survived']} survived, {total['no tests']} reached by no test, {total['not run']} not run")


if __name__ == "__main__":
    main()
