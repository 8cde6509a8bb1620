#!/usr/bin/python3
"""IPv6 against a Linux peer in a namespace over af_packet, with the real binaries.

The data plane's port has an IPv4 and an IPv6 address and an EUI-64 link-local one.
1. Duplicate address detection: the data plane probes each address before using it.
2. The kernel resolves us (neighbour solicitation -> our advertisement) and pings our
   global and link-local addresses with `ping -6`, up to 1452-byte payloads (1500-byte
   packets), and with 1453..8000-byte payloads that travel in fragments both ways
   (reassembled by the data plane, its reply fragmented); every reply checked by ping.
3. We resolve the kernel: the entry learned from its solicitation goes STALE -> DELAY ->
   PROBE while ping runs, and the kernel answers our unicast probe; and an echo request
   from a neighbour we do not know makes the data plane solicit it before it answers.
4. Hostile IPv6 frames (scapy): NDP with a hop limit below 255, a bad ICMPv6 checksum, a
   type 0 routing header, an over-long extension-header chain, a short middle fragment,
   first fragments without the whole header chain or the whole upper-layer header
   (RFC 7112), overlapping fragments (RFC 5722), an unknown option that asks for discard,
   a forged Packet Too Big for a flow we never had. Each is counted under its drop reason in
   wirespeed_drops_total, and ping keeps working.
5. IPv4 still works on the same port at the same time (ping).
6. Router discovery (ipv6.accept_ra): the data plane solicits routers at start; the peer,
   made a router by a scapy advertisement from its link-local address, becomes the default
   router, and the data plane's replies to an off-link address (on the peer's loopback)
   go through it. An advertisement with hop limit 254 is counted and not learned; one
   with a router lifetime of 0 withdraws the router and off-link replies stop.
7. MLDv2: reports of the solicited-node groups at start; a query from the peer draws one,
   decoded by tcpdump in the peer's namespace.
"""
import os
import json
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness as h  # noqa: E402

DP_IP = "10.79.6.1"
PEER_IP = "10.79.6.2"
DP_IP6 = "2001:db8:79::1"
PEER_IP6 = "2001:db8:79::2"
FAR_IP6 = "2001:db8:7a::2"  # on the peer's loopback: off-link for the data plane
METRICS_PORT = 9596
PY = "/usr/bin/python3"


def config(tmp, device):
    text = f"""version: 1
dataplane:
  lcores: [1]
  idle: adaptive
  file_prefix: wst-ipv6
  hugepages: false
  memory_mb: 512
ports:
  - name: p0
    device: "{device}"
    mtu: 1500
    addresses: [{DP_IP}/24, "{DP_IP6}/64"]
ipv6:
  link_local: eui64
  dad_transmits: 1
  accept_ra: true
control:
  metrics_listen: 127.0.0.1:{METRICS_PORT}
"""
    path = os.path.join(tmp, "wirespeed.yaml")
    with open(path, "w") as f:
        f.write(text)
    return path


def eui64_link_local(mac):
    b = [int(x, 16) for x in mac.split(":")]
    b[0] ^= 0x02
    words = [(b[0] << 8) | b[1], (b[2] << 8) | 0xff, 0xfe00 | b[3], (b[4] << 8) | b[5]]
    return "fe80::" + ":".join(f"{w:x}" for w in words)


# Sent from the peer's namespace with scapy; prints one line per check.
SCAPY = r'''
import sys, time
from scapy.all import (Ether, IPv6, ICMPv6EchoRequest, ICMPv6EchoReply, ICMPv6ND_NS, ICMPv6PacketTooBig,
                       ICMPv6NDOptSrcLLAddr, ICMPv6ND_NA, ICMPv6NDOptDstLLAddr, IPv6ExtHdrRouting, IPv6ExtHdrDestOpt,
                       IPv6ExtHdrFragment, HBHOptUnknown, PadN, AsyncSniffer, sendp, conf)
conf.verb = 0
iface, dp_mac, dp_ip6, peer_ip6, stranger = sys.argv[1:6]
my_mac = open(f"/sys/class/net/{iface}/address").read().strip()
eth = Ether(src=my_mac, dst=dp_mac)
what = sys.argv[6]


def link_local():
    ll = [l.split()[0] for l in open("/proc/net/if_inet6")
          if l.split()[5] == iface and l.startswith("fe80")][0]
    return ":".join(ll[i:i + 4] for i in range(0, 32, 4))


if what == "mld-query":
    # A general MLD query from our link-local address (hop limit 1, Router Alert).
    from scapy.all import IPv6ExtHdrHopByHop, RouterAlert, ICMPv6MLQuery
    ll = link_local()
    sendp(Ether(src=my_mac, dst="33:33:00:00:00:01") / IPv6(src=ll, dst="ff02::1", hlim=1) /
          IPv6ExtHdrHopByHop(options=[RouterAlert()]) / ICMPv6MLQuery(), iface=iface)
    print("sent mld-query")
elif what == "ra":
    # A router advertisement from our link-local address to all nodes.
    from scapy.all import ICMPv6ND_RA, ICMPv6NDOptMTU
    lifetime, hlim = int(sys.argv[7]), int(sys.argv[8])
    ll = link_local()
    ra = (Ether(src=my_mac, dst="33:33:00:00:00:01") / IPv6(src=ll, dst="ff02::1", hlim=hlim) /
          ICMPv6ND_RA(routerlifetime=lifetime) / ICMPv6NDOptSrcLLAddr(lladdr=my_mac) /
          ICMPv6NDOptMTU(mtu=1500))
    sendp(ra, iface=iface)
    print("sent ra", lifetime, hlim)
elif what == "resolve":
    # An echo request from an address on the link the data plane has never heard of,
    # sourced from our MAC: to answer, it must solicit `stranger` first.
    sn = AsyncSniffer(iface=iface, timeout=4,
                      lfilter=lambda p: ICMPv6ND_NS in p or ICMPv6EchoReply in p)
    sn.start()
    time.sleep(0.3)
    sendp(eth / IPv6(src=stranger, dst=dp_ip6) / ICMPv6EchoRequest(id=77, seq=1, data=b"x" * 40),
          iface=iface)
    time.sleep(0.5)
    # Answer the solicitation as the stranger would (the kernel does not own it).
    sendp(eth / IPv6(src=stranger, dst=dp_ip6, hlim=255) /
          ICMPv6ND_NA(tgt=stranger, R=0, S=1, O=1) / ICMPv6NDOptDstLLAddr(lladdr=my_mac),
          iface=iface)
    time.sleep(1.0)
    res = sn.stop()
    ns = [p for p in res if ICMPv6ND_NS in p and p[ICMPv6ND_NS].tgt == stranger]
    rep = [p for p in res if ICMPv6EchoReply in p and p[ICMPv6EchoReply].id == 77]
    print("solicited", len(ns))
    print("replied", len(rep))
    if rep:
        print("reply_data_ok", int(bytes(rep[0][ICMPv6EchoReply].data) == b"x" * 40))
else:
    base = IPv6(src=peer_ip6, dst=dp_ip6)
    echo = ICMPv6EchoRequest(id=5, seq=5, data=b"hostile")
    frames = {
        "ndp_bad_hop_limit": eth / IPv6(src=peer_ip6, dst=dp_ip6, hlim=64) /
            ICMPv6ND_NS(tgt=dp_ip6) / ICMPv6NDOptSrcLLAddr(lladdr=my_mac),
        "icmpv6_bad_checksum": eth / base / ICMPv6EchoRequest(id=5, seq=5, cksum=0x1234),
        "ipv6_routing_type0": eth / base / IPv6ExtHdrRouting(type=0, segleft=1,
            addresses=["2001:db8::99"]) / echo,
        "ipv6_ext_chain_too_long": eth / base / (IPv6ExtHdrDestOpt() / IPv6ExtHdrDestOpt() /
            IPv6ExtHdrDestOpt() / IPv6ExtHdrDestOpt() / IPv6ExtHdrDestOpt() /
            IPv6ExtHdrDestOpt() / IPv6ExtHdrDestOpt() / IPv6ExtHdrDestOpt() /
            IPv6ExtHdrDestOpt()) / echo,
        "ipv6_fragment_bad_length": eth / base / IPv6ExtHdrFragment(offset=0, m=1, id=9) /
            b"\x80\x00\x00\x00\x00",
        "ipv6_unknown_option": eth / base / IPv6ExtHdrDestOpt(options=[
            HBHOptUnknown(otype=0x41, optdata=b"\x00\x00\x00\x00")]) / echo,
        # A Packet Too Big quoting a TCP segment of a flow we never had (RFC 5927).
        "icmpv6_error_unmatched": eth / base / ICMPv6PacketTooBig(mtu=1280) /
            IPv6(src=dp_ip6, dst=peer_ip6, nh=6) / bytes(20),
    }
    n = int(sys.argv[7])
    for name, f in frames.items():
        sendp([f] * n, iface=iface)
        print("sent", name, n)
    # A first fragment whose destination options run past it (RFC 7112).
    cut = eth / base / IPv6ExtHdrFragment(offset=0, m=1, id=11, nh=60) / bytes([58, 4]) / bytes(6)
    # And a tiny one: 8 bytes of a 20-byte TCP header (the upper-layer header cut).
    tiny = eth / base / IPv6ExtHdrFragment(offset=0, m=1, id=12, nh=6) / bytes(8)
    sendp([cut] * (n // 2) + [tiny] * (n - n // 2), iface=iface)
    print("sent ipv6_fragment_incomplete_chain", n)
    # Overlapping fragments: the second starts inside the first (RFC 5722).
    pairs = []
    for i in range(n):
        pairs.append(eth / base / IPv6ExtHdrFragment(offset=0, m=1, id=1000 + i, nh=58) / bytes(16))
        pairs.append(eth / base / IPv6ExtHdrFragment(offset=1, m=0, id=1000 + i, nh=58) / bytes(16))
    sendp(pairs, iface=iface)
    print("sent ipv6_reassembly_overlap", n)
'''


def ping6(results, peer, target, size, count=3, what=None):
    r = h.sh(f"ping -6 -c {count} -i 0.2 -W 2 -s {size} {target}", ns=peer.ns, check=False,
             timeout=30)
    m = re.search(r"(\d+) received", r.stdout)
    got = int(m.group(1)) if m else 0
    return results.check(r.returncode == 0 and got == count,
                         what or f"ping -6 -s {size} {target}: {got}/{count} replies",
                         r.stdout[-300:] + r.stderr[-300:])


def main():
    h.need_root()
    h.require("ping", "ip", "tcpdump", "promtool")
    results = h.Results("ipv6")
    with tempfile.TemporaryDirectory() as tmp, h.VethPeer("v6", PEER_IP) as peer:
        h.sh(f"sysctl -qw net.ipv6.conf.{peer.peer_if}.disable_ipv6=0", ns=peer.ns)
        h.sh(f"ip -6 addr add {PEER_IP6}/64 dev {peer.peer_if} nodad", ns=peer.ns)
        cfg = config(tmp, peer.device())
        try:
            with h.Dataplane(cfg, tmp) as dp, h.Control(cfg, tmp, METRICS_PORT) as ctl:
                run(results, peer, dp, ctl, tmp)
        finally:
            if results.failed:
                h.print_log_tails(tmp)
    return results.finish()


def run(results, peer, dp, ctl, tmp):
    dp_mac = h.sh(f"cat /sys/class/net/{peer.dp_if}/address").stdout.strip()
    # 1. DAD: one probe per address (link-local and global), then the addresses are used.
    results.check(ctl.wait_for(lambda: ctl.value("wirespeed_ndp_solicitations_sent_total") >= 2,
                               timeout=5), "DAD probes sent for both addresses")
    time.sleep(1.5)
    # 2. The kernel resolves us and pings us, IPv4 alongside.
    ping6(results, peer, DP_IP6, 56)
    neigh = h.sh(f"ip -6 neigh show {DP_IP6} dev {peer.peer_if}", ns=peer.ns).stdout
    results.check(dp_mac in neigh, f"kernel resolved {DP_IP6} to {dp_mac}", neigh)
    for size in (0, 1, 100, 1000, 1452):
        ping6(results, peer, DP_IP6, size)
    # Fragmented both ways: the data plane reassembles the request and fragments the reply.
    for size in (1453, 3000, 8000):
        ping6(results, peer, DP_IP6, size)
    ll = eui64_link_local(dp_mac)
    ping6(results, peer, f"{ll}%{peer.peer_if}", 56, what=f"ping -6 link-local {ll}")
    r = h.sh(f"ping -c 3 -i 0.2 -W 2 {DP_IP}", ns=peer.ns, check=False)
    results.check(r.returncode == 0, "IPv4 ping on the same port", r.stdout[-200:])
    # 3. We resolve the kernel: 8 s of pings outlast DELAY_FIRST_PROBE_TIME (5 s), so the
    # data plane probes the kernel with a unicast solicitation, which it answers.
    ping6(results, peer, DP_IP6, 56, count=40, what="ping -6 for 8 s (DELAY -> PROBE)")
    results.check(ctl.value("wirespeed_ndp_advertisements_received_total") >= 1,
                  "the kernel answered the data plane's solicitation")
    results.check(ctl.drops().get("ndp_resolve_failed", 0) == 0, "no resolution failed")
    # A neighbour unknown to the data plane: solicited before the reply goes out.
    script = os.path.join(tmp, "v6scapy.py")
    with open(script, "w") as f:
        f.write(SCAPY)
    stranger = "2001:db8:79::77"
    out = h.sh(f"{PY} {script} {peer.peer_if} {dp_mac} {DP_IP6} {PEER_IP6} {stranger} resolve",
               ns=peer.ns, timeout=60).stdout
    vals = dict(line.split()[:2] for line in out.splitlines() if len(line.split()) >= 2)
    results.check(int(vals.get("solicited", 0)) >= 1, "data plane solicited an unknown neighbour",
                  out)
    results.check(int(vals.get("replied", 0)) == 1 and vals.get("reply_data_ok") == "1",
                  "echo reply sent once the neighbour was resolved", out)
    # 4. Hostile frames, counted; ping keeps working.
    before = ctl.drops()
    n = 20
    # A ping runs while they arrive: every echo is answered.
    during = subprocess.Popen(f"ip netns exec {peer.ns} ping -6 -c 15 -i 0.2 -W 2 {DP_IP6}",
                              shell=True, text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT)
    out = h.sh(f"{PY} {script} {peer.peer_if} {dp_mac} {DP_IP6} {PEER_IP6} {stranger} hostile {n}",
               ns=peer.ns, timeout=60).stdout
    ping_out = during.communicate(timeout=30)[0]
    results.check(during.returncode == 0 and " 15 received" in ping_out,
                  "ping -6 answered throughout the hostile frames (15/15)", ping_out[-300:])
    sent = [line.split()[1] for line in out.splitlines() if line.startswith("sent ")]
    results.check(len(sent) == 9, "scapy sent every hostile kind", out)
    ctl.wait_for(lambda: all(ctl.drops().get(k, 0) - before.get(k, 0) >= n for k in sent), 5)
    time.sleep(0.5)
    after = ctl.drops()
    for k in sent:
        d = after.get(k, 0) - before.get(k, 0)
        want = 2 * n if k == "ipv6_reassembly_overlap" else n  # both fragments of a pair
        results.check(d == want, f"{want} hostile frames counted as {k}", f"got {d}")
    ping6(results, peer, DP_IP6, 1000, what="ping -6 still answered after the hostile frames")
    results.check(ctl.value("wirespeed_icmpv6_echo_replies_sent_total") >= 20,
                  "echo replies counted in wirespeed_icmpv6_echo_replies_sent_total")
    args = f"{PY} {script} {peer.peer_if} {dp_mac} {DP_IP6} {PEER_IP6} {stranger}"
    router_discovery(results, peer, ctl, f"{args} ra")
    mld(results, peer, ctl, dp_mac, f"{args} mld-query")


def mld(results, peer, ctl, dp_mac, query_cmd):
    # 7. MLDv2: the reports sent at start were counted; a query from the peer draws one,
    # which tcpdump in the peer's namespace decodes.
    results.check(ctl.value("wirespeed_mld_reports_sent_total") >= 2,
                  "MLDv2 reports sent at start (Robustness Variable 2)")
    dump = subprocess.Popen(f"ip netns exec {peer.ns} timeout 10 tcpdump -n -v -l -c 1 -i "
                            f"{peer.peer_if} ether src {dp_mac} and ip6 dst ff02::16",
                            shell=True, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    time.sleep(1.0)  # tcpdump attached
    h.sh(query_cmd, ns=peer.ns, timeout=30)
    out = dump.communicate(timeout=20)[0]
    group = "ff02::1:ff00:1"  # 2001:db8:79::1's solicited-node group
    results.check("multicast listener report v2" in out and f"gaddr {group} to_ex" in out,
                  f"tcpdump in the peer's namespace shows our MLDv2 report for {group}",
                  out[-600:])
    results.check(ctl.value("wirespeed_mld_queries_received_total") == 1,
                  "the query counted in wirespeed_mld_queries_received_total")
    # The IPv6 series (labels, gauges) pass Prometheus's own check.
    pc = subprocess.run("promtool check metrics", shell=True, input=ctl.scrape_text(),
                        capture_output=True, text=True, timeout=30)
    results.check(pc.returncode == 0 and not (pc.stdout + pc.stderr).strip(),
                  "promtool check metrics is clean with IPv6 running",
                  pc.stdout[-400:] + pc.stderr[-400:])


def status_shows_ipv6(results, ctl, peer):
    # The status screen (text and JSON): both addresses preferred, the learned router,
    # the neighbour cache size.
    peer_ll = h.sh(f"ip -6 addr show dev {peer.peer_if} scope link", ns=peer.ns).stdout
    m = re.search(r"inet6 (fe80::[0-9a-f:]+)/64", peer_ll)
    router = m.group(1) if m else "?"
    st = subprocess.run([h.CONTROL, "-c", ctl.config, "status", "--json", "--interval", "0.2"],
                        capture_output=True, text=True, timeout=20)
    doc = json.loads(st.stdout) if st.returncode == 0 else {}
    port = (doc.get("ports") or [{}])[0]
    addrs = {a["address"]: a["state"] for a in port.get("ipv6_addresses", [])}
    results.check(addrs.get(f"{DP_IP6}/64") == "preferred" and len(addrs) == 2 and
                  all(v == "preferred" for v in addrs.values()),
                  "status --json: both IPv6 addresses preferred", st.stdout[-600:] + st.stderr)
    results.check(port.get("ipv6_default_router") == router,
                  f"status --json: default router {router} (learned)", str(port)[-300:])
    results.check((doc.get("ipv6") or {}).get("neighbor_cache_entries", 0) >= 1,
                  "status --json: neighbour cache size", str(doc.get("ipv6")))
    st = subprocess.run([h.CONTROL, "-c", ctl.config, "status", "--interval", "0.2"],
                        capture_output=True, text=True, timeout=20)
    results.check(f"ipv6 {DP_IP6}/64 preferred" in st.stdout and
                  f"ipv6 default router {router}" in st.stdout,
                  "status screen lists the IPv6 addresses and the router", st.stdout[-800:])


def router_discovery(results, peer, ctl, ra_cmd):
    # 6. The data plane solicited routers at start (accept_ra); nobody answered yet.
    results.check(ctl.value("wirespeed_ndp_router_solicitations_sent_total") >= 1,
                  "router solicitations sent at start")
    # An address the data plane can reach only through a router: on the peer's loopback.
    h.sh(f"ip -6 addr add {FAR_IP6}/128 dev lo", ns=peer.ns)
    off_link = f"ping -6 -c 2 -i 0.2 -W 1 -I {FAR_IP6} {DP_IP6}"
    before = ctl.drops()
    r = h.sh(off_link, ns=peer.ns, check=False, timeout=15)
    results.check(r.returncode != 0 and ctl.drops().get("ipv6_no_route", 0) >
                  before.get("ipv6_no_route", 0),
                  "no router yet: replies to an off-link address dropped as ipv6_no_route",
                  r.stdout[-200:])
    h.sh(f"{ra_cmd} 600 254", ns=peer.ns, timeout=30)
    ctl.wait_for(lambda: ctl.drops().get("ndp_bad_hop_limit", 0) >
                 before.get("ndp_bad_hop_limit", 0), 3)
    results.check(ctl.drops().get("ndp_bad_hop_limit", 0) == before.get("ndp_bad_hop_limit", 0) + 1
                  and ctl.value("wirespeed_ndp_default_routers") == 0,
                  "an advertisement with hop limit 254 counted (ndp_bad_hop_limit), not learned")
    h.sh(f"{ra_cmd} 600 255", ns=peer.ns, timeout=30)
    results.check(ctl.wait_for(lambda: ctl.value("wirespeed_ndp_default_routers") == 1, 3),
                  "the peer learned as the default router")
    ping6(results, peer, f"-I {FAR_IP6} {DP_IP6}", 56,
          what=f"ping -6 from off-link {FAR_IP6}: replies go via the learned router")
    status_shows_ipv6(results, ctl, peer)
    h.sh(f"{ra_cmd} 0 255", ns=peer.ns, timeout=30)
    results.check(ctl.wait_for(lambda: ctl.value("wirespeed_ndp_default_routers") == 0, 3),
                  "a router lifetime of 0 withdrew the router")
    r = h.sh(off_link, ns=peer.ns, check=False, timeout=15)
    results.check(r.returncode != 0, "off-link replies stop once the router is withdrawn",
                  r.stdout[-200:])
    ping6(results, peer, DP_IP6, 56, what="on-link ping -6 still answered")


if __name__ == "__main__":
    sys.exit(main())
