#!/usr/bin/python3
"""HTTP over memif, driven by wirespeed's own HTTP client (`kind: http` with a target): the
`http` service on lcore 0, the client on lcore 1, one core per side.

Figures, each from one run of --duration seconds (medians of --reps):
- keep-alive requests/s on 64 connections, latency p50/p99/p99.9/max;
- connections/s with one request per connection, as fast as the client goes (the maximum);
- overload: the same with the rate fixed at 0.5x, 1x, 1.5x, 2x and 3x that maximum on
  --slots connection slots: offered (the rate's schedule), attempted (connections the client
  opened), completed and served (responses that passed every check, per second), the SYNs
  the client sent again, the server's drops by reason (`tcp_syn_shed` at the SYN), and the
  busy fraction of both cores, so that a client at its own limit is not read as the server's;
- with --base-build DIR, the same sweep against a server of another build (the clients stay
  this build's), interleaved with ours in every repetition: an A/B on the same machine load.

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
import threading
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


MULTS = (0.5, 1, 1.5, 2, 3)


def snapshot(port):
    """The core busy/idle nanoseconds and the drop counters a control process serves."""
    try:
        m = B.scrape(port)
    except OSError:
        return {}
    out = {}
    for (name, labels), v in m.items():
        if name in ("wirespeed_core_busy_seconds_total", "wirespeed_core_idle_seconds_total"):
            key = name.split("_")[2]
            out[key] = out.get(key, 0) + v
        elif name == "wirespeed_drops_total" or name.startswith("wirespeed_tcp_retransmitted"):
            out[name.replace("wirespeed_", "") + "".join(f"{{{a}={b}}}" for a, b in sorted(labels))] = v
    return out


def measure(m, svc, d):
    """One client run; the two cores' busy fraction and the client's counters over its middle
    (from 1.8 s after the client starts, 2 s long: the client takes about a second to start)."""
    mid = {}

    def sample():
        time.sleep(1.8)
        a = (snapshot(m.metrics_port), snapshot(m.metrics_port + 1))
        time.sleep(min(2.0, max(0.5, d - 1.5)))
        b = (snapshot(m.metrics_port), snapshot(m.metrics_port + 1))
        for side, x, y in (("server", a[0], b[0]), ("client", a[1], b[1])):
            dl = {k: y[k] - x.get(k, 0) for k in y}
            busy, idle = dl.pop("busy", 0), dl.pop("idle", 0)
            mid[side + "_busy"] = round(busy / (busy + idle), 3) if busy + idle else None
            mid[side + "_mid"] = {k: v for k, v in dl.items() if v}

    t = threading.Thread(target=sample)
    t.start()
    r = m.client(svc, d + 30)
    t.join()
    time.sleep(1.5)  # the server's TIME_WAIT of this run expires
    r.update(mid)
    return r


def summary(r, offered=0, d=0):
    keys = ("messages", "messages_per_second", "connections", "connections_per_second", "errors",
            "connect_failures", "rtt_us", "server_busy", "client_busy", "client_mid")
    out = {k: r.get(k) for k in keys}
    c = r.get("server_counters", {})
    out["server_drops"] = {k: v for k, v in c.items() if k.startswith("drops_total")}
    out["server_syn_retransmits"] = c.get("tcp_retransmitted_segments_total", 0)
    if offered:
        out["offered_per_second"] = offered
        out["offered"] = offered * d
        out["attempted"] = r.get("connections")
        out["completed"] = r.get("messages")
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


def server(tmp, budget, build=None):
    # A run's connections leave TIME_WAIT on the server (it closes first); a SYN of the next
    # client process finds it with an unrelated timestamp, which RFC 6191 cannot take over,
    # and waits for its retransmission. Two seconds of TIME_WAIT are gone when the next
    # client (about a second to start) connects.
    return B.Memif(tmp, 1500, f"http{budget}{'b' if build else ''}", server_services=SERVER,
                   tcp_extra=f"tcp:\n  time_wait_ms: 2000\n  syn_burst_budget: {budget}",
                   server_build=build)


def sweep(m, data, tag, cap, d, slots):
    """Served against offered at each multiple of `cap` (the same offered rates for every
    server of a repetition)."""
    for mult in MULTS:
        offered = max(1, int(cap * mult))
        s = summary(measure(m, http_client(d, slots, 1, offered), d), offered, d)
        data.setdefault(f"{tag}_x{mult}", []).append(s)


def served_max(data, tag):
    """The most a server served: flat out or at any offered rate (medians)."""
    xs = [median_by(data[f"{tag}_max"], "messages_per_second")]
    xs += [median_by(data[f"{tag}_x{mult}"], "messages_per_second") for mult in MULTS]
    return max(xs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--duration", type=int, default=4)
    ap.add_argument("--slots", type=int, default=1024, help="connection slots in the overload runs")
    ap.add_argument("--base-build", help="a build directory whose server is swept too (A/B)")
    ap.add_argument("--base-commit", default="", help="the commit of --base-build, for the record")
    ap.add_argument("--doc", action="store_true", help="write docs/results/<date>-http-client.json")
    args = ap.parse_args()
    load0 = open("/proc/loadavg").read().split()[0]
    started = datetime.datetime.utcnow()
    commit = subprocess.run(["git", "-C", B.ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    data = {"keepalive": [], "ours_max": [], "cps_2x_unshed": [], "load": []}
    d = args.duration

    with tempfile.TemporaryDirectory(prefix="wsb-http-") as tmp:
        for rep in range(args.reps):
            data["load"].append(open("/proc/loadavg").read().split()[0])
            with server(tmp, 8) as m:
                data["keepalive"].append(summary(measure(m, http_client(d, 64, 0), d)))
                top = measure(m, http_client(d, 256, 1), d)
                data["ours_max"].append(summary(top))
                cap = max(1, int(top["connections_per_second"]))
                ours = lambda: sweep(m, data, "ours", cap, d, args.slots)  # noqa: E731
                if not args.base_build or rep % 2 == 0:
                    ours()
            if args.base_build:
                # Interleaved: the baseline's sweep before ours in every other repetition.
                with server(tmp, 8, args.base_build) as b:
                    data.setdefault("base_max", []).append(
                        summary(measure(b, http_client(d, 256, 1), d)))
                    sweep(b, data, "base", cap, d, args.slots)
                if rep % 2 == 1:
                    with server(tmp, 8) as m:
                        sweep(m, data, "ours", cap, d, args.slots)
            # The same overload on a server that never sheds (syn_burst_budget 0).
            with server(tmp, 0) as m:
                s = summary(measure(m, http_client(d, args.slots, 1, cap * 2), d), cap * 2, d)
                data["cps_2x_unshed"].append(s)
            print(json.dumps({k: v[-1] for k, v in data.items()}), flush=True)
    load1 = open("/proc/loadavg").read().split()[0]
    ka = data["keepalive"]
    rtt = lambda q: sorted(x["rtt_us"][q] for x in ka)[len(ka) // 2]  # noqa: E731
    top = median_by(data["ours_max"], "connections_per_second")
    served = {mult: median_by(data[f"ours_x{mult}"], "messages_per_second") for mult in MULTS}
    peak = served_max(data, "ours")
    unshed = median_by(data["cps_2x_unshed"], "messages_per_second")
    k = lambda x: round(x / 1e3, 1)  # noqa: E731
    most = f"the most served (flat out {k(top)} k/s or offered at any rate), same run"
    records = [
        record("http-client-keepalive", "HTTP keep-alive requests/s, 64 connections", "k/s",
               k(median_by(ka, "messages_per_second")), 3000.0, "goal", 201),
        record("http-client-tail", f"HTTP keep-alive latency p99.9 (p50 {rtt('p50'):.1f}, p99 "
               f"{rtt('p99'):.1f}, max {rtt('max'):.0f} µs)", "µs", round(rtt("p999"), 1),
               round(rtt("p50"), 1), "p50 of the same run", 202, better="lower"),
        record("http-client-cps", "HTTP connections/s, one request per connection, flat out",
               "k/s", k(top), 1000.0, "goal", 203),
        record("http-client-cps-1x", "HTTP served connections/s, offered 1× the flat-out rate",
               "k/s", k(served[1]), k(peak), most, 204),
        record("http-client-cps-2x", "HTTP served connections/s, offered 2× (goal: ≥ 0.90×)",
               "k/s", k(served[2]), k(peak), most, 205),
        record("http-client-cps-3x", "HTTP served connections/s, offered 3×",
               "k/s", k(served[3]), k(peak), most, 206),
        record("http-client-cps-2x-unshed", "offered 2×, a server that never sheds "
               "(`syn_burst_budget: 0`)", "k/s", k(unshed), k(peak), most, 208),
    ]
    run = {"workload": "http-client", "section": "— (docs/performance.md, HTTP client)",
           "measured": started.strftime("%Y-%m-%d %H:%M UTC"), "commit": commit,
           "command": "sudo tests/bench/bench_http_client.py" +
                      (f" --reps {args.reps}" if args.reps != 3 else "") +
                      (" --base-build DIR" if args.base_build else ""),
           "source": "tests/bench/bench_http_client.py", "load": f"{load0} / {load1}",
           "served_over_max": {str(mult): round(served[mult] / max(peak, 1), 3) for mult in MULTS},
           "served_2x_unshed_over_max": round(unshed / max(peak, 1), 3)}
    if args.base_build:
        base = {mult: median_by(data[f"base_x{mult}"], "messages_per_second") for mult in MULTS}
        bpeak = served_max(data, "base")
        run["base_commit"] = args.base_commit
        run["base_served_over_max"] = {str(mult): round(base[mult] / max(bpeak, 1), 3)
                                       for mult in MULTS}
        records.append(record("http-client-cps-2x-base", "HTTP served connections/s, offered 2×, "
                              "against the baseline's server", "k/s", k(served[2]), k(base[2]),
                              f"`{args.base_commit or 'base build'}` (A/B, same run)", 207))
    doc = {"run": run, "records": records, "samples": data}
    os.makedirs(B.RESULTS, exist_ok=True)
    out = os.path.join(B.RESULTS, started.strftime("%Y-%m-%d-%H%M") + "-http-client.json")
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {out}; served / most served at 0.5x..3x: {run['served_over_max']}"
          f"{' base ' + str(run['base_served_over_max']) if args.base_build else ''}; without "
          f"shedding at 2x {run['served_2x_unshed_over_max']}; load {run['load']}")
    if args.doc:
        path = os.path.join(B.ROOT, "docs", "results", started.strftime("%Y-%m-%d") + "-http-client.json")
        with open(path, "w") as f:
            json.dump({"run": run, "records": records}, f, indent=2, ensure_ascii=False)
            f.write("\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
