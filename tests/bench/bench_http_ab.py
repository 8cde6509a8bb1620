#!/usr/bin/python3
"""Interleaved A/B of the `http` service under wrk over af_packet: the builds given take turns
within each repetition (forward, then backward), each run a fresh data plane on lcore 0 and
wrk pinned to cpu 1 in the client namespace of bench_services.py's HTTP topology, so that a
load that drifts hits every build alike. Prints every run and the median per build.

  tests/bench/bench_http_ab.py --build before=DIR --build after=DIR [--connections 1]
                               [--reps 5] [--duration 5]

Needs root and wrk. Uses bench_services.py's namespaces, veths and file prefix, so run it
under the integration lock."""
import argparse
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as B  # noqa: E402
import bench_services as S  # noqa: E402


def one_run(build, tmp, conns, dur):
    B.DATAPLANE = os.path.join(build, "dataplane", "wirespeed-dataplane")
    cfg = B.dp_config(os.path.join(tmp, "http-ab.yaml"), prefix="wsb-http", lcore=0,
                      device="net_af_packet0,iface=wsb-hd0,blocksz=4096,framesz=2048,"
                             "framecnt=8192,qpairs=1",
                      address="10.95.0.1/24", mtu=1500, metrics_port=9593,
                      services=["{ name: web, kind: http, protocol: tcp, port: 80, responses: "
                                f"[ {{ path: \"/\", body_bytes: {S.BODY} }} ] }}"],
                      extra="tcp: { time_wait_ms: 1000 }")
    dp = B.start_dataplane(cfg, os.path.join(tmp, "http-ab.log"))
    try:
        B.sh("ping -c 3 -i 0.2 -W 1 10.95.0.1", ns=S.HttpTopology.C, check=False)
        return S.run_wrk(S.HttpTopology.C, "http://10.95.0.1/", conns, dur)
    finally:
        B.stop(dp)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", action="append", required=True, help="label=BUILD_DIR")
    ap.add_argument("--connections", type=int, default=1)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--duration", type=int, default=5)
    a = ap.parse_args()
    builds = [b.split("=", 1) for b in a.build]
    rates = {label: [] for label, _ in builds}
    tmp = tempfile.mkdtemp(prefix="ws-http-ab-")
    with S.HttpTopology():
        for rep in range(a.reps):
            order = builds if rep % 2 == 0 else builds[::-1]
            for label, build in order:
                r = one_run(build, tmp, a.connections, a.duration)
                rates[label].append(r["requests_per_second"])
                print(f"rep {rep + 1} {label}: {r['requests_per_second']:,.0f} req/s, "
                      f"p50 {r.get('p50_us', 0):.0f} us, errors {r['socket_errors']}", flush=True)
    base = statistics.median(rates[builds[0][0]])
    for label, _ in builds:
        med = statistics.median(rates[label])
        spread = (max(rates[label]) - min(rates[label])) / med
        print(f"{label}: median {med:,.0f} req/s (±{spread * 100:.0f}%), {med / base:.2f}× "
              f"of {builds[0][0]}, runs {', '.join(f'{x:,.0f}' for x in rates[label])}")


if __name__ == "__main__":
    main()
