#!/usr/bin/python3
"""clang-tidy over the product sources (stack/, dataplane/, control/, tools/): no warning.

The checks are the repository's .clang-tidy (bugprone, performance and a few readability and
modernize checks: about 5 CPU-minutes for the 134 product files). The compile commands
come from the meson build directory. A warning that is deliberate carries a NOLINT comment
that names the check and says why.

  check_tidy.py BUILD_DIR [--jobs N]   (meson test clang-tidy)
  check_tidy.py --self-test    shows that a planted warning fails the check
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PRODUCT_DIRS = ("stack", "dataplane", "control", "tools")


def product_files(build_dir, root):
    with open(os.path.join(build_dir, "compile_commands.json")) as f:
        entries = json.load(f)
    files = set()
    for e in entries:
        path = os.path.normpath(os.path.join(e["directory"], e["file"]))
        rel = os.path.relpath(path, root)
        if rel.split(os.sep)[0] in PRODUCT_DIRS:
            files.add(path)
    return sorted(files)


# GCC-only options of meson.build (and of its b_pgo, whose profiles clang cannot read) that
# clang rejects.
GCC_ONLY = ("-mmemset-strategy=", "-mmemcpy-strategy=", "-fprofile-use", "-fprofile-generate",
            "-fprofile-correction", "-Wno-missing-profile")


def clang_compile_db(build_dir, tmp):
    """A copy of the build's compile commands without GCC_ONLY options, in `tmp`."""
    with open(os.path.join(build_dir, "compile_commands.json")) as f:
        entries = json.load(f)
    for e in entries:
        if "command" in e:
            e["command"] = " ".join(w for w in e["command"].split(" ")
                                    if not w.startswith(GCC_ONLY))
        if "arguments" in e:
            e["arguments"] = [w for w in e["arguments"] if not w.startswith(GCC_ONLY)]
    with open(os.path.join(tmp, "compile_commands.json"), "w") as f:
        json.dump(entries, f)
    return tmp


def tidy(db_dir, chunk):
    """Warnings (file:line:col: warning: ... [check]) of one group of files."""
    cmd = ["clang-tidy", "-p", db_dir, "--quiet", "--extra-arg=-Wno-unknown-warning-option",
           *chunk]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900).stdout
    return [line for line in out.splitlines() if ": warning: " in line or ": error: " in line]


def run(build_dir, root, jobs):
    if shutil.which("clang-tidy") is None:
        print("clang-tidy is not installed: run deploy/install-deps.sh")
        return 1
    files = product_files(build_dir, root)
    if not files:
        print(f"no product sources in {build_dir}/compile_commands.json")
        return 1
    chunks = [files[i::jobs * 4] for i in range(jobs * 4)]
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(max_workers=jobs) as pool:
        db = clang_compile_db(build_dir, tmp)
        results = list(pool.map(lambda c: tidy(db, c), [c for c in chunks if c]))
    warnings = sorted({w for ws in results for w in ws})
    for w in warnings:
        print(w)
    if warnings:
        print(f"clang-tidy: {len(warnings)} warning(s) in {len(files)} files")
        return 1
    print(f"clang-tidy: {len(files)} files clean")
    return 0


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(os.path.join(ROOT, ".clang-tidy"), tmp)
        os.makedirs(os.path.join(tmp, "stack"))
        src = os.path.join(tmp, "stack", "planted.cpp")
        with open(src, "w") as f:
            f.write("#include <string>\n"
                    "std::string f(std::string s) { return s + \"a\" + s; }\n"
                    "int* g() { return 0; }\n")
        with open(os.path.join(tmp, "compile_commands.json"), "w") as f:
            json.dump([{"directory": tmp, "file": "stack/planted.cpp",
                        # a GCC-only option, as meson.build adds: clang must not see it
                        "command": f"c++ -std=c++20 {GCC_ONLY[0]}vector_loop:256:noalign,"
                                   "libcall:-1:noalign -c stack/planted.cpp"}], f)
        if run(tmp, tmp, 1) == 0:
            print("self-test: planted warnings passed")
            return 1
        with open(src, "w") as f:
            f.write("int* g() { return nullptr; }\n")
        if run(tmp, tmp, 1) != 0:
            print("self-test: a clean file failed")
            return 1
    print("self-test: planted warnings fail, a clean file passes")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build_dir", nargs="?")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    if not args.build_dir:
        ap.error("BUILD_DIR is required")
    return run(os.path.abspath(args.build_dir), ROOT, max(1, args.jobs))


if __name__ == "__main__":
    sys.exit(main())
