#!/usr/bin/python3
"""The layering rules of docs/architecture.md ("Layering rules"), checked on every C++ file.

  stack/      includes no DPDK header (rte_*.h), no dataplane/ and no control/ header, and
              reads no clock (std::chrono clocks, clock_gettime, gettimeofday, time(),
              clock(), timespec_get, rte_rdtsc, rte_get_*_cycles, __rdtsc): time is a
              parameter, so the stack runs the same in the simulator and on a core;
  control/    includes no dataplane/ header and no DPDK header: it reads the data plane only
              through the statistics segment and the capture ring layout it owns;
  dataplane/  includes no prometheus-cpp header: metrics leave the data plane through the
              segment, and only wirespeed-control serves them.

Inside stack/, each folder includes only its own headers and those of lower ranks
(STACK_RANKS): core < wire < codec, steer < udp, tcp, ipsec < iface < pipeline < apps.
Folders of one rank do not include each other.

Includes are read with comments removed; clock reads with comments and string literals
removed, so a comment may still explain why the stack takes no clock.

  check_layering.py [--root DIR]
  check_layering.py --self-test    plants a violation of each rule in a temp tree
"""
import os
import re
import tempfile

import lint_main

SOURCE_SUFFIXES = (".cpp", ".hpp", ".h", ".cc", ".hh", ".ipp")
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]+)[>"]', re.MULTILINE)
DPDK = re.compile(r"(^|/)(rte_\w*|generic/rte_\w*)\.h$")
CLOCK = re.compile(
    r"\b(steady_clock|system_clock|high_resolution_clock|utc_clock|tai_clock|gps_clock|"
    r"file_clock|clock_gettime|gettimeofday|timespec_get|rte_rdtsc\w*|rte_get_tsc_cycles|"
    r"rte_get_timer_cycles|rte_get_tsc_hz|__rdtsc|__rdtscp)\b"
    r"|(?<![\w.>])(?:std::|::)?(time|clock|ftime)\s*\(")
COMMENT_OR_STRING = re.compile(
    r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.DOTALL)
COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)


def blank(pattern, text, keep_strings):
    """Replaces comments (and string literals unless keep_strings) by spaces, keeping lines."""
    def sub(m):
        s = m.group(0)
        if keep_strings and s[0] in "\"'":
            return s
        return re.sub(r"[^\n]", " ", s)
    return pattern.sub(sub, text)


# Lower ranks are used by higher ones, never the other way round.
STACK_RANKS = {"core": 0, "wire": 1, "codec": 2, "steer": 2, "udp": 3, "tcp": 3, "ipsec": 3,
               "iface": 4, "pipeline": 5, "apps": 6}
STACK_INCLUDE = re.compile(r"^stack/(\w+)/")


def stack_rank_problem(rel, inc):
    """Why `rel` (a file under stack/) may not include `inc`, or None."""
    parts = rel.split(os.sep)
    own = parts[1] if len(parts) > 2 else None
    m = STACK_INCLUDE.match(inc)
    if own is None or m is None or m.group(1) == own:
        return None
    if own not in STACK_RANKS or m.group(1) not in STACK_RANKS:
        return f"stack/{own if own not in STACK_RANKS else m.group(1)}/ has no rank in STACK_RANKS"
    if STACK_RANKS[m.group(1)] >= STACK_RANKS[own]:
        return f"stack/{own}/ includes stack/{m.group(1)}/, which is not below it"
    return None


def include_rules(layer):
    rules = []
    if layer in ("stack", "control"):
        rules.append((lambda inc: DPDK.search(inc), "includes a DPDK header"))
        rules.append((lambda inc: re.search(r"(^|/)dataplane/", inc),
                      "includes a dataplane/ header"))
    if layer == "stack":
        rules.append((lambda inc: re.search(r"(^|/)control/", inc), "includes a control/ header"))
    if layer == "dataplane":
        rules.append((lambda inc: re.match(r"prometheus/", inc), "includes prometheus-cpp"))
    return rules


def check_file(path, rel, layer):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    problems = []
    no_comments = blank(COMMENT, text, keep_strings=True)
    for m in INCLUDE.finditer(no_comments):
        line = no_comments.count("\n", 0, m.start()) + 1
        for test, what in include_rules(layer):
            if test(m.group(1)):
                problems.append(f"{rel}:{line}: {layer}/ {what}: {m.group(1)}")
        why = stack_rank_problem(rel, m.group(1)) if layer == "stack" else None
        if why:
            problems.append(f"{rel}:{line}: {why}: {m.group(1)}")
    if layer == "stack":
        code = blank(COMMENT_OR_STRING, text, keep_strings=False)
        for n, line in enumerate(code.splitlines(), 1):
            m = CLOCK.search(line)
            if m:
                problems.append(f"{rel}:{n}: stack/ reads a clock ({m.group(0).strip()}): "
                                "take the time as a parameter")
    return problems


def scan(root):
    problems = []
    for layer in ("stack", "control", "dataplane"):
        top = os.path.join(root, layer)
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames.sort()
            for name in sorted(filenames):
                if name.endswith(SOURCE_SUFFIXES):
                    path = os.path.join(dirpath, name)
                    problems += check_file(path, os.path.relpath(path, root), layer)
    return problems


def check(root):
    if not os.path.isdir(os.path.join(root, "stack")):
        print(f"no stack/ under {root}")
        return 1
    problems = scan(root)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} layering violation(s); the rules: docs/architecture.md")
        return 1
    print("layering: stack/, control/ and dataplane/ keep to their rules")
    return 0


PLANTED = {
    "stack/a.cpp": '#include <rte_mbuf.h>\n',
    "stack/b.hpp": '#include "dataplane/port.hpp"\n',
    "stack/c.cpp": '#include "control/config/config.hpp"\n',
    "stack/d.cpp": "auto t = std::chrono::steady_clock::now();\n",
    "stack/e.cpp": "timespec ts; int r = clock_gettime(CLOCK_MONOTONIC, &ts);\n",
    "stack/f.cpp": "long now = time(nullptr);\n",
    "stack/g.cpp": "uint64_t c = rte_rdtsc();\n",
    "control/h.cpp": '#include "dataplane/metrics.hpp"\n',
    "control/i.cpp": "#include <rte_ethdev.h>\n",
    "dataplane/j.cpp": "#include <prometheus/counter.h>\n",
    "stack/pipeline/k.cpp": '#include "stack/apps/framing.hpp"\n',
    "stack/tcp/l.hpp": '#include "stack/udp/udp_table.hpp"\n',
    "stack/core/m.hpp": '#include "stack/wire/ipv4.hpp"\n',
}
CLEAN = {
    "stack/iface/ok.cpp": '#include "stack/tcp/tcp_stack.hpp"\n#include "stack/iface/a.hpp"\n',
    "stack/ok.cpp": ('#include "stack/core/time.hpp"\n'
                     "// no steady_clock here: time(nullptr) would break the simulator\n"
                     'const char* s = "clock_gettime";\n'
                     "Nanos deadline_time(Nanos now);\nint x = conn.time(3) + deadline_time(t);\n"),
    "control/ok.cpp": '#include <prometheus/registry.h>\n#include "control/stats/segment.hpp"\n',
    "dataplane/ok.cpp": "#include <rte_mbuf.h>\n#include <chrono>\n"
                        "auto t = std::chrono::steady_clock::now();\n",
}


def write_tree(root, files):
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        write_tree(tmp, CLEAN)
        if check(tmp) != 0:
            print("self-test: the clean tree failed")
            return 1
        write_tree(tmp, PLANTED)
        if check(tmp) == 0:
            print("self-test: the planted violations passed")
            return 1
        flagged = {p.split(":")[0] for p in scan(tmp)}
    if flagged != set(PLANTED):
        print(f"self-test: expected {sorted(PLANTED)}, flagged {sorted(flagged)}")
        return 1
    print(f"self-test: all {len(PLANTED)} planted violations found, the clean files passed")
    return 0


if __name__ == "__main__":
    lint_main.run(__doc__, check, self_test)
