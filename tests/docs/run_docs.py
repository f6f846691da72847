#!/usr/bin/env python3
"""run_docs.py ROOT [--list] [--only NAME] — every command the docs give, run.

The shell blocks of README.md, docs/*.md and bench/README.md (fenced
```sh or ```bash) and the `$ ` command lines of each example's header
comment (examples/*) are what a new user pastes: this runs them as written.

- One fresh temporary folder per document, its blocks run in order with
  `bash -eo pipefail`, so a block may use what an earlier one of the same
  document made (a user follows a page top to bottom). The folder holds
  links to the repository's top-level entries (build/, tests/, examples/,
  tools/, ...), so repository paths work and outputs (out/, dumps/) land in
  the folder (out/, gen/ and dumps/ are never linked: they start empty).
  Nothing else is set up: a block that needs kiln on PATH says
  `export PATH=$PWD/build:$PATH` itself.
- An HTML comment on the line before a block directs it:
    <!-- docs-test: file NAME -->     write the block (a script shown in the
                                      text, e.g. mlp.lua) to NAME instead
    <!-- docs-test: network -->       the block fetches (pip download): an
                                      exit status of 77 from it is a skip
    <!-- docs-test: skip REASON -->   not run, with the reason printed
  In an example's header the same words stand on a line of the comment
  (`docs-test: network`, `docs-test: skip REASON`).
- A block fails on a non-zero exit status (77 for network blocks: skip),
  or when it runs past 600 s. Prints a line per block (with the CPU time
  it took: the CI's budget is CPU) and ends with
  "N passed, N failed, N skipped".
"""
import glob
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile

MARK = re.compile(r"<!--\s*docs-test:\s*(file|network|skip)\s*(.*?)\s*-->")
HEADER_MARK = re.compile(r"docs-test:\s*(network|skip)\s*(.*)")
TIMEOUT = 600


def markdown_blocks(path):
    """[(kind, arg, text, line)]: kind sh, file or skip; arg a file name,
    'network' or a reason."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^```(\w*)", lines[i])
        if not m:
            i += 1
            continue
        lang, start = m.group(1), i
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        text = "\n".join(lines[i + 1:j]) + "\n"
        mark = MARK.search(lines[i - 1]) if i > 0 else None
        if mark and mark.group(1) == "file":
            out.append(("file", mark.group(2), text, start + 1))
        elif lang in ("sh", "bash"):
            if mark and mark.group(1) == "skip":
                out.append(("skip", mark.group(2), text, start + 1))
            else:
                out.append(("sh", "network" if mark and mark.group(1) == "network" else "", text, start + 1))
        i = j + 1
    return out


def header_blocks(path):
    """The `$ ` lines of the file's first comment, one block (with their
    `\\` continuation lines)."""
    text = open(path, encoding="utf-8", errors="replace").read()
    m = re.match(r"\s*(/\*.*?\*/|--\[\[.*?\]\]|(?:#[^\n]*\n|\"\"\".*?\"\"\")+)", text, re.S)
    if not m:
        return []
    head = m.group(1)
    cmds, cont, kind, arg = [], False, "sh", ""
    for line in head.split("\n"):
        body = re.sub(r"^\s*(\*|--|#|//)?\s?", "", line)
        hm = HEADER_MARK.search(body)
        if hm:
            kind, arg = ("skip", hm.group(2)) if hm.group(1) == "skip" else ("sh", "network")
        stripped = body.strip()
        if cont:
            cmds.append(stripped)
            cont = stripped.endswith("\\")
        elif stripped.startswith("$ "):
            cmds.append(stripped[2:])
            cont = stripped.endswith("\\")
    if not cmds:
        return []
    return [(kind, arg, "\n".join(cmds) + "\n", 1)]


def documents(root):
    docs = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    docs.append(os.path.join(root, "bench", "README.md"))
    for path in docs:
        yield path, markdown_blocks(path)
    for path in sorted(glob.glob(os.path.join(root, "examples", "*"))):
        if os.path.isfile(path):
            blocks = header_blocks(path)
            if blocks:
                yield path, blocks


def make_folder(root):
    """A fresh folder with links to the repository's own top-level entries
    (git's list, else every entry) and to build/; never to what commands
    write (out/, gen/, dumps/): those start empty for every document."""
    work = tempfile.mkdtemp(prefix="kiln-docs.")
    p = subprocess.run(["git", "-C", root, "ls-tree", "--name-only", "HEAD"], capture_output=True, text=True)
    entries = p.stdout.split() if p.returncode == 0 and p.stdout.strip() else os.listdir(root)
    for entry in set(entries) | {"build"}:
        if entry.startswith(".") or entry in ("out", "gen", "dumps") or not os.path.exists(os.path.join(root, entry)):
            continue
        os.symlink(os.path.join(root, entry), os.path.join(work, entry))
    return work


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    root = os.path.abspath(args[0])
    listing = "--list" in args
    only = args[args.index("--only") + 1] if "--only" in args else None
    npass = nfail = nskip = 0
    counts = {}
    for path, blocks in documents(root):
        rel = os.path.relpath(path, root)
        if only and only not in rel:
            continue
        work = None if listing else make_folder(root)
        for kind, arg, text, line in blocks:
            name = f"{rel}:{line}"
            if kind == "file":
                if work:
                    with open(os.path.join(work, arg), "w", encoding="utf-8") as f:
                        f.write(text)
                continue
            counts[rel.split("/")[0]] = counts.get(rel.split("/")[0], 0) + 1
            if listing:
                print(f"{name} {kind} {arg}".rstrip())
                continue
            if kind == "skip":
                print(f"skip {name}: {arg}")
                nskip += 1
                continue
            cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            try:
                p = subprocess.run(["bash", "-eo", "pipefail", "-c", text], cwd=work, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True, errors="replace", timeout=TIMEOUT)
                rc, log = p.returncode, p.stdout
            except subprocess.TimeoutExpired as e:
                rc, log = -1, (e.stdout or b"").decode(errors="replace") + f"\n(timed out after {TIMEOUT} s)"
            cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime
            if rc == 0:
                print(f"ok   {name} ({cpu:.1f} s CPU)")
                npass += 1
            elif rc == 77 and arg == "network":
                print(f"skip {name}: it fetches, and the fetch was not possible (offline?)")
                nskip += 1
            else:
                print(f"FAIL {name}: exit status {rc}")
                print("     " + text.strip().replace("\n", "\n     "))
                print("   output (last lines):\n     " + "\n     ".join(log.strip().split("\n")[-15:]))
                nfail += 1
        if work:
            shutil.rmtree(work, ignore_errors=True)
    if listing:
        print(" ".join(f"{k}: {v} blocks" for k, v in sorted(counts.items())))
        return 0
    print(f"{npass} passed, {nfail} failed, {nskip} skipped")
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main())
