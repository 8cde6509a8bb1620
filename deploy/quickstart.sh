#!/usr/bin/env bash
# wirespeed quickstart: installs what is needed, builds, then runs the data plane on
# one end of a veth pair while a Linux network namespace on the other end talks to
# it (ARP, ping, UDP echo and discard, TCP echo), and shows the counters.
#
#   sudo deploy/quickstart.sh            # demo, then keep running until Ctrl-C (on a terminal)
#   sudo deploy/quickstart.sh --no-wait  # demo, then clean up and exit
#   sudo deploy/quickstart.sh -c my.yaml # another config (it must use iface=wsq-dp)
#
# Everything it creates (namespace wsq-peer, veth wsq-dp/wsq-peer, processes) is
# removed on exit or Ctrl-C.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CONFIG="$ROOT/configs/quickstart.yaml"
WAIT=auto
while (($#)); do
  case "$1" in
    -c) CONFIG=$2; shift 2 ;;
    --no-wait) WAIT=no; shift ;;
    --wait) WAIT=yes; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "quickstart: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [[ $(id -u) -ne 0 ]]; then
  echo "quickstart: run as root (it creates a network namespace and runs DPDK)" >&2
  exit 1
fi

NS=wsq-peer
DP_IF=wsq-dp
PEER_IF=wsq-peer
DP_IP=10.77.0.1
PEER_IP=10.77.0.2
BUILD="$ROOT/build"
LOG=$(mktemp -d /tmp/wirespeed-quickstart.XXXXXX)
DP_PID=""
CTL_PID=""

say() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

cleanup() {
  set +e
  [[ -n "$CTL_PID" ]] && kill "$CTL_PID" 2>/dev/null && wait "$CTL_PID" 2>/dev/null
  if [[ -n "$DP_PID" ]] && kill -0 "$DP_PID" 2>/dev/null; then
    kill -INT "$DP_PID"
    for _ in $(seq 50); do kill -0 "$DP_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$DP_PID" 2>/dev/null
  fi
  ip netns del "$NS" 2>/dev/null
  ip link del "$DP_IF" 2>/dev/null
  echo "quickstart: cleaned up (logs kept in $LOG)"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "Installing dependencies (Debian 12 packages)"
bash "$ROOT/deploy/install-deps.sh"

say "Building (meson + ninja, release)"
if [[ ! -f "$BUILD/build.ninja" ]]; then
  meson setup "$BUILD" "$ROOT" >"$LOG/meson-setup.log" || { cat "$LOG/meson-setup.log"; exit 1; }
fi
meson compile -C "$BUILD" >"$LOG/build.log" 2>&1 || { tail -50 "$LOG/build.log"; exit 1; }
DP="$BUILD/dataplane/wirespeed-dataplane"
CTL="$BUILD/control/wirespeed-control"
for b in "$DP" "$CTL"; do
  [[ -x "$b" ]] || { echo "quickstart: $b was not built (see $LOG/build.log)" >&2; exit 1; }
done
"$DP" --version

say "Checking $CONFIG"
"$DP" -c "$CONFIG" --check

say "Creating namespace $NS with a veth pair ($DP_IF <-> $PEER_IF)"
ip netns del "$NS" 2>/dev/null || true
ip link del "$DP_IF" 2>/dev/null || true
ip netns add "$NS"
ip link add "$DP_IF" type veth peer name "$PEER_IF"
ip link set "$PEER_IF" netns "$NS"
# The data plane owns wsq-dp: keep the kernel's IPv6 chatter off it.
sysctl -qw "net.ipv6.conf.$DP_IF.disable_ipv6=1"
ip link set "$DP_IF" up
ip netns exec "$NS" sysctl -qw "net.ipv6.conf.$PEER_IF.disable_ipv6=1"
ip netns exec "$NS" ip addr add "$PEER_IP/24" dev "$PEER_IF"
ip netns exec "$NS" ip link set "$PEER_IF" up
ip netns exec "$NS" ip link set lo up
# veth hands locally generated packets over with checksums left to "offload";
# af_packet on the far side would see them unfinished. Compute them in software.
ip netns exec "$NS" ethtool -K "$PEER_IF" tx off >/dev/null

say "Starting the data plane on $DP_IF ($DP_IP)"
"$DP" -c "$CONFIG" >"$LOG/dataplane.log" 2>&1 &
DP_PID=$!
for _ in $(seq 100); do
  grep -q "wirespeed: running" "$LOG/dataplane.log" && break
  kill -0 "$DP_PID" 2>/dev/null || { cat "$LOG/dataplane.log"; exit 1; }
  sleep 0.1
done
grep "wirespeed:" "$LOG/dataplane.log" || true
"$CTL" -c "$CONFIG" serve >"$LOG/control.log" 2>&1 &
CTL_PID=$!

say "The Linux peer pings the data plane"
ip netns exec "$NS" ping -c 5 -i 0.2 "$DP_IP"
ip netns exec "$NS" ip neigh show "$DP_IP"

say "A UDP round trip to the echo service (socat, port 7)"
reply=$(echo "hello from the kernel peer" | ip netns exec "$NS" timeout 5 socat - "UDP:$DP_IP:7")
echo "sent: hello from the kernel peer"
echo "got:  $reply"
[[ "$reply" == "hello from the kernel peer" ]] || { echo "quickstart: UDP echo failed" >&2; exit 1; }

say "A TCP round trip to the echo service (socat, port 7)"
treply=$(echo "hello over tcp" | ip netns exec "$NS" timeout 5 socat -t 2 - "TCP:$DP_IP:7")
echo "got:  $treply"
[[ "$treply" == "hello over tcp" ]] || { echo "quickstart: TCP echo failed" >&2; exit 1; }

say "1000 datagrams to the discard service (port 9)"
ip netns exec "$NS" /usr/bin/python3 - "$DP_IP" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
# Ten bursts of 100 with a pause between: the veth delivers each datagram into the port's
# receive ring at once, and a burst far smaller than the ring leaves the data plane time to
# drain it even when it shares its CPU with this sender on a busy machine.
for burst in range(10):
    for i in range(100):
        s.sendto(b"x" * 100, (sys.argv[1], 9))
    time.sleep(0.005)
print("sent 1000 x 100 bytes")
PY

sleep 0.5
say "Counters (wirespeed-control status: totals since start, rates over the last second)"
"$CTL" -c "$CONFIG" status || { echo "quickstart: wirespeed-control status failed" >&2; exit 1; }
# The discard service's total must show every datagram of the demo (when the config has the
# quickstart's sink-udp; "-" when it has not).
# Prints the sink's count and the ports' receive-ring overflows (RX missed).
read -r counted missed < <("$CTL" -c "$CONFIG" status --json --interval 0.2 | /usr/bin/python3 -c '
import json, sys
st = json.load(sys.stdin)
print(next((s["messages"].get("received", 0) for s in st["services"]
            if s["name"] == "sink-udp"), "-"),
      sum(p.get("rx_missed_packets", 0) for p in st["ports"]))') ||
  { echo "quickstart: wirespeed-control status --json failed" >&2; exit 1; }
if [[ "$counted" != "-" ]]; then
  echo "the discard service (sink-udp) counted $counted of 1000 datagrams"
  if [[ "$counted" != 1000 ]]; then
    echo "quickstart: the sink did not count every datagram (RX missed, frames dropped at" \
      "a full receive ring: $missed; docs/troubleshooting.md)" >&2
    exit 1
  fi
fi
echo
echo "Prometheus metrics: curl -s http://127.0.0.1:9550/metrics | grep wirespeed_"

say "Try next"
cat <<TXT
  ip netns exec $NS ping $DP_IP
  echo hi | ip netns exec $NS socat - UDP:$DP_IP:7
  ip netns exec $NS socat - TCP:$DP_IP:7          # TCP echo
  $CTL -c $CONFIG status
  data plane log: $LOG/dataplane.log
TXT

if [[ "$WAIT" == yes || ( "$WAIT" == auto && -t 0 ) ]]; then
  say "Running; press Ctrl-C to stop and clean up"
  wait "$DP_PID"
fi
