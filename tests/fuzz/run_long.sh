#!/bin/bash
# Long libFuzzer runs of every fuzz target, one after another (the machine is shared):
# builds the clang binaries (tests/fuzz/meson.build), seeds each target's corpus with the
# targets' own seeds plus the committed corpus (tests/fuzz/corpus/<target>/, frames taken
# from captures of real traffic), runs each for a time or an execution count, and writes
# per target the executions, executions per second, coverage (libFuzzer's edge counter
# `cov` and feature counter `ft`), corpus size and crashes to OUT/results.json and
# OUT/results.md. A crash input is kept in OUT/crashes/. UBSan findings halt the run
# like ASan's (UBSAN_OPTIONS halt_on_error), so they are crashes too.
#
#   tests/fuzz/run_long.sh [--runs N] [--time SECONDS] [--out DIR] [--build DIR]
#                          [--targets "a b"] [--rss-limit MB] [--jobs J]
#                          [--no-asan] [--no-trace-cmp] [--fuzzer-flags "-flag=v ..."]
# Defaults: --runs 10000000, no time limit, --out BUILD/long, --build build-fuzz.
# --jobs J runs J processes per target that share its corpus (libFuzzer reloads it), each
#   for N/J executions (and --time); the executions are their sum.
# --no-asan builds without AddressSanitizer (UBSan and the coverage instrumentation stay)
#   in build-fuzz-ubsan, for throughput: out-of-bounds reads and use-after-free that do
#   not crash go unseen. Say so wherever the results are quoted.
# --no-trace-cmp builds without comparison tracing (-Dfuzz_trace_cmp=false; build dir
#   suffix -nocmp): libFuzzer no longer aims mutations at the values the code compares
#   with (its CMP and value-profile guidance), for throughput. Edge coverage stays.
# --fuzzer-flags passes libFuzzer flags to every process, e.g. "-entropic=0 -max_len=1026".
# Exit status 1 if any target crashed.
set -u
cd "$(dirname "$0")/../.." || exit 2
RUNS=10000000
TIME=0
BUILD=build-fuzz
OUT=""
TARGETS=""
RSS=2048
JOBS=1
SANITIZE=address,undefined
TRACE_CMP=true
FLAGS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS=$2; shift 2 ;;
    --time) TIME=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --targets) TARGETS=$2; shift 2 ;;
    --rss-limit) RSS=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --no-asan) SANITIZE=undefined; shift ;;
    --no-trace-cmp) TRACE_CMP=false; shift ;;
    --fuzzer-flags) FLAGS=$2; shift 2 ;;
    *) echo "run_long.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ "$BUILD" = build-fuzz ]; then
  [ "$SANITIZE" = undefined ] && BUILD=$BUILD-ubsan
  [ "$TRACE_CMP" = false ] && BUILD=$BUILD-nocmp
fi
OUT=${OUT:-$BUILD/long}
if [ -z "$TARGETS" ]; then
  TARGETS=$(sed -n "/^fuzz_targets = \[/,/^\]/p" tests/fuzz/meson.build | grep -o "'[a-z_0-9]*'" | tr -d "'")
fi
if [ ! -f "$BUILD/build.ninja" ]; then
  CC=clang CXX=clang++ meson setup "$BUILD" -Dfuzz_sanitize="$SANITIZE" \
    -Dfuzz_trace_cmp="$TRACE_CMP" >/dev/null || exit 2
fi
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
BINS="tests/fuzz/fuzz_smoke"
for t in $TARGETS; do BINS="$BINS tests/fuzz/fuzz_$t"; done
# shellcheck disable=SC2086
nice meson compile -C "$BUILD" -j2 $BINS >/dev/null || { echo "run_long.sh: build failed" >&2; exit 2; }
# What the binaries are built with (a build dir set up earlier may differ from the flags).
option() {
  meson introspect "$BUILD" --buildoptions | /usr/bin/python3 -c \
    "import json,sys; print(*[str(o['value']).lower() for o in json.load(sys.stdin) if o['name']=='$1'])"
}
SANITIZE=$(option fuzz_sanitize)
TRACE_CMP=$(option fuzz_trace_cmp)
mkdir -p "$OUT/crashes"
SEEDS="$OUT/seeds"
rm -rf "$SEEDS" && "$BUILD/tests/fuzz/fuzz_smoke" --write-seeds "$SEEDS" >/dev/null || exit 2
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
DATE=$(date -u +%Y-%m-%dT%H:%MZ)
RESULTS="$OUT/results.jsonl"
: > "$RESULTS"
status=0
for t in $TARGETS; do
  corpus="$OUT/corpus/$t"
  mkdir -p "$corpus"
  extra=()
  [ -d "tests/fuzz/corpus/$t" ] && extra+=("tests/fuzz/corpus/$t")
  [ -d "$SEEDS/$t" ] && extra+=("$SEEDS/$t")
  limit=()
  [ "$TIME" != 0 ] && limit+=("-max_total_time=$TIME")
  # shellcheck disable=SC2206
  flags=($FLAGS)
  start=$(date +%s.%N)
  # J processes: new inputs go to $corpus (each reloads it to see the others' finds), the
  # seed dirs are read only.
  pids=()
  for j in $(seq 1 "$JOBS"); do
    nice -n 10 "$BUILD/tests/fuzz/fuzz_$t" -runs=$((RUNS / JOBS)) "${limit[@]}" "${flags[@]}" \
      -print_final_stats=1 -rss_limit_mb="$RSS" -timeout=10 -artifact_prefix="$OUT/crashes/$t-" \
      "$corpus" "${extra[@]}" > "$OUT/$t.$j.log" 2>&1 &
    pids+=($!)
  done
  rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  end=$(date +%s.%N)
  execs=0 eps=0 cov=0 ft=0 corp=0
  for j in $(seq 1 "$JOBS"); do
    log="$OUT/$t.$j.log"
    e=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    r=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    last=$(grep -E '^#[0-9]+' "$log" | tail -1)
    c=$(echo "$last" | grep -o 'cov: [0-9]*' | grep -o '[0-9]*')
    f=$(echo "$last" | grep -o 'ft: [0-9]*' | grep -o '[0-9]*')
    n=$(echo "$last" | grep -o 'corp: [0-9]*' | grep -o '[0-9]*')
    execs=$((execs + ${e:-0})) eps=$((eps + ${r:-0}))
    [ "${c:-0}" -gt "$cov" ] && cov=$c
    [ "${f:-0}" -gt "$ft" ] && ft=$f
    [ "${n:-0}" -gt "$corp" ] && corp=$n
  done
  crashes=$(find "$OUT/crashes" -name "$t-*" -type f | wc -l)
  [ "$rc" != 0 ] || [ "$crashes" != 0 ] && status=1
  printf '{"target":"%s","executions":%s,"exec_per_sec":%s,"seconds":%.0f,"cov":%s,"ft":%s,"corpus":%s,"crashes":%s,"exit":%s,"jobs":%s}\n' \
    "$t" "$execs" "$eps" "$(echo "$end - $start" | bc)" "$cov" "$ft" "$corp" \
    "$crashes" "$rc" "$JOBS" >> "$RESULTS"
  tail -1 "$RESULTS"
done
/usr/bin/python3 - "$RESULTS" "$OUT" "$COMMIT" "$DATE" "$SANITIZE" "$TRACE_CMP" "$FLAGS" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
out, commit, date, san, trace_cmp, flags = sys.argv[2:8]
json.dump({"commit": commit, "date": date, "sanitize": san, "trace_cmp": trace_cmp == "true",
           "fuzzer_flags": flags, "targets": rows}, open(f"{out}/results.json", "w"), indent=1)
sans = " + ".join({"address": "ASan", "undefined": "UBSan"}.get(x, x) for x in san.split(","))
if trace_cmp != "true":
    sans += ", no comparison tracing"
jobs = rows[0]["jobs"] if rows else 1
with open(f"{out}/results.md", "w") as f:
    f.write(f"Long fuzz run, {date}, commit {commit} (clang, libFuzzer + {sans}, "
            f"{jobs} process(es) per target, flags: {flags or 'none'})\n\n")
    f.write("| target | executions | exec/s | seconds | cov (edges) | ft (features) | corpus | crashes |\n")
    f.write("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
    for r in rows:
        f.write(f"| {r['target']} | {r['executions']:,} | {r['exec_per_sec']:,} | {r['seconds']} | {r['cov']} | "
                f"{r['ft']} | {r['corpus']} | {r['crashes']} |\n")
print(open(f"{out}/results.md").read())
PY
exit $status
