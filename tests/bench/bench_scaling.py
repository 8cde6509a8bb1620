#!/usr/bin/python3
"""Throughput against the number of cores: two data planes over net_memif with N queue
pairs, each on N lcores (one pipeline and one queue pair per lcore), N = 1, 2, ... side by
side. Both ends are wirespeed, so the connections of the client's cores arrive on the
server's cores that own them without a hand-over (docs/architecture.md, "Several cores").

Workloads, each run `--reps` times per core count, interleaved (1, 2, 1, 2, ...):
- bulk: `source` -> `sink`, 8 TCP connections of 64 KiB length32 messages (Gbit/s);
- rr:   `ping` -> `echo`, 64 TCP connections of 64-byte round trips (round trips/s).

During the second half of each run `wirespeed-control status --json` samples the server:
per-core busy share, received frames/s, connections and frames handed over between cores,
and the CPU time the server and the client processes used in that window (from /proc), printed
with the medians so that a flat result can be told apart: cores saturated (busy ~100 %), flows
piled on one core, or CPUs shared. "rate per server CPU" (work per CPU-second the server
used) stays flat when the cores add no cost of their own (no hand-over, no shared lock):
then throughput scales with the CPUs a machine can give each side. The busy share is wall
time and counts time a thread was preempted; the CPU time does not.

CPU layout: the server gets lcores 0..N-1 and the client N..2N-1 when the process may run
on 2N CPUs; otherwise both get 0..N-1 and share them, and the table says "shared". On a
machine with enough cores, pin nothing else there, use `--idle poll`, and add core counts
(`--cores 1,2,4,8`): scaling efficiency = rate(N) / (N x rate(1)).

  tests/bench/bench_scaling.py [--build build] [--cores 1,2] [--reps 3] [--duration 6]
                               [--idle adaptive|poll] [--workload bulk --workload rr]

Needs root. Uses its own memif socket (/run/wirespeed-bench-scaling.sock), DPDK file
prefixes (wsbsc-*) and control ports 9611/9612, and removes what it made.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_txpath import stop, wait_running  # noqa: E402  (the same start-up wait and stop)

SOCK = "/run/wirespeed-bench-scaling.sock"
SERVER_IP, CLIENT_IP = "10.97.0.1", "10.97.0.2"
WORKLOADS = {
    "bulk": ("source", 9, 65536, 8),
    "rr": ("ping", 7, 64, 64),
}


def config(path, *, prefix, lcores, queues, role, addr, services, idle, metrics):
    svc = "\n".join(f"  - {s}" for s in services)
    with open(path, "w") as f:
        f.write(f"""version: 1
dataplane:
  lcores: [{", ".join(str(c) for c in lcores)}]
  idle: {idle}
  file_prefix: {prefix}
  hugepages: false
  memory_mb: 1024
  mbufs: 32767
ports:
  - name: p0
    device: "net_memif0,role={role},socket={SOCK},id=0"
    mtu: 1500
    address: {addr}/24
    rx_queues: {queues}
    tx_queues: {queues}
services:
{svc}
control:
  metrics_listen: 127.0.0.1:{metrics}
""")
    return path


def cpu_seconds(pid):
    """User + system CPU time of a process so far (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def layout(n):
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) >= 2 * n:
        return cpus[:n], cpus[n:2 * n], "dedicated"
    return cpus[:n], cpus[:n], "shared"


def one_run(tmp, build, n, workload, dur, idle):
    dp = os.path.join(build, "dataplane", "wirespeed-dataplane")
    ctl = os.path.join(build, "control", "wirespeed-control")
    kind, port, size, conns = WORKLOADS[workload]
    s_cores, c_cores, how = layout(n)
    if os.path.exists(SOCK):
        os.unlink(SOCK)
    tag = f"{workload}-{n}"
    scfg = config(os.path.join(tmp, f"{tag}-s.yaml"), prefix="wsbsc-s", lcores=s_cores, queues=n,
                  role="server", addr=SERVER_IP, idle=idle, metrics=9611,
                  services=["{ name: sink, kind: sink, protocol: tcp, port: 9 }",
                            "{ name: echo, kind: echo, protocol: tcp, port: 7 }"])
    slog = os.path.join(tmp, f"{tag}-s.log")
    server = subprocess.Popen([dp, "-c", scfg], stdout=open(slog, "w"), stderr=subprocess.STDOUT)
    client = None
    try:
        wait_running(server, slog)
        rep = os.path.join(tmp, f"{tag}-report.json")
        if os.path.exists(rep):
            os.unlink(rep)
        ccfg = config(os.path.join(tmp, f"{tag}-c.yaml"), prefix="wsbsc-c", lcores=c_cores,
                      queues=n, role="client", addr=CLIENT_IP, idle=idle, metrics=9612,
                      services=[f'{{ name: load, kind: {kind}, protocol: tcp, target: '
                                f'"{SERVER_IP}:{port}", message_size: {size}, connections: {conns}, '
                                f'duration_s: {dur}, report: {rep} }}'])
        clog = os.path.join(tmp, f"{tag}-c.log")
        client = subprocess.Popen([dp, "-c", ccfg], stdout=open(clog, "w"), stderr=subprocess.STDOUT)
        time.sleep(dur / 2 + 1)
        t0, s0, c0 = time.monotonic(), cpu_seconds(server.pid), cpu_seconds(client.pid)
        st = subprocess.run([ctl, "-c", scfg, "status", "--json", "--interval", str(max(1, dur // 3))],
                            capture_output=True, text=True, timeout=30)
        dt = time.monotonic() - t0
        s_cpu, c_cpu = (cpu_seconds(server.pid) - s0) / dt, (cpu_seconds(client.pid) - c0) / dt
        client.wait(dur + 60)
        r = json.load(open(rep))
        cores = json.loads(st.stdout).get("cores", []) if st.returncode == 0 else []
        return {"layout": how, "rate": r["bits_per_second"] / 1e9 if workload == "bulk"
                else r["messages_per_second"], "errors": r["errors"] + r["connect_failures"],
                "server_cpu": s_cpu, "client_cpu": c_cpu,
                "busy": [c.get("busy_ratio") for c in cores],
                "frames": [c.get("received_frames_per_second", 0) for c in cores],
                "conns": [c.get("connections", 0) for c in cores],
                "redirected": [c.get("redirected_frames_per_second", 0) for c in cores]}
    finally:
        if client is not None:
            stop(client)
        stop(server)
        if os.path.exists(SOCK):
            os.unlink(SOCK)


def fmt_list(xs, f):
    return "/".join(f.format(x) if x is not None else "-" for x in xs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--cores", default="1,2")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--duration", type=int, default=6)
    ap.add_argument("--idle", choices=["adaptive", "poll"], default="adaptive")
    ap.add_argument("--workload", action="append", choices=sorted(WORKLOADS))
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    counts = [int(c) for c in a.cores.split(",")]
    a.reps = max(1, min(a.reps, 10))
    a.duration = max(3, min(a.duration, 30))
    res = {}
    with tempfile.TemporaryDirectory(prefix="wsbsc-") as tmp:
        for rep in range(a.reps):
            for w in a.workload or ["bulk", "rr"]:
                for n in counts if rep % 2 == 0 else list(reversed(counts)):
                    try:
                        r = one_run(tmp, build, n, w, a.duration, a.idle)
                    except Exception as e:  # a failed run is reported, the others go on
                        print(f"{w} {n} cores rep {rep}: FAILED {e}", flush=True)
                        continue
                    res.setdefault((w, n), []).append(r)
                    print(f"{w} {n} cores rep {rep}: {r}", flush=True)
    print("\n| workload | cores per side | CPUs | rate (median) | vs 1 core | CPUs used server + client "
          "| rate per server CPU | server busy per core | server frames/s per core "
          "| connections per core | handed over/s | runs |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for (w, n), rs in sorted(res.items()):
        med = statistics.median(r["rate"] for r in rs)
        base = res.get((w, counts[0]))
        ratio = med / statistics.median(r["rate"] for r in base) if base else float("nan")
        last = rs[len(rs) // 2]
        unit = "Gbit/s" if w == "bulk" else "round trips/s"
        per_cpu = statistics.median(r["rate"] / max(r["server_cpu"], 1e-3) for r in rs)
        print(f"| {w} | {n} | {rs[0]['layout']} | {med:.4g} {unit} | {ratio:.2f} | "
              f"{last['server_cpu']:.2f} + {last['client_cpu']:.2f} | {per_cpu:.4g} | "
              f"{fmt_list(last['busy'], '{:.0%}')} | {fmt_list(last['frames'], '{:.3g}')} | "
              f"{fmt_list(last['conns'], '{:.0f}')} | {fmt_list(last['redirected'], '{:.0f}')} | "
              f"{len(rs)}{' (errors)' if any(r['errors'] for r in rs) else ''} |")
    return 0 if res else 1


if __name__ == "__main__":
    sys.exit(main())
