#!/usr/bin/python3
"""Jumbo frames against the Linux kernel over a veth (af_packet) at MTU 9000:

- `ping -M do -s 8972` is answered (a 9000-byte IP packet each way) and
  `ping -M do -s 8973` fails locally with "message too long".
- A fragmented 30,000-byte ping is answered (reassembly of ICMP, fragmented reply).
- UDP echo of every payload size from 1 to 8972 bytes, byte for byte, and of
  fragmented 30,000-byte datagrams (kernel fragments, the data plane reassembles,
  echoes, fragments its answer, the kernel reassembles).
- Over a tap port at MTU 1500 (the tap PMD does not defragment, unlike
  af_packet: see JumboPeer), fragmented pings and UDP datagrams up to 65,507
  bytes reassembled by the data plane itself and answered in fragments.
- A TCP transfer through the echo service (framing none) of 1 GiB (256 MiB with
  --quick), SHA-256 of what was sent equal to what came back, and the kernel's
  `ss -ti` showing mss:8948 (MTU 9000 - 40 - 12 bytes of timestamps).

Every step is bounded in time. Namespace and interfaces are named wsj-*.
usage: test_jumbo.py [--quick]
"""
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness as h  # noqa: E402
import test_tcp_linux as tl  # noqa: E402  (the 1 GiB echo client)

DP_IP = "10.78.90.1"
PEER_IP = "10.78.90.2"
MTU = 9000
TAP_DP_IP = "10.78.91.1"
TAP_PEER_IP = "10.78.91.2"
METRICS_PORT = 9591

UDP_CLIENT = r'''
import json, os, socket, sys, time
host, port, deadline_s = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
sizes = json.loads(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
# Let the kernel fragment datagrams larger than the MTU (IP_MTU_DISCOVER = 10,
# IP_PMTUDISC_DONT = 0) instead of refusing them.
s.setsockopt(socket.IPPROTO_IP, 10, 0)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
s.connect((host, port))
s.settimeout(1.0)
t_end = time.time() + deadline_s
bad, lost, retries, ok = [], [], 0, 0
for n in sizes:
    msg = os.urandom(n)
    done = False
    for attempt in range(4):
        if time.time() > t_end:
            break
        s.send(msg)
        try:
            while True:
                got = s.recv(65536)
                if got == msg:
                    done = True
                    break
                if len(got) != n:
                    continue  # a late answer to an earlier retry
                bad.append(n)
                break
        except socket.timeout:
            retries += 1
            continue
        break
    if done:
        ok += 1
    elif n not in bad:
        lost.append(n)
print(json.dumps({"ok": ok, "bad": bad[:20], "lost": lost[:20], "n_lost": len(lost),
                  "retries": retries, "count": len(sizes)}))
'''


class JumboPeer(h.VethPeer):
    """The harness's veth peer with wsj-* names and af_packet frames of 32 KiB.

    DPDK's af_packet PMD joins its socket to a PACKET_FANOUT group with
    PACKET_FANOUT_FLAG_DEFRAG, so the kernel reassembles IPv4 fragments before the
    data plane sees them and hands over the whole datagram, cut to the ring's frame
    size. With framesz=10240 a 30,000-byte datagram arrives truncated (counted as
    ipv4_bad_total_length); 32 KiB frames carry it whole. Our own reassembly is
    therefore exercised by the unit tests (tests/unit/iface/test_reassembly.cpp);
    here the kernel reassembles what we fragment and the other way round.
    """

    def __init__(self, peer_ip, mtu):
        super().__init__("jumbo", peer_ip, mtu=mtu)
        self.ns = "wsj-jumbo"
        self.dp_if = "wsj-dp"
        self.peer_if = "wsj-pr"

    def device(self):
        return (f"net_af_packet_{self.ns.replace('-', '_')},iface={self.dp_if},"
                "blocksz=65536,framesz=32768,framecnt=256,qpairs=1")


def tap_reassembly(res, tmp_root):
    """UDP echo and ping of fragmented datagrams through the data plane's own
    reassembly and fragmentation (tap port, MTU 1500)."""
    global DP_IP
    saved, DP_IP = DP_IP, TAP_DP_IP
    tmp = h.temp_dir("wsj-tap-", tmp_root)
    try:
        with h.TapPeer("jt", TAP_PEER_IP) as peer:
            cfg = h.write_config(
                tmp, device=peer.device(), address=f"{TAP_DP_IP}/24", prefix="wsj-tap",
                metrics_port=METRICS_PORT + 1,
                services=["{ name: echo-udp, kind: echo, protocol: udp, port: 7 }"])
            dp = h.Dataplane(cfg, tmp)
            with dp, h.Control(cfg, tmp, METRICS_PORT + 1) as ctl:
                peer.attach()
                r = h.sh(f"ping -n -s 30000 -c 3 -i 0.2 -W 2 {TAP_DP_IP}", ns=peer.ns, check=False,
                         timeout=20)
                res.check(r.returncode == 0 and " 0% packet loss" in r.stdout,
                          "tap, MTU 1500: ping -s 30000 reassembled and answered in fragments by the "
                          "data plane", (r.stdout + r.stderr)[-300:])
                sizes = [30000] * 50 + [1473, 2961, 8973, 29999, 65507]
                u = udp_echo(peer.ns, tmp, sizes, deadline_s=60, timeout=90)
                res.check(u.get("ok") == len(sizes) and not u.get("bad"),
                          "tap, MTU 1500: UDP echo of fragmented datagrams (50 x 30,000 bytes in 21 "
                          "fragments each, 1473, 2961, 8973, 29999, 65507) through the data plane's "
                          "reassembly", json.dumps(u)[:500])
                # The frames arrived as fragments (the tap PMD does not reassemble):
                # the port counted at least 21 frames per 30,000-byte datagram.
                ctl.wait_for(lambda: ctl.value("wirespeed_port_receive_packets_total", port="p0")
                             >= 50 * 21, timeout=3)
                rx = ctl.value("wirespeed_port_receive_packets_total", port="p0")
                res.check(rx >= 50 * 21, f"tap: fragments reached the data plane as frames ({rx:.0f} "
                          "frames received)")
                drops = {k: v for k, v in ctl.drops().items() if v}
                print("  drops seen (tap):", drops)
                bad = {k: v for k, v in drops.items() if k.startswith("ipv4_")}
                res.check(not bad, "tap: no IPv4 or reassembly drops", json.dumps(bad))
    finally:
        DP_IP = saved


def udp_echo(ns, tmp, sizes, deadline_s, timeout):
    path = os.path.join(tmp, "udp_client.py")
    with open(path, "w") as f:
        f.write(UDP_CLIENT)
    r = h.sh(f"/usr/bin/python3 {path} {DP_IP} 7 {deadline_s} '{json.dumps(sizes)}'", ns=ns,
             check=False, timeout=timeout)
    try:
        return json.loads(r.stdout.strip().splitlines()[-1])
    except Exception:
        return {"error": (r.stdout[-300:] + r.stderr[-800:])}


def main():
    h.need_root()
    h.require("ping", "ss")
    quick = "--quick" in sys.argv
    res = h.Results("jumbo")
    tmp = h.temp_dir("wsj-")
    big = (256 if quick else 1024) << 20
    with JumboPeer(PEER_IP, MTU) as peer:
        ns = peer.ns
        cfg = h.write_config(
            tmp, device=peer.device(), address=f"{DP_IP}/24", prefix="wsj", mtu=MTU,
            extra_dataplane="  mbufs: 4095",  # 32 KiB mbufs (see JumboPeer)
            metrics_port=METRICS_PORT,
            services=["{ name: echo-udp, kind: echo, protocol: udp, port: 7 }",
                      "{ name: echo-tcp, kind: echo, protocol: tcp, port: 7, framing: none }"])
        dp = h.Dataplane(cfg, tmp)
        with dp, h.Control(cfg, tmp, METRICS_PORT) as ctl:
            start_lines = [l for l in dp.output().splitlines() if "mtu" in l.lower() or "mbuf" in l.lower()]
            print("  data plane at start:", " | ".join(start_lines)[:600])
            # The control process serves /metrics before the data plane's first export
            # reaches it: a port's gauges appear within an export interval of the start.
            res.check(ctl.wait_for(lambda: ctl.value("wirespeed_port_mtu_bytes", port="p0") == MTU),
                      f"wirespeed_port_mtu_bytes is {MTU}")

            # --- ping at the MTU and one byte above it.
            r = h.sh(f"ping -n -M do -s 8972 -c 3 -i 0.2 -W 2 {DP_IP}", ns=ns, check=False, timeout=20)
            res.check(r.returncode == 0 and " 0% packet loss" in r.stdout,
                      "ping -M do -s 8972 answered (9000-byte IP packets both ways)",
                      (r.stdout + r.stderr)[-300:])
            r = h.sh(f"ping -n -M do -s 8973 -c 1 -W 2 {DP_IP}", ns=ns, check=False, timeout=20)
            out = (r.stdout + r.stderr).lower()
            res.check(r.returncode != 0 and "message too long" in out,
                      "ping -M do -s 8973 fails locally: message too long", out[-300:])
            r = h.sh(f"ping -n -s 30000 -c 3 -i 0.2 -W 2 {DP_IP}", ns=ns, check=False, timeout=20)
            res.check(r.returncode == 0 and " 0% packet loss" in r.stdout,
                      "ping -s 30000 (fragmented both ways) answered", (r.stdout + r.stderr)[-300:])

            # --- UDP echo of every size up to the MTU, then fragmented datagrams.
            sizes = list(range(1, 8973))
            t0 = time.time()
            u = udp_echo(ns, tmp, sizes, deadline_s=150, timeout=200)
            dt = time.time() - t0
            res.check(u.get("ok") == len(sizes) and not u.get("bad"),
                      f"UDP echo of every size 1..8972 byte for byte ({len(sizes)} datagrams, "
                      f"{u.get('retries', '?')} retries, {dt:.1f} s)", json.dumps(u)[:500])
            # At most what one 32 KiB af_packet frame holds once the kernel reassembled it.
            frag_sizes = [30000] * 20 + [8973, 8981, 17945, 29999, 32000]
            u = udp_echo(ns, tmp, frag_sizes, deadline_s=60, timeout=90)
            res.check(u.get("ok") == len(frag_sizes) and not u.get("bad"),
                      "UDP echo of fragmented datagrams (20 x 30,000 bytes, 8973, 8981, 17945, "
                      "29999, 32000)", json.dumps(u)[:500])

            # --- 1 GiB TCP through the echo service, ss -ti sampled during it.
            tl.DP_IP = DP_IP
            holder = {}
            t = threading.Thread(target=lambda: holder.update(tl.run_echo(ns, tmp, big, timeout=300)))
            t.start()
            ss_out = ""
            for _ in range(100):
                time.sleep(0.2)
                r = h.sh(f"ss -tin dst {DP_IP}", ns=ns, check=False)
                if "mss:" in r.stdout:
                    ss_out = r.stdout
                    break
            t.join(330)
            e = holder
            mbps = e.get("received", 0) * 8 / max(e.get("seconds", 1), 1e-9) / 1e6
            res.check(tl.echo_ok(e, big),
                      f"{big >> 20} MiB echoed over TCP at MTU {MTU}, SHA-256 equal ({mbps:.0f} Mbit/s)",
                      json.dumps(e)[:600])
            res.check("mss:8948" in ss_out, "ss -ti: mss:8948 (MTU 9000 - 40 - 12 timestamps)",
                      ss_out.strip()[-400:])
            if "mss:" in ss_out:
                print("  ss -ti:", " ".join(w for w in ss_out.split() if w.split(":")[0] in
                                             ("mss", "advmss", "pmtu", "rcvmss", "wscale")))

            drops = {k: v for k, v in ctl.drops().items() if v}
            print("  drops seen:", drops)
            bad = {k: v for k, v in drops.items() if k.startswith("ipv4_reassembly") or k == "frame_too_long"}
            res.check(not bad, "no reassembly or frame_too_long drops", json.dumps(bad))
        code = dp.proc.returncode
        res.check(code == 0, "data plane exits 0 on SIGINT", str(code))
    tap_reassembly(res, tmp)
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
