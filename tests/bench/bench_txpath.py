#!/usr/bin/python3
"""A/B of the TCP transmit path: bulk TCP stack to stack over net_memif, one
`source` client process sending 1 MiB messages to a `sink` server process, at each MTU,
for each build directory given, interleaved run by run so that machine load hits every
build alike. The client runs under `perf stat`, so besides Gbit/s each run reports the
client's user-space instructions and cycles per byte sent: on this shared 2-CPU machine
those vary far less than throughput. `--profile` adds a `perf record` of the client and
prints its top symbols.

  tests/bench/bench_txpath.py --build before=DIR --build after=DIR [--mtu 1500 --mtu 9000]
                              [--reps 3] [--duration 4] [--profile]

Needs root. Uses its own memif socket and DPDK file prefixes (wstx-*), lcores 0 and 1,
and removes what it created."""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

SOCK = "/run/wirespeed-txpath-bench.sock"


def config(path, *, prefix, lcore, role, addr, mtu, service):
    with open(path, "w") as f:
        f.write(f"""version: 1
dataplane:
  lcores: [{lcore}]
  idle: poll
  file_prefix: {prefix}
  hugepages: false
  memory_mb: 512
ports:
  - name: p0
    device: "net_memif0,role={role},socket={SOCK},id=0"
    mtu: {mtu}
    address: {addr}/24
services:
  - {service}
control:
  metrics_listen: 127.0.0.1:9797
""")
    return path


def wait_running(p, log, timeout=25):
    end = time.time() + timeout
    while time.time() < end:
        if p.poll() is not None:
            raise RuntimeError(f"server exited: {open(log).read()[-400:]}")
        if "wirespeed: running" in open(log).read():
            return
        time.sleep(0.1)
    raise RuntimeError("server did not start")


def stop(p):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def perf_stat(path):
    out = {}
    for line in open(path):
        parts = line.strip().split(",")
        if len(parts) > 2 and parts[0].replace(".", "").isdigit():
            out[parts[2].split(":")[0]] = float(parts[0])
    return out


def one_run(tmp, name, build, mtu, dur, profile):
    dp = os.path.join(build, "dataplane", "wirespeed-dataplane")
    tag = f"{name}-{mtu}"
    if os.path.exists(SOCK):
        os.unlink(SOCK)
    scfg = config(os.path.join(tmp, f"{tag}-s.yaml"), prefix="wstx-srv", lcore=0, role="server",
                  addr="10.97.0.1", mtu=mtu, service="{ name: sink, kind: sink, protocol: tcp, port: 9 }")
    slog = os.path.join(tmp, f"{tag}-s.log")
    server = subprocess.Popen([dp, "-c", scfg], stdout=open(slog, "w"), stderr=subprocess.STDOUT)
    try:
        wait_running(server, slog)
        rep = os.path.join(tmp, f"{tag}-report.json")
        if os.path.exists(rep):
            os.unlink(rep)
        ccfg = config(os.path.join(tmp, f"{tag}-c.yaml"), prefix="wstx-cli", lcore=1, role="client",
                      addr="10.97.0.2", mtu=mtu,
                      service=f"{{ name: load, kind: source, protocol: tcp, target: \"10.97.0.1:9\", "
                              f"message_size: 1048576, connections: 1, duration_s: {dur}, report: {rep} }}")
        stat = os.path.join(tmp, f"{tag}-stat.csv")
        cmd = ["perf", "stat", "-x,", "-e", "instructions:u,cycles:u", "-o", stat, "--"]
        cg = os.path.join(tmp, f"{tag}.callgrind")
        if profile == "callgrind":
            cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={cg}", "--"]
        elif profile:
            cmd = ["perf", "record", "-q", "-e", "cycles:u", "-o", os.path.join(tmp, f"{tag}.perf"),
                   "--"]
        clog = os.path.join(tmp, f"{tag}-c.log")
        subprocess.run(cmd + [dp, "-c", ccfg], stdout=open(clog, "w"), stderr=subprocess.STDOUT,
                       timeout=dur * (20 if profile == "callgrind" else 1) + 60)
        r = json.load(open(rep))
        if os.environ.get("WSTX_KEEP"):
            subprocess.run(["cp", "-r", tmp, os.environ["WSTX_KEEP"]])
        res = {"gbps": r["bits_per_second"] / 1e9, "bytes": r["bytes"]}
        if profile == "callgrind":
            ann = subprocess.run(["callgrind_annotate", "--inclusive=no", cg], capture_output=True,
                                 text=True).stdout
            total = 0
            top = []
            for line in ann.splitlines():
                if "PROGRAM TOTALS" in line:
                    total = int(line.split()[0].replace(",", ""))
                elif line.strip() and line.split()[0].replace(",", "").isdigit() and len(top) < 12:
                    top.append(line.strip())
            res["instr_per_byte"] = total / max(r["bytes"], 1)
            res["top"] = [f"{int(t.split()[0].replace(',', '')) / max(r['bytes'], 1):.3f}/B  " +
                          " ".join(t.split()[2:])[:110] for t in top]
        elif profile:
            top = subprocess.run(["perf", "report", "-q", "-i", os.path.join(tmp, f"{tag}.perf"),
                                  "--stdio", "--sort", "sym"], capture_output=True, text=True).stdout
            res["top"] = [l.strip() for l in top.splitlines() if l.strip()][:12]
        else:
            s = perf_stat(stat)
            res["instr_per_byte"] = s.get("instructions", 0) / max(r["bytes"], 1)
            res["cycles_per_byte"] = s.get("cycles", 0) / max(r["bytes"], 1)
        return res
    finally:
        stop(server)
        if os.path.exists(SOCK):
            os.unlink(SOCK)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", action="append", required=True, help="label=build-dir")
    ap.add_argument("--mtu", action="append", type=int)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--duration", type=int, default=4)
    ap.add_argument("--profile", action="store_true", help="perf record of the client")
    ap.add_argument("--callgrind", action="store_true",
                    help="the client under callgrind: instructions per byte sent, top functions")
    a = ap.parse_args()
    builds = [b.split("=", 1) for b in a.build]
    mtus = a.mtu or [1500, 9000]
    a.reps = max(1, min(a.reps, 10))
    a.duration = max(1, min(a.duration, 30))
    res = {}
    with tempfile.TemporaryDirectory(prefix="wstx-") as tmp:
        os.environ["WSTX_TMP"] = tmp
        for rep in range(a.reps):
            for mtu in mtus:
                for name, build in builds:
                    try:
                        r = one_run(tmp, name, build, mtu, a.duration,
                                    "callgrind" if a.callgrind else a.profile)
                    except Exception as e:  # a failed run is reported, the others go on
                        print(f"{name} MTU {mtu} rep {rep}: FAILED {e}", flush=True)
                        continue
                    res.setdefault((name, mtu), []).append(r)
                    print(f"{name} MTU {mtu} rep {rep}: " +
                          ", ".join(f"{k} {v:.3f}" for k, v in r.items() if isinstance(v, float)),
                          flush=True)
                    for line in r.get("top", []):
                        print("    " + line)
    print("\n| build | MTU | Gbit/s (median) | instructions/byte | cycles/byte | runs |")
    print("| --- | --- | --- | --- | --- | --- |")
    for (name, mtu), rs in sorted(res.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        med = lambda k: statistics.median(r[k] for r in rs) if all(k in r for r in rs) else float("nan")
        print(f"| {name} | {mtu} | {med('gbps'):.2f} | {med('instr_per_byte'):.2f} | "
              f"{med('cycles_per_byte'):.2f} | {len(rs)} |")
    return 0 if res else 1


if __name__ == "__main__":
    sys.exit(main())
