#!/usr/bin/python3
"""HTTP over memif, driven by wirespeed's own HTTP client (`kind: http` with a target): the
`http` service on lcore 0, the client on lcore 1, one core per side.

Figures, each from one run of --duration seconds (medians of --reps):
- keep-alive requests/s on 64 connections, latency p50/p99/p99.9/max;
- connections/s with one request per connection, as fast as the client goes (the maximum);
- overload: the same with the rate fixed at 1x and 2x that maximum on --slots connection
  slots: the served rate (responses that passed every check, per second) and what the
  server shed at the SYN (`tcp_syn_shed`) or dropped for a full SYN queue.

Writes tests/bench/results/<time>-http-client.json (every sample) and, with --doc,
docs/results/<date>-http-client.json for tests/bench/make_performance.py. Run as root under
the shared lock: flock /tmp/ws-integration.lock tests/bench/bench_http_client.py
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as B  # noqa: E402

SERVER = ['{ name: web, kind: http, protocol: tcp, port: 80, '
          'responses: [ { path: "/", body_bytes: 438 } ] }']
TARGET = f"{B.Memif.SERVER_IP}:80"


def http_client(dur, connections, per_conn, rate=0):
    return (f'{{ name: load, kind: http, protocol: tcp, target: "{TARGET}", '
            f'connections: {connections}, requests_per_connection: {per_conn}, rate: {rate}, '
            f'duration_s: {dur}, expect_body_bytes: 438, check_body: true }}')


def shed(r):
    c = r.get("server_counters", {})
    return {k: v for k, v in c.items() if "syn" in k and k.startswith("drops_total")}


def summary(r):
    keys = ("messages", "messages_per_second", "connections", "connections_per_second", "errors",
            "connect_failures", "rtt_us")
    out = {k: r.get(k) for k in keys}
    out["server_syn_drops"] = shed(r)
    return out


def median_by(runs, key):
    xs = sorted(r[key] for r in runs)
    return xs[len(xs) // 2]


def record(rid, figure, unit, ours, peer, peer_name, rank, better="higher"):
    """A docs/results record for the `http-client` table of docs/performance.md."""
    ratio = ours / peer if better == "higher" else peer / ours
    return {"id": rid, "figure": figure, "unit": unit, "ours": ours, "peer": peer,
            "peer_name": peer_name, "better": better, "ratio": float(f"{ratio:.4g}"), "readme": False,
            "rank": rank, "headline": False, "table": "http-client"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--duration", type=int, default=4)
    ap.add_argument("--slots", type=int, default=1024, help="connection slots in the overload runs")
    ap.add_argument("--doc", action="store_true", help="write docs/results/<date>-http-client.json")
    args = ap.parse_args()
    load0 = open("/proc/loadavg").read().split()[0]
    started = datetime.datetime.utcnow()
    commit = subprocess.run(["git", "-C", B.ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    data = {"keepalive": [], "cps_max": [], "cps_1x": [], "cps_2x": [], "cps_2x_unshed": []}
    d = args.duration

    def server(tmp, budget):
        # A run's connections leave TIME_WAIT on the server (it closes first); a SYN of the next
        # client process finds it with an unrelated timestamp, which RFC 6191 cannot take
        # over, and waits for its retransmission. Two seconds of TIME_WAIT are gone when the
        # next client (about a second to start) connects.
        return B.Memif(tmp, 1500, f"http{budget}", server_services=SERVER,
                       tcp_extra=f"tcp:\n  time_wait_ms: 2000\n  syn_burst_budget: {budget}")

    def run(m, svc):
        r = m.client(svc, d + 30)
        time.sleep(1.5)  # the server's TIME_WAIT of this run expires
        return r

    with tempfile.TemporaryDirectory(prefix="wsb-http-") as tmp:
        for _ in range(args.reps):
            # Interleaved: each repetition measures every figure once.
            with server(tmp, 8) as m:
                data["keepalive"].append(summary(run(m, http_client(d, 64, 0))))
                top = run(m, http_client(d, 256, 1))
                data["cps_max"].append(summary(top))
                cap = max(1, int(top["connections_per_second"]))
                for k, mult in (("cps_1x", 1), ("cps_2x", 2)):
                    s = summary(run(m, http_client(d, args.slots, 1, cap * mult)))
                    s["offered_per_second"] = cap * mult
                    data[k].append(s)
            # The same overload on a server that never sheds (syn_burst_budget 0).
            with server(tmp, 0) as m:
                s = summary(run(m, http_client(d, args.slots, 1, cap * 2)))
                s["offered_per_second"] = cap * 2
                data["cps_2x_unshed"].append(s)
            print(json.dumps({k: v[-1] for k, v in data.items()}), flush=True)
    load1 = open("/proc/loadavg").read().split()[0]
    ka = data["keepalive"]
    rtt = lambda q: sorted(x["rtt_us"][q] for x in ka)[len(ka) // 2]  # noqa: E731
    top = median_by(data["cps_max"], "connections_per_second")
    one = median_by(data["cps_1x"], "messages_per_second")
    two = median_by(data["cps_2x"], "messages_per_second")
    unshed = median_by(data["cps_2x_unshed"], "messages_per_second")
    same = "flat out, same run"
    records = [
        record("http-client-keepalive", "HTTP keep-alive requests/s, 64 connections", "k/s",
               round(median_by(ka, "messages_per_second") / 1e3, 1), 3000.0, "goal", 201),
        record("http-client-tail", f"HTTP keep-alive latency p99.9 (p50 {rtt('p50'):.1f}, p99 "
               f"{rtt('p99'):.1f}, max {rtt('max'):.0f} µs)", "µs", round(rtt("p999"), 1),
               round(rtt("p50"), 1), "p50 of the same run", 202, better="lower"),
        record("http-client-cps", "HTTP connections/s, one request per connection, flat out",
               "k/s", round(top / 1e3, 1), 1000.0, "goal", 203),
        record("http-client-cps-1x", "HTTP served connections/s, offered 1× the flat-out rate",
               "k/s", round(one / 1e3, 1), round(top / 1e3, 1), same, 204),
        record("http-client-cps-2x", "HTTP served connections/s, offered 2× (goal: ≥ 0.90×)",
               "k/s", round(two / 1e3, 1), round(top / 1e3, 1), same, 205),
        record("http-client-cps-2x-unshed", "the same without shedding (`syn_burst_budget: 0`)",
               "k/s", round(unshed / 1e3, 1), round(top / 1e3, 1), same, 206),
    ]
    run = {"workload": "http-client", "section": "— (docs/performance.md, HTTP client)",
           "measured": started.strftime("%Y-%m-%d %H:%M UTC"), "commit": commit,
           "command": "sudo tests/bench/bench_http_client.py" +
                      (f" --reps {args.reps}" if args.reps != 3 else ""),
           "source": "tests/bench/bench_http_client.py", "load": f"{load0} / {load1}",
           "served_2x_over_max": round(two / max(top, 1), 3),
           "served_2x_unshed_over_max": round(unshed / max(top, 1), 3)}
    doc = {"run": run, "records": records, "samples": data}
    os.makedirs(B.RESULTS, exist_ok=True)
    out = os.path.join(B.RESULTS, started.strftime("%Y-%m-%d-%H%M") + "-http-client.json")
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {out}; served at 2x / flat out = {run['served_2x_over_max']} (without shedding "
          f"{run['served_2x_unshed_over_max']}); load {run['load']}")
    if args.doc:
        path = os.path.join(B.ROOT, "docs", "results", started.strftime("%Y-%m-%d") + "-http-client.json")
        with open(path, "w") as f:
            json.dump({"run": run, "records": records}, f, indent=2, ensure_ascii=False)
            f.write("\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
