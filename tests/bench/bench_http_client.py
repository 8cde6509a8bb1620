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

With --server-cpu SHARE the server's data plane runs in a cgroup (v1 cpu controller) of its
own with a CFS quota of SHARE of one CPU, so that the server, not the client, is at its
limit: the sweep is then server-bound and multiplies the sustainable rate (found by offering
rates that climb from the flat-out rate by 1.25x while at least 95 % of each is served)
instead of the flat-out rate, a server that never sheds takes the whole sweep too
(interleaved with ours), the keep-alive figures are left out, and every sample also holds
the fraction of CFS periods in which the server used up its quota and the CPU it used.

Writes tests/bench/results/<time>-http-client.json (every sample) and, with --doc,
docs/results/<date>-http-client.json (-server-bound.json with --server-cpu) for
tests/bench/make_performance.py. Run as root under the shared lock:
flock /tmp/ws-integration.lock tests/bench/bench_http_client.py
"""
import argparse
import atexit
import contextlib
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


def http_client(dur, connections, per_conn, rate=0, connecting=256):
    return (f'{{ name: load, kind: http, protocol: tcp, target: "{TARGET}", '
            f'connections: {connections}, requests_per_connection: {per_conn}, rate: {rate}, '
            f'duration_s: {dur}, expect_body_bytes: 438, check_body: true, '
            f'max_connecting: {connecting} }}')


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


class CpuCap:
    """A cgroup (v1 cpu controller) that holds the server's data plane to a CFS quota of
    `share` of one CPU, and one for the benchmark and its clients at the same weight. The
    kernel's smallest quota is 1 ms, so the period is 1 ms / share (2.5 ms for 0.4): the
    finest interleaving of running and throttled time it allows.
    Created on entry; removed on exit, at interpreter exit and so on SIGINT/SIGTERM (bench.py's
    handlers exit through atexit); a leftover of a killed run is removed before."""

    ROOT = "/sys/fs/cgroup/cpu"
    PATH = os.path.join(ROOT, "wsb-http-server")
    BENCH_PATH = os.path.join(ROOT, "wsb-http-bench")
    MIN_QUOTA_US = 1000
    SHARES = 8192

    def __init__(self, share):
        self.share = share
        self.quota_us = self.MIN_QUOTA_US
        self.period_us = round(self.MIN_QUOTA_US / share)

    def __enter__(self):
        self.remove()
        os.mkdir(self.PATH)
        atexit.register(self.remove)
        self._write(self.PATH, "cpu.cfs_period_us", self.period_us)
        self._write(self.PATH, "cpu.cfs_quota_us", self.quota_us)
        # The weight of 8 ordinary tasks: on a machine shared with builds the server still
        # gets its quota when it wants it, so the quota, not the load, is its limit.
        self._write(self.PATH, "cpu.shares", self.SHARES)
        # This process, and so every data plane it starts (the clients; the server until
        # attach()), at the same weight without a quota: other work on the machine then does
        # not starve the client either, whose offered rate the sweep relies on.
        os.mkdir(self.BENCH_PATH)
        self._write(self.BENCH_PATH, "cpu.shares", self.SHARES)
        self._write(self.BENCH_PATH, "cgroup.procs", os.getpid())
        return self

    def __exit__(self, *exc):
        self.remove()

    @staticmethod
    def _write(directory, name, value):
        with open(os.path.join(directory, name), "w") as f:
            f.write(f"{value}\n")

    def attach(self, pid):
        """The main thread of data plane `pid` into the cgroup (again after a server restart):
        it runs pipeline 0 on the lcore. The EAL's service threads (interrupts, multi-process)
        stay outside: one of them waking on the other CPU would take the period's whole quota
        there (a CPU takes quota in slices of sched_cfs_bandwidth_slice_us, 5 ms, more than
        the quota) and leave the data plane throttled with its CPU time unused."""
        self._write(self.PATH, "tasks", pid)

    def stat(self):
        """cpu.stat: nr_periods, nr_throttled (periods that used up the quota), ..."""
        try:
            with open(os.path.join(self.PATH, "cpu.stat")) as f:
                return {k: int(v) for k, v in (line.split() for line in f if line.strip())}
        except (OSError, ValueError):
            return {}

    def record(self):
        return {"share": self.share, "cfs_period_us": self.period_us, "cfs_quota_us": self.quota_us,
                "shares": self.SHARES}

    def remove(self):
        """Whatever still runs in the cgroups back to the root, and the cgroups removed
        (within a second of retries: a thread may be exiting)."""
        for path in (self.PATH, self.BENCH_PATH):
            for _ in range(20):
                if not os.path.isdir(path):
                    break
                try:
                    with open(os.path.join(path, "tasks")) as f:
                        for tid in f.read().split():
                            self._write(self.ROOT, "tasks", tid)
                    os.rmdir(path)
                except OSError:
                    time.sleep(0.05)
            else:
                print(f"could not remove {path}", file=sys.stderr)


def cpu_seconds(pid):
    """CPU time (user + system) the main thread of process `pid` has used."""
    try:
        with open(f"/proc/{pid}/task/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def measure(m, svc, d, cap=None):
    """One client run; the two cores' busy fraction and the client's counters over its middle
    (from 1.8 s after the client starts, 2 s long: the client takes about a second to start),
    and with a CpuCap the server's CPU used and its throttled periods over the same span."""
    mid = {}
    if cap:
        cap.attach(m.server.pid)

    def probe():
        return (snapshot(m.metrics_port), snapshot(m.metrics_port + 1), time.monotonic(),
                cpu_seconds(m.server.pid), cap.stat() if cap else {})

    def sample():
        time.sleep(1.8)
        a = probe()
        time.sleep(min(2.0, max(0.5, d - 1.5)))
        b = probe()
        for side, x, y in (("server", a[0], b[0]), ("client", a[1], b[1])):
            dl = {k: y[k] - x.get(k, 0) for k in y}
            busy, idle = dl.pop("busy", 0), dl.pop("idle", 0)
            mid[side + "_busy"] = round(busy / (busy + idle), 3) if busy + idle else None
            mid[side + "_mid"] = {k: v for k, v in dl.items() if v}
        if a[3] is not None and b[3] is not None:
            mid["server_cpu"] = round((b[3] - a[3]) / (b[2] - a[2]), 3)
        periods = b[4].get("nr_periods", 0) - a[4].get("nr_periods", 0)
        if periods:
            mid["server_throttled"] = round(
                (b[4].get("nr_throttled", 0) - a[4].get("nr_throttled", 0)) / periods, 3)

    t = threading.Thread(target=sample)
    t.start()
    r = m.client(svc, d + 30)
    t.join()
    time.sleep(1.5)  # the server's TIME_WAIT of this run expires
    r.update(mid)
    return r


def summary(r, offered=0, d=0):
    keys = ("messages", "messages_per_second", "connections", "connections_per_second", "errors",
            "connect_failures", "rtt_us", "server_busy", "client_busy", "server_cpu",
            "server_throttled", "client_mid")
    out = {k: r.get(k) for k in keys if k in r}
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


def record(rid, figure, unit, ours, peer, peer_name, rank, better="higher", table="http-client"):
    """A docs/results record for a table of docs/performance.md."""
    ratio = ours / peer if better == "higher" else peer / ours
    return {"id": rid, "figure": figure, "unit": unit, "ours": ours, "peer": peer,
            "peer_name": peer_name, "better": better, "ratio": float(f"{ratio:.4g}"), "readme": False,
            "rank": rank, "headline": False, "table": table}


def server(tmp, budget, build=None):
    # A run's connections leave TIME_WAIT on the server (it closes first); a SYN of the next
    # client process finds it with an unrelated timestamp, which RFC 6191 cannot take over,
    # and waits for its retransmission. Two seconds of TIME_WAIT are gone when the next
    # client (about a second to start) connects.
    return B.Memif(tmp, 1500, f"http{budget}{'b' if build else ''}", server_services=SERVER,
                   tcp_extra=f"tcp:\n  time_wait_ms: 2000\n  syn_burst_budget: {budget}",
                   server_build=build)


def sweep(m, data, tag, rate, d, slots, cap):
    """Served against offered at each multiple of `rate` (the same offered rates for every
    server of a repetition)."""
    # A throttled server stalls for the period less its quota; with at most 256 handshakes in
    # flight (the default max_connecting) the client would leave it short of work, so under a
    # CpuCap every slot may be in its handshake.
    connecting = slots if cap else 256
    for mult in MULTS:
        offered = max(1, int(rate * mult))
        s = summary(measure(m, http_client(d, slots, 1, offered, connecting), d, cap), offered, d)
        data.setdefault(f"{tag}_x{mult}", []).append(s)


# The sustainable rate's search: offered rates climb by this factor from the flat-out rate
# while the server serves at least SERVED_SHARE of what is offered, at most LADDER_STEPS.
LADDER_STEP = 1.25
LADDER_STEPS = 8
SERVED_SHARE = 0.95


def sustainable(m, data, start, d, slots, cap):
    """The highest offered rate the server keeps up with (served >= SERVED_SHARE of it), found
    by climbing from `start`. Under a CPU quota flat out is not that rate: every slot in its
    handshake at once piles more on the throttled server than paced arrivals do (flat out
    served 39 k/s on 1024 slots where paced arrivals of 115 k/s were served whole), so the
    sweep multiplies this rate instead. Every step is kept under "<rep>_ladder"."""
    ladder, best, rate = [], start, start
    for _ in range(LADDER_STEPS):
        s = summary(measure(m, http_client(d, slots, 1, rate, slots), d, cap), rate, d)
        ladder.append(s)
        if s["messages_per_second"] < SERVED_SHARE * rate:
            break
        best = rate
        rate = int(rate * LADDER_STEP)
    data.setdefault("ours_ladder", []).append(ladder)
    data.setdefault("ours_sustainable", []).append(best)
    return best


def served_max(data, tag):
    """The most a server served: flat out (when measured) or at any offered rate (medians)."""
    xs = [median_by(data[f"{tag}_x{mult}"], "messages_per_second") for mult in MULTS]
    if data.get(f"{tag}_max"):
        xs.append(median_by(data[f"{tag}_max"], "messages_per_second"))
    # The sustainable rate's search, step by step (medians over the repetitions that got
    # as far).
    ladders = data.get(f"{tag}_ladder", [])
    for i in range(max((len(x) for x in ladders), default=0)):
        xs.append(median_by([x[i] for x in ladders if len(x) > i], "messages_per_second"))
    return max(xs)


def repetition(tmp, data, args, rep, cap):
    """Our server flat out (the rate the sweeps multiply) and swept; the other servers
    (a baseline build; with a CpuCap a server that never sheds) swept at the same rates, in
    the other order every other repetition."""
    d = args.duration
    peers = ([("base", 8, args.base_build)] if args.base_build else []) + \
        ([("unshed", 0, None)] if cap else [])
    ours_first = rep % 2 == 0 or not peers
    with server(tmp, 8) as m:
        if not cap:
            data["keepalive"].append(summary(measure(m, http_client(d, 64, 0), d)))
        flat = args.slots if cap else 256  # connections (and handshakes in flight) flat out
        top = measure(m, http_client(d, flat, 1, 0, flat), d, cap)
        data["ours_max"].append(summary(top))
        rate = max(1, int(top["connections_per_second"]))
        if cap:
            rate = sustainable(m, data, rate, d, args.slots, cap)
        if ours_first:
            sweep(m, data, "ours", rate, d, args.slots, cap)
    for tag, budget, build in peers:
        with server(tmp, budget, build) as b:
            if tag == "base":
                data.setdefault("base_max", []).append(
                    summary(measure(b, http_client(d, 256, 1), d, cap)))
            sweep(b, data, tag, rate, d, args.slots, cap)
    if not ours_first:
        with server(tmp, 8) as m:
            sweep(m, data, "ours", rate, d, args.slots, cap)
    if not cap:
        # The same overload on a server that never sheds (syn_burst_budget 0).
        with server(tmp, 0) as m:
            s = summary(measure(m, http_client(d, args.slots, 1, rate * 2), d), rate * 2, d)
            data["cps_2x_unshed"].append(s)


def client_bound_records(data):
    ka = data["keepalive"]
    rtt = lambda q: sorted(x["rtt_us"][q] for x in ka)[len(ka) // 2]  # noqa: E731
    top = median_by(data["ours_max"], "connections_per_second")
    served = {mult: median_by(data[f"ours_x{mult}"], "messages_per_second") for mult in MULTS}
    peak = served_max(data, "ours")
    unshed = median_by(data["cps_2x_unshed"], "messages_per_second")
    most = f"the most served (flat out {k(top)} k/s or offered at any rate), same run"
    return [
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


def server_bound_records(data, cap):
    """The http-client-server-bound table: each server's served rate against the most the
    same server served in the run, and ours against the server that never sheds."""
    t = "http-client-server-bound"
    pct = f"server at {round(cap.share * 100)} % of a CPU"
    top = median_by(data["ours_max"], "connections_per_second")
    rates = sorted(data["ours_sustainable"])
    rate = rates[len(rates) // 2]
    served = {tag: {mult: median_by(data[f"{tag}_x{mult}"], "messages_per_second")
                    for mult in MULTS} for tag in ("ours", "unshed")}
    peak, upeak = served_max(data, "ours"), served_max(data, "unshed")
    most = (f"the most served (flat out {k(top)} k/s, sustained {k(rate)} k/s, or offered at "
            "any rate), same run")
    umost = "the most it served at any offered rate, same run"
    return [
        record("http-client-sb-cps-1x", f"{pct}: HTTP served connections/s, offered 1× the "
               "sustainable rate (the most offered that it served at 95 % or more)", "k/s",
               k(served["ours"][1]), k(peak), most, 211, table=t),
        record("http-client-sb-cps-2x", f"{pct}: served, offered 2× (goal: ≥ 0.90×)", "k/s",
               k(served["ours"][2]), k(peak), most, 212, table=t),
        record("http-client-sb-cps-3x", f"{pct}: served, offered 3×", "k/s",
               k(served["ours"][3]), k(peak), most, 213, table=t),
        record("http-client-sb-cps-2x-unshed", f"{pct}: served, offered 2×, a server that never "
               "sheds (`syn_burst_budget: 0`)", "k/s", k(served["unshed"][2]), k(upeak), umost,
               214, table=t),
        record("http-client-sb-cps-2x-vs-unshed", f"{pct}: served, offered 2×, ours against the "
               "server that never sheds", "k/s", k(served["ours"][2]), k(served["unshed"][2]),
               "`syn_burst_budget: 0`, same offered rate (A/B, same run)", 215, table=t),
    ]


def k(x):
    return round(x / 1e3, 1)


def ratios(data, tag):
    peak = served_max(data, tag)
    return {str(mult): round(median_by(data[f"{tag}_x{mult}"], "messages_per_second") /
                             max(peak, 1), 3) for mult in MULTS}


def results(data, args, cap, started, commit, load):
    """The run's description and its records for docs/results."""
    run = {"workload": "http-client", "section": "— (docs/performance.md, HTTP client)",
           "measured": started.strftime("%Y-%m-%d %H:%M UTC"), "commit": commit,
           "command": "sudo tests/bench/bench_http_client.py" +
                      (f" --reps {args.reps}" if args.reps != 3 else "") +
                      (f" --server-cpu {cap.share}" if cap else "") +
                      (" --base-build DIR" if args.base_build else ""),
           "source": "tests/bench/bench_http_client.py", "load": load,
           "served_over_max": ratios(data, "ours")}
    if cap:
        run["server_cpu"] = cap.record()
        run["unshed_served_over_max"] = ratios(data, "unshed")
        records = server_bound_records(data, cap)
    else:
        run["served_2x_unshed_over_max"] = round(
            median_by(data["cps_2x_unshed"], "messages_per_second") /
            max(served_max(data, "ours"), 1), 3)
        records = client_bound_records(data)
    if args.base_build:
        served2 = median_by(data["ours_x2"], "messages_per_second")
        run["base_commit"] = args.base_commit
        run["base_served_over_max"] = ratios(data, "base")
        records.append(record(
            "http-client-sb-cps-2x-base" if cap else "http-client-cps-2x-base",
            ("served" if cap else "HTTP served connections/s") + ", offered 2×, against the "
            "baseline's server", "k/s", k(served2), k(median_by(data["base_x2"], "messages_per_second")),
            f"`{args.base_commit or 'base build'}` (A/B, same run)", 216 if cap else 207,
            table=records[0]["table"]))
    return run, records


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--duration", type=int, default=4)
    ap.add_argument("--slots", type=int, default=1024, help="connection slots in the overload runs")
    ap.add_argument("--base-build", help="a build directory whose server is swept too (A/B)")
    ap.add_argument("--base-commit", default="", help="the commit of --base-build, for the record")
    ap.add_argument("--server-cpu", type=float, help="the server's CPU quota, a share of one CPU "
                    "(0.05 to 1): a server-bound sweep")
    ap.add_argument("--doc", action="store_true", help="write docs/results/<date>-http-client.json")
    args = ap.parse_args()
    if args.server_cpu is not None and not 0.05 <= args.server_cpu <= 1:
        ap.error("--server-cpu takes a share of one CPU from 0.05 to 1")
    load0 = open("/proc/loadavg").read().split()[0]
    started = datetime.datetime.utcnow()
    commit = subprocess.run(["git", "-C", B.ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    data = {"keepalive": [], "ours_max": [], "cps_2x_unshed": [], "load": []}
    cap = CpuCap(args.server_cpu) if args.server_cpu else None

    with tempfile.TemporaryDirectory(prefix="wsb-http-") as tmp, cap or contextlib.nullcontext():
        for rep in range(args.reps):
            data["load"].append(open("/proc/loadavg").read().split()[0])
            repetition(tmp, data, args, rep, cap)
            print(json.dumps({key: v[-1] for key, v in data.items() if v}), flush=True)
    load = f"{load0} / {open('/proc/loadavg').read().split()[0]}"
    run, records = results(data, args, cap, started, commit, load)
    doc = {"run": run, "records": records, "samples": data}
    name = "http-client" + ("-server-bound" if cap else "")
    os.makedirs(B.RESULTS, exist_ok=True)
    out = os.path.join(B.RESULTS, started.strftime("%Y-%m-%d-%H%M") + f"-{name}.json")
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {out}; served / most served at 0.5x..3x: {run['served_over_max']}"
          f"{' base ' + str(run['base_served_over_max']) if args.base_build else ''}"
          f"{' never shedding ' + str(run['unshed_served_over_max']) if cap else ''}; "
          f"load {run['load']}")
    if args.doc:
        path = os.path.join(B.ROOT, "docs", "results", started.strftime("%Y-%m-%d") + f"-{name}.json")
        with open(path, "w") as f:
            json.dump({"run": run, "records": records}, f, indent=2, ensure_ascii=False)
            f.write("\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
