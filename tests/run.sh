#!/usr/bin/env bash
# Installs what is needed, builds, and runs every test suite:
#   1. unit + sim + fuzz smoke (release build)
#   2. the same under AddressSanitizer + UndefinedBehaviorSanitizer
#   3. integration: the real binaries against Linux peers in network namespaces (root),
#      then the README's quickstart (deploy/quickstart.sh --no-wait)
#   4. with --pgo: the profile-guided build (deploy/build-pgo.sh), checked by its training
# Exits non-zero if any suite fails. A test that meson reports as SKIP (exit 77) counts as
# a failure unless --allow-skip is given; the skipped tests are listed either way.
# With integration, the sanitizer build and clang-tidy (suite tidy) run beside it at idle
# priority; the sanitizer suites follow it.
# Options: --quick (skip the sanitizer build), --no-integration, --only-integration,
# --allow-skip, --pgo (add the profile-guided build: about 10 CPU-minutes).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
QUICK=0
INTEGRATION=1
UNIT=1
ALLOW_SKIP=0
PGO=0
for a in "$@"; do
  case "$a" in
    --quick) QUICK=1 ;;
    --no-integration) INTEGRATION=0 ;;
    --only-integration) UNIT=0; QUICK=1 ;;
    --allow-skip) ALLOW_SKIP=1 ;;
    --pgo) PGO=1 ;;
    *) echo "tests/run.sh: unknown option $a" >&2; exit 2 ;;
  esac
done

status=0
# Each stage's header gives the time since the start (CI must stay under 30 minutes).
step() { printf '\n=== %s (at %dm%02ds) ===\n' "$*" $((SECONDS / 60)) $((SECONDS % 60)); }
fail() { echo "tests/run.sh: FAILED: $*"; status=1; }

# skipped BUILD_DIR [LOGBASE]: the tests of the last `meson test` in BUILD_DIR (with that
# --logbase, default testlog) that meson reported as SKIP, one per line (from its JSON log).
skipped() {
  /usr/bin/python3 - "$1/meson-logs/${2:-testlog}.json" <<'PY'
import json, sys
try:
    lines = open(sys.argv[1]).read().splitlines()
except OSError as e:
    sys.exit(f"tests/run.sh: no meson test log: {e}")
for line in lines:
    if line.strip():
        t = json.loads(line)
        if t.get("result") == "SKIP":
            print(t["name"])
PY
}

# suites WHAT BUILD_DIR MESON_TEST_ARGS...: runs meson test, then fails on SKIPs as well.
# LOGBASE (environment, default testlog) names its logs.
suites() {
  local what=$1 dir=$2 logbase=${LOGBASE:-testlog}
  shift 2
  meson test -C "$dir" --print-errorlogs --logbase "$logbase" "$@" || fail "$what"
  local skips
  skips=$(skipped "$dir" "$logbase") || { fail "$what: cannot read the test log"; return; }
  if [[ -n "$skips" ]]; then
    echo "tests/run.sh: skipped in $what: $(echo $skips)"
    if ((ALLOW_SKIP)); then
      echo "tests/run.sh: --allow-skip: not counted as failures"
    else
      fail "$what: a skipped test is a failure (see its log for the cause; --allow-skip to accept)"
    fi
  fi
}

# suite_targets BUILD_DIR SUITE...: the targets the tests of those suites run (as
# `meson compile` names, PATH/NAME), read from meson's introspection files. The sanitizer
# build compiles only these: the benchmarks, the data plane binary and the relay are used by
# no sanitizer suite, and the release build compiles them all (with -Werror) anyway.
suite_targets() {
  /usr/bin/python3 - "$@" <<'PY'
import json, os, sys
info, suites = os.path.join(sys.argv[1], "meson-info"), set(sys.argv[2:])
tests = json.load(open(os.path.join(info, "intro-tests.json")))
targets = {t["id"]: t for t in json.load(open(os.path.join(info, "intro-targets.json")))}
names = set()
for t in tests:
    if suites & {s.split(":")[-1] for s in t["suite"]}:
        for dep in t["depends"]:
            d = targets[dep]
            where = os.path.relpath(os.path.dirname(d["defined_in"]))
            names.add(d["name"] if where == "." else where + "/" + d["name"])
if not names:
    sys.exit("tests/run.sh: no targets for suites " + " ".join(sorted(suites)))
print("\n".join(sorted(names)))
PY
}

step "dependencies"
bash deploy/install-deps.sh || { echo "cannot install dependencies"; exit 1; }

JOBS=$(nproc)

step "build (release)"
if [[ -f build/build.ninja ]]; then
  echo "build/ is configured already (its meson setup log: build/meson-logs/meson-log.txt)"
else
  meson setup build || { echo "meson setup failed"; exit 1; }
fi
meson compile -C build -j "$JOBS" >build/meson-logs/compile.log 2>&1 ||
  { tail -80 build/meson-logs/compile.log; echo "build failed"; exit 1; }
echo "ok (log: build/meson-logs/compile.log)"

# Background work during the integration suites. Those leave about four fifths of the CPUs
# idle (they wait on Linux peers and timers), while clang-tidy (the `tidy` suite, also part
# of `unit`, about 5 CPU-minutes) and the sanitizer build (about 15 CPU-minutes) need no
# root and no timing: with integration to follow, both run beside it as SCHED_IDLE (they get
# a CPU only when no test wants one; a waking data plane preempts them at once) and are
# waited for at the end. The sanitizer suites run in the foreground after integration: their
# timeouts assume a CPU of their own. Without integration everything runs in order.
BACKGROUND=0
if ((INTEGRATION)) && [[ $(id -u) -eq 0 ]]; then BACKGROUND=1; fi
BG_PID=
BG_LOG=build/meson-logs/background.log
ASAN_OK=build/meson-logs/sanitizer-build.ok

# sanitizer_build: configures build-asan once and compiles what the unit and sim suites run;
# on success touches $ASAN_OK.
sanitizer_build() {
  rm -f "$ASAN_OK"
  if [[ ! -f build-asan/build.ninja ]]; then
    # -g1 (line tables only): the sanitizers' reports keep file and line, and the build
    # spends about 9 % less CPU than with full debug information.
    meson setup build-asan -Dbuildtype=debug -Db_sanitize=address,undefined -Db_lundef=false \
      -Dcpp_args=-g1 ||
      { echo "meson setup (asan) failed"; fail "sanitizer build"; return; }
  fi
  local targets
  if targets=$(suite_targets build-asan unit sim) &&
    meson compile -C build-asan -j "$JOBS" $targets >build-asan/meson-logs/compile.log 2>&1; then
    echo "ok (log: build-asan/meson-logs/compile.log)"
    : >"$ASAN_OK"
  else
    tail -80 build-asan/meson-logs/compile.log
    fail "sanitizer build"
  fi
}

sanitizer_suites() {
  step "unit, sim and fuzz-smoke suites (ASan + UBSan)"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    suites "unit/sim suites (sanitizers)" build-asan --suite unit --suite sim \
    --num-processes "$JOBS" --timeout-multiplier 4
}

# background_work: the sanitizer build, then clang-tidy, in a subshell made SCHED_IDLE first
# so that every process it starts is too (its exit status says whether both passed).
background_work() (
  chrt --idle -p 0 "$BASHPID" >/dev/null ||
    echo "tests/run.sh: cannot make the background work SCHED_IDLE; it runs at normal priority"
  status=0
  if ((!QUICK)); then
    step "build (debug, ASan + UBSan), beside the integration suites"
    sanitizer_build
  fi
  if ((UNIT)); then
    step "clang-tidy (release), beside the integration suites"
    LOGBASE=tidylog suites "clang-tidy (release)" build --suite tidy --no-rebuild
  fi
  exit $status
)

if ((UNIT)); then
  step "unit, sim and fuzz-smoke suites (release)"
  if ((BACKGROUND)); then
    suites "unit/sim suites (release)" build --suite unit --suite sim --no-suite tidy \
      --num-processes "$JOBS"
  else
    suites "unit/sim suites (release)" build --suite unit --suite sim --num-processes "$JOBS"
  fi
fi

if ((!QUICK && !BACKGROUND)); then
  step "build (debug, ASan + UBSan)"
  sanitizer_build
  [[ -f "$ASAN_OK" ]] && sanitizer_suites
fi

if ((INTEGRATION)); then
  step "integration suites (network namespaces, real binaries)"
  if [[ $(id -u) -ne 0 ]]; then
    echo "integration suites need root; run as root or pass --no-integration"
    fail "integration suites"
  else
    if ((BACKGROUND && (UNIT || !QUICK))); then
      background_work >"$BG_LOG" 2>&1 &
      BG_PID=$!
    fi
    suites "integration suites" build --suite integration --num-processes 1
    # The README's first command, as a user runs it: its dependency check and build find
    # nothing to do here, then its demo checks every answer of the Linux peer's.
    step "the quickstart (deploy/quickstart.sh --no-wait)"
    QS_LOG=build/meson-logs/quickstart.log
    if bash deploy/quickstart.sh --no-wait >"$QS_LOG" 2>&1; then
      grep -E '^(sent|got):|counted [0-9]+ of|cleaned up' "$QS_LOG"
    else
      tail -40 "$QS_LOG"
      fail "the quickstart (log: $QS_LOG)"
    fi
  fi
fi

# promote PID: PID and every process below it back to the normal policy (SCHED_OTHER):
# what is left of the background work once the integration suites are done should not wait
# behind other work of the machine.
promote() {
  /usr/bin/python3 - "$1" <<'PY'
import os, sys
root, kids = int(sys.argv[1]), {}
for p in filter(str.isdigit, os.listdir("/proc")):
    try:
        with open(f"/proc/{p}/stat") as f:
            kids.setdefault(int(f.read().rsplit(")", 1)[1].split()[1]), []).append(int(p))
    except (OSError, IndexError, ValueError):
        pass
todo = [root]
while todo:
    pid = todo.pop()
    todo += kids.get(pid, [])
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            os.sched_setscheduler(int(tid), os.SCHED_OTHER, os.sched_param(0))
    except OSError:
        pass  # gone meanwhile
PY
}

if [[ -n "$BG_PID" ]]; then
  promote "$BG_PID"
  wait "$BG_PID" || fail "the work beside the integration suites"
  cat "$BG_LOG"
  if ((!QUICK)) && [[ -f "$ASAN_OK" ]]; then sanitizer_suites; fi
fi

# With --pgo, the profile-guided build (deploy/build-pgo.sh, the build docs/performance.md
# measures): the instrumented build, its training (as root, two data planes over memif as
# well), the optimized build, and the same training again on that build, each in-memory
# program checking every byte it carried and the HTTP client every response. Last, so that
# its memif runs share the CPUs with no suite. Not by default: its two builds of the
# product and two trainings are about 10 CPU-minutes, which the 30 minutes of CI on two
# CPUs do not leave; tests/bench/run.sh builds and checks it before measuring.
if ((PGO)); then
  step "profile-guided build (deploy/build-pgo.sh build-pgo)"
  PGO_LOG=build/meson-logs/build-pgo.log
  if bash deploy/build-pgo.sh build-pgo >"$PGO_LOG" 2>&1; then
    # meson's setup summary of build-pgo, then the training and the check
    sed -n '/^wirespeed [0-9]/,/^Found ninja/p' "$PGO_LOG"
    grep -E '^== build-pgo: (training|the optimized)|^  ok: |profiled$|^build-pgo: done' "$PGO_LOG"
  else
    tail -40 "$PGO_LOG"
    fail "profile-guided build (log: $PGO_LOG)"
  fi
fi

echo
echo "tests/run.sh: $((SECONDS / 60))m$((SECONDS % 60))s in all"
if ((status == 0)); then echo "tests/run.sh: all suites passed"; else echo "tests/run.sh: some suites failed"; fi
exit $status
