#!/usr/bin/python3
"""No tracked file points at something a reader of the repository cannot open.

A comment or a doc must stand alone: it says what and why, and cites an RFC section or a
section of docs/ instead of
  - a tracker number (the word issue or issues, then a number, with or without "#"): the
    tracker is not part of the repository, and what was decided there belongs in the docs
    (history: CHANGELOG.md);
  - the planning notes outside the repository (the contract and design files by file name
    or by their names alone in capitals, the shared directory next to them).
Every text file `git ls-files` lists is read; binary files (a NUL byte) are skipped.

  check_references.py [--root DIR]
  check_references.py --self-test    shows that the check fails on a planted reference
"""
import os
import re
import subprocess
import tempfile

import lint_main

# Built from pieces so that this file does not match its own patterns.
_ISSUE = r"\b" + "issue" + r"s?[ _-]?#?[0-9]+"
NOTES = tuple(n.upper() for n in ("contract", "design"))
_NOTES = "|".join(re.escape(name + ".md") for name in NOTES)
_SHARED = re.escape("../" + "shared")
PATTERN = re.compile("|".join((_ISSUE, _NOTES, _SHARED)), re.IGNORECASE)
# The notes' names alone in capitals ("as the ... says"), matched case-sensitively.
NOTES_WORD = re.compile(r"\b(" + "|".join(NOTES) + r")\b")


def tracked_files(root):
    out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True,
                         capture_output=True).stdout
    return [p for p in out.decode().split("\0") if p]


def scan(root):
    """Returns (path, line number, line) for every reference found."""
    found = []
    for rel in tracked_files(root):
        path = os.path.join(root, rel)
        if not os.path.isfile(path) or os.path.islink(path):
            continue
        with open(path, "rb") as f:
            data = f.read()
        if b"\0" in data:
            continue
        text = data.decode("utf-8", errors="replace")
        for n, line in enumerate(text.splitlines(), 1):
            if PATTERN.search(line) or NOTES_WORD.search(line):
                found.append((rel, n, line.strip()))
    return found


def check(root):
    found = scan(root)
    for rel, n, line in found:
        print(f"{rel}:{n}: reference outside the repository: {line[:160]}")
    if found:
        print(f"{len(found)} line(s) cite a tracker number or notes outside the repository; "
              "say what and why instead (cite the RFC or the docs/ section).")
        return 1
    print("no references outside the repository")
    return 0


def self_test():
    planted = {
        "a.cpp": "int x;  // see " + "issue" + " #6\n",
        "b.md": "As " + NOTES[1] + ".md says.\n",
        "c.py": "# from ../" + "shared/notes\n",
        "d.txt": "Fixed in " + "issues" + " 3.7\n",
        "e.md": "the " + "issue" + "-3 goal\n",
        "f.hpp": "// as the " + NOTES[0] + " says: close connections\n",
    }
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["git", "init", "-q", tmp], check=True)
        with open(os.path.join(tmp, "clean.cpp"), "w") as f:
            f.write("// RFC 9293 section 3.10.7: the tissue 4 of the reissue 5 is fine.\n"
                    "// a metrics contract; DESIGNATED, CONTRACTS and design are other words\n")
        subprocess.run(["git", "-C", tmp, "add", "clean.cpp"], check=True)
        if check(tmp) != 0:
            print("self-test: a clean tree failed")
            return 1
        for name, text in planted.items():
            with open(os.path.join(tmp, name), "w") as f:
                f.write(text)
        with open(os.path.join(tmp, "untracked.md"), "w") as f:
            f.write("issue" + " 9 (not tracked, not read)\n")
        subprocess.run(["git", "-C", tmp, "add", *planted], check=True)
        found = {rel for rel, _, _ in scan(tmp)}
    if found != set(planted):
        print(f"self-test: expected {sorted(planted)}, found {sorted(found)}")
        return 1
    print("self-test: every planted reference was found, the clean and untracked files passed")
    return 0


if __name__ == "__main__":
    lint_main.run(__doc__, check, self_test)
