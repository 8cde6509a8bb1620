#!/usr/bin/env bash
# Builds the binaries with profile-guided optimisation (GCC's -fprofile-generate, then
# -fprofile-use, through meson's b_pgo): an instrumented build runs the training
# (tests/bench/pgo_train.sh), and the final build lays out and inlines the code by what it
# ran. The training is the stack's in-memory programs (no port, no root) and, as root, two
# data planes running the benchmarks' workloads against each other over net_memif. The
# optimized build then runs the same training again: each program checks every byte it
# carried, and the HTTP client every response.
# What it gains and costs: docs/performance.md, "Profile-guided builds".
#
#   deploy/build-pgo.sh [--no-memif] [BUILD_DIR]     (default: build-pgo in the source tree)
#
# Run it again after changing the source: a profile recorded from other source is refused
# by the compiler (-Werror=coverage-mismatch), and this script records a fresh one first.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MEMIF=auto
BUILD=$ROOT/build-pgo
while (($#)); do
  case "$1" in
    --no-memif) MEMIF=no; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    -*) echo "build-pgo: unknown option $1" >&2; exit 2 ;;
    *) BUILD=$1; shift ;;
  esac
done
TRAIN=()
if [[ $MEMIF == auto && $(id -u) -eq 0 ]]; then
  TRAIN=(--memif)
elif [[ $MEMIF == auto ]]; then
  echo "build-pgo: not root: training on the in-memory programs only (no memif runs)"
fi
JOBS=$(nproc)

mapfile -t PROGRAMS < <("$ROOT/tests/bench/pgo_train.sh" --programs)
# hiccup_meter: the machine's own gaps, which bench_pipeline_ab.py --hiccups reads from the
# build it measures.
TARGETS=(dataplane/wirespeed-dataplane control/wirespeed-control tools/wsperf/wsperf
  tests/bench/hiccup_meter "${PROGRAMS[@]}")

say() { printf '\n== build-pgo: %s\n' "$*"; }

say "instrumented build in $BUILD"
if [[ -f $BUILD/build.ninja ]]; then
  meson configure "$BUILD" -Db_pgo=generate
else
  meson setup "$BUILD" "$ROOT" -Dbuildtype=release -Db_pgo=generate
fi
# Counts left from an earlier training would be added to this one's.
find "$BUILD" -name '*.gcda' -delete
meson compile -C "$BUILD" -j "$JOBS" "${TARGETS[@]}"

say "training run"
"$ROOT/tests/bench/pgo_train.sh" "${TRAIN[@]}" "$BUILD"
profiles=$(find "$BUILD" -name '*.gcda' | wc -l)
((profiles > 0)) || { echo "build-pgo: the training wrote no profile" >&2; exit 1; }
echo "  $profiles object files profiled"

say "optimized build"
meson configure "$BUILD" -Db_pgo=use
meson compile -C "$BUILD" -j "$JOBS" "${TARGETS[@]}"

say "the optimized build carries the training workloads"
"$ROOT/tests/bench/pgo_train.sh" "${TRAIN[@]}" "$BUILD"
"$BUILD/dataplane/wirespeed-dataplane" --version
echo "build-pgo: done: $BUILD/dataplane/wirespeed-dataplane, $BUILD/control/wirespeed-control"
