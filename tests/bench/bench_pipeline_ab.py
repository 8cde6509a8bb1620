#!/usr/bin/python3
"""Interleaved A/B of the TCP message services over net_memif: a `source` client
process sends `--size`-byte messages to a `sink` server process (or a `ping` to the `echo`
with `--ping`), once per variant per repetition, the variants interleaved run by run (forward,
then backward) so that a load that drifts hits every variant alike. A variant is
`label=BUILD_DIR[@IDLE][+l4off][:PIPELINE_YAML]`, where IDLE is both data planes' `dataplane.idle`
(`poll`, the default, or `adaptive`; `poll=build --variant adaptive=build@adaptive`),
`+l4off` gives both memif ports `l4_checksums: off`, and PIPELINE_YAML is the body of the
`pipeline:` section in flow style, e.g.
`off=build:{batching: false}` or `b5=build:{backoff_us: 5}`; the server and the client
both get it. The client runs under `perf stat`, so where the machine has hardware counters
each run also reports the client's user-space instructions and cycles per message (far
steadier than msg/s on a shared machine; this machine's VM has none: use
tests/bench/pipeline_cost under callgrind for instructions per message).

  tests/bench/bench_pipeline_ab.py --variant on=build --variant off=build:{batching: false}
                                   [--size 8 --size 1048576] [--reps 3] [--duration 3] [--ping]
                                   [--reconnect] [--mtu 9000] [--connections 4] [--ping-beside]
                                   [--hiccups 2] [--out FILE]

With `--reconnect` (implies `--ping`), every connection of the ping closes after one round
trip and opens again (`reconnect: true`): the connection rate of run_services.sh connrate,
with its TCP settings (`time_wait_ms: 1000`, `time_wait_reuse_ms: 5`), for the builds in
turn; `cps` is connections/s over the second half of the run.

With `--hiccups SECONDS`, each run is followed by tests/bench/hiccup_meter on both CPUs:
the gaps per second longer than 20 us that the machine itself (interrupts, the tick, the
hypervisor) takes from a busy-polling CPU. A ping's round trip in flight across a gap is
late by it, so `gap_share_pct` (gaps per second over round trips per second) above 0.1 %
means the p99.9 measures the machine.

Each run also reports `srv_busy` and `cli_busy`: the share of each data plane's loop time
that found work (its `/wirespeed/cores` telemetry: busy over busy + idle nanoseconds), over
the second half of the span in which the client received frames, from snapshots every half
second. A side near 1.0 is the one that sets the rate; the other side's share says how much
room it had left.

With `--out FILE`, every run (variant, size, repetition in the order run, and its figures)
and the medians per variant and size are also written as JSON, for a results file.

Reports msg/s over the second half of each run (from the client's progress lines, as
bench.py's "2nd half" columns). Needs root. Uses its own memif socket, DPDK file prefixes
(wspab-*) and control port, lcores 0 (server) and 1 (client), and removes what it made.
"""
import argparse
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_txpath import wait_running  # noqa: E402  (the same server start-up wait)

SOCK = "/run/wirespeed-pipeline-ab.sock"
PROGRESS = re.compile(r"^load: (done: )?([\d.]+) s, (\d+) messages")
CONNECTIONS = re.compile(r"^load: (done: )?([\d.]+) s, .* (\d+) connections \(")


# run_services.sh connrate's TCP settings: a 5 ms TIME-WAIT takeover, or one client could
# open at most its 28,232 ephemeral ports per second to one server port.
RECONNECT_TCP = "tcp: { time_wait_ms: 1000, time_wait_reuse_ms: 5 }\n"


def config(path, *, prefix, lcore, role, addr, services, pipeline, mtu=1500, idle="poll",
           l4off=False, tcp=""):
    svc = "\n".join(f"  - {s}" for s in services)
    pl = f"pipeline: {pipeline}\n" if pipeline else ""
    pl += tcp
    with open(path, "w") as f:
        f.write(f"""version: 1
dataplane:
  lcores: [{lcore}]
  idle: {idle}
  file_prefix: {prefix}
  hugepages: false
  memory_mb: 512
ports:
  - name: p0
    device: "net_memif0,role={role},socket={SOCK},id=0"
    mtu: {mtu}
{"    l4_checksums: off" if l4off else ""}
    address: {addr}/24
services:
{svc}
{pl}control:
  metrics_listen: 127.0.0.1:9583
""")
    return path


def stop(p):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def second_half_rate(log, progress=PROGRESS):
    """The count `progress` reads from the client's progress lines, per second over the
    second half of the run."""
    pts = []
    for line in open(log):
        m = progress.match(line.strip())
        if m:
            pts.append((float(m.group(2)), int(m.group(3))))
    if len(pts) < 2:
        return None
    t_end, n_end = pts[-1]
    mid = next(((t, n) for t, n in pts if t >= t_end / 2), pts[0])
    return (n_end - mid[1]) / (t_end - mid[0]) if t_end > mid[0] else None


def perf_stat(path):
    out = {}
    for line in open(path):
        parts = line.strip().split(",")
        if len(parts) > 2 and parts[0].replace(".", "").isdigit():
            out[parts[2].split(":")[0]] = float(parts[0])
    return out


def core_sample(prefix):
    """A data plane's core counters so far (busy and idle nanoseconds, received frames), from
    its `/wirespeed/cores` command on DPDK's telemetry socket; None if it does not answer."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
            s.settimeout(1)
            s.connect(f"/var/run/dpdk/{prefix}/dpdk_telemetry.v2")
            s.recv(16384)  # the greeting: version, pid, max_output_len
            s.send(b"/wirespeed/cores")
            d = json.loads(s.recv(65536))["/wirespeed/cores"]
        return (d["wirespeed_core_busy_seconds_total"], d["wirespeed_core_idle_seconds_total"],
                d["wirespeed_core_received_frames_total"])
    except (OSError, ValueError, KeyError):
        return None


def sample_cores(client, every=0.5):
    """Snapshots (time, server, client) of both data planes while the client runs."""
    snaps = []
    while client.poll() is None:
        srv, cli = core_sample("wspab-srv"), core_sample("wspab-cli")
        if srv and cli:
            snaps.append((time.monotonic(), srv, cli))
        time.sleep(every)
    return snaps


def busy_second_half(snaps):
    """Each side's busy share from the snapshot at the middle of the span in which the
    client's received frames grew to the last snapshot of that span; {} when too short."""
    grew = [i for i in range(1, len(snaps)) if snaps[i][2][2] > snaps[i - 1][2][2]]
    if len(grew) < 2:
        return {}
    first, last = grew[0] - 1, grew[-1]
    mid = (snaps[first][0] + snaps[last][0]) / 2
    a = next(i for i in range(first, last + 1) if snaps[i][0] >= mid)
    if a >= last:
        return {}
    out = {}
    for key, side in (("srv_busy", 1), ("cli_busy", 2)):
        busy = snaps[last][side][0] - snaps[a][side][0]
        idle = snaps[last][side][1] - snaps[a][side][1]
        if busy + idle > 0:
            out[key] = busy / (busy + idle)
    return out


def rtt(report):
    q = report["rtt_us"]
    return {"p50_us": q["p50"], "p99_us": q["p99"], "p999_us": q["p999"], "max_us": q["max"]}


def beside_ping(tmp, tag, dur, on):
    """A 64-byte TCP ping through the echo beside the load (--ping-beside)."""
    if not on:
        return []
    rep = os.path.join(tmp, f"{tag}-beside.json")
    return [f"{{ name: beside, kind: ping, protocol: tcp, target: \"10.98.0.1:7\", message_size: 64, "
            f"duration_s: {dur}, report: {rep} }}"]


def one_run(tmp, label, build, pipeline, size, dur, ping, mtu=1500, conns=1, beside=False,
            idle="poll", l4off=False, reconnect=False):
    dp = os.path.join(build, "dataplane", "wirespeed-dataplane")
    tag = f"{label}-{size}"
    if os.path.exists(SOCK):
        os.unlink(SOCK)
    tcp = RECONNECT_TCP if reconnect else ""
    scfg = config(os.path.join(tmp, f"{tag}-s.yaml"), prefix="wspab-srv", lcore=0, role="server",
                  addr="10.98.0.1", pipeline=pipeline, mtu=mtu, idle=idle, l4off=l4off, tcp=tcp,
                  services=["{ name: sink, kind: sink, protocol: tcp, port: 9 }",
                            "{ name: echo, kind: echo, protocol: tcp, port: 7 }"])
    slog = os.path.join(tmp, f"{tag}-s.log")
    server = subprocess.Popen([dp, "-c", scfg], stdout=open(slog, "w"), stderr=subprocess.STDOUT)
    try:
        wait_running(server, slog)
        rep = os.path.join(tmp, f"{tag}-report.json")
        if os.path.exists(rep):
            os.unlink(rep)
        kind = "ping" if ping else "source"
        port = 7 if ping else 9
        again = ", reconnect: true" if reconnect else ""
        ccfg = config(os.path.join(tmp, f"{tag}-c.yaml"), prefix="wspab-cli", lcore=1, role="client",
                      addr="10.98.0.2", pipeline=pipeline, mtu=mtu, idle=idle, l4off=l4off, tcp=tcp,
                      services=[f"{{ name: load, kind: {kind}, protocol: tcp, target: \"10.98.0.1:{port}\", "
                                f"message_size: {size}, duration_s: {dur}, connections: {conns}{again}, "
                                f"report: {rep} }}"] + beside_ping(tmp, tag, dur, beside))
        stat = os.path.join(tmp, f"{tag}-stat.csv")
        clog = os.path.join(tmp, f"{tag}-c.log")
        client = subprocess.Popen(["perf", "stat", "-x,", "-e", "instructions:u,cycles:u", "-o",
                                   stat, "--", dp, "-c", ccfg], stdout=open(clog, "w"),
                                  stderr=subprocess.STDOUT)
        try:
            snaps = sample_cores(client)
            client.wait(dur + 60)
        finally:
            stop(client)
        r = json.load(open(rep))
        s = perf_stat(stat)
        n = max(r["messages"], 1)
        res = {"mps": second_half_rate(clog) or r["messages_per_second"],
               "gbps": r["bits_per_second"] / 1e9}
        # Without hardware counters (virtual machines) perf counts nothing: left out.
        if s.get("instructions"):
            res["instr_per_msg"] = s["instructions"] / n
            res["cycles_per_msg"] = s.get("cycles", 0) / n
        res.update(busy_second_half(snaps))
        if reconnect:  # one round trip per connection: messages and connections alike
            res["cps"] = second_half_rate(clog, CONNECTIONS) or r["connections_per_second"]
        if ping:
            res.update(rtt(r))
        if beside:
            b = json.load(open(os.path.join(tmp, f"{tag}-beside.json")))
            res.update({f"beside_{k}": v for k, v in rtt(b).items()})
            res["beside_msgs"] = b["messages"]
        return res
    finally:
        stop(server)
        if os.path.exists(SOCK):
            os.unlink(SOCK)


def hiccups(build, seconds):
    """The machine's own gaps on both CPUs (tests/bench/hiccup_meter), measured together
    right after a run: gaps/s over 20 us summed over the CPUs, and the largest gap."""
    meter = os.path.join(build, "tests", "bench", "hiccup_meter")
    procs = [subprocess.Popen([meter, str(seconds), str(cpu)], stdout=subprocess.PIPE, text=True)
             for cpu in (0, 1)]
    outs = [json.loads(p.communicate(timeout=seconds + 30)[0]) for p in procs]
    return {"gaps20_per_s": sum(o["gaps_per_s"]["over_20_us"] for o in outs),
            "gap_max_us": max(o["max_us"] for o in outs)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--variant", action="append", required=True,
                    help="label=build-dir[@idle][:pipeline flow mapping]; idle is the "
                         "`dataplane.idle` of both data planes (default poll)")
    ap.add_argument("--size", action="append", type=int)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--duration", type=int, default=3)
    ap.add_argument("--ping", action="store_true", help="ping -> echo instead of source -> sink")
    ap.add_argument("--reconnect", action="store_true",
                    help="the ping's connections close after each round trip and open again")
    ap.add_argument("--mtu", type=int, default=1500, help="the MTU of both memif ports")
    ap.add_argument("--connections", type=int, default=1, help="connections of the load")
    ap.add_argument("--ping-beside", action="store_true",
                    help="a 64-byte TCP ping beside the load, its round trips reported")
    ap.add_argument("--hiccups", type=float, default=0, metavar="SECONDS",
                    help="after each run, the machine's gaps on both CPUs (hiccup_meter) for "
                         "SECONDS; with --ping, the share of round trips they can delay")
    ap.add_argument("--out", metavar="FILE", help="every run and the medians, as JSON")
    a = ap.parse_args()
    a.ping = a.ping or a.reconnect
    variants = []
    for v in a.variant:
        label, rest = v.split("=", 1)
        build, _, pipeline = rest.partition(":")
        build, l4off, _ = build.partition("+l4off")
        build, _, idle = build.partition("@")
        variants.append((label, os.path.abspath(build), pipeline.strip(), idle or "poll",
                         bool(l4off)))
    sizes = a.size or [8]
    a.reps = max(1, min(a.reps, 10))
    a.duration = max(2, min(a.duration, 20))
    res = {}
    runs = []
    with tempfile.TemporaryDirectory(prefix="wspab-") as tmp:
        for rep in range(a.reps):
            order = variants if rep % 2 == 0 else list(reversed(variants))
            for size in sizes:
                for label, build, pipeline, idle, l4off in order:
                    try:
                        r = one_run(tmp, label, build, pipeline, size, a.duration, a.ping, a.mtu,
                                    a.connections, a.ping_beside, idle, l4off, a.reconnect)
                    except Exception as e:  # a failed run is reported, the others go on
                        print(f"{label} {size} B rep {rep}: FAILED {e}", flush=True)
                        continue
                    if a.hiccups > 0:
                        r.update(hiccups(build, min(a.hiccups, 10)))
                        if a.ping:  # each gap delays about one round trip in flight
                            r["gap_share_pct"] = 100 * r["gaps20_per_s"] / max(r["mps"], 1)
                    res.setdefault((label, size), []).append(r)
                    runs.append({"variant": label, "size": size, "rep": rep, **r})
                    print(f"{label} {size} B rep {rep}: " +
                          ", ".join(f"{k} {v:.4g}" for k, v in r.items()), flush=True)
    lat = ["p50_us", "p99_us", "p999_us", "max_us"]
    keys = ["mps", "gbps"] + (["cps"] if a.reconnect else []) + (lat if a.ping else [])
    if a.ping_beside:
        keys += ["beside_msgs"] + [f"beside_{k}" for k in lat]
    if a.hiccups > 0:
        keys += ["gaps20_per_s", "gap_max_us"] + (["gap_share_pct"] if a.ping else [])
    if all("srv_busy" in r and "cli_busy" in r for rs in res.values() for r in rs):
        keys += ["srv_busy", "cli_busy"]
    if all("instr_per_msg" in r for rs in res.values() for r in rs):
        keys += ["instr_per_msg", "cycles_per_msg"]
    print("\n| variant | size B | " + " | ".join(f"{k} (median)" for k in keys) + " | runs |")
    print("| --- | --- | " + " | ".join("---" for _ in keys) + " | --- |")
    medians = []
    for (label, size), rs in sorted(res.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        med = {k: statistics.median(r[k] for r in rs) for k in keys}
        medians.append({"variant": label, "size": size, "runs": len(rs), **med})
        cells = [f"{med[k]:.4g}" for k in keys]
        print(f"| {label} | {size} | " + " | ".join(cells) + f" | {len(rs)} |")
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            json.dump({"command": sys.argv, "variants": {v[0]: v[1] for v in variants},
                       "runs": runs, "medians": medians}, f, indent=1)
    return 0 if res else 1


if __name__ == "__main__":
    sys.exit(main())
