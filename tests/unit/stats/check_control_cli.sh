#!/usr/bin/env bash
# wirespeed-control end to end against a stand-in data plane (stats_fixture): its
# lifetimes (control first, data plane killed and restarted, clean stop),
# `promtool check metrics` on real scrapes, `status` and `status --json`, SIGTERM.
#   check_control_cli.sh WIRESPEED_CONTROL STATS_FIXTURE
set -euo pipefail
control="${1:?usage: check_control_cli.sh WIRESPEED_CONTROL STATS_FIXTURE}"
fixture="${2:?}"
for tool in curl python3 promtool; do
  command -v "$tool" >/dev/null ||
    { echo "FAIL: $tool is not installed: run deploy/install-deps.sh" >&2; exit 1; }
done
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

export WIRESPEED_RUNTIME_DIR="$tmp/run"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
prefix="ctltest$$"
segment="$WIRESPEED_RUNTIME_DIR/$prefix.stats"
cat >"$tmp/ws.yaml" <<YAML
version: 1
dataplane: { lcores: [1, 2], file_prefix: $prefix }
ports:
  - { name: p0, device: "net_null0", mtu: 1500, address: 10.77.0.1/24 }
services:
  - { name: echo-tcp, kind: echo, protocol: tcp, port: 7 }
control:
  metrics_listen: 127.0.0.1:$port
YAML

scrape() { curl -sf "http://127.0.0.1:$port/metrics"; }
# HTTP status of a health path, then its body.
health() { curl -s -o "$tmp/health.body" -w '%{http_code}' "http://127.0.0.1:$port/$1"; }
expect_health() {
  local got
  got=$(health "$1")
  [[ $got == "$2" ]] || fail "/$1: HTTP $got, expected $2 ($(cat "$tmp/health.body"))"
  grep -q "$3" "$tmp/health.body" || fail "/$1 body: $(cat "$tmp/health.body"), expected $3"
}
# wait_for PATTERN: poll the exporter until a scrape matches (the fixture publishes 100 Hz).
wait_for() {
  for _ in $(seq 1 50); do
    if scrape 2>/dev/null | grep -q "$1"; then return 0; fi
    sleep 0.1
  done
  fail "no scrape matched '$1'; last: $(scrape | grep -v '^#' | head -5)"
}
check_metrics() {
  problems=$(scrape | promtool check metrics 2>&1) || fail "promtool check metrics: $problems"
  [[ -z "$problems" ]] || fail "promtool check metrics: $problems"
}

"$control" --help | grep -q "serve" || fail "--help"
"$control" --version | grep -q "DPDK" || fail "--version"
if "$control" -c "$tmp/ws.yaml" frobnicate 2>/dev/null; then fail "bad command accepted"; fi

# No data plane: status fails clearly.
if out=$("$control" -c "$tmp/ws.yaml" status 2>&1); then fail "status succeeded with no data plane"; fi
grep -q "not running" <<<"$out" || fail "status message: $out"
echo "status without a data plane: $out"

# Control first.
"$control" -c "$tmp/ws.yaml" serve 2>"$tmp/serve.log" &
serve_pid=$!
pids+=("$serve_pid")
wait_for '^wirespeed_up 0'
scrape | grep -q '^wirespeed_build_info{version=' || fail "no build_info"
check_metrics
expect_health healthz 503 "data plane absent"
expect_health readyz 503 "data plane absent"
echo "control first: wirespeed_up 0, promtool clean, /healthz and /readyz 503"

# The data plane starts: picked up without restarting the control process.
"$fixture" "$segment" 10000 &
fx=$!
pids+=("$fx")
wait_for '^wirespeed_up 1'
wait_for 'wirespeed_port_receive_packets_total{port="p0"} [1-9]'
scrape | grep -q 'wirespeed_ping_rtt_seconds_bucket{service="rtt",le="+Inf"}' || fail "no histogram"
scrape | grep -q 'wirespeed_core_busy_seconds_total{core="2"}' || fail "no per-core series"
check_metrics
expect_health healthz 200 "data plane live"
expect_health readyz 200 "every link up"
echo "data plane up: wirespeed_up 1, promtool clean, /healthz and /readyz 200"

# status, text and JSON: rates from two snapshots (the fixture sends 10000 packets/s).
"$control" -c "$tmp/ws.yaml" status --interval 0.5 | tee "$tmp/status.txt"
grep -q '^p0 ' "$tmp/status.txt" || fail "status has no port p0"
"$control" -c "$tmp/ws.yaml" status --json --interval 0.5 >"$tmp/status.json"
python3 - "$tmp/status.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
p = s["ports"][0]
assert p["name"] == "p0" and p["mac"] == "02:00:00:00:00:01", p
assert 9000 < p["rx_packets_per_second"] < 11000, p["rx_packets_per_second"]
busy = {c["lcore"]: c["busy_ratio"] for c in s["cores"]}
assert abs(busy[1] - 0.25) < 0.01 and abs(busy[2] - 0.75) < 0.01, busy
assert s["tcp"]["connections"]["established"] == 2, s["tcp"]
assert s["drops"]["top"][0]["reason"] == "ipv4_bad_checksum", s["drops"]
print("status --json: OK", round(p["rx_packets_per_second"]), "pps")
PY

# The data plane crashes: up goes to 0 (its pid is gone), the exporter keeps serving.
before=$(scrape | sed -n 's/^wirespeed_port_receive_packets_total{port="p0"} //p')
kill -9 "$fx"
wait "$fx" 2>/dev/null || true
wait_for '^wirespeed_up 0'
[[ -e "$segment" ]] || fail "a crash should leave the segment behind"
expect_health healthz 503 "data plane dead"
echo "data plane killed: wirespeed_up 0 (counter was $before), /healthz 503"

# Restarted: a new lifetime is picked up, its counters start over.
"$fixture" "$segment" 10000 &
fx=$!
pids+=("$fx")
wait_for '^wirespeed_up 1'
after=$(scrape | sed -n 's/^wirespeed_port_receive_packets_total{port="p0"} //p')
python3 -c "import sys; sys.exit(0 if float('$after') < float('$before') else 1)" ||
  fail "expected a fresh counter after restart: before $before, after $after"
echo "data plane restarted: wirespeed_up 1, counter restarted at $after"

# The control process crashes and restarts while the data plane runs: the data plane does
# not notice, the new exporter picks the running instance up at once.
kill -9 "$serve_pid"
wait "$serve_pid" 2>/dev/null || true
kill -0 "$fx" || fail "the data plane died with the control process"
"$control" -c "$tmp/ws.yaml" serve 2>"$tmp/serve.log" &
serve_pid=$!
pids+=("$serve_pid")
wait_for '^wirespeed_up 1'
echo "control killed and restarted under a running data plane: wirespeed_up 1"

# A clean stop removes the segment.
kill -TERM "$fx"
wait "$fx" || fail "fixture exit status"
wait_for '^wirespeed_up 0'
[[ ! -e "$segment" ]] || fail "clean stop left the segment"

# The control process itself: SIGTERM is a clean exit 0.
kill -TERM "$serve_pid"
if ! wait "$serve_pid"; then fail "serve did not exit 0 on SIGTERM: $(cat "$tmp/serve.log")"; fi
echo "serve: SIGTERM -> exit 0"
echo "PASS"
