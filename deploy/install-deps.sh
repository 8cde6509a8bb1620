#!/usr/bin/env bash
# Installs every Debian 12 package that the build, the quickstart demo, the test suites and
# the benchmarks need. Idempotent: packages already present are left alone, and apt is not
# touched at all when nothing is missing. deploy/tools.txt names the package of every
# program the scripts run; the unit test tests/lint/check_tools.py keeps the two in step.
set -euo pipefail

PACKAGES=(
  # build
  build-essential pkg-config meson ninja-build python3 git
  dpdk dpdk-dev libdpdk-dev libipsec-mb-dev libyaml-cpp-dev nlohmann-json3-dev prometheus-cpp-dev libcivetweb-dev
  libgtest-dev libgmock-dev libbenchmark-dev clang-format clang-tidy
  # the shell tools the scripts use (present on most systems; listed so none is assumed)
  bash dash coreutils grep sed findutils util-linux mount kmod procps dpkg apt debconf bc
  # the demo and integration tests: Linux peers in network namespaces
  iproute2 iputils-ping ethtool socat curl wrk nginx-light iperf3 sockperf
  nodejs npm
  python3-scapy tcpdump tshark wireshark-common hping3 prometheus psmisc
  # benchmark profiling (tests/bench)
  linux-perf valgrind
)

missing=()
for p in "${PACKAGES[@]}"; do
  # A Node.js that ships its own npm (NodeSource's) conflicts with Debian's npm package.
  if [[ $p == npm ]] && command -v npm >/dev/null; then continue; fi
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

# The Kubernetes manifest check (tests/k8s) validates with npm's kubernetes-models,
# installed next to it; versions are pinned in tests/k8s/package.json.
npm_modules() {
  local dir
  dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../tests/k8s" && pwd)
  [[ -d $dir/node_modules/kubernetes-models ]] && return 0
  echo "install-deps: npm install in $dir"
  npm install --prefix "$dir" --no-package-lock --no-audit --no-fund --loglevel=error
}

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  npm_modules
  exit
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: run as root (or with sudo) to install them" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# tshark asks whether non-root users may capture; answer it up front.
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
npm_modules
echo "install-deps: done"
