#!/usr/bin/env bash
# A real Prometheus server (Debian package) scrapes wirespeed-control every second while a
# stand-in data plane counts at a known rate; a PromQL rate() through Prometheus' HTTP API
# must match that rate within 5 %. Also checks the scrape target is healthy and that
# wirespeed_up is 1 as Prometheus stored it.
#   check_prometheus_e2e.sh WIRESPEED_CONTROL STATS_FIXTURE
set -euo pipefail
control="${1:?usage: check_prometheus_e2e.sh WIRESPEED_CONTROL STATS_FIXTURE}"
fixture="${2:?}"
for tool in prometheus curl python3; do
  command -v "$tool" >/dev/null ||
    { echo "FAIL: $tool is not installed: run deploy/install-deps.sh" >&2; exit 1; }
done
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for _ in $(seq 1 50); do  # give each up to 5 s to exit cleanly
    alive=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [[ $alive -eq 0 ]] && break
    sleep 0.1
  done
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [[ -f "$tmp/prom.log" ]] && tail -5 "$tmp/prom.log" >&2; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

export WIRESPEED_RUNTIME_DIR="$tmp/run"
ctl_port=$(free_port)
prom_port=$(free_port)
pps=20000
prefix="promtest$$"
cat >"$tmp/ws.yaml" <<YAML
version: 1
dataplane: { lcores: [1, 2], file_prefix: $prefix }
ports:
  - { name: p0, device: "net_null0", address: 10.77.0.1/24 }
control:
  metrics_listen: 127.0.0.1:$ctl_port
YAML
cat >"$tmp/prometheus.yml" <<YAML
global: { scrape_interval: 1s, evaluation_interval: 1s }
scrape_configs:
  - job_name: wirespeed
    static_configs: [ { targets: ["127.0.0.1:$ctl_port"] } ]
YAML

"$fixture" "$WIRESPEED_RUNTIME_DIR/$prefix.stats" "$pps" &
pids+=($!)
"$control" -c "$tmp/ws.yaml" serve 2>"$tmp/serve.log" &
pids+=($!)
prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/data" \
  --web.listen-address="127.0.0.1:$prom_port" >"$tmp/prom.log" 2>&1 &
pids+=($!)

query() {
  curl -sf --get "http://127.0.0.1:$prom_port/api/v1/query" --data-urlencode "query=$1" |
    python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "none")'
}
# rate() divides by the whole 10 s range, so it is only meaningful once Prometheus holds
# more than 10 s of samples: wait for 13 of them (1 s apart), at most ~60 s.
value=none
for _ in $(seq 1 120); do
  sleep 0.5
  count=$(query 'count_over_time(wirespeed_up[60s])' 2>/dev/null || echo none)
  if [[ "$count" != none ]] && python3 -c "import sys; sys.exit(0 if float('$count') >= 13 else 1)"; then
    value=$(query 'rate(wirespeed_port_receive_packets_total{port="p0"}[10s])')
    break
  fi
done
[[ "$value" != none ]] || fail "Prometheus never returned a rate"
up=$(query 'min_over_time(wirespeed_up[10s])')
target=$(query 'up{job="wirespeed"}')
echo "prometheus: rate=$value pps (sent $pps), wirespeed_up min over 10s=$up, target up=$target"
[[ "$up" == 1 && "$target" == 1 ]] || fail "wirespeed_up=$up up=$target"
python3 -c "import sys; v=float('$value'); sys.exit(0 if abs(v-$pps) <= 0.05*$pps else 1)" ||
  fail "rate $value is not within 5% of $pps"
echo PASS
