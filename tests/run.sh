#!/usr/bin/env bash
# Installs what is needed, builds, and runs every test suite:
#   1. unit + sim + fuzz smoke (release build)
#   2. the same under AddressSanitizer + UndefinedBehaviorSanitizer
#   3. integration: the real binaries against Linux peers in network namespaces (root)
# Exits non-zero if any suite fails. Options: --quick (skip the sanitizer build),
# --no-integration, --only-integration.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
QUICK=0
INTEGRATION=1
UNIT=1
for a in "$@"; do
  case "$a" in
    --quick) QUICK=1 ;;
    --no-integration) INTEGRATION=0 ;;
    --only-integration) UNIT=0; QUICK=1 ;;
    *) echo "tests/run.sh: unknown option $a" >&2; exit 2 ;;
  esac
done

status=0
step() { printf '\n=== %s ===\n' "$*"; }
fail() { echo "tests/run.sh: FAILED: $*"; status=1; }

step "dependencies"
bash deploy/install-deps.sh || { echo "cannot install dependencies"; exit 1; }

JOBS=$(nproc)

step "build (release)"
if [[ ! -f build/build.ninja ]]; then
  meson setup build >/dev/null || { echo "meson setup failed"; exit 1; }
fi
meson compile -C build -j "$JOBS" >/tmp/ws-build.log 2>&1 || { tail -80 /tmp/ws-build.log; echo "build failed"; exit 1; }
echo "ok"

if ((UNIT)); then
  step "unit, sim and fuzz-smoke suites (release)"
  meson test -C build --suite unit --suite sim --print-errorlogs --num-processes "$JOBS" ||
    fail "unit/sim suites (release)"
fi

if ((!QUICK)); then
  step "build (debug, ASan + UBSan)"
  if [[ ! -f build-asan/build.ninja ]]; then
    meson setup build-asan -Dbuildtype=debug -Db_sanitize=address,undefined \
      -Db_lundef=false >/dev/null || { echo "meson setup (asan) failed"; exit 1; }
  fi
  if meson compile -C build-asan -j "$JOBS" >/tmp/ws-build-asan.log 2>&1; then
    step "unit, sim and fuzz-smoke suites (ASan + UBSan)"
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
      meson test -C build-asan --suite unit --suite sim --print-errorlogs --num-processes "$JOBS" \
      --timeout-multiplier 4 || fail "unit/sim suites (sanitizers)"
  else
    tail -80 /tmp/ws-build-asan.log
    fail "sanitizer build"
  fi
fi

if ((INTEGRATION)); then
  step "integration suites (network namespaces, real binaries)"
  if [[ $(id -u) -ne 0 ]]; then
    echo "skipped: integration tests need root"
  else
    meson test -C build --suite integration --print-errorlogs --num-processes 1 ||
      fail "integration suites"
  fi
fi

echo
if ((status == 0)); then echo "tests/run.sh: all suites passed"; else echo "tests/run.sh: some suites failed"; fi
exit $status
