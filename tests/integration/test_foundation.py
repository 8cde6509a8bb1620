#!/usr/bin/python3
"""Foundation: the data plane on a veth (af_packet) or a tap port, with a Linux peer
in its own namespace: pings, ARP, UDP echo byte for byte, ICMP port unreachable,
malformed frames dropped under the right reason, idle CPU use.

usage: test_foundation.py af_packet|tap
"""
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness as h  # noqa: E402

DP_IP = "10.78.{n}.1"
PEER_IP = "10.78.{n}.2"


UDP_ECHO_CLIENT = r'''
import os, random, socket, sys
dst, n, maxlen = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(1234)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2.0)
s.connect((dst, 7))
bad = lost = 0
sizes = list(range(1, maxlen + 1))
for i in range(n):
    size = sizes[i % len(sizes)] if i < len(sizes) else rng.randint(1, maxlen)
    payload = rng.randbytes(size)
    s.send(payload)
    try:
        got = s.recv(65535)
    except socket.timeout:
        lost += 1
        continue
    if got != payload:
        bad += 1
print(f"round_trips={n} lost={lost} mismatched={bad}")
'''

UDP_FLOOD = r"""
import socket, sys
dst, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
payload = bytes(64)
for _ in range(n):
    s.sendto(payload, (dst, port))
print("sent", n)
"""


PORT_UNREACHABLE = r'''
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2.0)
s.connect((sys.argv[1], 4444))
s.send(b"anyone?")
try:
    s.recv(100)
    print("reply")
except ConnectionRefusedError:
    print("refused")
except socket.timeout:
    print("timeout")
'''

# Each malformed kind: (drop reason, scapy expression building the frame). `E` is
# the Ethernet header to the data plane; `ip(...)` a valid IP header to it.
MALFORMED = r'''
import sys
from scapy.all import Ether, IP, UDP, ICMP, Raw, sendp, raw
iface, dst_mac, dst_ip, src_ip, count = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
E = Ether(dst=dst_mac, type=0x0800)
def ip(**kw):
    return IP(src=src_ip, dst=dst_ip, **kw)
good_udp = raw(ip(proto=17) / UDP(sport=1000, dport=9) / Raw(b"x" * 20))
kinds = {
  "ipv4_truncated": E / Raw(good_udp[:12]),
  "ipv4_bad_version": E / Raw(bytes([0x65]) + good_udp[1:]),
  "ipv4_bad_ihl": E / Raw(bytes([0x43]) + good_udp[1:]),
  "ipv4_bad_total_length": E / ip(len=400, proto=17) / UDP(sport=1000, dport=9) / Raw(b"x" * 20),
  "ipv4_bad_checksum": E / ip(chksum=0x1234) / UDP(sport=1000, dport=9) / Raw(b"x" * 20),
  "ipv4_ttl_expired": E / ip(ttl=0) / UDP(sport=1000, dport=9) / Raw(b"x" * 20),
  "ipv4_bad_source": E / IP(src="255.255.255.255", dst=dst_ip) / UDP(sport=1000, dport=9),
  "udp_bad_checksum": E / ip() / UDP(sport=1000, dport=9, chksum=0x4321) / Raw(b"x" * 20),
  "udp_bad_length": E / ip() / UDP(sport=1000, dport=9, len=200) / Raw(b"x" * 20),
  "udp_truncated": E / ip(proto=17) / Raw(b"\x03\xe8\x00"),
  "icmp_bad_checksum": E / ip() / ICMP(chksum=0x1111) / Raw(b"ping"),
  "eth_unknown_type": Ether(dst=dst_mac, type=0x88b5) / Raw(b"\x00" * 46),
  "eth_not_for_us": Ether(dst="02:11:22:33:44:55") / ip() / UDP(sport=1000, dport=9),
}
for name, frame in kinds.items():
    sendp(frame, iface=iface, count=count, verbose=False)
print(",".join(kinds))
'''


def main():
    h.need_root()
    h.require("ping", "promtool", "dpdk-telemetry.py")
    kind = sys.argv[1] if len(sys.argv) > 1 else "af_packet"
    n = {"af_packet": 1, "tap": 2}[kind]
    dp_ip, peer_ip = DP_IP.format(n=n), PEER_IP.format(n=n)
    res = h.Results(f"foundation-{kind}")
    tmp = h.temp_dir(f"ws-found-{kind}-")
    metrics_port = 9560 + n
    peer = h.VethPeer(f"f{n}", peer_ip) if kind == "af_packet" else h.TapPeer(f"f{n}", peer_ip)
    with peer:
        cfg = h.write_config(
            tmp, device=peer.device(), address=f"{dp_ip}/24", prefix=f"wst-found-{n}",
            metrics_port=metrics_port,
            services=["{ name: echo-udp, kind: echo, protocol: udp, port: 7 }",
                      "{ name: sink-udp, kind: sink, protocol: udp, port: 9 }"])
        dp = h.Dataplane(cfg, tmp)
        with dp, h.Control(cfg, tmp, metrics_port) as ctl:
            if kind == "tap":
                peer.attach()
            ns = peer.ns
            # 1,000 pings, none lost.
            r = h.sh(f"ping -c 1000 -i 0.002 -W 1 -q {dp_ip}", ns=ns, check=False, timeout=60)
            res.check(" 1000 received" in r.stdout and " 0% packet loss" in r.stdout,
                      "1000 pings answered, none lost", r.stdout.strip().splitlines()[-2:] if r.stdout else r.stderr)
            # The kernel's ARP entry for us resolved.
            r = h.sh(f"ip neigh show {dp_ip}", ns=ns)
            res.check("lladdr" in r.stdout and any(s in r.stdout for s in ("REACHABLE", "STALE", "DELAY")),
                      "kernel ARP entry for the data plane resolved", r.stdout.strip())
            dp_mac = r.stdout.split("lladdr")[1].split()[0] if "lladdr" in r.stdout else "ff:ff:ff:ff:ff:ff"

            # 10,000 UDP echo round trips, sizes 1..1472 then random, byte for byte.
            path = os.path.join(tmp, "udp_echo.py")
            open(path, "w").write(UDP_ECHO_CLIENT)
            r = h.sh(f"/usr/bin/python3 {path} {dp_ip} 10000 1472", ns=ns, timeout=300)
            res.check("lost=0 mismatched=0" in r.stdout, "10000 UDP echo round trips, 1..1472 bytes, all equal", r.stdout.strip())
            # A datagram over the MTU goes out as IP fragments, which the data plane
            # does not reassemble yet: counted as ipv4_fragment, no reply.

            # Closed port: ICMP port unreachable, seen by the kernel as ECONNREFUSED.
            path = os.path.join(tmp, "unreach.py")
            open(path, "w").write(PORT_UNREACHABLE)
            r = h.sh(f"/usr/bin/python3 {path} {dp_ip}", ns=ns)
            res.check(r.stdout.strip() == "refused", "closed UDP port -> ICMP port unreachable (ECONNREFUSED)", r.stdout.strip())

            # Malformed frames: dropped and counted under the right reason.
            time.sleep(0.3)
            before = ctl.drops()
            count = 5
            path = os.path.join(tmp, "malformed.py")
            open(path, "w").write(MALFORMED)
            iface = peer.peer_if
            r = h.sh(f"/usr/bin/python3 {path} {iface} {dp_mac} {dp_ip} {peer_ip} {count}", ns=ns, timeout=120)
            reasons = r.stdout.strip().split(",")
            ctl.wait_for(lambda: all(ctl.drops().get(x, 0) - before.get(x, 0) >= count for x in reasons), 3)
            after = ctl.drops()
            for reason in reasons:
                got = after.get(reason, 0) - before.get(reason, 0)
                # eth_not_for_us may also see unrelated frames; the others must be exact.
                ok = got >= count if reason == "eth_not_for_us" else got == count
                res.check(ok, f"{count} malformed frames counted as {reason}", f"(counted {got})")
            r = h.sh(f"ping -c 20 -i 0.01 -W 1 -q {dp_ip}", ns=ns, check=False)
            res.check(" 0% packet loss" in r.stdout, "still answering after malformed frames")

            # Metrics reflect the traffic.
            rx = ctl.value("wirespeed_service_messages_total", service="echo-udp", direction="received")
            res.check(rx >= 10000, "echo-udp counted >= 10000 received messages", f"({rx})")

            if kind == "af_packet":
                # Frames the kernel drops on a full af_packet ring are counted. The data
                # plane is stopped (SIGSTOP) while 20,000 datagrams arrive, more than the
                # 8,192-frame ring holds; afterwards every datagram is either counted by
                # the sink or as a missed packet of the port (or dropped by veth itself).
                def veth_rx_dropped():
                    st = json.loads(h.sh(f"ip -s -j link show {peer.dp_if}").stdout)[0]
                    return st["stats64"]["rx"]["dropped"]
                flood = 20000
                sink0 = ctl.value("wirespeed_service_messages_total", service="sink-udp",
                                  direction="received")
                miss0 = ctl.value("wirespeed_port_receive_missed_packets_total", port="p0")
                veth0 = veth_rx_dropped()
                path = os.path.join(tmp, "flood.py")
                open(path, "w").write(UDP_FLOOD)
                os.kill(dp.proc.pid, signal.SIGSTOP)
                try:
                    r = h.sh(f"/usr/bin/python3 {path} {dp_ip} 9 {flood}", ns=ns, timeout=60)
                    time.sleep(0.2)
                finally:
                    os.kill(dp.proc.pid, signal.SIGCONT)

                def accounted():
                    sink = ctl.value("wirespeed_service_messages_total", service="sink-udp",
                                     direction="received") - sink0
                    miss = ctl.value("wirespeed_port_receive_missed_packets_total",
                                     port="p0") - miss0
                    return sink, miss, veth_rx_dropped() - veth0
                ctl.wait_for(lambda: sum(accounted()) >= flood, 5)
                sink, miss, vdrop = accounted()
                res.check(miss > 0 and sink + miss + vdrop == flood,
                          f"{flood} datagrams into a stopped data plane: sink {sink:.0f} + "
                          f"ring drops counted as missed {miss:.0f} + veth drops {vdrop} = "
                          f"{sink + miss + vdrop:.0f}")

            # The scrape passes promtool, and DPDK's own telemetry client reads the
            # same drop counters under /wirespeed/.
            scrape = os.path.join(tmp, "scrape.txt")
            open(scrape, "w").write(ctl.scrape_text())
            r = h.sh(f"promtool check metrics < {scrape}", check=False)
            res.check(r.returncode == 0 and not (r.stdout + r.stderr).strip(),
                      "promtool check metrics: the scrape is clean", (r.stdout + r.stderr)[:500])
            r = h.sh(f"sh -c 'echo /wirespeed/drops | dpdk-telemetry.py -f wst-found-{n}'", check=False)
            try:
                tel = json.loads(r.stdout.strip().splitlines()[-1])["/wirespeed/drops"]
            except Exception:
                tel = {}
            res.check(tel.get("ipv4_bad_checksum", 0) >= count,
                      "dpdk-telemetry.py /wirespeed/drops reports the counted drops",
                      r.stdout[-300:] + r.stderr[-300:])

            # Idle: adaptive mode leaves the other core free.
            time.sleep(1.5)
            c0, t0 = dp.cpu_seconds(), time.time()
            time.sleep(3.0)
            used = (dp.cpu_seconds() - c0) / (time.time() - t0)
            res.check(used < 0.25, f"idle CPU use {used:.3f} cores (< 0.25)")

            # Sparse work: a ping every 100 ms finds the core in its longest sleeps (up to
            # 1 ms, reached soon after 20 ms without work). The sleep before the wake-up that
            # finds a ping is idle time; booked as busy, it came to 320-500 µs a ping here,
            # where answering one is booked at 60-120 on a quiet machine. Busy time is wall
            # time, so on a loaded one it also holds the waits for a CPU while working
            # (205-305 µs a ping in CI beside the compiles, 660 on a VM running at a third
            # of its usual speed, 81 on that VM alone): the bound here is a sanity bound,
            # 5 % of the interval (all of a ping's 100 ms booked busy, say, fails it); the
            # booking itself, to the microsecond, is checked by
            # LoopTime.ASleepIsIdleAndTheWorkAfterItBusy.
            def busy_seconds():
                return sum(v for (name, _), v in ctl.scrape().items()
                           if name == "wirespeed_core_busy_seconds_total")
            time.sleep(0.3)  # the last publication of the idle span above
            b0 = busy_seconds()
            r = h.sh(f"ping -c 30 -i 0.1 -W 1 -q {dp_ip}", ns=ns, check=False, timeout=30)
            time.sleep(0.3)
            per_ping = (busy_seconds() - b0) / 30
            res.check(" 0% packet loss" in r.stdout and per_ping < 5e-3,
                      f"30 pings 100 ms apart: {per_ping * 1e6:.0f} µs booked busy a ping (< 5000)")
        res.check(dp.proc.returncode == 0, "SIGINT: data plane exits 0", f"(rc={dp.proc.returncode})\n{dp.output()[-2000:]}")
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
