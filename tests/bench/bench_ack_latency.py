#!/usr/bin/python3
"""ACK latency of a receiver over wsrelay: how long after a data segment arrives at the
receiver's port its ACK leaves, Linux's receiver against the data plane's sink under
`idle: adaptive` and `idle: poll`, in the same run.

A Linux sender in namespace wsr-a sends COUNT x 64 KiB (pattern_peer.py) through wsrelay
(tests/relay/, one-way delay --delay-ms, no loss) to Linux's `wsperf sink` in wsr-b, then to
the data plane's `sink` on wsr-dp, once per idle mode. tcpdump captures on the relay's end
of the receiver's veth (wsr-rb, wsr-rw: the af_packet port bypasses the qdisc, so a capture
on wsr-dp itself misses what the data plane sends), so both receivers are timed at the same
kind of point, one veth hop from the receiver: an ACK's latency is
the time from the last data segment that arrived before it to the ACK, counted for the
first ACK after new data only (a delayed ACK's wait counts; a window update with no new
data does not). Then --pings ICMP echoes from A, one every --ping-interval-ms, through the
relay without delay: their round trips show the receiver's wake-up cost when traffic
arrives in sparse bits. Prints p50/p99/p99.9/max per receiver and one JSON line (`RESULT {...}`);
--json writes it to FILE too. Takes the shared integration lock for the whole run.

  sudo tests/bench/bench_ack_latency.py [--count 64] [--delay-ms 1] [--repeat 1]
                                        [--idle adaptive,poll] [--pings 200]
                                        [--ping-interval-ms 10] [--json FILE]
"""
import argparse
import fcntl
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "relay"))
import relay_net as rn  # noqa: E402
import harness as h  # noqa: E402  (tests/integration, on the path relay_net set)

LOCK = "/tmp/ws-integration.lock"
LINE = re.compile(r"^(\d+\.\d+) IP (\S+)\.(\d+) > (\S+)\.(\d+): Flags \[([^\]]*)\]"
                  r"(?:, seq (\d+):(\d+))?(?:, ack (\d+))?")


class Capture:
    """tcpdump of the TCP frames on `iface` (in namespace `ns`, or the root one) to a file."""

    def __init__(self, iface, ns, path):
        pre = ["ip", "netns", "exec", ns] if ns else []
        self.path = path
        self.proc = subprocess.Popen(
            pre + ["tcpdump", "-i", iface, "-n", "-s", "128", "-B", "16384", "--immediate-mode", "-U",
                   "-w", path, "tcp"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        line = self.proc.stderr.readline()
        if "listening" not in line:
            self.proc.kill()
            raise RuntimeError(f"tcpdump did not start: {line}")

    def stop(self):
        time.sleep(0.2)  # the last ACKs
        self.proc.send_signal(signal.SIGINT)
        self.proc.communicate(timeout=10)
        return self.path


def ack_delays(pcap, receiver_ip):
    """Microseconds from the last data segment that reached `receiver_ip` to the first ACK
    it sent after it, one value per such ACK."""
    out = subprocess.run(["tcpdump", "-r", pcap, "-n", "-tt", "-S", "tcp"], capture_output=True,
                         text=True).stdout
    delays, last_data = [], None
    for line in out.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        t = float(m.group(1))
        src, dst = m.group(2), m.group(4)
        if dst == receiver_ip and m.group(7) and m.group(7) != m.group(8):
            last_data = t
        elif src == receiver_ip and m.group(9) and last_data is not None:
            delays.append((t - last_data) * 1e6)
            last_data = None
    return delays


def summary(delays):
    if not delays:
        return {"acks": 0}
    v = sorted(delays)

    def q(p):
        return round(v[min(len(v) - 1, int(p * len(v)))], 1)
    return {"acks": len(v), "p50_us": q(0.5), "p99_us": q(0.99), "p999_us": q(0.999),
            "max_us": round(v[-1], 1)}


def ping_rtts(args, far, ip):
    """Round trips (us) of --pings ICMP echoes from A every --ping-interval-ms through a
    relay without delay: the receiver's wake-up cost when traffic comes in sparse bits."""
    if args.pings == 0:
        return []
    with rn.Relay(far, seed=args.seed):
        r = h.sh(f"ping -n -c {args.pings} -i {args.ping_interval_ms / 1000} -W 1 {ip}",
                 ns=rn.NS_A, check=False, timeout=args.pings * args.ping_interval_ms / 1e3 + 30)
    return [float(m) * 1e3 for m in re.findall(r"time=([0-9.]+) ms", r.stdout)]


def linux_run(args, tmp, i):
    with rn.Relay("b", delay_ms=args.delay_ms, seed=args.seed):
        cap = Capture("wsr-rb", rn.NS_RELAY, os.path.join(tmp, f"linux-{i}.pcap"))
        sink = rn.WsperfSink(args.timeout)
        s = rn.linux_send(rn.NS_A, rn.IP_B, rn.SINK_PORT, args.count, args.timeout, "cubic")
        sink.stop()
        path = cap.stop()
    return ack_delays(path, rn.IP_B), s.get("seconds"), ping_rtts(args, "b", rn.IP_B)


def wirespeed_run(args, tmp, idle, i):
    cfg = h.write_config(
        tmp, device=rn.RelayNet.dp_device(), address=f"{rn.IP_DP}/24", prefix="wsr",
        port_keys=rn.RelayNet.dp_port_keys(),
        metrics_port=9593, idle=idle,
        services=["{ name: sink, kind: sink, protocol: tcp, port: %d }" % rn.SINK_PORT])
    with h.Dataplane(cfg, tmp), h.Control(cfg, tmp, 9593) as ctl:
        with rn.Relay("dp", delay_ms=args.delay_ms, seed=args.seed):
            cap = Capture(rn.RELAY_DP_IF, rn.NS_RELAY, os.path.join(tmp, f"ws-{idle}-{i}.pcap"))
            r = rn._receive(ctl, args.count, args.timeout, "cubic")
            path = cap.stop()
        rtts = ping_rtts(args, "dp", rn.IP_DP)
    return ack_delays(path, rn.IP_DP), r.get("seconds"), rtts


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=64, help="64 KiB messages per transfer")
    ap.add_argument("--delay-ms", type=float, default=1, help="the relay's one-way delay")
    ap.add_argument("--repeat", type=int, default=1, help="transfers per receiver (pooled)")
    ap.add_argument("--idle", default="adaptive,poll", help="the data plane's idle modes")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--pings", type=int, default=200,
                    help="ICMP echoes per receiver and repeat after the transfer (0: none)")
    ap.add_argument("--ping-interval-ms", type=float, default=10)
    ap.add_argument("--json", help="also write the result to FILE")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench_ack_latency: needs root (namespaces)")
        return 2
    h.require("tcpdump")
    tmp = tempfile.mkdtemp(prefix="ws-acklat-")
    result = {"count": args.count, "delay_ms": args.delay_ms, "repeat": args.repeat,
              "load_before": round(os.getloadavg()[0], 2)}
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with rn.RelayNet():
            runs = {"linux": ([], [], [])}
            for idle in args.idle.split(","):
                runs[f"wirespeed {idle}"] = ([], [], [])
            for i in range(args.repeat):  # interleaved, so load falls on all alike
                for name, (delays, secs, rtts) in runs.items():
                    d, s, p = (linux_run(args, tmp, i) if name == "linux" else
                               wirespeed_run(args, tmp, name.split()[1], i))
                    delays.extend(d)
                    secs.append(s)
                    rtts.extend(p)
    result["load_after"] = round(os.getloadavg()[0], 2)
    for name, (delays, secs, rtts) in runs.items():
        ping = summary(rtts)
        ping["pings"] = ping.pop("acks")
        result[name] = {**summary(delays), "transfer_s": secs, "ping": ping}
        r = result[name]
        print(f"{name:20} ACKs {r['acks']:6}  p50 {r.get('p50_us')} us  p99 {r.get('p99_us')} us"
              f"  p99.9 {r.get('p999_us')} us  max {r.get('max_us')} us  transfers {secs} s")
        print(f"{'':20} pings {ping['pings']:5}  p50 {ping.get('p50_us')} us  p99 "
              f"{ping.get('p99_us')} us  p99.9 {ping.get('p999_us')} us  max {ping.get('max_us')} us")
    print("RESULT " + json.dumps(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")
    ok = all(result[n]["acks"] > 0 for n in runs)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
