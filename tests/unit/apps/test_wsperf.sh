#!/usr/bin/env bash
# End-to-end test of tools/wsperf on 127.0.0.1: sink/echo servers on ports the
# kernel picks (port 0; the server prints the one it got), source/ping clients
# for about a second each over TCP and UDP with --verify, exit codes checked,
# JSON reports parsed, and the counts of both ends compared.
# usage: test_wsperf.sh PATH/TO/wsperf
set -euo pipefail

W="$1"
T="$(mktemp -d)"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  rm -rf "$T"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  for f in "$T"/*.out; do [ -e "$f" ] && { echo "--- $f" >&2; tail -5 "$f" >&2; }; done
  exit 1
}

# start_server NAME ARGS... : runs wsperf in the background; sets PORT and SERVER_PID.
start_server() {
  local name="$1"
  shift
  "$W" "$@" --report "$T/$name.json" >"$T/$name.out" 2>&1 &
  SERVER_PID=$!
  PIDS+=("$SERVER_PID")
  for _ in $(seq 100); do
    # The background shell may not have opened the file yet: no file is no port yet.
    PORT="$(sed -n 's/.*listening on [0-9.]*:\([0-9]*\).*/\1/p' "$T/$name.out" 2>/dev/null || true)"
    [ -n "$PORT" ] && return 0
    kill -0 "$SERVER_PID" 2>/dev/null || fail "$name did not start"
    sleep 0.05
  done
  fail "$name did not report its port"
}

# stop_server: SIGTERM must produce the summary and exit 0.
stop_server() {
  sleep 0.3  # let the last datagrams in flight arrive
  kill -TERM "$SERVER_PID"
  local rc=0
  wait "$SERVER_PID" || rc=$?
  [ "$rc" -eq 0 ] || fail "server exited $rc after SIGTERM"
}

# client NAME ARGS... : runs wsperf in the foreground; exit status must be 0.
client() {
  local name="$1"
  shift
  local rc=0
  timeout 60 "$W" "$@" --quiet --report "$T/$name.json" >"$T/$name.out" 2>&1 || rc=$?
  [ "$rc" -eq 0 ] || fail "$name: wsperf $* exited $rc"
}

# check PYTHON_EXPR FILES... : the expression sees the parsed reports as r[0], r[1], ...
check() {
  local expr="$1"
  shift
  python3 - "$expr" "$@" <<'EOF' || fail "check failed: $1 on ${*:2}"
import json, sys
expr, files = sys.argv[1], sys.argv[2:]
r = [json.load(open(f)) for f in files]
for x in r:
    for key in ("messages", "bytes", "seconds", "messages_per_second", "bits_per_second"):
        assert key in x, (key, x)
    assert x.get("verify_errors", 0) == 0 and x.get("protocol_errors", 0) == 0, x
if not eval(expr):
    print("expression false:", expr, r, file=sys.stderr)
    sys.exit(1)
EOF
}

RTT='all(k in r[0]["rtt_us"] for k in ("p50","p90","p99","p999","max"))'

# --- TCP, framing length32 ------------------------------------------------------
for size in 1 64 65536 1048576; do
  start_server sink-$size sink --listen 127.0.0.1:0 --verify
  client source-$size source --target 127.0.0.1:$PORT --message-size $size --duration 1 \
    --connections 2 --verify
  stop_server
  check 'r[0]["messages"] > 0 and r[0]["messages"] == r[1]["messages"] and r[0]["bytes"] == r[1]["bytes"]' \
    "$T/source-$size.json" "$T/sink-$size.json"
  echo "ok tcp source/sink $size"
done

# One send() per message (and per three): the same stream, every message verified.
for n in 1 3; do
  start_server sink-per$n sink --listen 127.0.0.1:0 --verify
  client source-per$n source --target 127.0.0.1:$PORT --message-size 8 --count 20000 \
    --send-messages $n --verify
  stop_server
  check 'r[0]["messages"] == r[1]["messages"] == 20000' "$T/source-per$n.json" "$T/sink-per$n.json"
  echo "ok tcp source --send-messages $n"
done

start_server echo echo --listen 127.0.0.1:0 --verify
ECHO_PORT=$PORT
ECHO_PID=$SERVER_PID
total=()
for size in 1 64 65536 1048576; do
  client ping-$size ping --target 127.0.0.1:$ECHO_PORT --message-size $size --duration 1 --verify
  check "r[0]['messages'] > 0 and $RTT" "$T/ping-$size.json"
  total+=("$T/ping-$size.json")
  echo "ok tcp ping/echo $size"
done
client ping-reconnect ping --target 127.0.0.1:$ECHO_PORT --message-size 64 --duration 1 \
  --reconnect --connections 2 --verify
check "r[0]['messages'] > 0 and r[0]['connections_per_second'] > 0 and $RTT" "$T/ping-reconnect.json"
total+=("$T/ping-reconnect.json")
echo "ok tcp ping --reconnect"
SERVER_PID=$ECHO_PID
stop_server
# Each ping connection may abandon one round trip at its deadline, which the
# echo counted: at most 1 + 1 + 1 + 1 + 2 more on the echo side.
check '0 <= r[0]["messages"] - sum(x["messages"] for x in r[1:]) <= 6' \
  "$T/echo.json" "${total[@]}"
echo "ok tcp echo counts"

# --- TCP, framing none ----------------------------------------------------------
start_server sink-none sink --listen 127.0.0.1:0 --framing none --verify
client source-none source --target 127.0.0.1:$PORT --framing none --message-size 1000 \
  --count 20000 --verify
stop_server
check 'r[0]["bytes"] == r[1]["bytes"] == 20000 * 1000 and r[1]["messages"] == 0' \
  "$T/source-none.json" "$T/sink-none.json"
echo "ok tcp framing none"

# --- UDP: one message per datagram -----------------------------------------------
for size in 1 64 65507; do
  rate=5000
  [ "$size" -gt 1000 ] && rate=1000  # loopback drops bursts of large datagrams otherwise
  start_server usink-$size sink --protocol udp --listen 127.0.0.1:0 --verify
  client usource-$size source --protocol udp --target 127.0.0.1:$PORT --message-size $size \
    --duration 1 --rate $rate --verify
  stop_server
  # UDP over loopback may drop when the receiver is slow (sanitizer builds, a
  # loaded machine): every datagram that arrives must be whole and verified, and
  # most must arrive (loopback drops what a slow receiver cannot take).
  check 'r[0]["messages"] > 0 and 0.5 * r[0]["messages"] <= r[1]["messages"] <= r[0]["messages"] and r[1]["bytes"] == r[1]["messages"] * '"$size"' and r[1]["verify_errors"] == 0' \
    "$T/usource-$size.json" "$T/usink-$size.json"
  echo "ok udp source/sink $size"
done

start_server uecho echo --protocol udp --listen 127.0.0.1:0 --verify
total=()
for size in 1 64 65507; do
  client uping-$size ping --protocol udp --target 127.0.0.1:$PORT --message-size $size \
    --duration 1 --verify
  check "r[0]['messages'] > 0 and r[0]['lost'] == 0 and $RTT" "$T/uping-$size.json"
  total+=("$T/uping-$size.json")
  echo "ok udp ping/echo $size"
done
stop_server
check '0 <= r[0]["messages"] - sum(x["messages"] for x in r[1:]) <= 3' \
  "$T/uecho.json" "${total[@]}"

# A UDP message is one datagram: sizes above the IPv4 limit are refused up front.
rc=0
"$W" source --protocol udp --target 127.0.0.1:9 --message-size 65536 --duration 1 \
  >"$T/big.out" 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "65536-byte UDP messages: exit $rc, want 2"
grep -q 'at most 65507' "$T/big.out" || fail "no reason given for the UDP size limit"
echo "ok udp size limit"
echo "PASS"
