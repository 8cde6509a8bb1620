#!/usr/bin/python3
"""UDP datagrams over net_memif, one core each side, against Linux in the same run, and the
cost of an idle data plane.

For each `--idle` mode, a `source` client process sends `--size`-byte datagrams as fast as
it can to a `sink` server process (lcore 1 -> lcore 0). Mid-run the server's received
frames/s and busy ratio come from `wirespeed-control status --json`, and both processes'
CPU use from /proc. The peer, in the same invocation: `wsperf source --protocol udp`
in one network namespace to `wsperf sink` in another over a veth pair (cpus 1 and 0).
Then a server with nothing to do runs for `--duration` s per mode: its CPU use is the
idle cost (the adaptive idle goal is under 5% of a core).

  tests/bench/bench_udp_memif.py [--build build] [--idle poll --idle adaptive]
                                 [--size 64] [--reps 3] [--duration 4]
                                 [--baseline DIR] [--json PATH] [--no-idle]

`--baseline DIR` runs the same wirespeed pair from another build tree too (labelled
"<mode> baseline"), taking turns with this one in every repetition: before and after in
one run, under the same load. Prints one line per run and a table of medians; `--json`
writes the medians and every run's figures, with the load average at start and end. Needs root. Uses its own memif socket,
DPDK file prefixes (wsbum-*), namespaces wsbum-a/wsbum-b and control ports 9621/9622, and
removes what it made.
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
from bench_scaling import cpu_seconds  # noqa: E402
from bench_txpath import stop, wait_running  # noqa: E402

SOCK = "/run/wirespeed-bench-udp.sock"
SERVER_IP, CLIENT_IP = "10.95.0.1", "10.95.0.2"


def config(path, *, prefix, lcore, role, addr, services, idle, metrics):
    svc = "\n".join(f"  - {s}" for s in services)
    with open(path, "w") as f:
        f.write(f"""version: 1
dataplane:
  lcores: [{lcore}]
  idle: {idle}
  file_prefix: {prefix}
  hugepages: false
  memory_mb: 1024
ports:
  - name: p0
    device: "net_memif0,role={role},socket={SOCK},id=0"
    mtu: 1500
    address: {addr}/24
services:
{svc}
control:
  metrics_listen: 127.0.0.1:{metrics}
""")
    return path


def launch(dp, cfg):
    """A data plane on `cfg`, its output in the log next to it: (process, log path)."""
    log = cfg.rsplit(".", 1)[0] + ".log"
    return subprocess.Popen([dp, "-c", cfg], stdout=open(log, "w"),
                            stderr=subprocess.STDOUT), log


def fresh(path):
    if os.path.exists(path):
        os.unlink(path)
    return path


def status(build, cfg, seconds):
    ctl = os.path.join(build, "control", "wirespeed-control")
    st = subprocess.run([ctl, "-c", cfg, "status", "--json", "--interval", str(seconds)],
                        capture_output=True, text=True, timeout=30)
    cores = json.loads(st.stdout).get("cores", []) if st.returncode == 0 else []
    return cores[0] if cores else {}


def wirespeed_run(tmp, build, idle, size, dur):
    dp = os.path.join(build, "dataplane", "wirespeed-dataplane")
    if os.path.exists(SOCK):
        os.unlink(SOCK)
    scfg = config(os.path.join(tmp, f"{idle}-s.yaml"), prefix="wsbum-s", lcore=0, role="server",
                  addr=SERVER_IP, idle=idle, metrics=9621,
                  services=["{ name: sink, kind: sink, protocol: udp, port: 9 }"])
    server, slog = launch(dp, scfg)
    client = None
    try:
        wait_running(server, slog)
        rep = fresh(os.path.join(tmp, f"{idle}-report.json"))
        ccfg = config(os.path.join(tmp, f"{idle}-c.yaml"), prefix="wsbum-c", lcore=1,
                      role="client", addr=CLIENT_IP, idle=idle, metrics=9622,
                      services=[f'{{ name: load, kind: source, protocol: udp, target: '
                                f'"{SERVER_IP}:9", message_size: {size}, duration_s: {dur}, '
                                f'report: {rep} }}'])
        client, _ = launch(dp, ccfg)
        time.sleep(dur / 2)
        t0, s0, c0 = time.monotonic(), cpu_seconds(server.pid), cpu_seconds(client.pid)
        core = status(build, scfg, max(1, dur // 3))
        dt = time.monotonic() - t0
        s_cpu, c_cpu = (cpu_seconds(server.pid) - s0) / dt, (cpu_seconds(client.pid) - c0) / dt
        client.wait(dur + 60)
        r = json.load(open(rep))
        return {"sent_mps": r["messages_per_second"] / 1e6,
                "recv_mps": core.get("received_frames_per_second", 0) / 1e6,
                "server_busy": core.get("busy_ratio") or 0.0, "server_cpu": s_cpu,
                "client_cpu": c_cpu}
    finally:
        for p in (client, server):
            if p is not None:
                stop(p)
        fresh(SOCK)


def idle_run(tmp, build, idle, dur):
    """CPU use of a data plane with a sink and no traffic (its memif peer absent)."""
    dp = os.path.join(build, "dataplane", "wirespeed-dataplane")
    if os.path.exists(SOCK):
        os.unlink(SOCK)
    scfg = config(os.path.join(tmp, f"idle-{idle}.yaml"), prefix="wsbum-s", lcore=0,
                  role="server", addr=SERVER_IP, idle=idle, metrics=9621,
                  services=["{ name: sink, kind: sink, protocol: udp, port: 9 }"])
    server, slog = launch(dp, scfg)
    try:
        wait_running(server, slog)
        time.sleep(1)
        t0, s0 = time.monotonic(), cpu_seconds(server.pid)
        time.sleep(dur)
        return {"idle_cpu": (cpu_seconds(server.pid) - s0) / (time.monotonic() - t0)}
    finally:
        stop(server)
        if os.path.exists(SOCK):
            os.unlink(SOCK)


def sh(*cmd, ns=None):
    full = (["ip", "netns", "exec", ns] if ns else []) + list(cmd)
    subprocess.run(full, check=True, capture_output=True, timeout=30)


def linux_run(tmp, build, size, dur):
    """wsperf UDP source -> sink between two namespaces over a veth pair, cpus 1 -> 0."""
    wsperf = os.path.join(build, "tools", "wsperf", "wsperf")
    subprocess.run(["ip", "netns", "del", "wsbum-a"], capture_output=True)
    subprocess.run(["ip", "netns", "del", "wsbum-b"], capture_output=True)
    try:
        sh("ip", "netns", "add", "wsbum-a")
        sh("ip", "netns", "add", "wsbum-b")
        sh("ip", "link", "add", "wsbum-va", "netns", "wsbum-a", "type", "veth", "peer", "name",
           "wsbum-vb", "netns", "wsbum-b")
        for ns, dev, ip in (("wsbum-a", "wsbum-va", CLIENT_IP), ("wsbum-b", "wsbum-vb", SERVER_IP)):
            sh("ip", "addr", "add", f"{ip}/24", "dev", dev, ns=ns)
            sh("ip", "link", "set", dev, "up", ns=ns)
            sh("ip", "link", "set", "lo", "up", ns=ns)
        srep, crep = os.path.join(tmp, "linux-sink.json"), os.path.join(tmp, "linux-src.json")
        sink = subprocess.Popen(["ip", "netns", "exec", "wsbum-b", wsperf, "sink", "--listen",
                                 f"{SERVER_IP}:9", "--protocol", "udp", "--cpu", "0", "--quiet",
                                 "--duration", str(dur + 3), "--report", srep],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        subprocess.run(["ip", "netns", "exec", "wsbum-a", wsperf, "source", "--target",
                        f"{SERVER_IP}:9", "--protocol", "udp", "--message-size", str(size),
                        "--cpu", "1", "--quiet", "--duration", str(dur), "--report", crep],
                       capture_output=True, timeout=dur + 30)
        sink.wait(dur + 30)
        s, c = json.load(open(srep)), json.load(open(crep))
        return {"sent_mps": c["messages_per_second"] / 1e6,
                "recv_mps": s["messages"] / c.get("seconds", dur) / 1e6}
    finally:
        subprocess.run(["ip", "netns", "del", "wsbum-a"], capture_output=True)
        subprocess.run(["ip", "netns", "del", "wsbum-b"], capture_output=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--idle", action="append", choices=["poll", "adaptive"])
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--duration", type=int, default=4)
    ap.add_argument("--baseline", help="a second build tree, run in turns with --build")
    ap.add_argument("--json", help="write the medians and the runs here")
    ap.add_argument("--no-idle", action="store_true", help="skip the idle-cost runs")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    load_start = os.getloadavg()[0]
    modes = a.idle or ["poll", "adaptive"]
    a.reps = max(1, min(a.reps, 10))
    a.duration = max(2, min(a.duration, 20))
    res = {}
    with tempfile.TemporaryDirectory(prefix="wsbum-") as tmp:
        for rep in range(a.reps):
            runs = [(m, lambda m=m: wirespeed_run(tmp, build, m, a.size, a.duration))
                    for m in modes]
            if a.baseline:
                base = os.path.abspath(a.baseline)
                runs += [(f"{m} baseline",
                          lambda m=m: wirespeed_run(tmp, base, m, a.size, a.duration))
                         for m in modes]
            runs.append(("linux", lambda: linux_run(tmp, build, a.size, a.duration)))
            for label, fn in (runs if rep % 2 == 0 else list(reversed(runs))):
                try:
                    r = fn()
                except Exception as e:  # a failed run is reported, the others go on
                    print(f"{label} rep {rep}: FAILED {e}", flush=True)
                    continue
                res.setdefault(label, []).append(r)
                print(f"{label} rep {rep}: " + ", ".join(f"{k} {v:.4g}" for k, v in r.items()),
                      flush=True)
        for m in ([] if a.no_idle else modes):
            r = idle_run(tmp, build, m, a.duration)
            res.setdefault(f"idle {m}", []).append(r)
            print(f"idle {m}: cpu {r['idle_cpu']:.3f} of a core", flush=True)
    print(f"\n| run | {a.size} B datagrams sent M/s | received M/s | server busy | server cpu "
          "| client cpu | idle cpu | runs |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for label, rs in res.items():
        def med(k):
            v = [r[k] for r in rs if k in r]
            return f"{statistics.median(v):.3g}" if v else "-"
        print(f"| {label} | {med('sent_mps')} | {med('recv_mps')} | {med('server_busy')} | "
              f"{med('server_cpu')} | {med('client_cpu')} | {med('idle_cpu')} | {len(rs)} |")
    if a.json:
        def medians(rs):
            keys = sorted({k for r in rs for k in r})
            return {k: statistics.median([r[k] for r in rs if k in r]) for k in keys}
        with open(a.json, "w") as f:
            json.dump({"size": a.size, "duration_s": a.duration, "reps": a.reps,
                       "build": build, "baseline": a.baseline,
                       "load": [load_start, os.getloadavg()[0]],
                       "medians": {label: medians(rs) for label, rs in res.items()},
                       "runs": res}, f, indent=1)
    return 0 if res else 1


if __name__ == "__main__":
    sys.exit(main())
