#!/usr/bin/python3
"""Every external program the project runs is installed by deploy/install-deps.sh.

Scans the shell scripts (*.sh, .ci/run, files with a sh/bash shebang), the Python scripts
(*.py) and meson.build files for the programs they start, and fails when
  - a program is not in the table deploy/tools.txt (program -> Debian package), or
  - the table's package for a program is not in PACKAGES of deploy/install-deps.sh.
A shell command is read with a small lexer that knows quotes, comments, here-documents,
command substitution, `case` patterns and the wrappers that run another program
(ip netns exec, timeout, taskset, xargs, sh -c, ...). A program named through a variable
cannot be known and is not reported; literal names and /usr/bin paths are.

  check_tools.py [--root DIR] [--install-deps FILE] [--table FILE]
  check_tools.py --self-test     shows that the check fails when a needed package is removed
"""
import argparse
import ast
import os
import re
import sys
import tempfile

BUILTINS = set("""
  . : [ alias bg bind break builtin caller cd command compgen complete continue declare dirs
  disown echo enable eval exec exit export false fc fg getopts hash help history jobs kill
  let local logout mapfile popd printf pushd pwd read readarray readonly return set shift
  shopt source suspend test times trap true type typeset ulimit umask unalias unset wait
""".split())
KEYWORDS = {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}",
            "time", "esac"}
DYN = "\x01"  # marks a word (or part of one) only known when the script runs
REDIRECTS = {">", ">>", "<", "<>", ">|", ">&", "<&", "&>", "&>>", "<<<"}
OPERATORS = ["&>>", ";;&", "<<<", "<<-", "&&", "||", ";;", ";&", "|&", ">>", "<<", ">&", "<&",
             ">|", "<>", "&>", "|", "&", ";", "(", ")", "<", ">", "\n"]
SEPARATORS = {"\n", ";", "&", "&&", "||", "|", "|&", "(", ")"}
SYSTEM_DIRS = ("/usr/bin/", "/bin/", "/usr/sbin/", "/sbin/")


class Word:
    def __init__(self, text, line, dynamic):
        self.text, self.line, self.dynamic = text, line, dynamic

    def __repr__(self):
        return f"Word({self.text!r})"


class Lexer:
    """Splits shell text into token streams: the main one and one per command substitution."""

    def __init__(self, text, line=1):
        self.s, self.i, self.line = text, 0, line
        self.streams = []
        self.heredocs = []

    def peek(self, n=0):
        j = self.i + n
        return self.s[j] if j < len(self.s) else ""

    def run(self):
        self.streams.insert(0, self.stream(None))
        return self.streams

    def stream(self, closer):
        toks = []
        while self.i < len(self.s):
            c = self.peek()
            if closer and c == closer:
                self.i += 1
                return toks
            if c in " \t":
                self.i += 1
            elif c == "\\" and self.peek(1) == "\n":
                self.i += 2
                self.line += 1
            elif c == "#":
                while self.i < len(self.s) and self.peek() != "\n":
                    self.i += 1
            elif c == "\n":
                toks.append(("op", "\n", self.line))
                self.i += 1
                self.line += 1
                self.skip_heredocs()
            elif c == "(" and self.peek(1) == "(" and self.at_command_start(toks):
                self.skip_balanced("(", ")")  # (( arithmetic ))
            else:
                op = next((o for o in OPERATORS if self.s.startswith(o, self.i)), None)
                if op:
                    self.i += len(op)
                    if op == "\n":
                        continue
                    if op in ("<<", "<<-"):
                        self.read_heredoc_word(op == "<<-")
                        continue
                    toks.append(("op", op, self.line))
                else:
                    toks.append(("word", self.word(closer), self.line))
        return toks

    @staticmethod
    def at_command_start(toks):
        if not toks:
            return True
        kind, val, _ = toks[-1]
        return val in SEPARATORS if kind == "op" else val.text in KEYWORDS

    def skip_balanced(self, open_, close):
        depth = 0
        while self.i < len(self.s):
            c = self.peek()
            if c == "\n":
                self.line += 1
            if c == open_:
                depth += 1
            elif c == close:
                depth -= 1
                if depth == 0:
                    self.i += 1
                    return
            self.i += 1

    def read_heredoc_word(self, strip_tabs):
        while self.peek() in " \t":
            self.i += 1
        w = self.word(None)
        self.heredocs.append((w.text, strip_tabs))

    def skip_heredocs(self):
        while self.heredocs:
            delim, strip_tabs = self.heredocs.pop(0)
            while self.i < len(self.s):
                end = self.s.find("\n", self.i)
                end = len(self.s) if end < 0 else end
                body_line = self.s[self.i:end]
                self.i = end + 1
                self.line += 1
                if (body_line.lstrip("\t") if strip_tabs else body_line) == delim:
                    break

    def substitution(self, closer):
        sub = Lexer(self.s, self.line)
        sub.i = self.i
        toks = sub.stream(closer)
        self.i, self.line = sub.i, sub.line
        self.streams.append(toks)
        self.streams.extend(sub.streams)

    def dollar(self, out):
        """At a `$`: consumes the expansion, appends a DYN mark."""
        nxt = self.peek(1)
        if nxt == "(" and self.peek(2) == "(":
            self.i += 1
            self.skip_balanced("(", ")")
        elif nxt == "(":
            self.i += 2
            self.substitution(")")
        elif nxt == "{":
            self.i += 1
            self.skip_balanced("{", "}")
        else:
            self.i += 1
            while self.i < len(self.s) and (self.peek().isalnum() or self.peek() == "_"):
                self.i += 1
            if self.i < len(self.s) and self.s[self.i - 1] == "$" and self.peek() in "@*#?$!-0123456789":
                self.i += 1
        out.append(DYN)

    def word(self, closer):
        out, dynamic = [], False
        while self.i < len(self.s):
            c = self.peek()
            if c in " \t\n;&|<>()" or (closer and c == closer):
                if c == "(" and out and "".join(out).endswith("="):  # arr=( ... )
                    self.skip_balanced("(", ")")
                    out.append(DYN)
                    continue
                break
            if c == "\\":
                out.append(self.peek(1))
                self.i += 2
            elif c == "'":
                end = self.s.find("'", self.i + 1)
                end = len(self.s) if end < 0 else end
                out.append(self.s[self.i + 1:end])
                self.line += self.s.count("\n", self.i, end)
                self.i = end + 1
            elif c == '"':
                self.i += 1
                while self.i < len(self.s) and self.peek() != '"':
                    d = self.peek()
                    if d == "\\":
                        out.append(self.peek(1))
                        self.i += 2
                    elif d == "$":
                        self.dollar(out)
                    elif d == "`":
                        self.i += 1
                        self.substitution("`")
                        out.append(DYN)
                    else:
                        if d == "\n":
                            self.line += 1
                        out.append(d)
                        self.i += 1
                self.i += 1
            elif c == "$":
                self.dollar(out)
            elif c == "`":
                self.i += 1
                self.substitution("`")
                out.append(DYN)
            elif c == DYN:
                out.append(DYN)
                self.i += 1
            else:
                out.append(c)
                self.i += 1
        text = "".join(out)
        dynamic = DYN in text
        return Word(text, self.line, dynamic)


ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=")


def simple_commands(tokens):
    """Token stream -> list of simple commands (lists of Words), keywords and
    assignments removed, `case` patterns, [[ ]] tests and `for` headers skipped."""
    cmds, cur, cases = [], [], []
    i = 0

    def flush():
        nonlocal cur
        if cur:
            cmds.append(cur)
        cur = []

    while i < len(tokens):
        kind, val, _ = tokens[i]
        if kind == "op":
            if val == "(" and len(cur) == 1 and i + 1 < len(tokens) and tokens[i + 1][1] == ")":
                cur = []  # name() { ... }: a function definition
                i += 2
                continue
            if val in (";;", ";&", ";;&"):
                flush()
                if cases:
                    cases[-1] = "pattern"
            elif val in REDIRECTS:
                i += 1  # the next word is a file name or descriptor
            else:
                flush()
            i += 1
            continue
        w = val
        if not cur:
            if cases and cases[-1] == "pattern":
                if w.text == "esac":
                    cases.pop()
                else:
                    while i < len(tokens) and tokens[i][1] != ")":
                        i += 1
                    cases[-1] = "body"
                i += 1
                continue
            if w.text == "esac" and cases:
                cases.pop()
            elif w.text == "case":
                while i < len(tokens) and not (tokens[i][0] == "word" and tokens[i][1].text == "in"):
                    i += 1
                cases.append("pattern")
            elif w.text in ("for", "select"):
                while i < len(tokens) and tokens[i][1] not in ("\n", ";"):
                    i += 1
                continue
            elif w.text == "[[":
                while i < len(tokens) and not (tokens[i][0] == "word" and tokens[i][1].text == "]]"):
                    i += 1
            elif w.text == "function":
                i += 1  # its name follows
            elif w.text in KEYWORDS or ASSIGNMENT.match(w.text):
                pass
            else:
                cur.append(w)
            i += 1
            continue
        cur.append(w)
        i += 1
    flush()
    return cmds


def skip_options(words, with_arg=()):
    """Drops leading -options (and the argument of those in with_arg)."""
    i = 0
    while i < len(words) and words[i].text.startswith("-") and not words[i].dynamic:
        if words[i].text in with_arg:
            i += 1
        i += 1
    return words[i:]


def programs_of(words, runners, found):
    """Adds (program, line) for the command `words` and every program it runs."""
    if not words:
        return
    w, rest = words[0], words[1:]
    if w.dynamic:
        return
    name = w.text
    if "/" in name:
        if not name.startswith(SYSTEM_DIRS):
            return  # a project script or binary
        name = os.path.basename(name)
    if name in runners:
        return programs_of(rest, runners, found)
    if name in BUILTINS:
        if name == "exec":
            programs_of(rest, runners, found)
        elif name == "command":
            if rest and rest[0].text in ("-v", "-V"):
                programs_of(rest[1:2], runners, found)
            else:
                programs_of(rest, runners, found)
        elif name == "trap" and rest and not rest[0].dynamic:
            found.extend(shell_programs(rest[0].text, w.line))
        return
    found.append((name, w.line))
    if name == "ip" and [x.text for x in rest[:2]] == ["netns", "exec"]:
        programs_of(rest[3:], runners, found)
    elif name == "timeout":
        programs_of(skip_options(rest, ("-s", "-k", "--signal", "--kill-after"))[1:], runners, found)
    elif name == "taskset":
        programs_of(skip_options(rest)[1:], runners, found)
    elif name == "flock":
        programs_of(skip_options(rest, ("-w", "-E"))[1:], runners, found)
    elif name == "xargs":
        programs_of(skip_options(rest, ("-n", "-I", "-P", "-L", "-d", "-s", "-a")), runners, found)
    elif name in ("env", "nice", "nohup", "sudo", "stdbuf"):
        rest = skip_options(rest, ("-n", "-u"))
        while rest and ASSIGNMENT.match(rest[0].text):
            rest = rest[1:]
        programs_of(rest, runners, found)
    elif name in ("sh", "bash", "dash") and rest and rest[0].text == "-c" and len(rest) > 1:
        found.extend(shell_programs(rest[1].text, rest[1].line))


FUNCTION = re.compile(r"^[ \t]*(?:function[ \t]+)?([A-Za-z_][\w-]*)[ \t]*\(\)", re.M)
RUNNER = re.compile(r"^[ \t]*([A-Za-z_][\w-]*)[ \t]*\(\)[ \t]*\{[ \t]*(#[^\n]*)?\n(.*?)^\}",
                    re.M | re.S)


def runner_functions(text):
    """Shell functions that run their arguments as a command ("$@" in command position)."""
    return {m.group(1) for m in RUNNER.finditer(text)
            if re.search(r'(^|[;&|{]|then|else|do)\s*"\$@"', m.group(3), re.M)}


def shell_programs(text, line=1, runners=frozenset()):
    """[(program, line)] that shell text runs; its own functions are not programs, except
    that a function running "$@" (a runner) makes its first argument one."""
    functions = set(FUNCTION.findall(text))
    found = []
    for toks in Lexer(text, line).run():
        for cmd in simple_commands(toks):
            programs_of(cmd, runners, found)
    return [(p, n) for p, n in found if p not in functions]


# --- Python -----------------------------------------------------------------------------
CALLS = {"run", "Popen", "call", "check_call", "check_output", "system", "sh", "spawn",
         "which", "getoutput", "getstatusoutput"}
SHELL_CALLS = {"sh", "system", "getoutput", "getstatusoutput"}
COMMAND_VARS = {"cmd", "argv", "command"}


def py_text(node):
    """A str or f-string node as text with DYN for the parts known only at run time."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else DYN for v in node.values)
    return None


def py_argv(node):
    """A list literal (or list + list) as Words, or None."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = py_argv(node.left)
        right = py_argv(node.right) if left is not None else None
        if left is None:
            return None
        return left + (right if right is not None else [Word(DYN, node.lineno, True)])
    if isinstance(node, ast.List):
        out = []
        for e in node.elts:
            t = py_text(e)
            out.append(Word(t if t is not None else DYN, e.lineno, t is None or DYN in t))
        return out
    return None


def py_command(node, shell, found):
    argv = py_argv(node)
    if argv is not None:
        programs_of(argv, frozenset(), found)
        return
    text = py_text(node)
    if text is None:
        return
    if shell:
        found.extend(shell_programs(text, node.lineno))
    elif DYN not in text:
        programs_of([Word(text, node.lineno, False)], frozenset(), found)


def python_programs(text):
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Call) and node.args:
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if name == "require":  # the integration harness' check: every argument is a program
                for a in node.args:
                    if py_text(a) and DYN not in py_text(a):
                        found.append((py_text(a), a.lineno))
                continue
            if name not in CALLS:
                continue
            shell = name in SHELL_CALLS or any(
                k.arg == "shell" and isinstance(k.value, ast.Constant) and k.value.value
                for k in node.keywords)
            py_command(node.args[0], shell, found)
        elif isinstance(node, ast.Assign) and any(
                getattr(t, "id", getattr(t, "attr", None)) in COMMAND_VARS for t in node.targets):
            py_command(node.value, isinstance(node.value, (ast.Constant, ast.JoinedStr)), found)
    return found


def meson_programs(text):
    found = []
    for m in re.finditer(r"find_program\(\s*'([^']+)'", text):
        line = text.count("\n", 0, m.start()) + 1
        programs_of([Word(m.group(1), line, False)], frozenset(), found)
    return found


# --- the project ------------------------------------------------------------------------
def is_shell_script(path):
    if path.endswith(".sh"):
        return True
    if "." in os.path.basename(path):
        return False
    try:
        with open(path, "rb") as f:
            first = f.readline(100)
    except OSError:
        return False
    return first.startswith(b"#!") and re.search(rb"\b(ba)?sh\b", first) is not None


def project_files(root):
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x != ".git" and not x.startswith("build")
                         and not os.path.exists(os.path.join(d, x, "meson-private")))
        for f in sorted(files):
            yield os.path.relpath(os.path.join(d, f), root)


def scan(root):
    """[(file, line, program)] for every program the project's scripts start."""
    uses = []
    for rel in project_files(root):
        path = os.path.join(root, rel)
        if rel.endswith(".py"):
            kind = python_programs
        elif os.path.basename(rel) == "meson.build":
            kind = meson_programs
        elif is_shell_script(path):
            kind = None
        else:
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        if kind is None:
            found = shell_programs(text, 1, runner_functions(text))
        else:
            try:
                found = kind(text)
            except SyntaxError as e:
                uses.append((rel, e.lineno or 0, None))
                continue
        uses.extend((rel, line, prog) for prog, line in found)
    return uses


def read_table(path):
    table = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            fields = line.split("#", 1)[0].split()
            if not fields:
                continue
            if len(fields) != 2:
                raise SystemExit(f"{path}:{n}: expected `program package`, got: {line.strip()}")
            table[fields[0]] = (fields[1], n)
    return table


def read_packages(path):
    with open(path) as f:
        text = f.read()
    m = re.search(r"^PACKAGES=\((.*?)^\)", text, re.M | re.S)
    if not m:
        raise SystemExit(f"{path}: no PACKAGES=( ... ) list")
    return {w for line in m.group(1).splitlines() for w in line.split("#", 1)[0].split()}


def shown(path, root):
    rel = os.path.relpath(path, root)
    return os.path.abspath(path) if rel.startswith("..") else rel


def check(root, table_path, deps_path):
    """Problems, each a line to print; empty when every program is provided."""
    rel_table, rel_deps = shown(table_path, root), shown(deps_path, root)
    table = read_table(table_path)
    packages = read_packages(deps_path)
    problems, uses = [], {}
    for rel, line, prog in scan(root):
        if prog is None:
            problems.append(f"{rel}:{line}: cannot parse this Python file")
        else:
            uses.setdefault(prog, []).append(f"{rel}:{line}")
    for prog, where in sorted(uses.items()):
        more = f" (also {', '.join(where[1:])})" if len(where) > 1 else ""
        if prog not in table:
            problems.append(
                f"{where[0]} calls `{prog}`, which no package in {rel_deps} provides; add "
                f"`{prog} <debian-package>` to {rel_table} and the package to PACKAGES in "
                f"{rel_deps}{more}")
        elif table[prog][0] != "@project" and table[prog][0] not in packages:
            pkg, n = table[prog]
            problems.append(
                f"{where[0]} calls `{prog}`, which no package in {rel_deps} provides; add "
                f"`{pkg}` ({rel_table} line {n}) to PACKAGES in {rel_deps}{more}")
    for prog, (pkg, n) in sorted(table.items(), key=lambda kv: kv[1][1]):
        if prog not in uses and pkg != "@project":
            problems.append(f"{rel_table}:{n}: nothing calls `{prog}`; remove the line")
    return problems, set(uses)


def self_test(root, table_path, deps_path):
    """The check must pass on the tree, fail with tcpdump's package removed, fail on an
    unknown program, and read the shell constructs the scripts use."""
    failures = []

    def expect(ok, what):
        print(("  ok   " if ok else "  FAIL ") + what)
        if not ok:
            failures.append(what)

    problems, _ = check(root, table_path, deps_path)
    expect(not problems, f"the tree passes ({len(problems)} problems)")
    with tempfile.TemporaryDirectory() as tmp:
        with open(deps_path) as f:
            text = f.read()
        without = os.path.join(tmp, "install-deps.sh")
        with open(without, "w") as f:
            f.write(re.sub(r"(?m)(^PACKAGES=\(.*?)\btcpdump\b", r"\1", text, flags=re.S))
        expect("tcpdump" not in read_packages(without), "the copy of install-deps.sh lacks tcpdump")
        problems, _ = check(root, table_path, without)
        for p in problems:
            print("       " + p)
        expect(any("calls `tcpdump`, which no package" in p and "test_tcp_linux.py" in p
                   for p in problems), "without tcpdump: the check fails, naming test_tcp_linux.py")
        # A scratch project: a script calling a program that the table does not know.
        scratch = os.path.join(tmp, "proj")
        os.makedirs(os.path.join(scratch, "deploy"))
        with open(os.path.join(scratch, "deploy", "install-deps.sh"), "w") as f:
            f.write("PACKAGES=(\n  iproute2  # ip\n)\n")
        with open(os.path.join(scratch, "deploy", "tools.txt"), "w") as f:
            f.write("ip iproute2\n")
        with open(os.path.join(scratch, "t.sh"), "w") as f:
            f.write("#!/bin/bash\nip netns exec ns frobnicate --now\n")
        problems, _ = check(scratch, os.path.join(scratch, "deploy", "tools.txt"),
                            os.path.join(scratch, "deploy", "install-deps.sh"))
        expect(problems == ["t.sh:2 calls `frobnicate`, which no package in deploy/install-deps.sh "
                            "provides; add `frobnicate <debian-package>` to deploy/tools.txt and "
                            "the package to PACKAGES in deploy/install-deps.sh"],
               f"an unknown program is reported: {problems}")
    cases = [
        ("a=$(id -u) b=2 taskset -c 1 sockperf sr | tee x 2>/dev/null", {"id", "taskset", "sockperf", "tee"}),
        ("ip netns exec \"$NS\" timeout 5 socat - UDP:1:7 <<'E'\nnotacmd here\nE\ncurl x", {"ip", "timeout", "socat", "curl"}),
        ("case \"$1\" in\n  --quick|-q) Q=1 ;;\n  *) die \"bad\" ;;\nesac\n", {"die"}),
        ("for t in sockperf wrk; do command -v \"$t\" >/dev/null; done\n[[ $(nproc) -gt 1 ]] && echo", {"nproc"}),
        ("f() {\n  \"$@\"\n}\nf modprobe vfio\nsh -c 'echo x | dpdk-telemetry.py -f p'", {"modprobe", "sh", "dpdk-telemetry.py"}),
        ("x=( a b ) # tcpdump in a comment\n\"$W\" run; build/x/y; /usr/bin/python3 -c 'p'", {"python3"}),
    ]
    for text, want in cases:
        got = {p for p, _ in shell_programs(text, 1, runner_functions(text))}
        expect(got == want, f"shell: {text.splitlines()[0][:50]!r}: {sorted(got)}")
    py = ('subprocess.Popen(["ip", "netns", "exec", ns, "tcpdump", "-w", f])\nh.require("ss", x)\n'
          'self.argv = ["flock", "l", "sockperf"] + list(a)\n'
          'h.sh(f"tshark -r {cap} -Y x", check=False)\ncmd = ["valgrind", "--"] + argv\n'
          'subprocess.run([DATAPLANE, "-c", c]); shutil.which("promtool")\n')
    got = {p for p, _ in python_programs(py)}
    expect(got == {"ip", "tcpdump", "tshark", "valgrind", "promtool", "ss",
                   "flock", "sockperf"}, f"python: {sorted(got)}")
    return 1 if failures else 0


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.normpath(os.path.join(here, "..", "..")))
    ap.add_argument("--table", help="program -> package table (default ROOT/deploy/tools.txt)")
    ap.add_argument("--install-deps", help="default ROOT/deploy/install-deps.sh")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    table = a.table or os.path.join(a.root, "deploy", "tools.txt")
    deps = a.install_deps or os.path.join(a.root, "deploy", "install-deps.sh")
    if a.self_test:
        return self_test(a.root, table, deps)
    problems, used = check(a.root, table, deps)
    for p in problems:
        print(p)
    if problems:
        print(f"check_tools: {len(problems)} problems")
        return 1
    print(f"check_tools: {len(used)} programs called, each provided by a package in "
          f"{os.path.relpath(deps, a.root)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
