#!/bin/bash
# Runs the service benchmarks of issue 7 (tests/bench/bench_services.py): wrk against
# wirespeed's http service and nginx-light, and connection rate stack to stack.
#   tests/bench/run_services.sh [--quick] [--reps N] [--duration S] [--no-doc] [http] [connrate]
#   tests/bench/run_services.sh [--minutes M] stability      (by name only; ~M+1 minutes)
# Needs root. Capped at 10 minutes (--quick: 4); everything it creates is removed on exit.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${WS_BUILD_DIR:-$root/build-bench}
export WS_BUILD_DIR=$build
limit=600
for a in "$@"; do [[ $a == --quick ]] && limit=240; done
# stability runs for --minutes (default 10) plus the overload phases.
for a in "$@"; do [[ $a == stability ]] && limit=2400; done
if [[ $(id -u) != 0 ]]; then
  echo "run_services.sh: needs root (network namespaces, DPDK)" >&2
  exit 77
fi
for t in wrk nginx taskset ethtool; do
  command -v $t >/dev/null || { echo "run_services.sh: $t is missing (deploy/install-deps.sh)" >&2; exit 1; }
done
if [[ ! -x $build/dataplane/wirespeed-dataplane || ! -x $build/tools/wsperf/wsperf ]]; then
  [[ -d $build ]] || meson setup "$build" "$root" >/dev/null || exit 1
  meson compile -C "$build" -j 2 dataplane/wirespeed-dataplane control/wirespeed-control \
    tools/wsperf/wsperf || exit 1
fi
start=$(date +%s)
timeout --signal=TERM --kill-after=20 $limit /usr/bin/python3 "$here/bench_services.py" "$@"
rc=$?
[[ $rc == 124 ]] && echo "run_services.sh: stopped at the ${limit}s limit" >&2
echo "run_services.sh: $(( $(date +%s) - start )) s, exit $rc"
exit $rc
