#!/usr/bin/python3
"""Two cores, several queues, end to end (software RSS: dataplane/steering.hpp).

tap: a data plane on lcores 0 and 1 with a 2-queue net_tap port and a TCP echo service.
The kernel picks a tap queue per flow by its own hash, which the data plane cannot read, so
a connection's frames may arrive on the other core's queue; they are handed to the core
that owns the flow. 64 kernel connections from the namespace, open at once, each send
256 KiB of their own pseudo-random bytes and read them back; checked:
- every byte of every connection came back unchanged (SHA-256 per connection);
- both cores accepted connections (wirespeed_core_connections_total{core}) and
  their stacks received frames; frames handed over were taken by the other core
  (out of one = into the other) and none was dropped for a full ring.
Debian's `iperf3 -c -P 4` completes against the data plane's iperf3 service on the same two
cores (a test's control and data connections are owned by the pair of hosts, so they meet
on one core). Then a data plane `source` job on the same two cores opens 16 connections to a kernel
`wsperf sink --verify` in the namespace: each core opens its 8 from local ports it owns,
and the sink verifies every byte the source counts as sent.

memif: two data planes, each on lcores 0 and 1 with 2 memif queue pairs. The client runs
a 64-connection TCP ping (split over its two cores) and a 4-connection source; the server
echoes and sinks. Checked:
- all round trips came back verified (at least `count`; those in flight when the count is
  reached complete too) and the source's bytes reached the sink, verified;
- one merged final report per client service;
- on both sides both cores opened or accepted connections and received frames;
- no frame of a flow was handed over on either side (only ARP replies are copied to every
  core): with the same core count, a flow's owner is the same on both ends, and the
  sender's TX queue (its core) is the receiver's RX queue of the owning core.

Bounded to about two minutes; names wsmc-*; memif socket /run/wirespeed-itest-wsmc.sock.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness as h  # noqa: E402
from test_memif_jumbo import load  # noqa: E402  (a JSON report, {} when absent)

DP_IP = "10.81.0.1"
PEER_IP = "10.81.0.2"
TAP_METRICS = 9691
CONNS = 64
PER_CONN = 256 << 10
SINK_PORT = 5009

SOCK = "/run/wirespeed-itest-wsmc.sock"
SERVER_IP = "10.81.1.1"
CLIENT_IP = "10.81.1.2"
S_METRICS, C_METRICS = 9692, 9693
PINGS = 6400

MANY_ECHO = r'''
import hashlib, json, socket, sys, threading
host, port, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
socks, results = [], []
for i in range(n):
    socks.append(socket.create_connection((host, port), timeout=20))
lock = threading.Lock()
def run(i, s):
    data = b"".join(hashlib.sha256(b"conn%d-%d" % (i, k)).digest() for k in range(size // 32))
    got = bytearray()
    def reader():
        try:
            while len(got) < size:
                b = s.recv(65536)
                if not b:
                    break
                got.extend(b)
        except Exception:
            pass
    t = threading.Thread(target=reader)
    t.start()
    try:
        s.sendall(data)
    except Exception:
        pass
    t.join(60)
    ok = hashlib.sha256(bytes(got)).digest() == hashlib.sha256(data).digest()
    with lock:
        results.append(ok)
    s.close()
threads = [threading.Thread(target=run, args=(i, s)) for i, s in enumerate(socks)]
for t in threads:
    t.start()
for t in threads:
    t.join(90)
print(json.dumps({"opened": len(socks), "verified": sum(results)}))
'''


def per_core(m, name):
    """{core: value} of a metric with a `core` label."""
    out = {}
    for (n, labels), v in m.items():
        if n == name:
            out[dict(labels).get("core")] = v
    return out


def latest_with_cores(scrape, last):
    """The newer scrape if it still has the data plane's per-core series, else the last one
    that had them: a scrape that meets the data plane exiting serves only the control's own
    metrics."""
    if scrape and any(n == "wirespeed_core_connections_total" for n, _ in scrape):
        return scrape
    return last


def add_queues(path, n):
    with open(path) as f:
        text = f.read()
    text = text.replace("    mtu: 1500\n", f"    mtu: 1500\n    rx_queues: {n}\n    tx_queues: {n}\n", 1)
    with open(path, "w") as f:
        f.write(text)


def core_checks(res, label, m, expect_handover):
    conns = per_core(m, "wirespeed_core_connections_total")
    frames = per_core(m, "wirespeed_core_received_frames_total")
    out = per_core(m, "wirespeed_core_redirected_out_frames_total")
    into = per_core(m, "wirespeed_core_redirected_in_frames_total")
    res.check(len(conns) == 2 and all(v > 0 for v in conns.values()),
              f"{label}: both cores opened or accepted connections {conns}")
    res.check(len(frames) == 2 and all(v > 0 for v in frames.values()),
              f"{label}: both cores' stacks received frames {frames}")
    full = m.get(("wirespeed_drops_total", frozenset({"reason": "steer_ring_full"}.items())), 0)
    res.check(full == 0, f"{label}: no frame dropped for a full hand-over ring ({full:.0f})")
    if expect_handover:
        res.check(sum(out.values()) > 0 and out.get("0") == into.get("1")
                  and out.get("1") == into.get("0"),
                  f"{label}: frames handed over, each taken by the other core (out {out}, in {into})")
    else:
        # ARP replies are copied to every core (each keeps its own ARP cache): nothing else.
        arp = m.get(("wirespeed_arp_replies_received_total", frozenset()), 0)
        res.check(sum(out.values()) <= arp and sum(into.values()) == sum(out.values()),
                  f"{label}: no frame of a flow handed over (out {out}, in {into}; "
                  f"{arp:.0f} ARP replies copied)")


def run_tap(res, tmp):
    with h.TapPeer("mc", PEER_IP) as peer:
        cfg = h.write_config(tmp, device=peer.device(), address=f"{DP_IP}/24", prefix="wsmc-tap",
                             lcores=(0, 1), metrics_port=TAP_METRICS,
                             services=["{ name: echo, kind: echo, protocol: tcp, port: 7, framing: none }",
                                       "{ name: perf, kind: iperf3, protocol: tcp, port: 5201 }"])
        add_queues(cfg, 2)
        dp = h.Dataplane(cfg, tmp)
        with dp, h.Control(cfg, tmp, TAP_METRICS) as ctl:
            peer.attach()
            out = dp.output()
            res.check("software RSS" in out, "tap: the 2-queue tap port is steered in software",
                      out[-600:])
            script = os.path.join(tmp, "many_echo.py")
            with open(script, "w") as f:
                f.write(MANY_ECHO)
            r = h.sh(f"/usr/bin/python3 {script} {DP_IP} 7 {CONNS} {PER_CONN}", ns=peer.ns,
                     check=False, timeout=150)
            try:
                got = json.loads(r.stdout.strip().splitlines()[-1])
            except (ValueError, IndexError):
                got = {}
            res.check(got.get("opened") == CONNS and got.get("verified") == CONNS,
                      f"tap: {got.get('verified')}/{CONNS} kernel connections echoed "
                      f"{PER_CONN >> 10} KiB each, every byte verified", (r.stdout + r.stderr)[-800:])
            time.sleep(0.5)
            core_checks(res, "tap", ctl.scrape(), True)
            # iperf3's control and data connections must meet on one core: connections to an
            # iperf3 service are owned by the pair of hosts.
            r = h.sh(f"timeout 30 iperf3 -c {DP_IP} -P 4 -t 2 --json", ns=peer.ns, check=False,
                     timeout=40)
            try:
                j = json.loads(r.stdout)
            except ValueError:
                j = {}
            got = j.get("end", {}).get("sum_received", {}).get("bytes", 0)
            res.check(r.returncode == 0 and got > 0,
                      f"tap: iperf3 -P 4 against the 2-core data plane completes ({got >> 20} MiB)",
                      (r.stdout[-600:] + r.stderr[-300:]))
        run_tap_source(res, tmp, peer)


def run_tap_source(res, tmp, peer):
    """The data plane's own connections: a `source` split over both cores, each opening
    its share from local ports it owns, to a kernel sink that verifies every byte. The rate
    (about 260 Mbit/s) stays below what the sink reads even on a loaded machine: a source
    job ends 5 s (its linger) after its last message whether or not the peer has read
    everything, and resets what is still open."""
    wsperf = os.path.join(h.BUILD, "tools", "wsperf", "wsperf")
    report = os.path.join(tmp, "wsperf_sink.json")
    sink = subprocess.Popen(["ip", "netns", "exec", peer.ns, wsperf, "sink", "--listen",
                             f"0.0.0.0:{SINK_PORT}", "--verify", "--report", report,
                             "--duration", "40", "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    src_rep = os.path.join(tmp, "source.json")
    d = os.path.join(tmp, "source")
    os.makedirs(d)
    cfg = h.write_config(d, device=peer.device(), address=f"{DP_IP}/24", prefix="wsmc-tap2",
                         lcores=(0, 1), metrics_port=TAP_METRICS,
                         services=[f'{{ name: load, kind: source, protocol: tcp, target: '
                                   f'"{PEER_IP}:{SINK_PORT}", message_size: 16384, rate: 2000, '
                                   f'connections: 16, duration_s: 6, report: {src_rep} }}'])
    add_queues(cfg, 2)
    dp = h.Dataplane(cfg, d)
    m = {}
    with dp, h.Control(cfg, d, TAP_METRICS) as ctl:
        peer.attach()
        deadline = time.time() + 40
        while time.time() < deadline and dp.proc.poll() is None:
            m = latest_with_cores(ctl.scrape(), m)
            time.sleep(0.5)
        rc = dp.proc.poll()
    # The kernel acknowledged what sits unread in its receive buffers: let the sink read it.
    time.sleep(3)
    sink.terminate()
    out = sink.communicate(timeout=10)[0]
    src, sr = load(src_rep), load(report)
    res.check(rc == 0 and src.get("connections") == 16 and src.get("errors", 1) == 0,
              f"tap: the source job opened {src.get('connections')}/16 connections and exited "
              f"(exit {rc})", str(src)[:400] + dp.output()[-400:])
    res.check(sr.get("bytes", 0) > 0 and sr.get("bytes") == src.get("bytes")
              and sr.get("verify_errors", 1) == 0,
              f"tap: the kernel sink verified every byte the source sent "
              f"({sr.get('bytes', 0) >> 20} MiB)", json.dumps({"sink": sr, "source": src})[:600] + out[-300:])
    opened = per_core(m, "wirespeed_core_connections_total")
    res.check(len(opened) == 2 and all(v >= 8 for v in opened.values()),
              f"tap: each core opened its share of the connections {opened}")


def memif_config(tmp, role, services, metrics):
    d = os.path.join(tmp, role)
    os.makedirs(d, exist_ok=True)
    path = h.write_config(d, device=f"net_memif0,role={role},socket={SOCK},id=0",
                          address=f"{SERVER_IP if role == 'server' else CLIENT_IP}/24",
                          services=services, prefix=f"wsmc-{role[0]}", lcores=(0, 1),
                          metrics_port=metrics)
    add_queues(path, 2)
    return path, d


def run_memif(res, tmp):
    if os.path.exists(SOCK):
        os.unlink(SOCK)
    s_cfg, s_dir = memif_config(tmp, "server", [
        "{ name: echo, kind: echo, protocol: tcp, port: 7 }",
        "{ name: sink, kind: sink, protocol: tcp, port: 9 }"], S_METRICS)
    ping_rep = os.path.join(tmp, "ping.json")
    src_rep = os.path.join(tmp, "source.json")
    c_cfg, c_dir = memif_config(tmp, "client", [
        f'{{ name: rtt, kind: ping, protocol: tcp, target: "{SERVER_IP}:7", message_size: 64, '
        f'connections: {CONNS}, count: {PINGS}, report: {ping_rep} }}',
        f'{{ name: load, kind: source, protocol: tcp, target: "{SERVER_IP}:9", '
        f'message_size: 65536, connections: 4, duration_s: 3, report: {src_rep} }}'], C_METRICS)
    server = h.Dataplane(s_cfg, s_dir)
    with server, h.Control(s_cfg, s_dir, S_METRICS) as sctl:
        client = h.Dataplane(c_cfg, c_dir)
        with client, h.Control(c_cfg, c_dir, C_METRICS) as cctl:
            cm = {}
            deadline = time.time() + 60
            while time.time() < deadline and client.proc.poll() is None:
                cm = latest_with_cores(cctl.scrape(), cm)
                time.sleep(0.5)
            rc = client.proc.poll()
            out = client.output()
            res.check(rc == 0, f"memif: the client data plane finished by itself (exit {rc})", out[-600:])
            ping, src = load(ping_rep), load(src_rep)
            # The ping's count stops new round trips; those in flight on the other
            # connections still complete.
            res.check(PINGS <= ping.get("messages", 0) < PINGS + CONNS and ping.get("errors", 1) == 0
                      and ping.get("connections") == CONNS,
                      f"memif: ping: {ping.get('messages')}/{PINGS} round trips over "
                      f"{ping.get('connections')}/{CONNS} connections, verified", str(ping)[:400])
            res.check(out.count("rtt: done") == 1 and out.count("load: done") == 1,
                      "memif: one merged final report per client service", out[-600:])
            res.check(src.get("bytes", 0) > 0 and src.get("errors", 1) == 0,
                      f"memif: source sent {src.get('bytes', 0) >> 20} MiB without error", str(src)[:300])
            core_checks(res, "memif client", cm, False)
        time.sleep(0.5)
        sm = sctl.scrape()
        sink = sm.get(("wirespeed_service_received_bytes_total",
                       frozenset({"service": "sink"}.items())), 0)
        fails = sm.get(("wirespeed_service_send_failures_total",
                        frozenset({"service": "sink"}.items())), 1)
        res.check(sink >= src.get("bytes", 1 << 62) and fails == 0,
                  f"memif: the sink verified {sink / 2**20:.0f} MiB (source counted "
                  f"{src.get('bytes', 0) / 2**20:.0f} MiB)")
        core_checks(res, "memif server", sm, False)
    if os.path.exists(SOCK):
        os.unlink(SOCK)


def main():
    h.need_root()
    h.require("iperf3", "timeout")
    res = h.Results("multicore")
    with tempfile.TemporaryDirectory(prefix="wsmc-") as tmp:
        tap_dir = os.path.join(tmp, "tap")
        os.makedirs(tap_dir)
        run_tap(res, tap_dir)
        run_memif(res, tmp)
    sys.exit(res.finish())


if __name__ == "__main__":
    main()
