#!/usr/bin/python3
"""Path MTU against Linux across a mixed-MTU path, built here:

    data plane (af_packet, MTU 9000, 10.78.95.1)
      == veth wsp-dp / wsp-r0 (MTU 9000) ==  namespace wsp-pmtu-r (router, ip_forward=1)
      == veth wsp-r1 / wsp-p0 ==  namespace wsp-pmtu-p (Linux peer 10.78.96.2, MTU 1500)

The peer's route back advertises MSS 8960 (`advmss`), so both ends agree on jumbo
segments and the 1500-byte hop decides. The kernel's own segments stay at 1460 (its
interface MTU), so it is our sending that meets the narrow hop. Each phase moves data
both ways: the data plane's `source` client sends 24 x 1 MiB to a kernel
`wsperf sink --verify` (every byte checked against the pattern), and a kernel client
sends 24 MiB through the `echo` service and compares SHA-256 of what came back.

1. ICMP: the router's wsp-r1 has MTU 1500. Our 9000-byte datagrams (DF set) make the
   router answer "fragmentation needed, next-hop MTU 1500"; the data plane must lower the
   connection's MSS and lose nothing. The same over IPv6 (the path carries both
   families; the peer's route back advertises MSS 8940): a kernel client echoes 8 MiB
   through the same data plane, our 9000-byte packets draw ICMPv6 Packet Too Big
   (RFC 8201) from the router, and the IPv6 connection's MSS falls to 1440.
2. Black hole: wsp-r1 goes to MTU 9000 while the peer's end stays at 1500, so the router
   forwards jumbo frames that the peer's veth silently discards (no ICMP: the classic
   mismatched-MTU black hole). This replaces a firewall rule dropping ICMP: this
   machine has neither nft nor iptables, and its kernel lacks tc classifiers and
   actions. Black-hole detection and probing must find the size, and again nothing is
   lost.

Counters are read from wirespeed-control's /metrics. Bounded: each transfer has a
timeout, the whole test about 3 minutes at most. Names: wsp-* (unique to this test).
usage: test_pmtu.py
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness as h  # noqa: E402
import test_tcp_linux as tl  # noqa: E402  (the SHA-256 echo client)

DP_IP = "10.78.95.1"
R0_IP = "10.78.95.254"
R1_IP = "10.78.96.254"
PEER_IP = "10.78.96.2"
NS_R = "wsp-pmtu-r"
NS_P = "wsp-pmtu-p"
DP_IF = "wsp-dp"
DP_IP6 = "2001:db8:5f::1"
R0_IP6 = "2001:db8:5f::fe"
R1_IP6 = "2001:db8:60::fe"
PEER_IP6 = "2001:db8:60::2"
TOTAL6 = 8 << 20  # echoed over IPv6 in phase 1
TCP_SHA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tcp_sha.py")
METRICS_PORT = 9596
TOTAL = 24 << 20  # echoed bytes per phase
COUNT = 24  # MiB from the source client per phase


class MixedPath:
    """The three-hop path above; removed on exit whatever happens."""

    def __enter__(self):
        self.teardown()
        sh = h.sh
        sh(f"ip netns add {NS_R}")
        sh(f"ip netns add {NS_P}")
        sh(f"ip link add {DP_IF} mtu 9000 type veth peer name wsp-r0 mtu 9000")
        sh(f"ip link set wsp-r0 netns {NS_R}")
        sh("ip link add wsp-r1 mtu 1500 type veth peer name wsp-p0 mtu 1500")
        sh(f"ip link set wsp-r1 netns {NS_R}")
        sh(f"ip link set wsp-p0 netns {NS_P}")
        sh(f"sysctl -qw net.ipv6.conf.{DP_IF}.disable_ipv6=1")
        sh(f"ip link set {DP_IF} up")
        for ns, ifs in ((NS_R, ("wsp-r0", "wsp-r1")), (NS_P, ("wsp-p0",))):
            sh("ip link set lo up", ns=ns)
            for i in ifs:
                sh(f"sysctl -qw net.ipv6.conf.{i}.disable_ipv6=1", ns=ns)
                sh(f"ip link set {i} up", ns=ns)
                # One frame per packet: no checksum-partial, GSO or GRO aggregates that
                # af_packet would hand over as one oversized frame.
                sh(f"ethtool -K {i} tx off tso off gso off gro off", ns=ns, check=False)
        sh(f"ip addr add {R0_IP}/24 dev wsp-r0", ns=NS_R)
        sh(f"ip addr add {R1_IP}/24 dev wsp-r1", ns=NS_R)
        sh("sysctl -qw net.ipv4.ip_forward=1", ns=NS_R)
        sh(f"ip addr add {PEER_IP}/24 dev wsp-p0", ns=NS_P)
        # Advertise MSS 8960 towards the data plane although this interface has MTU 1500.
        sh(f"ip route add {DP_IP}/32 via {R1_IP} dev wsp-p0 advmss 8960", ns=NS_P)
        # IPv6 beside it (the data plane's own veth keeps the kernel's IPv6 off).
        sh("sysctl -qw net.ipv6.conf.all.forwarding=1", ns=NS_R)
        for ns, dev, addr in ((NS_R, "wsp-r0", R0_IP6), (NS_R, "wsp-r1", R1_IP6),
                              (NS_P, "wsp-p0", PEER_IP6)):
            sh(f"sysctl -qw net.ipv6.conf.{dev}.disable_ipv6=0", ns=ns)
            sh(f"ip -6 addr add {addr}/64 dev {dev} nodad", ns=ns)
        sh(f"ip -6 route add {DP_IP6}/128 via {R1_IP6} dev wsp-p0 advmss 8940", ns=NS_P)
        return self

    def set_router_mtu(self, mtu):
        h.sh(f"ip link set wsp-r1 mtu {mtu}", ns=NS_R)

    def teardown(self):
        h.sh(f"ip netns del {NS_R}", check=False)
        h.sh(f"ip netns del {NS_P}", check=False)
        h.sh(f"ip link del {DP_IF}", check=False)

    def __exit__(self, *exc):
        self.teardown()


def config(tmp, metrics_port, src_report):
    text = f"""version: 1
dataplane:
  lcores: [1]
  idle: adaptive
  file_prefix: wsp-pmtu
  hugepages: false
  memory_mb: 512
  mbufs: 4095
ports:
  - name: p0
    device: "net_af_packet_wsp_pmtu,iface={DP_IF},blocksz=65536,framesz=32768,framecnt=256,qpairs=1"
    mtu: 9000
    addresses: [{DP_IP}/24, "{DP_IP6}/64"]
    gateway: {R0_IP}
    gateway6: {R0_IP6}
ipv6:
  link_local: eui64
  dad_transmits: 1
services:
  - {{ name: echo-tcp, kind: echo, protocol: tcp, port: 7, framing: none }}
  - {{ name: load, kind: source, protocol: tcp, target: "{PEER_IP}:5009",
       message_size: 1048576, count: {COUNT}, duration_s: 0, report: {src_report} }}
tcp:
  mtu_probing: true
  pmtu_recovery_s: 600
control:
  metrics_listen: 127.0.0.1:{metrics_port}
"""
    path = os.path.join(tmp, "wirespeed.yaml")
    with open(path, "w") as f:
        f.write(text)
    return path


NAMES = ["pmtu_reductions", "pmtu_increases", "pmtu_black_holes", "pmtu_probes_sent",
         "pmtu_probes_succeeded", "pmtu_probes_failed", "icmp_accepted", "icmp_ignored_mtu",
         "icmp_ignored_sequence", "icmp_ignored_no_connection", "pmtu_cache_hits"]


def counters(ctl):
    s = ctl.scrape()
    return {n: s.get((f"wirespeed_tcp_{n}_total", frozenset()), 0.0) for n in NAMES} | {
        "retransmits": s.get(("wirespeed_tcp_retransmitted_segments_total", frozenset()), 0.0)}


def delta(after, before):
    return {k: after[k] - before.get(k, 0.0) for k in after}


def echo(res, tmp, what, timeout):
    tl.DP_IP = DP_IP
    t0 = time.time()
    e = tl.run_echo(NS_P, tmp, TOTAL, timeout=timeout)
    dt = time.time() - t0
    mbps = e.get("received", 0) * 8 / max(e.get("seconds", 1), 1e-9) / 1e6
    res.check(tl.echo_ok(e, TOTAL), f"{what}: kernel -> echo service -> kernel, {TOTAL >> 20} MiB, "
              f"SHA-256 equal ({mbps:.0f} Mbit/s, {dt:.1f} s)", json.dumps(e)[:600])


def echo6(res, ctl):
    """Over IPv6 through the router's 1500-byte hop: the kernel's echo comes back whole and
    the router's Packet Too Big lowered the IPv6 connection's MSS (a reduction, no black
    hole), counted on the family="ipv6" series."""
    deadline = time.time() + 15  # our DAD (1 s), then the router resolves us
    while time.time() < deadline:
        if h.sh(f"ping -6 -n -c 1 -W 1 {DP_IP6}", ns=NS_P, check=False, timeout=5).returncode == 0:
            break
        time.sleep(0.3)
    b = counters(ctl)
    seg6 = ("wirespeed_tcp_received_segments_by_family_total", frozenset({("family", "ipv6")}))
    s0 = ctl.scrape().get(seg6, 0.0)
    r = h.sh(f"timeout 60 /usr/bin/python3 {TCP_SHA} {DP_IP6} 7 {TOTAL6}", ns=NS_P, check=False,
             timeout=70)
    try:
        e = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        e = {}
    res.check(e.get("bytes") == TOTAL6 and e.get("sent") == e.get("received"),
              f"IPv6 through the 1500-byte hop: kernel -> echo service -> kernel, "
              f"{TOTAL6 >> 20} MiB, SHA-256 equal ({e.get('seconds', 0):.1f} s)",
              (r.stdout + r.stderr)[-600:])
    time.sleep(0.5)  # published
    d = delta(counters(ctl), b)
    segs = ctl.scrape().get(seg6, 0.0) - s0
    res.check(d["pmtu_reductions"] >= 1 and d["icmp_accepted"] >= 1 and d["pmtu_black_holes"] == 0
              and segs > 0, f"ICMPv6 Packet Too Big accepted and the IPv6 MSS lowered "
              f"({d['icmp_accepted']:.0f} accepted, {d['pmtu_reductions']:.0f} reductions, "
              f"{segs:.0f} IPv6 segments in)", json.dumps(d))


def phase(res, path, what, router_mtu, metrics_port, again=False, ipv6=False):
    """One data plane run over the path with wsp-r1 at `router_mtu`: the source client
    sends COUNT MiB to a verifying kernel sink while the kernel echoes TOTAL bytes
    through the echo service. Returns the data plane's counters at the end, and with
    `again` also after one more echo connection (which should start from the path MTU
    remembered for the peer)."""
    path.set_router_mtu(router_mtu)
    tmp = h.temp_dir("wsp-", TMP)
    sink_report = os.path.join(tmp, "sink.json")
    src_report = os.path.join(tmp, "source.json")
    wsperf = os.path.join(h.BUILD, "tools", "wsperf", "wsperf")
    sink = subprocess.Popen(
        ["ip", "netns", "exec", NS_P, wsperf, "sink", "--listen", f"{PEER_IP}:5009", "--verify",
         "--report", sink_report, "--duration", "100", "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    c, c2 = {}, {}
    try:
        time.sleep(0.5)
        cfg = config(tmp, metrics_port, src_report)
        with h.Dataplane(cfg, tmp) as dp, h.Control(cfg, tmp, metrics_port) as ctl:
            echo(res, tmp, what, timeout=80)
            if ipv6:
                echo6(res, ctl)
            deadline = time.time() + 60
            while not os.path.exists(src_report) and time.time() < deadline:
                time.sleep(0.2)
            time.sleep(1.5)  # the report is written; let the stats segment publish
            c = counters(ctl)
            print(f"  counters ({what}):", json.dumps(c))
            if again:
                echo(res, tmp, what + ", a new connection", timeout=60)
                time.sleep(1.5)
                c2 = counters(ctl)
                print(f"  counters ({what}, new connection):", json.dumps(delta(c2, c)))
        res.check(dp.proc.returncode == 0, f"{what}: data plane exits 0 on SIGINT",
                  dp.output()[-400:])
    finally:
        time.sleep(0.5)
        sink.terminate()
        out = sink.communicate(timeout=10)[0]
    try:
        sr = json.load(open(sink_report))
    except Exception:
        sr = {"raw": out[-500:]}
    try:
        src = json.load(open(src_report))
    except Exception:
        src = {"raw": "no source report"}
    res.check(src.get("messages") == COUNT and sr.get("messages") == COUNT and
              sr.get("bytes") == COUNT << 20 and sr.get("verify_errors", 1) == 0 and
              sr.get("protocol_errors", 1) == 0,
              f"{what}: data plane source -> kernel sink, {COUNT} x 1 MiB, every byte verified "
              f"({src.get('bits_per_second', 0) / 1e6:.0f} Mbit/s)",
              json.dumps({"sink": sr, "source": src})[:800])
    return (c, c2) if again else c


def main():
    global TMP
    h.need_root()
    h.require("ping")
    res = h.Results("pmtu")
    TMP = h.temp_dir("wsp-")
    with MixedPath() as path:
        r = h.sh(f"ping -n -c 2 -i 0.2 -W 2 {R1_IP}", ns=NS_P, check=False, timeout=10)
        res.check(r.returncode == 0, "peer reaches the router", r.stdout[-200:])
        r = h.sh(f"ping -n -M do -s 1473 -c 1 -W 2 {R1_IP}", ns=NS_P, check=False, timeout=10)
        res.check(r.returncode != 0, "the peer's side carries at most 1500 bytes",
                  (r.stdout + r.stderr)[-200:])

        # --- 1. The router reports the narrow hop with ICMP.
        d = phase(res, path, "ICMP path (router MTU 1500)", 1500, METRICS_PORT, ipv6=True)
        res.check(d.get("pmtu_reductions", 0) >= 1 and d.get("icmp_accepted", 0) >= 1,
                  f"ICMP fragmentation-needed accepted and the MSS lowered "
                  f"({d.get('icmp_accepted', 0):.0f} accepted, "
                  f"{d.get('pmtu_reductions', 0):.0f} reductions, "
                  f"{d.get('icmp_ignored_mtu', 0):.0f} repeats ignored)")
        res.check(d.get("pmtu_black_holes", 1) == 0, "no black hole declared while ICMP flows")

        # --- 2. Silent drops: only black-hole detection and probing can help.
        d, d2 = phase(res, path, "black-hole path (no ICMP)", 9000, METRICS_PORT + 1, again=True)
        res.check(d.get("icmp_accepted", 1) == 0,
                  "no ICMP reached the data plane on the black-hole path")
        res.check(d.get("pmtu_black_holes", 0) >= 1 and d.get("pmtu_reductions", 0) >= 1,
                  f"black hole detected ({d.get('pmtu_black_holes', 0):.0f}) and the MSS lowered")
        res.check(d.get("pmtu_probes_sent", 0) >= 1 and d.get("pmtu_probes_succeeded", 0) >= 1,
                  f"probing raised the MSS again ({d.get('pmtu_probes_sent', 0):.0f} probes sent, "
                  f"{d.get('pmtu_probes_succeeded', 0):.0f} acknowledged, "
                  f"{d.get('pmtu_probes_failed', 0):.0f} lost)")
        n = delta(d2, d) if d2 else {}
        res.check(n.get("pmtu_cache_hits", 0) >= 1 and n.get("pmtu_black_holes", 1) == 0,
                  "a new connection to the peer starts from the remembered path MTU: no second "
                  f"black hole ({n.get('pmtu_cache_hits', 0):.0f} cache hits, "
                  f"{n.get('retransmits', 0):.0f} retransmissions)")
        rx = h.sh("ip -s link show wsp-p0", ns=NS_P, check=False).stdout
        print("  peer interface:", " ".join(rx.split())[-160:])
    sys.exit(res.finish())


if __name__ == "__main__":
    main()
