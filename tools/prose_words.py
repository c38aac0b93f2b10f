"""Prose words per page of the book at a git revision: the Markdown of each chapter, without
code blocks, math, inline code, directive fences and options, or link targets (a directive's
body, e.g. a lemma's statement, an exercise, a caption, counts as prose).

    python tools/prose_words.py HEAD          # or any revision, e.g. a0af9c9^
"""
import json, re, subprocess, sys
def strip_blocks(text):
    """Drop code blocks; keep directive bodies (prose) but not their fence and option lines."""
    out, stack = [], []
    for line in text.splitlines():
        m = re.match(r"^\s*(`{3,}|:{3,})(\{[^}]*\}|[A-Za-z0-9_+-]*)?", line)
        if m:
            fence, what = m.group(1), m.group(2) or ""
            if stack and stack[-1][0] == fence and not what:
                stack.pop(); continue
            stack.append((fence, "code" if not what.startswith("{") or what in ("{code-cell}", "{code-block}", "{code}") else "dir"))
            continue
        if any(k == "code" for _, k in stack):
            continue
        if re.match(r"^\s*:[a-z-]+:", line):
            continue
        out.append(line)
    return "\n".join(out)
def words(text):
    text = strip_blocks(text)
    text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.S)
    text = re.sub(r"\$[^$\n]+\$", " ", text)
    text = re.sub(r"\\begin\{.*?\\end\{[^}]*\}", " ", text, flags=re.S)
    text = re.sub(r"`[^`]*`", " ", text)
    text = re.sub(r"\{[a-z:-]+\}", " ", text)
    text = re.sub(r"\]\([^)]*\)", "] ", text)
    text = re.sub(r"<[^>]+>", " ", text)
    return len(re.findall(r"[A-Za-z][A-Za-z'\-]*", text))
rev = sys.argv[1]
files = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev, "book"], capture_output=True, text=True).stdout.split()
for f in sorted(files):
    src = subprocess.run(["git", "show", f"{rev}:{f}"], capture_output=True, text=True).stdout
    if f.endswith(".ipynb"):
        nb = json.loads(src); md = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    elif f.endswith(".md"):
        md = src
    else:
        continue
    print(f"{f.split('/')[-1].split('.')[0]} {words(md)}")
