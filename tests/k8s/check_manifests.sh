#!/usr/bin/env bash
# Unit suite: the Kubernetes manifests in deploy/kubernetes, offline.
#   check_manifests.sh SOURCE_ROOT WIRESPEED_DATAPLANE
# 1. The base and every overlay render and validate against the API schemas and the rules a
#    DPDK pod must follow (tests/k8s/validate.mjs).
# 2. The config each ConfigMap carries passes `wirespeed-dataplane --check` with the variables
#    the device plugin and the DaemonSet set, and fails clearly without them.
# 3. The validator is shown to fail on broken copies of the manifests.
set -uo pipefail
root=$1
dataplane=$2
here=$root/tests/k8s
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }

command -v node >/dev/null || { echo "node is not installed: run deploy/install-deps.sh"; exit 1; }
[[ -d $here/node_modules/kubernetes-models ]] ||
  { echo "tests/k8s/node_modules is missing: run deploy/install-deps.sh (it runs npm install there)"; exit 1; }

overlays=("$root/deploy/kubernetes/base")
for d in "$root"/deploy/kubernetes/overlays/*/; do overlays+=("${d%/}"); done
for k in "${overlays[@]}"; do
  name=$(basename "$k")
  node "$here/validate.mjs" "$k" "$tmp/$name" || fail "$k does not validate"
  for cfg in "$tmp/$name"/*.yaml; do
    # The device plugin's variable: the one ${PCIDEVICE_...} the config names.
    var=$(grep -o 'PCIDEVICE_[A-Z0-9_]*' "$cfg" | head -1)
    [[ -n $var ]] || fail "$cfg does not take its PCI address from a PCIDEVICE_ variable"
    if out=$(env "$var=0000:3b:02.1" WIRESPEED_ADDRESS=192.0.2.11/24 "$dataplane" -c "$cfg" --check 2>&1); then
      echo "$name: $(basename "$cfg") passes --check with $var set"
    else
      fail "$name: $(basename "$cfg") --check: $out"
    fi
    out=$(env -u "$var" WIRESPEED_ADDRESS=192.0.2.11/24 "$dataplane" -c "$cfg" --check 2>&1)
    if [[ $? -eq 1 ]] && grep -Eq "^$cfg:[0-9]+:[0-9]+: environment variable $var is not set" <<<"$out"; then
      echo "$name: without $var: $out"
    else
      fail "$name: without $var --check should fail at FILE:LINE:COL, got: $out"
    fi
  done
done

# Broken copies must fail, each for its own reason.
broken() {  # broken NAME SED_SCRIPT FILE EXPECTED
  rm -rf "$tmp/b" && cp -r "$root/deploy/kubernetes" "$tmp/b"
  sed -i "$2" "$tmp/b/base/$3"
  local out
  out=$(node "$here/validate.mjs" "$tmp/b/base" "$tmp/b-out" 2>&1)
  if [[ $? -ne 0 ]] && grep -q "$4" <<<"$out"; then
    echo "broken $1: refused ($4)"
  else
    fail "broken $1 was not refused with '$4': $out"
  fi
}
broken "hugepages limit" '0,/hugepages-1Gi: 2Gi/s//hugepages-1Gi: 1Gi/' daemonset.yaml "request 1Gi != limit 2Gi"
broken "capability" 's/add: \["IPC_LOCK", "NET_RAW"\]/add: ["IPC_LOCK", "NET_RAW", "SYS_ADMIN"]/' daemonset.yaml "IPC_LOCK and NET_RAW"
broken "fractional cpu" 's/cpu: "2"/cpu: "1500m"/' daemonset.yaml "whole CPUs"
broken "privileged" 's/privileged: false/privileged: true/' daemonset.yaml "privileged: false"
broken "schema" 's/containerPort: 9550/containerPort: "metrics"/' daemonset.yaml "containerPort"
broken "rules drift" 's/for: 1m/for: 2m/' prometheusrule.yaml "differs from deploy/prometheus/alerts.yml"
broken "multus" 's/networks: wirespeed-sriov/networks: other-net/' daemonset.yaml "no NetworkAttachmentDefinition"
broken "podmonitor" 's/    - port: metrics/    - port: web/' podmonitor.yaml "does not name"

if ((failed)); then echo "check_manifests: FAILED"; exit 1; fi
echo "check_manifests: every manifest valid, configs pass --check, 8 broken copies refused"
