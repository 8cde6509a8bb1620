#!/usr/bin/python3
"""Interleaved A/B of HTTP over memif, each build's own HTTP client against its own `http`
service (bench_http_client.py's topology: two data planes, one core each): per repetition
and build, 64 keep-alive connections for DURATION s, then 256 connections of one request
each flat out for DURATION s, on one server process. The builds take turns, the order
flipped every repetition, so a load that drifts hits each alike. Prints every run (requests/s,
connections/s, the keep-alive latency percentiles, both cores' busy fraction) and the medians
per build, and writes them as JSON.

  tests/bench/bench_http_memif_ab.py --build new=DIR --build base=DIR [--reps 8]
                                     [--duration 4] [--out FILE]

A build given as `DIR+l4off` runs both data planes with `l4_checksums: off` on their memif
ports (`--build on=DIR --build off=DIR+l4off` compares the two settings of one build).

Needs root. Run it under the integration lock (flock /tmp/ws-integration.lock)."""
import argparse
import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as B  # noqa: E402
import bench_http_client as H  # noqa: E402


def one(tmp, build, d):
    """One run of `build`'s client and server: the keep-alive and the flat-out figures."""
    build, l4off, _ = build.partition("+l4off")
    B.PORT_EXTRA = "    l4_checksums: off" if l4off else ""
    B.DATAPLANE = os.path.join(build, "dataplane", "wirespeed-dataplane")
    B.CONTROL = os.path.join(build, "control", "wirespeed-control")
    with H.server(tmp, 8, build) as m:
        ka = H.measure(m, H.http_client(d, 64, 0), d)
        cp = H.measure(m, H.http_client(d, 256, 1, 0, 256), d)
    return {"keepalive_kps": round(ka["messages_per_second"] / 1e3, 1),
            "conns_kps": round(cp["connections_per_second"] / 1e3, 1),
            "rtt_us": ka.get("rtt_us"), "server_busy": ka.get("server_busy"),
            "client_busy": ka.get("client_busy"), "server_busy_conns": cp.get("server_busy"),
            "errors": ka.get("errors", 0) + cp.get("errors", 0)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", action="append", required=True, help="LABEL=BUILD_DIR")
    ap.add_argument("--reps", type=int, default=8)
    ap.add_argument("--duration", type=int, default=4)
    ap.add_argument("--out", default="tests/bench/results/http-memif-ab.json")
    args = ap.parse_args()
    builds = dict(b.split("=", 1) for b in args.build)
    runs = {k: [] for k in builds}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.reps):
            order = list(builds) if rep % 2 == 0 else list(builds)[::-1]
            for label in order:
                r = one(tmp, builds[label], args.duration)
                r["rep"] = rep
                runs[label].append(r)
                print(label, json.dumps(r), flush=True)
    for label, rs in runs.items():
        print(f"{label}: keep-alive {statistics.median(r['keepalive_kps'] for r in rs):.1f} k/s, "
              f"connections {statistics.median(r['conns_kps'] for r in rs):.1f} k/s, errors "
              f"{sum(r['errors'] for r in rs)}")
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"builds": builds, "runs": runs}, f, indent=1)
    return 1 if any(r["errors"] for rs in runs.values() for r in rs) else 0


if __name__ == "__main__":
    sys.exit(main())
