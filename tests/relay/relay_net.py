"""The impaired path of the loss-recovery test and benchmark: Linux endpoint A in one
namespace, wsrelay in another, and behind the relay either Linux endpoint B (a third
namespace, the kernel stack on both ends) or the data plane's af_packet port (veth in the
root namespace). The relay forwards between A's side and one of the two at a time, with
the same impairments both ways, so a Linux <-> Linux and a Linux <-> wirespeed transfer
cross the same kind of path in the same run.

    ns wsr-a (10.79.0.2) -- wsr-ra [ns wsr-relay: wsrelay] wsr-rb -- ns wsr-b (10.79.0.3)
                                                            wsr-rw -- wsr-dp (data plane, 10.79.0.1)

Transfers are length32 messages of the deterministic pattern: pattern_peer.py (a Linux
sender with the congestion control asked for) or the data plane's `source` sends them;
pattern_peer.py on A or `wsperf sink --verify` on B checks every byte, the data plane's
`sink` counts them.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
import harness as h  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
WSRELAY = os.path.join(h.BUILD, "tests", "relay", "wsrelay")
WSPERF = os.path.join(h.BUILD, "tools", "wsperf", "wsperf")
PEER = os.path.join(HERE, "pattern_peer.py")

NS_A, NS_B, NS_RELAY = "wsr-a", "wsr-b", "wsr-relay"
IP_A, IP_B, IP_DP = "10.79.0.2", "10.79.0.3", "10.79.0.1"
DP_IF, RELAY_DP_IF = "wsr-dp", "wsr-rw"
SINK_PORT, RECV_PORT, ECHO_PORT = 9, 5002, 7
MESSAGE = 65536

# split_cpus(): CPU 0 runs the rest of the world (endpoint A, the relay and their kernel
# receive work), CPU 1 the host under test (the data plane's lcore, which the harness puts
# on CPU 1, or endpoint B's programs and B's kernel receive work), as if they were two
# machines. Off: no pinning.
WORLD_CPU, HOST_CPU = 0, 1
SPLIT = False


def split_cpus(on=True):
    global SPLIT
    SPLIT = on


def _on(ns):
    """The argv prefix that pins a program of namespace `ns` under split_cpus()."""
    if not SPLIT:
        return []
    return ["taskset", "-c", str(HOST_CPU if ns == NS_B else WORLD_CPU)]


# The Linux sender's recovery counters kept with each transfer: when a receive cell
# differs between the Linux receiver and the data plane, these say how the same Linux
# sender recovered against each (probes, undos, D-SACKs seen, lost retransmissions).
SENDER_COUNTERS = ("TCPTimeouts", "TCPLossProbes", "TCPLossProbeRecovery", "TCPSackRecovery",
                   "TCPFastRetrans", "TCPSlowStartRetrans", "TCPLostRetransmit",
                   "TCPDSACKRecv", "TCPFullUndo", "TCPPartialUndo", "TCPDSACKUndo",
                   "TCPLossUndo", "TCPSpuriousRTOs", "TCPSACKReorder", "TCPTSReorder",
                   "RetransSegs", "TCPHystartTrainDetect", "TCPHystartTrainCwnd",
                   "TCPHystartDelayDetect", "TCPHystartDelayCwnd")


# The additive TCP_INFO fields that median_entry sums over repeats.
TCP_INFO_SUMMED = ("total_retrans", "segs_out", "segs_in", "data_segs_out", "busy_us",
                   "rwnd_limited_us", "sndbuf_limited_us", "delivered", "dsack_dups",
                   "reord_seen")


def netstat(ns):
    """The namespace's TcpExt (/proc/net/netstat) and Tcp (/proc/net/snmp) counters."""
    text = h.sh("cat /proc/net/netstat /proc/net/snmp", ns=ns).stdout.splitlines()
    out = {}
    for names, values in zip(text[::2], text[1::2]):
        if names.startswith(("TcpExt:", "Tcp:")):
            out.update(zip(names.split()[1:], (int(v) for v in values.split()[1:])))
    if "TCPTimeouts" not in out:
        raise RuntimeError(f"no TcpExt line in {ns}'s /proc/net/netstat")
    return out


class SenderCounters:
    """SENDER_COUNTERS of a namespace from now on: delta() gives what changed since."""

    def __init__(self, ns):
        self.ns = ns
        self.before = netstat(ns)

    def delta(self):
        after = netstat(self.ns)
        return {k: after.get(k, 0) - self.before.get(k, 0) for k in SENDER_COUNTERS}

    def entry(self):
        """The keyword arguments of _entry: the RTO expirations and every counter."""
        d = self.delta()
        return {"sender_timeouts": d["TCPTimeouts"], "sender_counters": d}


class RelayNet:
    """Creates the namespaces and links; removes them on exit, whatever happens."""

    def __enter__(self):
        h.require("ip", "sysctl", "ethtool")
        for p in (WSRELAY, WSPERF):
            if not os.path.exists(p):
                raise RuntimeError(f"{p} is not built: meson compile -C {h.BUILD}")
        self.teardown()
        for ns in (NS_A, NS_B, NS_RELAY):
            h.sh(f"ip netns add {ns}")
            h.sh("ip link set lo up", ns=ns)
        for ns, ip, end, relay_end in ((NS_A, IP_A, "wsr-a", "wsr-ra"),
                                       (NS_B, IP_B, "wsr-b", "wsr-rb")):
            h.sh(f"ip link add {end} type veth peer name {relay_end}")
            h.sh(f"ip link set {end} netns {ns}")
            h.sh(f"ip link set {relay_end} netns {NS_RELAY}")
            h.sh(f"sysctl -qw net.ipv6.conf.{end}.disable_ipv6=1", ns=ns)
            h.sh(f"ip addr add {ip}/24 dev {end}", ns=ns)
            h.sh(f"ip link set {end} up", ns=ns)
            # Frames of at most one MTU with finished checksums: the relay forwards frames
            # as they are, and a raw socket cannot send a 64 KiB GSO frame.
            h.sh(f"ethtool -K {end} tx off tso off gso off gro off", ns=ns)
            # Each transfer starts from the defaults, not from what the last one learned.
            h.sh("sysctl -qw net.ipv4.tcp_no_metrics_save=1", ns=ns)
        h.sh(f"ip link add {DP_IF} type veth peer name {RELAY_DP_IF}")
        h.sh(f"ip link set {RELAY_DP_IF} netns {NS_RELAY}")
        h.sh(f"sysctl -qw net.ipv6.conf.{DP_IF}.disable_ipv6=1")
        h.sh(f"ip link set {DP_IF} up")
        h.sh(f"ethtool -K {DP_IF} tx off tso off gso off gro off")
        for end in ("wsr-ra", "wsr-rb", RELAY_DP_IF):
            h.sh(f"sysctl -qw net.ipv6.conf.{end}.disable_ipv6=1", ns=NS_RELAY)
            h.sh(f"ip link set {end} up", ns=NS_RELAY)
            h.sh(f"ethtool -K {end} tx off tso off gso off gro off", ns=NS_RELAY)
        # Fixed neighbour entries for the Linux endpoints, and for the data plane (its config's
        # `neighbors`, dp_port_keys()): at 10 % loss each way all three of the kernel's ARP
        # solicitations can go unanswered, and a transfer then fails with EHOSTUNREACH before
        # its first segment; the data plane, started afresh for each sending transfer, would
        # spend a round trip resolving A before its SYN, and a second when one of the two
        # frames was lost. The matrix measures TCP, not ARP.
        def mac(dev, ns=None):
            return h.sh(f"cat /sys/class/net/{dev}/address", ns=ns).stdout.strip()
        mac_a, mac_b, mac_dp = mac("wsr-a", NS_A), mac("wsr-b", NS_B), mac(DP_IF)
        RelayNet.mac_a = mac_a
        for ns, dev, ip, lladdr in ((NS_A, "wsr-a", IP_B, mac_b), (NS_A, "wsr-a", IP_DP, mac_dp),
                                    (NS_B, "wsr-b", IP_A, mac_a)):
            h.sh(f"ip neigh replace {ip} lladdr {lladdr} dev {dev} nud permanent", ns=ns)
        if SPLIT:
            # Each receiving end's kernel work on its own side's CPU (RPS). The data plane's
            # af_packet port keeps the default: the copy into its ring stands for a NIC's DMA.
            for ns, end in ((NS_RELAY, "wsr-ra"), (NS_RELAY, "wsr-rb"), (NS_RELAY, RELAY_DP_IF),
                            (NS_A, "wsr-a"), (NS_B, "wsr-b")):
                h.steer_rx(end, 1 << (HOST_CPU if ns == NS_B else WORLD_CPU), ns=ns)
        return self

    def teardown(self):
        for ns in (NS_A, NS_B, NS_RELAY):
            h.sh(f"ip netns del {ns}", check=False)
        h.sh(f"ip link del {DP_IF}", check=False)

    def __exit__(self, *exc):
        self.teardown()

    mac_a = None  # A's link address, known once the links are up

    @staticmethod
    def dp_port_keys():
        """The data plane port's static neighbour entry for A (write_config's port_keys)."""
        return (f'neighbors: [{{ address: {IP_A}, mac: "{RelayNet.mac_a}" }}]',)

    @staticmethod
    def dp_device():
        return (f"net_af_packet_wsr,iface={DP_IF},blocksz=4096,framesz=2048,framecnt=8192,"
                "qpairs=1")


class Relay:
    """wsrelay between A and `far` ("b" or "dp"); stop() returns its counters."""

    def __init__(self, far, loss=0.0, delay_ms=0.0, reorder=0.0, dup=0.0, seed=1,
                 rate_mbit=0.0, max_seconds=900):
        far_if = "wsr-rb" if far == "b" else RELAY_DP_IF
        # netem, which the relay stands in for, runs in the kernel's softirq and so before
        # any task; the relay gets a real-time priority for the same reason: a busy-polling
        # data plane on one CPU, a Linux endpoint and the relay on the other would
        # otherwise hold frames in the relay for whole scheduler slices (10 ms seen) beyond
        # their delay, against the data plane only.
        self.argv = ["ip", "netns", "exec", NS_RELAY] + _on(NS_RELAY) + [
                     "chrt", "-f", "10",
                     WSRELAY, "--a", "wsr-ra", "--b", far_if,
                     "--loss", str(loss), "--delay-ms", str(delay_ms), "--reorder", str(reorder),
                     "--dup", str(dup), "--seed", str(seed), "--rate-mbit", str(rate_mbit),
                     "--max-seconds", str(max_seconds)]
        self.proc = None
        self.counters = {}

    def __enter__(self):
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        line = self.proc.stderr.readline()
        if "relaying" not in line:
            self.proc.wait(5)
            raise RuntimeError(f"wsrelay did not start: {line}{self.proc.stderr.read()}")
        return self

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        out, err = self.proc.communicate(timeout=10)
        self.counters = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
        return self.counters

    def __exit__(self, *exc):
        if self.proc and self.proc.returncode is None:
            self.stop()


class Receiver:
    """pattern_peer.py recv in namespace `ns`, listening for one transfer of `count`
    messages."""

    def __init__(self, ns, ip, count, timeout_s):
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", ns] + _on(ns) + [
             "/usr/bin/python3", PEER, "recv", ip, str(RECV_PORT),
             str(MESSAGE), str(count), str(timeout_s)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if "listening" not in self.proc.stderr.readline():
            self.proc.kill()
            raise RuntimeError("pattern_peer.py did not start: " + self.proc.stderr.read())
        self.timeout_s = timeout_s

    def result(self):
        try:
            out, _ = self.proc.communicate(timeout=self.timeout_s + 30)
            return json.loads(out.strip().splitlines()[-1])
        except Exception as e:  # a receiver that hung or printed nothing: a failed transfer
            self.proc.kill()
            return {"bytes": 0, "seconds": None, "intact": False, "error": repr(e)}


def settle(ns, peer, timeout_s=5.0):
    """Waits (at most timeout_s) until no socket of namespace `ns` to `peer` has a FIN
    still unacknowledged, before the transfer's relay goes away: a FIN or its ACK lost
    with the relay would be sent again on the RTO, and counted as a timeout of the next
    transfer measured in that namespace. The receiver closes last (its FIN answers the
    sender's, which went with the data), so the receiving end is the one to wait for."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        r = h.sh(f"ss -Htn state fin-wait-1 state last-ack state closing dst {peer}", ns=ns,
                 check=False)
        if not r.stdout.strip():
            return True
        time.sleep(0.05)
    return False


def linux_send(ns, dst, port, count, timeout_s, cc):
    """pattern_peer.py send from `ns` with congestion control `cc`: seconds until the
    receiver's FIN, or an error entry."""
    cmd = _on(ns) + ["/usr/bin/python3", PEER, "send", dst, str(port), str(MESSAGE), str(count),
                     str(timeout_s), cc]
    r = h.sh(" ".join(cmd),
             ns=ns, check=False, timeout=timeout_s + 30)
    try:
        out = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"seconds": None, "error": (r.stdout + r.stderr)[-400:]}
    if out.get("error") is None:
        out.pop("error")
    return out


class WsperfSink:
    """`wsperf sink --verify` in namespace B for the Linux <-> Linux transfer from A."""

    def __init__(self, timeout_s):
        self.rep = tempfile.NamedTemporaryFile(suffix=".json")
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", NS_B] + _on(NS_B) + [
             WSPERF, "sink", "--listen", f"{IP_B}:{SINK_PORT}",
             "--verify", "--quiet", "--duration", str(int(timeout_s) + 30), "--report",
             self.rep.name], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if "listening" not in self.proc.stdout.readline():
            self.proc.kill()
            raise RuntimeError("wsperf sink did not start: " + self.proc.stdout.read())

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        self.proc.communicate(timeout=10)
        try:
            return json.load(open(self.rep.name))
        finally:
            self.rep.close()


KINDS = ("fast", "rack", "tlp", "rto", "spurious")


def _entry(seconds, stream_bytes, intact, error=None, **more):
    ok = seconds is not None and intact and not error
    e = {"seconds": round(seconds, 4) if ok else None,
         "goodput_mbit": round(stream_bytes * 8 / seconds / 1e6, 2) if ok else None,
         "ok": ok}
    if error:
        e["error"] = str(error)[-300:]
    if not ok:  # why it failed: the time it did finish in, if any, and whether all arrived
        e["intact"] = bool(intact)
        if seconds is not None:
            e["finished_s"] = round(seconds, 4)
    e.update(more)
    return e


def median_entry(entries):
    """The entry of median transfer time among repeats (one not finished counts as the
    slowest), with every repeat's seconds under "samples" and, for each repeat that failed,
    its reason under "failed"."""
    key = [(e["seconds"] if e["ok"] else float("inf"), i) for i, e in enumerate(entries)]
    chosen = dict(entries[sorted(key)[len(key) // 2][1]])
    if len(entries) > 1:
        chosen["samples"] = [e["seconds"] for e in entries]
        # Each repeat's sender timeouts beside its seconds: a long transfer is most often a
        # chain of backed-off timeouts, and the median entry's count alone does not show it.
        if all("sender_timeouts" in e for e in entries):
            chosen["timeouts_samples"] = [e["sender_timeouts"] for e in entries]
        if all("sender_counters" in e for e in entries):
            chosen["sender_counters_sum"] = {
                k: sum(e["sender_counters"].get(k, 0) for e in entries) for k in SENDER_COUNTERS}
        # The kernel sender's own view (pattern_peer.py's TCP_INFO), where every repeat has
        # it: time limited by the receiver's window, ACKs taken, D-SACKed segments.
        infos = [e.get("tcp_info") for e in entries]
        if all(infos):
            chosen["tcp_info_sum"] = {k: sum(i.get(k, 0) for i in infos) for k in TCP_INFO_SUMMED}
        # A receiving data plane's ACK repeats and PAWS-spared segments over every repeat.
        for k in ("acks_repeated", "paws_spared"):
            if all(k in e for e in entries):
                chosen[k + "_sum"] = sum(e[k] for e in entries)
        # The data plane's drops by reason over every repeat (a receiving data plane's).
        if any("drops" in e for e in entries):
            total = {}
            for e in entries:
                for k, v in e.get("drops", {}).items():
                    total[k] = total.get(k, 0) + v
            chosen["drops_sum"] = total
        # The frames each side sent, as the relay took them (before its losses): A is
        # "a", the far end "b"; a receiver's ACKs are what it sends.
        if all("relay" in e for e in entries):
            chosen["relay_sum"] = {
                d: {k: sum(e["relay"].get(d, {}).get(k, 0) for e in entries)
                    for k in ("received", "dropped")} for d in ("a_to_b", "b_to_a")}
        # A sample of None says only that a repeat failed: keep each one's reason.
        failed = [{"repeat": i, **{k: e[k] for k in ("error", "intact", "finished_s") if k in e}}
                  for i, e in enumerate(entries) if not e["ok"]]
        if failed:
            chosen["failed"] = failed
    return chosen


def linux_receive(imp, count, timeout_s, cc):
    """A sends to B's verifying sink over a relay started afresh with `imp`: the Linux
    counterpart of wirespeed receiving (_receive), with the sender's counters."""
    with Relay("b", **imp) as relay:
        sink = WsperfSink(timeout_s)
        sc = SenderCounters(NS_A)
        s = linux_send(NS_A, IP_B, SINK_PORT, count, timeout_s, cc)
        k = sink.stop()
        intact = k.get("bytes") == count * MESSAGE and k.get("verify_errors") == 0
        e = _entry(s.get("seconds"), count * (MESSAGE + 4), intact, s.get("error"),
                   tcp_info=s.get("tcp_info"), **sc.entry())
        settle(NS_B, IP_A)  # the receiver closes last: B's FIN, resent, would count next
    e["relay"] = relay.counters
    return e


def linux_pair(imp, count, timeout_s, cc="cubic", repeat=1, receive=True):
    """Linux A <-> Linux B over the relay: A sends to B's verifying sink (unless `receive`
    is False: the counterpart of wirespeed receiving), then B sends to A's verifying
    receiver. Each with the sender's namespace's RTO expirations. The Linux
    senders use congestion control `cc` (wirespeed's default is cubic). Each transfer gets
    a relay of its own, started afresh with the seed, so that it meets the same loss and
    reordering decisions as its counterpart in wirespeed_pair. Each direction runs
    `repeat` times; its entry is the median one (median_entry)."""
    out = {}
    runs = [linux_receive(imp, count, timeout_s, cc) for _ in range(repeat if receive else 0)]
    if runs:
        out["ws_receives"] = median_entry(runs)
    runs = []
    for _ in range(repeat):
        with Relay("b", **imp) as relay:
            rx = Receiver(NS_A, IP_A, count, timeout_s)
            sc = SenderCounters(NS_B)
            s = linux_send(NS_B, IP_A, RECV_PORT, count, timeout_s, cc)
            r = rx.result()
            runs.append(_entry(r["seconds"], r["bytes"], r["intact"], r["error"] or s.get("error"),
                               tcp_info=s.get("tcp_info"), **sc.entry()))
            settle(NS_A, IP_B)
        runs[-1]["relay"] = relay.counters
    out["ws_sends"] = median_entry(runs)
    return out


def recovery(ctl):
    return {k: int(ctl.value("wirespeed_tcp_recovery_total", kind=k)) for k in KINDS}


def wirespeed_pair(imp, count, timeout_s, tmp, metrics_port=9591, also=None, cc="cubic",
                   repeat=1, receive=True):
    """Linux A <-> the data plane over the relay: the data plane's `source` sends to A's
    verifying receiver as it starts, then A sends to its `sink`. RTO expirations are the
    data plane's wirespeed_tcp_recovery_total{kind="rto"} and A's TcpExtTCPTimeouts.
    Each transfer gets a relay of its own, started afresh with the seed (see linux_pair);
    each direction runs `repeat` times (its median entry, median_entry): the data plane is
    started afresh for each sending transfer, and the receiving ones go to the last
    (none when `receive` is False).
    `also(ctl)`, when given, runs last with the data plane still up (its byte echo
    listens on ECHO_PORT)."""
    out = {}
    cfg = h.write_config(
        tmp, device=RelayNet.dp_device(), address=f"{IP_DP}/24", prefix="wsr",
        port_keys=RelayNet.dp_port_keys(),
        metrics_port=metrics_port,
        services=["{ name: sink, kind: sink, protocol: tcp, port: %d }" % SINK_PORT,
                  "{ name: echo, kind: echo, protocol: tcp, port: %d, framing: none }"
                  % ECHO_PORT,
                  "{ name: source, kind: source, protocol: tcp, target: \"%s:%d\", "
                  "message_size: %d, count: %d, duration_s: %d }"
                  % (IP_A, RECV_PORT, MESSAGE, count, int(timeout_s) + 30)])
    sends = []
    for i in range(repeat):
        first = Relay("dp", **imp)
        with first:
            rx = Receiver(NS_A, IP_A, count, timeout_s)
            # The control process first: the source sends as the data plane starts, and a
            # control process starting beside it (and the harness polling it) took the CPU
            # from the data plane in the first tens of milliseconds of the transfer.
            with h.Control(cfg, tmp, metrics_port) as ctl, h.Dataplane(cfg, tmp):
                r = rx.result()
                rec = recovery(ctl)
                sends.append(_entry(r["seconds"], r["bytes"], r["intact"], r["error"],
                                    sender_timeouts=rec["rto"], recovery=rec))
                settle(NS_A, IP_DP)
                if i == repeat - 1:
                    first.stop()
                    sends[-1]["relay"] = first.counters
                    out["ws_sends"] = median_entry(sends)
                    if receive:
                        _receives(ctl, out, imp, count, timeout_s, cc, repeat, also)
        sends[-1].setdefault("relay", first.counters)
    return out


def _receives(ctl, out, imp, count, timeout_s, cc, repeat, also):
    """wirespeed_pair's receiving half, on the running data plane."""
    runs = []
    for _ in range(repeat):
        with Relay("dp", **imp) as relay:
            runs.append(_receive(ctl, count, timeout_s, cc))
        runs[-1]["relay"] = relay.counters
    out["ws_receives"] = median_entry(runs)
    if also:
        with Relay("dp", **imp):
            out["also"] = also(ctl)


def _receive(ctl, count, timeout_s, cc):
    """wirespeed_pair's second transfer: A sends to the data plane's sink."""
    rto_before = recovery(ctl)["rto"]
    drops_before = ctl.drops()
    repeats_before = ctl.value("wirespeed_tcp_acks_repeated_total")
    spared_before = ctl.value("wirespeed_tcp_paws_reordered_accepted_total")
    sc = SenderCounters(NS_A)
    before = ctl.value("wirespeed_service_received_bytes_total", service="sink")
    s = linux_send(NS_A, IP_DP, SINK_PORT, count, timeout_s, cc)
    ctl.wait_for(lambda: ctl.value("wirespeed_service_received_bytes_total",
                                   service="sink") - before >= count * (MESSAGE + 4), 3)
    got = ctl.value("wirespeed_service_received_bytes_total", service="sink") - before
    return _entry(s.get("seconds"), count * (MESSAGE + 4), got >= count * MESSAGE,
                  s.get("error"), wirespeed_rto=recovery(ctl)["rto"] - rto_before,
                  acks_repeated=int(ctl.value("wirespeed_tcp_acks_repeated_total")
                                    - repeats_before), tcp_info=s.get("tcp_info"),
                  paws_spared=int(ctl.value("wirespeed_tcp_paws_reordered_accepted_total")
                                  - spared_before),
                  drops={k: int(v - drops_before.get(k, 0)) for k, v in ctl.drops().items()
                         if v > drops_before.get(k, 0)},
                  **sc.entry())
