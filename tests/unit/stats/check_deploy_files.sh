#!/usr/bin/env bash
# Validate the operations files in deploy/ with the tools that consume them:
# promtool (config, rules, rule unit tests), a JSON parser for the Grafana dashboard,
# bash for hugepages.sh (syntax and --dry-run), and the systemd units' essential keys.
#   check_deploy_files.sh SOURCE_ROOT
set -euo pipefail
root="${1:?usage: check_deploy_files.sh SOURCE_ROOT}"
deploy="$root/deploy"
fail() { echo "FAIL: $*" >&2; exit 1; }

command -v promtool >/dev/null ||
  fail "promtool is not installed (Debian package prometheus): run deploy/install-deps.sh"
promtool check config "$deploy/prometheus/prometheus.yml"
promtool check rules "$deploy/prometheus/alerts.yml"
(cd "$deploy/prometheus" && promtool test rules alerts_test.yml)

python3 - "$deploy/grafana/wirespeed.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
titles = [p["title"] for p in d["panels"]]
exprs = " ".join(t["expr"] for p in d["panels"] for t in p.get("targets", []))
for need in ("throughput", "drops", "round-trip", "busy"):
    assert any(need in t.lower() for t in titles), f"no panel about {need}: {titles}"
for metric in ("wirespeed_port_receive_bytes_total", "wirespeed_drops_total",
               "wirespeed_ping_rtt_seconds_bucket", "wirespeed_core_busy_seconds_total"):
    assert metric in exprs, f"dashboard does not query {metric}"
ids = [p["id"] for p in d["panels"]]
assert len(ids) == len(set(ids)), "duplicate panel ids"
print(f"grafana: {len(titles)} panels OK")
PY

bash -n "$deploy/hugepages.sh"
out=$(bash "$deploy/hugepages.sh" --dry-run --pages 64 --bind 0000:03:00.0)
grep -q "would write: 64 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages" <<<"$out" ||
  grep -q "already reserved" <<<"$out" || fail "hugepages.sh --dry-run: $out"
grep -q -- "--bind=vfio-pci 0000:03:00.0" <<<"$out" || fail "hugepages.sh --dry-run: no bind: $out"
if bash "$deploy/hugepages.sh" --dry-run --pages nope 2>/dev/null; then
  fail "hugepages.sh accepted --pages nope"
fi
echo "hugepages.sh: OK"

for unit in wirespeed-dataplane wirespeed-control; do
  f="$deploy/systemd/$unit.service"
  grep -q '^Restart=on-failure' "$f" || fail "$f: no Restart=on-failure"
  grep -q "^ExecStart=.*$unit" "$f" || fail "$f: no ExecStart for $unit"
done
grep -q '^RuntimeDirectory=wirespeed' "$deploy/systemd/wirespeed-dataplane.service" ||
  fail "data plane unit has no RuntimeDirectory"
grep -q 'hugepages.sh' "$deploy/systemd/wirespeed-dataplane.service" ||
  fail "data plane unit does not prepare hugepages"
if grep -Eq '^(Requires|BindsTo|PartOf)=.*wirespeed-dataplane' "$deploy/systemd/wirespeed-control.service"; then
  fail "the control unit must not depend on the data plane unit"
fi
echo "systemd units: OK"
