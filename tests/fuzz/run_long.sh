#!/bin/bash
# Long libFuzzer runs of every fuzz target, one after another (the machine is shared):
# builds the clang binaries (tests/fuzz/meson.build), seeds each target's corpus with the
# targets' own seeds plus the committed corpus (tests/fuzz/corpus/<target>/, frames taken
# from captures of real traffic), runs each for a time or an execution count, and writes
# per target the executions, executions per second, coverage (libFuzzer's edge counter
# `cov` and feature counter `ft`), corpus size and crashes to OUT/results.json and
# OUT/results.md. A crash input is kept in OUT/crashes/.
#
#   tests/fuzz/run_long.sh [--runs N] [--time SECONDS] [--out DIR] [--build DIR]
#                          [--targets "a b"] [--rss-limit MB]
# Defaults: --runs 10000000, no time limit, --out build-fuzz/long, --build build-fuzz.
# Exit status 1 if any target crashed.
set -u
cd "$(dirname "$0")/../.."
RUNS=10000000
TIME=0
BUILD=build-fuzz
OUT=""
TARGETS=""
RSS=2048
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS=$2; shift 2 ;;
    --time) TIME=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --targets) TARGETS=$2; shift 2 ;;
    --rss-limit) RSS=$2; shift 2 ;;
    *) echo "run_long.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
OUT=${OUT:-$BUILD/long}
if [ -z "$TARGETS" ]; then
  TARGETS=$(sed -n "/^fuzz_targets = \[/,/^\]/p" tests/fuzz/meson.build | grep -o "'[a-z_0-9]*'" | tr -d "'")
fi
if [ ! -f "$BUILD/build.ninja" ]; then
  CC=clang CXX=clang++ meson setup "$BUILD" >/dev/null || exit 2
fi
BINS="tests/fuzz/fuzz_smoke"
for t in $TARGETS; do BINS="$BINS tests/fuzz/fuzz_$t"; done
# shellcheck disable=SC2086
nice meson compile -C "$BUILD" -j2 $BINS >/dev/null || { echo "run_long.sh: build failed" >&2; exit 2; }
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
  log="$OUT/$t.log"
  limit=()
  [ "$TIME" != 0 ] && limit+=("-max_total_time=$TIME")
  start=$(date +%s.%N)
  # One process (no -jobs/-workers): new inputs go to $corpus, the seed dirs are read only.
  nice -n 10 "$BUILD/tests/fuzz/fuzz_$t" -runs="$RUNS" "${limit[@]}" -print_final_stats=1 \
    -rss_limit_mb="$RSS" -timeout=10 -artifact_prefix="$OUT/crashes/$t-" \
    "$corpus" "${extra[@]}" > "$log" 2>&1
  rc=$?
  end=$(date +%s.%N)
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  eps=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(echo "$last" | grep -o 'cov: [0-9]*' | grep -o '[0-9]*')
  ft=$(echo "$last" | grep -o 'ft: [0-9]*' | grep -o '[0-9]*')
  corp=$(echo "$last" | grep -o 'corp: [0-9]*' | grep -o '[0-9]*')
  crashes=$(find "$OUT/crashes" -name "$t-*" -type f | wc -l)
  [ "$rc" != 0 ] || [ "$crashes" != 0 ] && status=1
  printf '{"target":"%s","executions":%s,"exec_per_sec":%s,"seconds":%.0f,"cov":%s,"ft":%s,"corpus":%s,"crashes":%s,"exit":%s}\n' \
    "$t" "${execs:-0}" "${eps:-0}" "$(echo "$end - $start" | bc)" "${cov:-0}" "${ft:-0}" "${corp:-0}" \
    "$crashes" "$rc" >> "$RESULTS"
  tail -1 "$RESULTS"
done
/usr/bin/python3 - "$RESULTS" "$OUT" "$COMMIT" "$DATE" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
out, commit, date = sys.argv[2], sys.argv[3], sys.argv[4]
json.dump({"commit": commit, "date": date, "targets": rows}, open(f"{out}/results.json", "w"), indent=1)
with open(f"{out}/results.md", "w") as f:
    f.write(f"Long fuzz run, {date}, commit {commit} (clang, libFuzzer + ASan + UBSan, one process per target)\n\n")
    f.write("| target | executions | exec/s | seconds | cov (edges) | ft (features) | corpus | crashes |\n")
    f.write("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
    for r in rows:
        f.write(f"| {r['target']} | {r['executions']:,} | {r['exec_per_sec']:,} | {r['seconds']} | {r['cov']} | "
                f"{r['ft']} | {r['corpus']} | {r['crashes']} |\n")
print(open(f"{out}/results.md").read())
PY
exit $status
