#!/usr/bin/python3
"""No product function (stack/, dataplane/, control/, tools/) is over 80 lines without a
written reason.

A function that needs more carries the reason on the line right above it:

    // long: <why it stays in one piece>
    void f() {

or an entry in tests/lint/long_functions.txt (`path function reason`, one a line), for
functions that are being split elsewhere. An entry whose function is no longer over the
limit is reported so that it can be pruned, but does not fail the check.

Functions are found by reading the C++ text, not by compiling it: comments, string and
character literals and preprocessor lines are blanked, then every `{` at namespace or
class scope whose head has a parameter list (and is not a control statement, an
initializer or a type) opens a function body; lambdas and blocks inside a body count as
part of it. A function's lines run from the first line of its head to its closing brace.

  check_function_length.py [--root DIR]
  check_function_length.py --self-test    plants a long function, a reasoned one, ...
"""
import os
import re
import subprocess
import tempfile

import lint_main

LIMIT = 80
PRODUCT_DIRS = ("stack", "dataplane", "control", "tools")
SUFFIXES = (".cpp", ".hpp", ".h", ".cc")
ALLOWLIST = os.path.join("tests", "lint", "long_functions.txt")
MARKER = re.compile(r"//\s*long:\s*\S")
CONTROL = {"if", "for", "while", "switch", "catch", "return", "sizeof", "alignof", "decltype"}
TYPE_WORDS = {"namespace", "class", "struct", "union", "enum"}
LITERAL = re.compile(
    r'//[^\n]*|/\*.*?\*/|R"([^(\s]*)\(.*?\)\1"|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
    re.DOTALL)
ACCESS = re.compile(r"\b(public|private|protected)\s*:(?!:)")


def blank(text):
    """Comments, literals and preprocessor lines become spaces; line numbers stay."""
    text = LITERAL.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    out, continued = [], False
    for line in text.split("\n"):
        directive = continued or line.lstrip().startswith("#")
        continued = directive and line.rstrip().endswith("\\")
        out.append(" " * len(line) if directive else line)
    return "\n".join(out)


def function_name(head):
    """The name before the parameter list of a function head, or None when the head is
    not a function's."""
    head = ACCESS.sub(" ", head)
    paren = head.find("(")
    if paren < 0:
        return None
    before = head[:paren]
    if "=" in before.replace("operator=", "").replace("operator==", ""):
        return None
    words = re.findall(r"[A-Za-z_]\w*", before)
    if not words or words[0] in TYPE_WORDS or words[-1] in CONTROL:
        return None
    m = re.search(r"((?:[A-Za-z_]\w*(?:<[^<>()]*>)?::)*~?[A-Za-z_]\w*|operator\s*\S+)\s*$",
                  before.strip())
    return m.group(1) if m else None


def functions(text):
    """(name, first line, last line) of every function body in C++ source `text`."""
    code = blank(text)
    found = []
    depth = 0          # braces open
    body_depth = None  # depth at which the current function body opened
    head_start = 0     # where the text before the next `{` begins
    start_line = name = None
    for i, ch in enumerate(code):
        if ch == "{":
            if body_depth is None:
                head = code[head_start:i]
                name = function_name(head)
                if name is not None:
                    body_depth = depth
                    first = head_start + (len(head) - len(head.lstrip()))
                    start_line = code.count("\n", 0, first) + 1
            depth += 1
            if body_depth is None:
                head_start = i + 1
        elif ch == "}":
            depth -= 1
            if body_depth is not None and depth == body_depth:
                found.append((name, start_line, code.count("\n", 0, i) + 1))
                body_depth = None
            if body_depth is None:
                head_start = i + 1
        elif ch == ";" and body_depth is None:
            head_start = i + 1
    return found


def product_files(root):
    out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--", *PRODUCT_DIRS], check=True,
                         capture_output=True).stdout
    return sorted(p for p in out.decode().split("\0") if p.endswith(SUFFIXES))


def read_allowlist(root):
    """{(path, function): reason}; a line without a reason is an error."""
    entries, errors = {}, []
    path = os.path.join(root, ALLOWLIST)
    if not os.path.exists(path):
        return entries, errors
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 2)
            if len(parts) < 3:
                errors.append(f"{ALLOWLIST}:{n}: needs `path function reason`: {line}")
                continue
            entries[(parts[0], parts[1])] = parts[2]
    return entries, errors


def scan(root):
    """Returns (failures, stale allowlist entries)."""
    allow, failures = read_allowlist(root)
    seen = set()
    for rel in product_files(root):
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            text = f.read()
        lines = text.split("\n")
        for name, first, last in functions(text):
            length = last - first + 1
            if length <= LIMIT:
                continue
            above = lines[first - 2] if first >= 2 else ""
            if MARKER.search(above):
                continue
            if (rel, name) in allow:
                seen.add((rel, name))
                continue
            failures.append(f"{rel}:{first}: {name} is {length} lines (over {LIMIT}): split "
                            "it, or give the reason on the line above (// long: ...)")
    stale = [f"{ALLOWLIST}: {p} {fn} is no longer over {LIMIT} lines: prune the entry"
             for (p, fn) in allow if (p, fn) not in seen]
    return failures, stale


def check(root):
    failures, stale = scan(root)
    for line in failures + stale:
        print(line)
    if failures:
        print(f"{len(failures)} function(s) over {LIMIT} lines without a reason")
        return 1
    print(f"no product function over {LIMIT} lines without a reason")
    return 0


def self_test():
    def body(n):
        return "".join(f"  x += {i};\n" for i in range(n))

    files = {
        "stack/long.cpp": "int f(int x) {\n" + body(LIMIT) + "  return x;\n}\n",
        "stack/reasoned.cpp": "// long: one table\nint g(int x) {\n" + body(LIMIT) + "  return x;\n}\n",
        "stack/short.hpp": ("namespace a {\nstruct S {\n public:\n  S(int v) : v_(v) {}\n"
                            "  int get() const { return v_; }\n  int v_;\n};\n"
                            "const int kTable[] = {\n" + "".join(f"  {i},\n" for i in range(90)) +
                            "};\n}  // namespace a\n"),
        "stack/lambdas.cpp": ("void h() {\n  auto l = [](int y) {\n" + body(LIMIT // 4) +
                              "  };\n  const char* s = \"}{\";\n  if (s) {\n" + body(LIMIT // 4) +
                              "  }\n}\nint k() { return '{'; }\n"),
        "control/listed.cpp": "void Cls::run() {\n" + body(LIMIT) + "}\n",
        "tests/ignored.cpp": "void t() {\n" + body(2 * LIMIT) + "}\n",
        ALLOWLIST: "# path function reason\ncontrol/listed.cpp Cls::run being split\n"
                   "stack/short.hpp a::gone split already\n",
    }
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["git", "init", "-q", tmp], check=True)
        for rel, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
            with open(os.path.join(tmp, rel), "w") as f:
                f.write(text)
        subprocess.run(["git", "-C", tmp, "add", "."], check=True)
        failures, stale = scan(tmp)
        lengths = {n: last - first + 1 for n, first, last in functions(files["stack/lambdas.cpp"])}
    expect_fail = ["stack/long.cpp:1: f is 83 lines"]
    ok = (len(failures) == 1 and failures[0].startswith(expect_fail[0]) and len(stale) == 1 and
          "a::gone" in stale[0] and lengths == {"h": 2 * (LIMIT // 4) + 7, "k": 1})
    if not ok:
        print(f"self-test: failures {failures}, stale {stale}, lambda file {lengths}")
        return 1
    print("self-test: the long function failed; the reasoned, listed, short, table, test and "
          "lambda-holding ones passed; the stale entry was reported")
    return 0


if __name__ == "__main__":
    lint_main.run(__doc__, check, self_test)
