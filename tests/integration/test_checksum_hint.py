#!/usr/bin/env python3
"""Bad checksums from a local veth peer are explained, not only counted.

The peer's TX checksum offload stays ON (the kernel default), so the frames it sends
reach the data plane's af_packet port with unfinished (partial) TCP/UDP checksums.
While that lasts:
- UDP and TCP fail, and the failures are counted per port
  (wirespeed_port_l4_checksum_errors_total{port}), and the count rises with traffic;
- the data plane logs one line, once, naming the likely cause and the fix, with the veth
  peer and its namespace: `ip netns exec NS ethtool -K PEER tx off`;
- `wirespeed-control status` shows the hint (text and JSON).
Then the test turns the peer's TX checksumming off, and UDP and TCP echo work, with no new
checksum failures.

Usage: test_checksum_hint.py   (root; WS_BUILD_DIR = the build directory)
"""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness as h  # noqa: E402

DP_IP = "10.81.0.1"
PEER_IP = "10.81.0.2"
PREFIX = "wst-ck"

# One TCP round trip to the byte echo (7): prints "ok" or the error.
TCP = r"""
import socket, sys
try:
    s = socket.create_connection((sys.argv[1], 7), timeout=3)
    s.settimeout(3)
    msg = b"hello over tcp " * 100
    s.sendall(msg)
    got = b""
    while len(got) < len(msg):
        d = s.recv(65536)
        if not d:
            break
        got += d
    print("ok" if got == msg else "short %d" % len(got), flush=True)
except OSError as e:
    print("error %s" % e, flush=True)
"""


def status(cfg, json_out=False):
    cmd = [h.CONTROL, "-c", cfg, "status", "--interval", "0.3"] + (["--json"] if json_out else [])
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30)


def main():
    h.need_root()
    r = h.Results("checksum-hint")
    tmp = h.temp_dir("wst-ck-")
    metrics_port = 9563
    errors = lambda c: c.value("wirespeed_port_l4_checksum_errors_total", port="p0")  # noqa: E731
    with h.VethPeer("ck", PEER_IP, tx_checksum_offload=True) as peer:
        cfg = h.write_config(tmp, device=peer.device(), address=f"{DP_IP}/24", prefix=PREFIX,
                             metrics_port=metrics_port,
                             services=["{ name: echo-udp, kind: echo, protocol: udp, port: 7 }",
                                       "{ name: sink-udp, kind: sink, protocol: udp, port: 9 }",
                                       "{ name: echo-tcp, kind: echo, protocol: tcp, port: 7, "
                                       "framing: none }"])
        udp_path = h.write_script(tmp, "udp.py", h.UDP_ECHO_CLIENT)
        tcp_path = h.write_script(tmp, "tcp.py", TCP)
        # n datagrams to the sink (9) and n to the echo (7): the echoes that came back.
        udp = lambda n: int(h.sh(f"/usr/bin/python3 {udp_path} {DP_IP} {n} 9",  # noqa: E731
                                 ns=peer.ns, timeout=60).stdout.strip() or 0)
        tcp = lambda: h.sh(f"/usr/bin/python3 {tcp_path} {DP_IP}", ns=peer.ns,  # noqa: E731
                           timeout=30).stdout.strip()
        dp = h.Dataplane(cfg, tmp)
        ctl = h.Control(cfg, tmp, metrics_port)
        try:
            dp.start()
            ctl.__enter__()
            # ARP and ICMP carry full checksums: the link itself works.
            ping = h.sh(f"ping -c 3 -i 0.2 -W 2 {DP_IP}", ns=peer.ns, check=False)
            r.check(ping.returncode == 0, "ping works with the peer's TX checksum offload on",
                    ping.stdout[-200:])

            # 1. TX checksum offload on at the peer: UDP and TCP fail, counted per port.
            echoed = udp(10)
            r.check(echoed == 0, f"no UDP echo comes back ({echoed} of 10)")
            t = tcp()
            r.check(t != "ok", f"TCP echo fails ({t})")
            r.check(ctl.wait_for(lambda: errors(ctl) >= 21, 5),
                    f"the per-port counter counts the failures ({errors(ctl)} >= 21)")
            before = errors(ctl)
            udp(5)
            r.check(ctl.wait_for(lambda: errors(ctl) >= before + 10, 5),
                    f"the counter rises with more traffic ({before} -> {errors(ctl)})")
            drops = ctl.drops()
            r.check(drops.get("udp_bad_checksum", 0) > 0 and drops.get("tcp_bad_checksum", 0) > 0,
                    "the drops are udp_bad_checksum and tcp_bad_checksum",
                    str({k: v for k, v in drops.items() if v}))
            r.check(ctl.value("wirespeed_port_l4_checksum_hint", port="p0") == 1.0,
                    "the hint gauge is 1 for the port")

            # 2. One line in the data plane's log, once, with the cause and the fix.
            lines = [ln for ln in dp.output().splitlines() if "checksum failures" in ln]
            r.check(len(lines) == 1, f"the data plane logged the hint exactly once ({len(lines)})",
                    "\n".join(lines))
            line = lines[0] if lines else ""
            print("    log: " + line)
            r.check(line.startswith(f"wirespeed: port p0 (af_packet on {peer.dp_if}): ")
                    and "likely cause: TX checksum offload" in line and "ethtool -K" in line
                    and "tx off" in line,
                    "the line names the port, its interface and the ethtool fix")
            # The peer is in the test's namespace: found through rtnetlink, named with it.
            r.check(f"fix: ip netns exec {peer.ns} ethtool -K {peer.peer_if} tx off" in line,
                    "the line names the veth peer in its namespace and the exact command")

            # 3. The status screen shows the count and the hint (text and JSON).
            st = status(cfg)
            hint_lines = [ln for ln in st.stdout.splitlines() if ln.startswith("HINT port p0:")]
            r.check(st.returncode == 0 and len(hint_lines) == 1 and "ethtool -K" in hint_lines[0],
                    "status shows the hint", st.stdout + st.stderr)
            print("\n".join("    " + ln for ln in st.stdout.splitlines()[:8]))
            sj = status(cfg, json_out=True)
            try:
                p0 = json.loads(sj.stdout)["ports"][0]
            except (ValueError, KeyError, IndexError):
                p0 = {}
            r.check(p0.get("l4_checksum_errors", 0) >= 31 and "ethtool -K" in p0.get("checksum_hint", ""),
                    "status --json has the count and the hint", sj.stdout[:400] + sj.stderr)

            # 4. The fix: TX checksumming off at the peer; UDP and TCP work, nothing new fails.
            peer.set_tx_checksum_offload(False)
            settled = errors(ctl)
            echoed = udp(50)
            r.check(echoed == 50, f"after the fix, UDP echo answers ({echoed} of 50)")
            t = tcp()
            r.check(t == "ok", f"after the fix, TCP echo works ({t})")
            time.sleep(0.5)
            r.check(errors(ctl) == settled,
                    f"no checksum failures after the fix ({settled} -> {errors(ctl)})")
            r.check(ctl.wait_for(lambda: ctl.value("wirespeed_service_messages_total",
                                                   service="sink-udp", direction="received") == 50, 5),
                    "the sink counted the 50 datagrams sent after the fix, and none before")
            lines = [ln for ln in dp.output().splitlines() if "checksum failures" in ln]
            r.check(len(lines) == 1, "still one hint line in the log")
        except Exception as ex:  # noqa: BLE001
            r.check(False, "test ran to the end", repr(ex))
        finally:
            ctl.__exit__(None, None, None)
            rc = dp.stop()
            r.check(rc == 0, "the data plane stops cleanly", str(rc))
            if r.failed:
                h.print_log_tails(tmp)
            shutil.rmtree(tmp, ignore_errors=True)
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
