#!/usr/bin/python3
"""TCP and UDP over IPv6 against the Linux kernel in a namespace, with the real binaries
(af_packet, one core, `idle: adaptive`). One data plane serves both families on one port.
1. UDP echo over IPv6 of datagrams of 1..1452 bytes (1452 fills a 1500-byte packet), each
   echo compared byte for byte (a python socket client in the namespace).
2. TCP echo (framing none) of 64 MiB over IPv6: SHA-256 of what came back equals that sent.
3. 500 concurrent TCP connections over IPv6 (asyncio in the namespace): all open first,
   then each sends a few bytes and reads them back.
4. `iperf3 -6 -c` against the iperf3 service: TCP, -R and -u, 2 s each.
5. `curl -6` and `wrk` on http://[addr]:80/ against the http service.
6. TCP echo over IPv4 and over IPv6 at the same time, both SHA-256 checked.
7. The TCP and UDP counters by family: the IPv6-only steps move the family="ipv6" series
   and leave the IPv4 ones alone; IPv4 traffic (UDP echo, one TCP echo) moves the IPv4
   ones only; each unlabelled total is the sum of its two families; the status screen
   (text and JSON) shows both; promtool check metrics is clean.
Then `family:` services, curl to the link-local address, and Packet Too Big from a kernel
router: the peer namespace forwards to a third one behind a 1280-byte link, whose route
advertises MSS 1440; our 1500-byte segments (a 1 MiB HTTP response, then an 8 MiB echo)
draw ICMPv6 Packet Too Big (RFC 8201) from the router, the connection's MSS falls to 1220
and both come back whole.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness as h  # noqa: E402
import test_iperf3  # noqa: E402
from test_ipv6 import eui64_link_local  # noqa: E402

DP_IP = "10.79.7.1"
PEER_IP = "10.79.7.2"
DP_IP6 = "2001:db8:7b::1"
PEER_IP6 = "2001:db8:7b::2"
FAR_NS = "wst-v6l4-far"
ROUTER_FAR_IP6 = "2001:db8:7c::1"  # the peer namespace's address on the 1280-byte link
FAR_IP6 = "2001:db8:7c::2"
METRICS_PORT = 9598
PY = "/usr/bin/python3"
TCP_SHA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tcp_sha.py")
MiB = 1024 * 1024
UDP_SIZES = (1, 2, 3, 64, 512, 1000, 1232, 1400, 1451, 1452)
UDP_FRAGMENTED = (1453, 3000, 8000, 30000)  # in fragments both ways (RFC 8200 4.5)
CONNS = 500

SERVICES = ["{ name: echo-udp, kind: echo, protocol: udp, port: 7 }",
            "{ name: echo-tcp, kind: echo, protocol: tcp, port: 7, framing: none }",
            "{ name: echo6-only, kind: echo, protocol: tcp, port: 8, framing: none, family: ipv6 }",
            "{ name: echo4-only, kind: echo, protocol: tcp, port: 9, framing: none, family: ipv4 }",
            "{ name: perf, kind: iperf3, protocol: tcp, port: 5201 }",
            '{ name: web, kind: http, protocol: tcp, port: 80, responses: '
            '[ { path: "/", body_bytes: 438 }, { path: "/big", body_bytes: 1048576 } ] }']

# In the namespace: one datagram per size (random bytes), up to 3 tries of 1 s each;
# prints "SIZE ok|bad|lost" per size.
UDP6 = r'''
import os, socket, sys
dst = sys.argv[1]
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.settimeout(1.0)
for size in map(int, sys.argv[2:]):
    msg = os.urandom(size)
    res = "lost"
    for _ in range(3):
        s.sendto(msg, (dst, 7))
        try:
            data, src = s.recvfrom(65536)
        except socket.timeout:
            continue
        res = "ok" if data == msg and src[0] == dst and src[1] == 7 else "bad"
        break
    print(size, res, flush=True)
'''

# In the namespace: N connections opened together (all held open at once), then each sends
# 32 distinct bytes and reads them back; prints JSON counts.
MANY = r'''
import asyncio, json, sys, time
dst, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

async def opener(i):
    return await asyncio.wait_for(asyncio.open_connection(dst, port), 20)

async def talk(i, rw):
    r, w = rw
    msg = b"conn-%05d-" % i + bytes(range(65, 65 + 21))
    w.write(msg)
    await w.drain()
    got = await asyncio.wait_for(r.readexactly(len(msg)), 20)
    w.close()
    return got == msg

async def main():
    t0 = time.time()
    opened = await asyncio.gather(*(opener(i) for i in range(n)), return_exceptions=True)
    conns = [c for c in opened if not isinstance(c, BaseException)]
    errs = sorted({repr(c) for c in opened if isinstance(c, BaseException)})[:3]
    t1 = time.time()
    ok = await asyncio.gather(*(talk(i, c) for i, c in enumerate(conns)), return_exceptions=True)
    print(json.dumps({"opened": len(conns), "echoed": sum(1 for x in ok if x is True),
                      "open_s": t1 - t0, "total_s": time.time() - t0, "errors": errs}))

asyncio.run(main())
'''


def config(tmp, device):
    return h.write_config(tmp, device=device, address=f"{DP_IP}/24", address6=f"{DP_IP6}/64",
                          gateway6=PEER_IP6, services=SERVICES, prefix="wst-ipv6l4",
                          metrics_port=METRICS_PORT,
                          extra="ipv6:\n  link_local: eui64\n  dad_transmits: 1\n"
                                "tcp:\n  time_wait_ms: 0\n")


def tcp_sha(ns, host, nbytes, timeout=120):
    """Starts tcp_sha.py in `ns` against HOST:7; returns the Popen."""
    return subprocess.Popen(["ip", "netns", "exec", ns, "timeout", str(timeout), PY, TCP_SHA,
                             host, "7", str(nbytes)], text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)


def sha_result(proc, timeout=130):
    try:
        out = proc.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        h.terminate(proc)
        return {}, "timed out"
    line = out.strip().splitlines()[-1] if out.strip() else ""
    try:
        return json.loads(line), out[-400:]
    except ValueError:
        return {}, out[-400:]


def sha_ok(j, nbytes):
    return j.get("bytes") == nbytes and j.get("sent") == j.get("received")


def wait_ipv6_ready(ns):
    """DAD on both sides: the data plane's address answers ping -6 (bounded, 15 s)."""
    deadline = time.time() + 15
    while time.time() < deadline:
        r = h.sh(f"ping -6 -c 1 -W 1 {DP_IP6}", ns=ns, check=False, timeout=10)
        if r.returncode == 0:
            return True
        time.sleep(0.3)
    return False


def check_udp(res, ns, tmp):
    script = h.write_script(tmp, "udp6.py", UDP6)
    for sizes, how in ((UDP_SIZES, "in one packet"), (UDP_FRAGMENTED, "in fragments")):
        r = h.sh(f"{PY} {script} {DP_IP6} {' '.join(map(str, sizes))}", ns=ns, check=False,
                 timeout=60)
        got = dict(line.split() for line in r.stdout.splitlines() if len(line.split()) == 2)
        good = [s for s in sizes if got.get(str(s)) == "ok"]
        res.check(len(good) == len(sizes),
                  f"UDP echo over IPv6 {how}: {len(good)}/{len(sizes)} sizes "
                  f"{sizes[0]}..{sizes[-1]} bytes echoed intact", r.stdout + r.stderr[-300:])


# In the namespace: connects to HOST:PORT; prints "echoed", "refused" or the error.
CONNECT = r'''
import socket, sys
try:
    s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
    s.sendall(b"family")
    print("echoed" if s.recv(16) == b"family" else "bad")
except ConnectionRefusedError:
    print("refused")
except OSError as e:
    print(repr(e))
'''


def check_family(res, ns, tmp, ctl):
    """`family:` restricts a service: the other family is refused as by a closed port."""
    before = ctl.drops().get("tcp_no_listener", 0)
    script = h.write_script(tmp, "connect.py", CONNECT)
    want = {(DP_IP6, 8): "echoed", (DP_IP, 8): "refused", (DP_IP, 9): "echoed",
            (DP_IP6, 9): "refused"}
    got = {k: h.sh(f"{PY} {script} {k[0]} {k[1]}", ns=ns, check=False, timeout=30).stdout.strip()
           for k in want}
    res.check(got == want, "family: ipv6 / ipv4 services: the other family refused (RST), "
              "their own echoed", str(got))
    res.check(ctl.wait_for(lambda: ctl.drops().get("tcp_no_listener", 0) - before == 2, 5),
              "both refused SYNs counted as tcp_no_listener",
              str(ctl.drops().get("tcp_no_listener", 0) - before))


def check_link_local(res, ns, peer_if, dp_mac):
    """TCP to the data plane's link-local address, from the kernel's link-local one."""
    url = f"http://[{eui64_link_local(dp_mac)}%25{peer_if}]:80/"
    r = h.sh(f"curl -6 -g -s --max-time 20 -o /dev/null -w '%{{http_code}} %{{size_download}}' "
             f"'{url}'", ns=ns, check=False, timeout=30)
    res.check(r.returncode == 0 and r.stdout.strip() == "200 438",
              f"curl -6 {url}: 200 with a 438-byte body", f"rc={r.returncode} {r.stdout}")


def check_tcp_bulk(res, ns):
    n = 64 * MiB
    j, out = sha_result(tcp_sha(ns, DP_IP6, n))
    secs = j.get("seconds", 0) or 1e-9
    res.check(sha_ok(j, n), f"TCP echo over IPv6: 64 MiB echoed, SHA-256 equal "
              f"({j.get('bytes', 0) / MiB:.1f} MiB back in {secs:.1f} s, "
              f"{j.get('bytes', 0) * 8 / secs / 1e6:.0f} Mbit/s each way)", out)


def check_many(res, ns, tmp):
    script = h.write_script(tmp, "many6.py", MANY)
    r = h.sh(f"timeout 60 {PY} {script} {DP_IP6} 7 {CONNS}", ns=ns, check=False, timeout=70)
    try:
        j = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        j = {}
    res.check(j.get("opened") == CONNS and j.get("echoed") == CONNS,
              f"{CONNS} concurrent TCP connections over IPv6: {j.get('opened', 0)} opened in "
              f"{j.get('open_s', 0):.2f} s, {j.get('echoed', 0)} echoed "
              f"({j.get('total_s', 0):.2f} s in all)", r.stdout[-500:] + r.stderr[-300:])


def iperf(ns, args):
    rc, j, out = test_iperf3.iperf(ns, f"-6 {args}", timeout=20, server=DP_IP6)
    return rc, j.get("end", {}), out


def check_iperf3(res, ns):
    rc, e, out = iperf(ns, "-t 2")
    got = e.get("sum_received", {}).get("bytes", 0)
    res.check(rc == 0 and got > 0, f"iperf3 -6 TCP: server received {got / MiB:.0f} MiB "
              f"({e.get('sum_received', {}).get('bits_per_second', 0) / 1e6:.0f} Mbit/s)", out)
    rc, e, out = iperf(ns, "-t 2 -R")
    got = e.get("sum_received", {}).get("bytes", 0)
    res.check(rc == 0 and got > 0, f"iperf3 -6 -R: client received {got / MiB:.0f} MiB "
              f"({e.get('sum_received', {}).get('bits_per_second', 0) / 1e6:.0f} Mbit/s)", out)
    rc, e, out = iperf(ns, "-u -b 200M -t 2")
    s, sent = e.get("sum", {}), e.get("sum_sent", {}).get("packets", 0)
    res.check(rc == 0 and s.get("packets", 0) > 0 and sent > 0 and s.get("lost_percent", 100) < 20,
              f"iperf3 -6 -u -b 200M: {sent} datagrams sent, lost {s.get('lost_packets')} "
              f"({s.get('lost_percent', 0):.1f} %)", out)


def check_http(res, ns):
    url = f"http://[{DP_IP6}]:80/"
    r = h.sh(f"curl -6 -g -s --max-time 20 -o /dev/null -w '%{{http_code}} %{{size_download}}' "
             f"{url}", ns=ns, check=False, timeout=30)
    res.check(r.returncode == 0 and r.stdout.strip() == "200 438",
              f"curl -6 {url}: 200 with a 438-byte body", f"rc={r.returncode} {r.stdout}")
    r = h.sh(f"wrk -t1 -c32 -d3s {url}", ns=ns, check=False, timeout=60)
    out = r.stdout + r.stderr
    rps = h.wrk_summary(out).get("rate", 0.0)
    res.check(r.returncode == 0 and rps > 0 and "Socket errors" not in out
              and "Non-2xx" not in out, f"wrk -t1 -c32 -d3s {url}: {rps:.0f} requests/s", out[-600:])


def check_both_families(res, ns):
    n = 16 * MiB
    p4, p6 = tcp_sha(ns, DP_IP, n), tcp_sha(ns, DP_IP6, n)
    j4, out4 = sha_result(p4)
    j6, out6 = sha_result(p6)
    res.check(sha_ok(j4, n) and sha_ok(j6, n),
              f"TCP echo over IPv4 and IPv6 at once: 16 MiB each, both SHA-256 equal "
              f"(v4 {j4.get('seconds', 0):.1f} s, v6 {j6.get('seconds', 0):.1f} s)", out4 + out6)


# The per-family series: (name, expected total name or None).
FAMILY_SERIES = (
    ("wirespeed_udp_received_datagrams_by_family_total", "wirespeed_udp_received_datagrams_total"),
    ("wirespeed_udp_sent_datagrams_by_family_total", "wirespeed_udp_sent_datagrams_total"),
    ("wirespeed_tcp_received_segments_by_family_total", "wirespeed_tcp_received_segments_total"),
    ("wirespeed_tcp_sent_segments_by_family_total", "wirespeed_tcp_sent_segments_total"),
    ("wirespeed_tcp_passive_opens_by_family_total", "wirespeed_tcp_passive_opens_total"),
    ("wirespeed_tcp_active_opens_by_family_total", "wirespeed_tcp_active_opens_total"),
    ("wirespeed_tcp_resets_sent_by_family_total", "wirespeed_tcp_resets_sent_total"),
    ("wirespeed_tcp_resets_received_by_family_total", "wirespeed_tcp_resets_received_total"),
    ("wirespeed_tcp_established_by_family_total", None),
)


def family_values(ctl):
    m = ctl.scrape()
    v = {(name, fam): h.prom.value(m, name, family=fam) for name, _ in FAMILY_SERIES
         for fam in ("ipv4", "ipv6")}
    v.update({(total, "all"): h.prom.value(m, total) for _, total in FAMILY_SERIES if total})
    return v


def moved(before, after, name, fam):
    return after[(name, fam)] - before[(name, fam)]


def check_families_apart(res, ctl, before, after, fam, what):
    """After traffic of family `fam` only: its series moved, the other family's did not."""
    other = "ipv4" if fam == "ipv6" else "ipv6"
    still = [n for n, _ in FAMILY_SERIES if moved(before, after, n, other) != 0]
    grew = [n for n in ("wirespeed_tcp_received_segments_by_family_total",
                        "wirespeed_tcp_sent_segments_by_family_total",
                        "wirespeed_tcp_passive_opens_by_family_total",
                        "wirespeed_tcp_established_by_family_total")
            if moved(before, after, n, fam) <= 0]
    res.check(not still and not grew,
              f"{what} moved the family=\"{fam}\" TCP series only "
              f"({moved(before, after, 'wirespeed_tcp_received_segments_by_family_total', fam):.0f}"
              f" segments in), the {other} ones stayed", f"moved {other}: {still}; flat: {grew}")


def check_ipv4_counts(res, ns, tmp, ctl):
    """IPv4 traffic only: UDP echo of a few datagrams and one TCP echo move the IPv4
    series; the IPv6 ones stay; every total is the sum of its families."""
    time.sleep(0.3)  # the last step's segments published (stats_interval_ms is 100)
    b = family_values(ctl)
    script = h.write_script(tmp, "udp4.py", UDP6.replace("AF_INET6", "AF_INET"))
    sizes = (1, 100, 1000, 1472)
    r = h.sh(f"{PY} {script} {DP_IP} {' '.join(map(str, sizes))}", ns=ns, check=False,
             timeout=30)
    ok = r.stdout.split().count("ok")
    j, out = sha_result(tcp_sha(ns, DP_IP, 1 * MiB, timeout=30), timeout=40)
    res.check(ok == len(sizes) and sha_ok(j, MiB), "IPv4 UDP echo (4 sizes) and a 1 MiB TCP "
              "echo beside IPv6", r.stdout[-300:] + out)
    time.sleep(0.3)
    a = family_values(ctl)
    udp4 = (moved(b, a, "wirespeed_udp_received_datagrams_by_family_total", "ipv4"),
            moved(b, a, "wirespeed_udp_sent_datagrams_by_family_total", "ipv4"))
    udp6 = (moved(b, a, "wirespeed_udp_received_datagrams_by_family_total", "ipv6"),
            moved(b, a, "wirespeed_udp_sent_datagrams_by_family_total", "ipv6"))
    res.check(udp4 == (len(sizes), len(sizes)) and udp6 == (0, 0),
              f"UDP over IPv4 counted as family=\"ipv4\" (in/out {udp4}), IPv6 unchanged {udp6}")
    check_families_apart(res, ctl, b, a, "ipv4", "the IPv4 TCP echo")
    sums = {t: (a[(n, "ipv4")] + a[(n, "ipv6")], a[(t, "all")]) for n, t in FAMILY_SERIES if t}
    res.check(all(x == y for x, y in sums.values()),
              "each unlabelled total equals the sum of its family=\"ipv4\" and \"ipv6\" series",
              str(sums))
    st = subprocess.run([h.CONTROL, "-c", ctl.config, "status", "--json", "--interval", "0.2"],
                        capture_output=True, text=True, timeout=30)
    try:
        fams = {f["family"]: f for f in json.loads(st.stdout).get("families", [])}
    except ValueError:
        fams = {}
    res.check(fams.keys() == {"ipv4", "ipv6"}
              and fams["ipv4"]["udp_received_datagrams"] == a[(
                  "wirespeed_udp_received_datagrams_by_family_total", "ipv4")]
              and fams["ipv6"]["tcp_passive_opens"] >= CONNS,
              "status --json: TCP and UDP figures per family", st.stdout[-600:] + st.stderr)
    st = subprocess.run([h.CONTROL, "-c", ctl.config, "status", "--interval", "0.2"],
                        capture_output=True, text=True, timeout=30)
    table = st.stdout.split("FAMILY", 1)[-1]  # the port lines also start with "ipv6"
    rows = [ln.split()[0] for ln in table.splitlines() if ln.split()[:1] in (["ipv4"], ["ipv6"])]
    res.check("FAMILY" in st.stdout and rows.count("ipv4") == 2 and rows.count("ipv6") == 2,
              "status screen: a totals row and a rates row per family", st.stdout[-900:])
    pc = subprocess.run("promtool check metrics", shell=True, input=ctl.scrape_text(),
                        capture_output=True, text=True, timeout=30)
    res.check(pc.returncode == 0 and not (pc.stdout + pc.stderr).strip(),
              "promtool check metrics is clean with the family series",
              pc.stdout[-400:] + pc.stderr[-400:])


def far_namespace(peer):
    """A third namespace behind the peer, which forwards over a 1280-byte veth."""
    h.sh(f"ip netns del {FAR_NS}", check=False)
    h.sh("ip link del wst-v6l4-r1", check=False)  # left in the root namespace by a crash
    h.sh(f"ip netns add {FAR_NS}")
    h.sh("ip link add wst-v6l4-r1 mtu 1280 type veth peer name wst-v6l4-f0 mtu 1280")
    h.sh(f"ip link set wst-v6l4-r1 netns {peer.ns}")
    h.sh(f"ip link set wst-v6l4-f0 netns {FAR_NS}")
    h.sh("sysctl -qw net.ipv6.conf.all.forwarding=1", ns=peer.ns)
    for ns, dev, addr in ((peer.ns, "wst-v6l4-r1", ROUTER_FAR_IP6), (FAR_NS, "wst-v6l4-f0", FAR_IP6)):
        h.sh(f"sysctl -qw net.ipv6.conf.{dev}.disable_ipv6=0", ns=ns)
        h.sh(f"ip -6 addr add {addr}/64 dev {dev} nodad", ns=ns)
        h.sh(f"ethtool -K {dev} tx off", ns=ns)
        h.sh(f"ip link set {dev} up", ns=ns)
    h.sh("ip link set lo up", ns=FAR_NS)
    # The far end offers MSS 1440, as a host on a 1500-byte link would: only the router's
    # 1280-byte hop can tell us to send less.
    h.sh(f"ip -6 route add {DP_IP6}/128 via {ROUTER_FAR_IP6} dev wst-v6l4-f0 advmss 1440",
         ns=FAR_NS)


def check_packet_too_big(res, peer, ctl):
    far_namespace(peer)
    before = ctl.value("wirespeed_tcp_pmtu_reductions_total")
    holes = ctl.value("wirespeed_tcp_pmtu_black_holes_total")
    # A 1 MiB response goes out in full 1440-byte segments whatever the timing (an echo
    # may answer each 1220-byte segment from the far end alone, and fit the hop).
    r = h.sh(f"curl -g -s -o /dev/null -w '%{{size_download}}' --max-time 30 http://[{DP_IP6}]/big",
             ns=FAR_NS, check=False, timeout=40)
    res.check(r.stdout.strip() == str(MiB), f"1 MiB HTTP response through the 1280-byte hop: "
              f"{r.stdout.strip() or r.stderr.strip()[-200:]} bytes")
    n = 8 * MiB
    j, out = sha_result(tcp_sha(FAR_NS, DP_IP6, n, timeout=60), timeout=70)
    red = ctl.value("wirespeed_tcp_pmtu_reductions_total") - before
    res.check(sha_ok(j, n), f"TCP echo over IPv6 through a 1280-byte hop: 8 MiB, SHA-256 equal "
              f"({j.get('seconds', 0):.1f} s)", out)
    # Black-hole detection also lowers the MSS: the reduction must come from the ICMPv6.
    res.check(ctl.wait_for(lambda: ctl.value("wirespeed_tcp_pmtu_reductions_total") - before >= 1,
                           5) and ctl.value("wirespeed_tcp_pmtu_black_holes_total") == holes,
              "the router's Packet Too Big lowered the connection's MSS "
              "(wirespeed_tcp_pmtu_reductions_total, no black hole)", f"{red}")


def main():
    h.need_root()
    h.require("ping", "ip", "iperf3", "curl", "wrk", "timeout")
    res = h.Results("ipv6-l4")
    with tempfile.TemporaryDirectory() as tmp, h.VethPeer("v6l4", PEER_IP) as peer:
        ns = peer.ns
        h.sh(f"sysctl -qw net.ipv6.conf.{peer.peer_if}.disable_ipv6=0", ns=ns)
        h.sh(f"ip -6 addr add {PEER_IP6}/64 dev {peer.peer_if} nodad", ns=ns)
        cfg = config(tmp, peer.device())
        dp_mac = h.sh(f"cat /sys/class/net/{peer.dp_if}/address").stdout.strip()
        try:
            with h.Dataplane(cfg, tmp), h.Control(cfg, tmp, METRICS_PORT) as ctl:
                if res.check(wait_ipv6_ready(ns), f"{DP_IP6} past DAD, answers ping -6"):
                    fam0 = family_values(ctl)
                    for step in (lambda: check_udp(res, ns, tmp), lambda: check_tcp_bulk(res, ns),
                                 lambda: check_many(res, ns, tmp), lambda: check_iperf3(res, ns),
                                 lambda: check_http(res, ns),
                                 lambda: check_families_apart(res, ctl, fam0, family_values(ctl),
                                                              "ipv6", "the IPv6-only steps"),
                                 lambda: check_ipv4_counts(res, ns, tmp, ctl),
                                 lambda: check_both_families(res, ns),
                                 lambda: check_family(res, ns, tmp, ctl),
                                 lambda: check_link_local(res, ns, peer.peer_if, dp_mac),
                                 lambda: check_packet_too_big(res, peer, ctl)):
                        before = ctl.drops()
                        step()
                        # Drops are not failures here (SYN shedding under 500 SYNs is by
                        # design), but each step's are printed to explain its figures.
                        delta = {k: int(v - before.get(k, 0)) for k, v in ctl.drops().items()
                                 if v > before.get(k, 0)}
                        print(f"       drops during it: {delta or 'none'}", flush=True)
        finally:
            h.sh(f"ip netns del {FAR_NS}", check=False)
            if res.failed:
                h.print_log_tails(tmp)
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
