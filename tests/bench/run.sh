#!/bin/bash
# Runs the wirespeed benchmark programs (see docs/benchmarks.md) and records their tables.
#   tests/bench/run.sh [--quick] [--reps N] [--duration S] [--ws-duration S] [--no-doc] [workload...]
#   workloads: udp tcp-bulk tcp-rtt sweep scrape micro (default: all)
# Needs root (network namespaces, DPDK). Results: tests/bench/results/<time>-<workload>.{md,json};
# each table also replaces its section of docs/benchmarks.md. The whole run is capped at
# 10 minutes (sweep, backoff: 25; --quick: 4); whatever happens, the namespaces, veths, memif socket and
# processes it created are removed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${WS_BUILD_DIR:-$root/build-bench}
export WS_BUILD_DIR=$build

# WS_BENCH_PROGRAM picks the benchmark program (run_services.sh sets bench_services.py).
program=${WS_BENCH_PROGRAM:-bench.py}
quick=0
for a in "$@"; do [[ $a == --quick ]] && quick=1; done
limit=600
[[ $quick == 1 ]] && limit=240
# The stability workload runs for --minutes (default 10) plus its overload phases.
for a in "$@"; do [[ $a == stability ]] && limit=2400; done
# The sweep (paired runs at two MTUs, three variants) and backoff with --reps 3-5 take 10-20 min.
for a in "$@"; do [[ ($a == sweep || $a == backoff) && $limit -lt 1500 ]] && limit=1500; done

if [[ $(id -u) != 0 ]]; then
  echo "run.sh: needs root (network namespaces, DPDK): run it as root" >&2
  exit 1
fi
for t in sockperf ethtool taskset wrk nginx; do
  command -v $t >/dev/null || { echo "run.sh: $t is missing (deploy/install-deps.sh)" >&2; exit 1; }
done

# The benchmarks measure the profile-guided build (deploy/build-pgo.sh; WS_BUILD_DIR picks
# another build, which is then used as it is).
if [[ ! -x $build/dataplane/wirespeed-dataplane || ! -x $build/tools/wsperf/wsperf ]]; then
  bash "$root/deploy/build-pgo.sh" "$build" >"$root/build-pgo.log" 2>&1 ||
    { tail -30 "$root/build-pgo.log"; echo "run.sh: deploy/build-pgo.sh failed" >&2; exit 1; }
fi

start=$(date +%s)
timeout --signal=TERM --kill-after=20 $limit /usr/bin/python3 "$here/$program" "$@"
rc=$?
if [[ $rc == 124 ]]; then
  echo "run.sh: stopped at the ${limit}s limit; tables of finished workloads were kept" >&2
fi
echo "run.sh: $(( $(date +%s) - start )) s, exit $rc"
exit $rc
