#!/bin/bash
# The training run of a profile-guided build (deploy/build-pgo.sh).
#   tests/bench/pgo_train.sh BUILD_DIR           the in-memory programs (a few seconds)
#   tests/bench/pgo_train.sh --memif BUILD_DIR   also the data plane itself over memif (root)
#   tests/bench/pgo_train.sh --programs          the build targets the training runs
# The in-memory programs drive the real stack, services and transmit pipeline back to back
# on a virtual clock, with no port, no root and no DPDK. Each checks what it carried and
# exits non-zero on a lost or wrong byte, so the same run checks the optimized build
# too. With --memif, two data planes of BUILD_DIR then run the benchmarks' own workloads
# against each other over net_memif for a few seconds each (64-byte round trips, connection
# churn, bulk, HTTP keep-alive and one request per connection): the counts of the polling
# loop, the mbuf glue and the real mix of the stack's paths, which no in-memory program has.
# What the training covers decides what the compiler treats as hot; code none of it runs is
# laid out as cold, not left out.
set -euo pipefail

# The counts decide what is hot: a part that ran far less than the rest is laid out as
# cold. So the workloads of the goals get about equal shares (each a few tenths of a
# second), and the others enough to be counted but not to crowd them out.
RUNS=(
  "http_client_cost 200000 64 0"   # HTTP keep-alive: own client against the http service
  "http_client_cost 100000 256 1"  # HTTP, one request per connection
  "echo_cost 200000 64"            # 64-byte TCP round trips, 64 connections
  "tcp_churn_bench --connections 100000 --interval 100000"  # connect, echo, close
  "rx_path_bench 1500 one 16"      # bulk TCP receive, MTU 1500
  "pipeline_cost bulk 65536 200 verify"  # the transmit pipeline: large messages
  "http_cost 2000"                 # the http service against a scripted client
  "echo_cost 2000 1"               # round trips on one connection
  "rx_path_bench 1500 one 1 v6"    # bulk receive over IPv6
  "rx_path_bench 9000 chained 1"   # MTU 9000 frames in chained buffers
  "pipeline_cost message 64 5000 verify"  # small messages through the pipeline
  "udp_tx_cost 5000 64"            # UDP datagrams in bursts
  "recovery_matrix --quick --seeds 1"  # loss, reordering, recovery
  "idle_conns_bench 10000"         # many idle connections, their timers
)

if [[ ${1:-} == --programs ]]; then
  for r in "${RUNS[@]}"; do echo "tests/bench/${r%% *}"; done | sort -u
  exit 0
fi
MEMIF=0
if [[ ${1:-} == --memif ]]; then MEMIF=1; shift; fi
[[ $# -eq 1 && -d $1 ]] ||
  { echo "usage: tests/bench/pgo_train.sh [--memif] BUILD_DIR | --programs" >&2; exit 2; }
BUILD=$(cd "$1" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# checked LABEL COMMAND...: runs it with its output kept aside; on failure shows the end of
# that output and stops the training.
checked() {
  local label=$1
  shift
  if ! "$@" >"$TMP/run.log" 2>&1; then
    tail -5 "$TMP/run.log" >&2
    echo "pgo_train: '$label' failed" >&2
    exit 1
  fi
  echo "  ok: $label"
}

for r in "${RUNS[@]}"; do
  read -ra argv <<<"$r"
  prog="$BUILD/tests/bench/${argv[0]}"
  [[ -x $prog ]] || { echo "pgo_train: $prog is not built" >&2; exit 1; }
  checked "$r" "$prog" "${argv[@]:1}"
done
((MEMIF)) || exit 0

[[ $(id -u) -eq 0 ]] || { echo "pgo_train: --memif needs root (DPDK, memif sockets)" >&2; exit 1; }
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Like the benchmarks, the memif runs want the CPUs to themselves and fixed memif and file
# names: run beside no integration test (take /tmp/ws-integration.lock around the caller).
MEMIF_RUNS=(
  "bench_pipeline_ab.py --ping --size 64 --connections 64"
  "bench_pipeline_ab.py --reconnect --size 64 --connections 64"
  "bench_pipeline_ab.py --size 65536"
)
for r in "${MEMIF_RUNS[@]}"; do
  read -ra argv <<<"$r"
  checked "memif $r" /usr/bin/python3 "$HERE/${argv[0]}" --variant "train=$BUILD" \
    "${argv[@]:1}" --reps 1 --duration 3
done
checked "memif HTTP keep-alive and one request per connection" \
  /usr/bin/python3 "$HERE/bench_http_memif_ab.py" --build "train=$BUILD" --reps 1 --duration 3 \
  --out "$TMP/http.json"
