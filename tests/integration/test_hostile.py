#!/usr/bin/python3
"""Hostile traffic against the http service on af_packet (docs/security.md). Every flood
comes from the test's own namespace, bounded in time; the data plane's replies to forged
sources go to the namespace (its gateway), which drops them.

1. SYN flood (hping3 -S --flood --rand-source, 12 s) while legitimate clients connect:
   at least 99% of new connections complete (request answered) within 1 s, established
   keep-alive clients (wrk, 4 connections) keep at least half their request rate with no
   error and no non-2xx answer, the data plane's RSS grows by
   at most 10% (measured from after a 2 s warm-up flood, so that pages the data plane
   touches for the first time under load, such as the kernel's packet ring and the SYN
   queue's slots, are not taken for growth; the warm-up's own growth is printed), and SYN
   cookies are sent (at least 5,000 a second: the flood was one) and validated.
2. ACK, RST, FIN and data floods to random tuples: no state is created, RSTs stay within
   tcp.rst_rate_limit; an ACK flood to the listener is taken for forged cookies.
3. UDP flood to closed ports: ICMP errors stay within the token bucket and the rest are
   counted.
4. Blind injection (scapy) into an established connection, with sequence numbers inside
   the window: RST and SYN draw challenge ACKs, data with an unacceptable ACK is dropped;
   the connection survives and answers correctly afterwards.
5. Fragment flood (a second data plane, on net_tap: under af_packet the kernel reassembles
   fragments before the port sees them, docs/security.md): first fragments with random
   identifications and sources, 15,000 a second, bounded in count and time (much faster,
   the tap port itself overflows on this machine), while a fragmented ping (-s 2000) and
   new TCP connections run. The reassembly table and its memory stay within
   their bounds (gauges sampled throughout), the flood is counted as evictions, the
   legitimate datagrams are reassembled and answered, and the reassembly timeout frees
   every entry afterwards. Parts 1-4 and 6 run while that timeout (30 s) counts down.
6. Over af_packet, a datagram the kernel reassembled beyond the socket ring's frame is
   counted as rx_truncated (not as a malformed header).
"""
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness as h  # noqa: E402

DP_IP = "10.78.90.1"
URL = f"http://{DP_IP}/hello"
PEER_IP = "10.78.90.2"
METRICS_PORT = 9592
RST_LIMIT = 200
SYN_FLOOD_S = 12
MIN_FLOOD_RATE = 5000
# The peer's clients and flood generator run on the CPU the data plane's lcore (1) leaves.
PEER = "taskset -c 0"
# Established keep-alive clients: one thread, four connections, as a throughput measure
# (one sequential client measures this machine's wake-up latency more than the data plane).
WRK = "wrk -t1 -c4"
PY = "/usr/bin/python3"
TAP_DP_IP = "10.78.91.1"
TAP_PEER_IP = "10.78.91.2"
TAP_METRICS_PORT = 9593
FRAG_FLOOD_S = 8
FRAG_FLOOD_MAX = 200000
# The tap PMD reads one frame per system call: on this 2-core machine it takes about 40 k
# frames a second beside the flood generator and the clients when nothing else runs, less
# under load. Faster, the kernel's queue into the tap overflows (printed) and legitimate
# frames are lost before the data plane sees them, which would measure the port, not
# reassembly under the flood.
FRAG_FLOOD_RATE = 15000
REASM_ENTRIES = 64        # ReassemblyConfig::max_entries
REASM_SLOT = 60 + 65535   # one slot's buffer
REASM_TIMEOUT_S = 30

SERVICES = ['{ name: web, kind: http, protocol: tcp, port: 80, responses: [ '
            '{ path: "/hello", body: "hello\\n" } ] }']

# New connections, one after another: connect, one request, the whole answer, close.
LEGIT = r'''
import json, socket, sys, time
host, n, gap = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
times, errors = [], []
for i in range(n):
    t0 = time.monotonic()
    try:
        s = socket.create_connection((host, 80), timeout=5)
        s.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        d = b""
        while True:
            b = s.recv(4096)
            if not b:
                break
            d += b
        s.close()
        if not (d.startswith(b"HTTP/1.1 200") and d.endswith(b"hello\n")):
            raise ValueError(d[:40])
        times.append(time.monotonic() - t0)
    except Exception as e:
        errors.append(repr(e))
        times.append(None)
    time.sleep(gap)
print(json.dumps({"times": times, "errors": errors[:5]}))
'''

# A keep-alive client: requests back to back for `secs` seconds (the service closes a
# connection after its 10000th request; the client then opens the next one).
# Blind injection: the attacker is given the numbers a sniffer would see (the most
# favourable case for him), and sends segments inside the window but not exact.
INJECT = r'''
import json, socket, sys, time
from scapy.all import IP, TCP, Raw, AsyncSniffer, send, conf
conf.verb = 0
host, iface = sys.argv[1], sys.argv[2]
s = socket.create_connection((host, 80), timeout=5)
lport = s.getsockname()[1]
sn = AsyncSniffer(iface=iface, filter=f"tcp and src port {lport}", store=True)
sn.start()
time.sleep(0.5)
def get():
    s.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
    d = b""
    while b"hello\n" not in d:
        b = s.recv(4096)
        if not b:
            return d
        d += b
    return d
first = get()
time.sleep(0.3)
pk = sn.stop()
last = [p for p in pk if TCP in p][-1]
rcv_nxt = last[TCP].seq   # the data plane's RCV.NXT
snd_nxt = last[TCP].ack   # the data plane's SND.NXT
base = IP(src=sys.argv[3], dst=host) / TCP(sport=lport, dport=80)
pkts = []
for k in range(1, 201):
    pkts.append(IP(src=sys.argv[3], dst=host) / TCP(sport=lport, dport=80, flags="R", seq=rcv_nxt + 97 * k))
    pkts.append(IP(src=sys.argv[3], dst=host) / TCP(sport=lport, dport=80, flags="S", seq=rcv_nxt + 89 * k))
    pkts.append(IP(src=sys.argv[3], dst=host) / TCP(sport=lport, dport=80, flags="PA", seq=rcv_nxt + 50 * k,
                                                   ack=snd_nxt + 1000000 + k) / Raw(b"EVIL" * 8))
    pkts.append(IP(src=sys.argv[3], dst=host) / TCP(sport=lport, dport=80, flags="RA", seq=rcv_nxt + 1 + k,
                                                   ack=snd_nxt))
send(pkts, iface=iface)
time.sleep(0.5)
ok = []
for i in range(5):
    ok.append(get())
s.close()
print(json.dumps({"first": first.decode("latin-1")[:12], "sent": len(pkts),
                  "after": [d.startswith(b"HTTP/1.1 200") and d.endswith(b"hello\n") and b"EVIL" not in d
                            for d in ok]}))
'''


# First fragments (MF set, offset 0, 64 bytes of UDP) with random identifications and
# sources from 10.78.91.128/25, through a raw socket (IP_HDRINCL), at up to `rate` a second,
# until `secs` or `count`. Prints how many were sent.
FRAG_FLOOD = r'''
import json, os, random, socket, struct, sys, time
dst, secs, count, rate = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
s.setsockopt(socket.IPPROTO_IP, socket.IP_HDRINCL, 1)
d = socket.inet_aton(dst)
body = struct.pack("!HHHH", 40000, 9, 8 + 200, 0) + os.urandom(56)
def csum(b):
    n = sum(struct.unpack("!10H", b))
    n = (n & 0xffff) + (n >> 16)
    return (~((n & 0xffff) + (n >> 16))) & 0xffff
sent, t0 = 0, time.monotonic()
end = t0 + secs
while sent < count and time.monotonic() < end:
    for _ in range(256):
        src = bytes([10, 78, 91, 128 + random.randrange(127)])
        h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(body), random.getrandbits(16),
                        0x2000, 64, 17, 0, src, d)
        h = h[:10] + struct.pack("!H", csum(h)) + h[12:]
        try:
            s.sendto(h + body, (dst, 0))
            sent += 1
        except OSError:
            pass
    ahead = sent / rate - (time.monotonic() - t0)
    if ahead > 0:
        time.sleep(ahead)
print(json.dumps({"sent": sent, "seconds": time.monotonic() - t0}))
'''


def script(tmp, name, text):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def run_json(cmd, ns, timeout):
    r = h.sh(cmd, ns=ns, check=False, timeout=timeout)
    try:
        return json.loads(r.stdout.strip().splitlines()[-1]), r
    except (ValueError, IndexError):
        return {}, r


def popen(cmd, ns):
    return subprocess.Popen(f"ip netns exec {ns} {cmd}", shell=True, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def json_of(p, timeout):
    out, err = p.communicate(timeout=timeout)
    try:
        return json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"stdout": out[-400:], "stderr": err[-400:]}


def conn_total(ctl):
    return sum(v for (n, _), v in ctl.scrape().items() if n == "wirespeed_tcp_connections")


def syn_flood(res, ns, tmp, dp, ctl):
    legit = script(tmp, "legit.py", LEGIT)
    before = h.wrk_summary(h.sh(f"{PEER} nice -n -5 {WRK} -d3s {URL}", ns=ns, check=False, timeout=30).stdout)
    base_rate = before.get("rate", 0)
    res.check(base_rate > 0, f"keep-alive client before the flood: {base_rate:.0f} requests/s", str(before))
    pre, _ = run_json(f"{PEER} {PY} {legit} {DP_IP} 20 0.02", ns, 60)
    pre_ok = sum(1 for t in pre.get("times", []) if t is not None and t <= 1.0)
    res.check(pre_ok == 20, f"before the flood: {pre_ok} of 20 new connections within 1 s", str(pre))
    rss_cold = h.rss_kb(dp.proc.pid)
    warm = popen(f"{PEER} chrt --idle 0 timeout -s INT 2 hping3 -S -p 80 --flood --rand-source {DP_IP}", ns)
    warm.communicate(timeout=15)
    time.sleep(1)
    rss0 = h.rss_kb(dp.proc.pid)
    print(f"  RSS {rss_cold / 1024:.1f} MiB before a 2 s warm-up flood, {rss0 / 1024:.1f} MiB after it",
          flush=True)
    m0 = ctl.scrape()

    # This machine's two cores carry the flood generator, the clients and the data plane
    # alike. The data plane owns CPU 1 (its lcore); the peer's programs share CPU 0, the
    # generator as SCHED_IDLE, which any woken client preempts at once (nice 19 does not
    # guarantee that, and autogroup scheduling makes nice depend on the session): what is
    # measured is the data plane under the flood, not the clients starved of CPU by hping3.
    flood = popen(f"{PEER} chrt --idle 0 timeout -s INT {SYN_FLOOD_S} hping3 -S -p 80 --flood --rand-source {DP_IP}", ns)
    time.sleep(1.5)
    kap = popen(f"{PEER} nice -n -5 {WRK} -d5s {URL}", ns)
    lp = popen(f"{PEER} nice -n -5 {PY} {legit} {DP_IP} 100 0.05", ns)
    rss_max = rss0
    while flood.poll() is None:
        rss_max = max(rss_max, h.rss_kb(dp.proc.pid))
        time.sleep(0.2)
    _, ferr = flood.communicate(timeout=10)
    during = h.wrk_summary(kap.communicate(timeout=30)[0])
    lres = json_of(lp, 60)
    m1 = ctl.scrape()

    def delta(name, **labels):
        k = (name, frozenset(labels.items()))
        return m1.get(k, 0) - m0.get(k, 0)

    syns = delta("wirespeed_tcp_received_segments_total")
    busy = delta("wirespeed_core_busy_seconds_total", core="1")
    sent = delta("wirespeed_tcp_syncookies_total", result="sent")
    valid = delta("wirespeed_tcp_syncookies_total", result="valid")
    times = lres.get("times", [])
    fast = sum(1 for t in times if t is not None and t <= 1.0)
    done = [t for t in times if t is not None]
    print(f"  SYN flood {SYN_FLOOD_S} s: {syns:.0f} segments in ({syns / SYN_FLOOD_S:.0f}/s), "
          f"{sent:.0f} cookies sent, {valid:.0f} valid, data-plane core busy {busy:.1f} s; hping3: {ferr.strip()[-200:]}", flush=True)
    moved = {dict(k[1]).get("reason", dict(k[1]).get("port", "")) + ":" + k[0].split("_", 1)[1]: v - m0.get(k, 0)
             for k, v in m1.items()
             if (k[0] == "wirespeed_drops_total" or k[0].startswith("wirespeed_port_") and "error" in k[0]
                 or k[0] == "wirespeed_port_receive_missed_packets_total") and v != m0.get(k, 0)}
    print(f"  counted during the flood: {moved}", flush=True)
    if done:
        done.sort()
        print(f"  legitimate connections: {len(done)}/{len(times)} completed, median "
              f"{done[len(done) // 2] * 1000:.1f} ms, max {done[-1] * 1000:.1f} ms", flush=True)
    res.check(len(times) == 100 and fast >= 99,
              f"during the flood: {fast} of {len(times)} new connections answered within 1 s (>= 99)",
              str(lres)[:600])
    rate = during.get("rate", 0)
    res.check(rate >= 0.5 * base_rate and during.get("bad", 1) == 0,
              f"keep-alive during the flood: {rate:.0f} requests/s, {100 * rate / max(base_rate, 1):.0f}% "
              f"of {base_rate:.0f} (>= 50%), mean latency {during.get('latency', '?')} "
              f"(before {before.get('latency', '?')}), {during.get('bad', '?')} errors or non-2xx", str(during))
    growth = (rss_max - rss0) / rss0 * 100
    res.check(rss_max <= rss0 * 1.10,
              f"data plane RSS {rss0 / 1024:.1f} MiB before, at most {rss_max / 1024:.1f} MiB during "
              f"(+{growth:.1f}%, <= 10%)")
    # The generator runs as SCHED_IDLE: the flood must still be one for the checks above
    # to mean anything (70,000-90,000 SYNs/s on this machine when nothing else runs).
    res.check(sent >= MIN_FLOOD_RATE * SYN_FLOOD_S and valid >= fast,
              f"SYN cookies: {sent:.0f} sent (>= {MIN_FLOOD_RATE} a second of flood), {valid:.0f} "
              f"valid (>= the {fast} legitimate connections)")
    res.check(delta("wirespeed_drops_total", reason="tcp_syn_queue_full") == 0,
              "no SYN dropped for a full queue (cookies answer them)")


def flood(ns, args, secs):
    r = h.sh(f"timeout -s INT {secs} hping3 {args} --flood {DP_IP}", ns=ns, check=False, timeout=secs + 20)
    return (r.stdout + r.stderr).strip()[-160:]


def stateless_floods(res, ns, ctl):
    secs = 2
    for name, args in (("ACK", "-A -p ++1024 --rand-source"), ("FIN", "-F -A -p ++1024 --rand-source"),
                       ("data", "-P -A -d 120 -p ++1024 --rand-source"), ("RST", "-R -p ++1024 --rand-source")):
        c0 = conn_total(ctl)
        r0 = ctl.value("wirespeed_tcp_resets_sent_total")
        l0 = ctl.drops().get("tcp_rst_rate_limited", 0)
        i0 = ctl.value("wirespeed_tcp_received_segments_total")
        t0 = time.monotonic()
        out = flood(ns, args, secs)
        el = time.monotonic() - t0
        time.sleep(0.3)
        rst = ctl.value("wirespeed_tcp_resets_sent_total") - r0
        lim = ctl.drops().get("tcp_rst_rate_limited", 0) - l0
        seg = ctl.value("wirespeed_tcp_received_segments_total") - i0
        print(f"  {name} flood {el:.1f} s: {seg:.0f} segments in, {rst:.0f} RSTs sent, {lim:.0f} RSTs "
              f"suppressed; hping3: {out}", flush=True)
        res.check(conn_total(ctl) == c0, f"{name} flood to random tuples: no connection state created")
        bound = RST_LIMIT * el + RST_LIMIT / 10 + 1
        if name == "RST":
            res.check(rst == 0, f"RST flood: no RST answered ({rst:.0f})")
        else:
            res.check(seg > 10 * bound and rst <= bound and lim > 0,
                      f"{name} flood: {rst:.0f} RSTs for {seg:.0f} segments (<= {bound:.0f}, "
                      f"tcp.rst_rate_limit {RST_LIMIT}/s)")
    # An ACK flood to the listener while cookies are in use: forged cookies, no state.
    inv0 = ctl.value("wirespeed_tcp_syncookies_total", result="invalid")
    c0 = conn_total(ctl)
    out = flood(ns, "-A -p 80 --rand-source", secs)
    time.sleep(0.3)
    inv = ctl.value("wirespeed_tcp_syncookies_total", result="invalid") - inv0
    print(f"  ACK flood to the listener: {inv:.0f} forged cookies; hping3: {out}", flush=True)
    res.check(inv > 1000 and conn_total(ctl) == c0,
              f"ACK flood to the listener: {inv:.0f} ACKs counted as invalid cookies, no state")


def udp_flood(res, ns, ctl):
    secs = 2
    e0 = ctl.value("wirespeed_icmp_errors_sent_total")
    l0 = ctl.drops().get("icmp_rate_limited", 0)
    u0 = ctl.drops().get("udp_port_unreachable", 0)
    t0 = time.monotonic()
    out = flood(ns, "--udp -p ++2000", secs)
    el = time.monotonic() - t0
    time.sleep(0.3)
    err = ctl.value("wirespeed_icmp_errors_sent_total") - e0
    lim = ctl.drops().get("icmp_rate_limited", 0) - l0
    closed = ctl.drops().get("udp_port_unreachable", 0) - u0
    print(f"  UDP flood {el:.1f} s: {closed:.0f} datagrams to closed ports, {err:.0f} ICMP errors sent, "
          f"{lim:.0f} rate-limited; hping3: {out}", flush=True)
    bound = 1000 * el + 100 + 1
    res.check(err <= bound and lim > 0 and err + lim >= closed * 0.99,
              f"UDP flood to closed ports: {err:.0f} ICMP errors (<= {bound:.0f}: 1000/s, burst 100), "
              f"{lim:.0f} counted as icmp_rate_limited")


def blind_injection(res, ns, tmp, ctl, peer_if):
    inj = script(tmp, "inject.py", INJECT)
    c0 = ctl.value("wirespeed_tcp_challenge_acks_total")
    r0 = ctl.value("wirespeed_tcp_resets_received_total")
    out, r = run_json(f"{PY} {inj} {DP_IP} {peer_if} {PEER_IP}", ns, 120)
    chal = ctl.value("wirespeed_tcp_challenge_acks_total") - c0
    resets = ctl.value("wirespeed_tcp_resets_received_total") - r0
    drops = ctl.drops()
    print(f"  blind injection: {out.get('sent')} segments, {chal:.0f} challenge ACKs, "
          f"{resets:.0f} RSTs accepted, rst_invalid {drops.get('tcp_rst_invalid', 0):.0f}", flush=True)
    after = out.get("after", [])
    res.check(out.get("first", "").startswith("HTTP/1.1 200") and after == [True] * 5,
              "in-window RST, SYN and data with a wrong ACK: the connection survives, answers intact",
              f"{out} {r.stderr[-600:]}")
    res.check(resets == 0 and chal > 0, f"no injected RST accepted; {chal:.0f} challenge ACKs")


def reasm(ctl):
    m = ctl.scrape()

    def g(name):
        return m.get((name, frozenset()), 0)

    return {k: g(f"wirespeed_ipv4_{k}") for k in (
        "reassembly_entries", "reassembly_held_bytes", "reassembly_buffer_bytes",
        "reassembly_fragments_total", "reassembled_datagrams_total", "reassembly_timeouts_total",
        "reassembly_evictions_total")}


def wait_empty(ctl, limit_s, emptied):
    """Polls the reassembly table until it is empty or `limit_s` have passed; appends the
    seconds it took to `emptied` if it emptied in time."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit_s:
        if reasm(ctl)["reassembly_entries"] == 0:
            emptied.append(round(time.monotonic() - t0, 1))
            return
        time.sleep(1)


def frag_flood(res, tmp, meanwhile=None):
    """Part 5. `meanwhile()` runs while the reassembly timeout counts down: this data plane
    then only waits, so the other parts (their own namespace and data plane) fill the time."""
    tmp = os.path.join(tmp, "tap")
    os.makedirs(tmp, exist_ok=True)
    with h.TapPeer("hsf", TAP_PEER_IP) as peer:
        ns = peer.ns
        cfg = h.write_config(tmp, device=peer.device(), address=f"{TAP_DP_IP}/24",
                             prefix="wst-hostile-tap", metrics_port=TAP_METRICS_PORT,
                             services=SERVICES, gateway=TAP_PEER_IP)
        dp = h.Dataplane(cfg, tmp)
        with dp, h.Control(cfg, tmp, TAP_METRICS_PORT) as ctl:
            peer.attach()
            r = h.sh(f"ping -c 3 -i 0.2 -W 2 -s 2000 {TAP_DP_IP}", ns=ns, check=False)
            res.check(" 0% packet loss" in r.stdout, "before the flood: fragmented ping -s 2000 answered",
                      r.stdout[-300:])
            r0 = reasm(ctl)
            rss0 = h.rss_kb(dp.proc.pid)
            fl = script(tmp, "fragflood.py", FRAG_FLOOD)
            legit = script(tmp, "legit.py", LEGIT)
            flood_p = popen(f"nice -n 19 {PY} {fl} {TAP_DP_IP} {FRAG_FLOOD_S} {FRAG_FLOOD_MAX} {FRAG_FLOOD_RATE}", ns)
            time.sleep(1.0)
            ping_p = popen(f"ping -c 20 -i 0.25 -W 2 -s 2000 {TAP_DP_IP}", ns)
            tcp_p = popen(f"nice -n -5 {PY} {legit} {TAP_DP_IP} 30 0.1", ns)
            peak = {"reassembly_entries": 0, "reassembly_held_bytes": 0, "reassembly_buffer_bytes": 0}
            rss_max = rss0
            while flood_p.poll() is None:
                cur = reasm(ctl)
                for k in peak:
                    peak[k] = max(peak[k], cur[k])
                rss_max = max(rss_max, h.rss_kb(dp.proc.pid))
                time.sleep(0.2)
            fres = json_of(flood_p, 10)
            ping_out, _ = ping_p.communicate(timeout=30)
            lres = json_of(tcp_p, 60)
            r1 = reasm(ctl)
            sent = fres.get("sent", 0)
            frags = r1["reassembly_fragments_total"] - r0["reassembly_fragments_total"]
            ev = r1["reassembly_evictions_total"] - r0["reassembly_evictions_total"]
            done = r1["reassembled_datagrams_total"] - r0["reassembled_datagrams_total"]
            rx = next((l for l in ping_out.splitlines() if "packets transmitted" in l), ping_out[-200:])
            tap_drops = h.sh(f"cat /sys/class/net/{peer.peer_if}/statistics/tx_dropped", ns=ns,
                             check=False).stdout.strip()
            times = lres.get("times", [])
            ok = sum(1 for t in times if t is not None and t <= 1.0)
            print(f"  fragment flood {fres.get('seconds', 0):.1f} s: {sent} fragments sent, {frags:.0f} reached "
                  f"reassembly, {ev:.0f} evictions, {done:.0f} datagrams reassembled; peak entries "
                  f"{peak['reassembly_entries']:.0f}, held {peak['reassembly_held_bytes']:.0f} B, buffers "
                  f"{peak['reassembly_buffer_bytes'] / 1024:.0f} KiB; RSS {rss0 / 1024:.1f} -> "
                  f"{rss_max / 1024:.1f} MiB; ping -s 2000: {rx}; TCP: {ok}/{len(times)} within 1 s; "
                  f"frames the kernel dropped on the tap: {tap_drops}", flush=True)
            res.check(sent > 10000 and frags >= 0.5 * sent and ev > 0.5 * frags,
                      f"flood reached reassembly and was counted: {frags:.0f} of {sent} fragments, "
                      f"{ev:.0f} evictions", str(fres))
            res.check(peak["reassembly_entries"] <= REASM_ENTRIES
                      and peak["reassembly_buffer_bytes"] <= REASM_ENTRIES * REASM_SLOT
                      and peak["reassembly_held_bytes"] <= REASM_ENTRIES * 1480,
                      f"reassembly bounded: at most {peak['reassembly_entries']:.0f} entries (<= {REASM_ENTRIES}), "
                      f"{peak['reassembly_buffer_bytes']:.0f} B of buffers (<= {REASM_ENTRIES * REASM_SLOT})")
            res.check(rss_max <= rss0 * 1.10 + REASM_ENTRIES * REASM_SLOT / 1024,
                      f"data plane RSS {rss0 / 1024:.1f} MiB before, at most {rss_max / 1024:.1f} MiB during")
            got = 0
            for l in ping_out.splitlines():
                if "packets transmitted" in l:
                    got = int(l.split(",")[1].split()[0])
            res.check(got >= 19, f"during the flood: {got} of 20 fragmented pings (-s 2000) answered", ping_out[-300:])
            res.check(len(times) == 30 and ok >= 29,
                      f"during the flood: {ok} of {len(times)} new TCP connections answered within 1 s",
                      str(lres)[:400])
            # The timeout frees what the flood left (RFC 1122 3.3.2), counted.
            emptied = []  # the seconds until the table was empty, if within the bound
            watcher = threading.Thread(target=wait_empty, args=(ctl, REASM_TIMEOUT_S + 10, emptied))
            watcher.start()
            if meanwhile:
                meanwhile()
            watcher.join()
            r2 = reasm(ctl)
            tmo = r2["reassembly_timeouts_total"] - r1["reassembly_timeouts_total"]
            print(f"  after the timeout: {r2['reassembly_entries']:.0f} entries, "
                  f"{r2['reassembly_held_bytes']:.0f} B held, {tmo:.0f} timed out, empty after "
                  f"{emptied[0] if emptied else 'more than %d' % (REASM_TIMEOUT_S + 10)} s", flush=True)
            res.check(emptied and r2["reassembly_entries"] == 0 and r2["reassembly_held_bytes"] == 0
                      and tmo > 0,
                      f"reassembly timeout frees the table: {tmo:.0f} datagrams timed out, none held")
            r = h.sh(f"ping -c 2 -i 0.2 -W 2 -s 2000 {TAP_DP_IP}", ns=ns, check=False)
            res.check(" 0% packet loss" in r.stdout, "after the flood: fragmented ping answered", r.stdout[-300:])
        res.check(dp.proc.returncode == 0, "tap data plane exits 0 on SIGINT",
                  f"rc={dp.proc.returncode}\n{dp.output()[-1500:]}")


def af_packet_truncation(res, ns, ctl):
    d0 = ctl.drops()
    r = h.sh(f"ping -c 1 -W 1 -s 2000 {DP_IP}", ns=ns, check=False)
    d1 = ctl.drops()
    trunc = d1.get("rx_truncated", 0) - d0.get("rx_truncated", 0)
    bad = d1.get("ipv4_bad_total_length", 0) - d0.get("ipv4_bad_total_length", 0)
    print(f"  af_packet, ping -s 2000 (kernel-reassembled, 2042 B > the 2048 B ring frame's room): "
          f"rx_truncated {trunc:.0f}, ipv4_bad_total_length {bad:.0f}", flush=True)
    res.check(trunc == 1 and bad == 0, "af_packet: a datagram cut by the socket ring is counted as rx_truncated",
              r.stdout[-200:])


def main():
    h.need_root()
    h.require("hping3", "wrk", "taskset", "chrt")
    res = h.Results("hostile")
    tmp = h.temp_dir("ws-hostile-")
    # `test_hostile.py fragments` runs part 5 alone (for development); no argument runs all,
    # parts 1-4 and 6 during part 5's wait for the reassembly timeout.
    if sys.argv[1:] == ["fragments"]:
        frag_flood(res, tmp)
    else:
        frag_flood(res, tmp, lambda: af_packet_parts(res, tmp))
    return res.finish()


def af_packet_parts(res, tmp):
    tmp = os.path.join(tmp, "af_packet")
    os.makedirs(tmp, exist_ok=True)
    with h.VethPeer("hs", PEER_IP) as peer:
        ns = peer.ns
        cfg = h.write_config(tmp, device=peer.device(), address=f"{DP_IP}/24", prefix="wst-hostile",
                             metrics_port=METRICS_PORT, services=SERVICES, gateway=PEER_IP,
                             extra=f"tcp:\n  rst_rate_limit: {RST_LIMIT}\n")
        dp = h.Dataplane(cfg, tmp)
        with dp, h.Control(cfg, tmp, METRICS_PORT) as ctl:
            syn_flood(res, ns, tmp, dp, ctl)
            stateless_floods(res, ns, ctl)
            udp_flood(res, ns, ctl)
            blind_injection(res, ns, tmp, ctl, peer.peer_if)
            af_packet_truncation(res, ns, ctl)
            r = h.sh(f"curl -s --max-time 5 http://{DP_IP}/hello", ns=ns, check=False)
            res.check(r.stdout == "hello\n", "still serving afterwards", r.stdout[:80])
        rcode = dp.proc.returncode
        res.check(rcode == 0, "data plane exits 0 on SIGINT", f"rc={rcode}\n{dp.output()[-1500:]}")


if __name__ == "__main__":
    sys.exit(main())
