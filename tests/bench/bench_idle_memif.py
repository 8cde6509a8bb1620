#!/usr/bin/python3
"""Idle established connections on one core, opened over memif by the data plane's own
clients, and what each costs.

Two data planes on one memif pair, one lcore each. The server listens on P ports with a
byte `echo` (framing none) per port; the client runs one `ping` service per port (framing
none, 1-byte messages, `rate: 1`: one round trip per second per service, so the
connections stay idle once open). Each service opens at most 25,000 connections,
below the 28,232 ephemeral ports per destination port; the client's `max_connecting`
(default 256) paces the SYNs. Measured once every connection is established on both
sides, and again after `--hold` seconds of idling:

- the open rate (connections established per second, from the client's start);
- RSS growth of each process over its baseline (before any connection), per connection;
- the TCP engine's own accounting (`wirespeed_tcp_memory_bytes`) per connection;
- the mbuf pools' in-use counts (nothing should stay held by idle connections);
- that the idle connections stay established through the hold (the least count seen),
  with the client's transmit, ARP and SYN-retransmission counters;
- with `--max-connections M` below N on the server: refused SYNs counted as
  `wirespeed_drops_total{reason="tcp_max_connections"}` and the table capped at M.

  sudo flock /tmp/ws-integration.lock tests/bench/bench_idle_memif.py \
      --steps 100000,300000,1000000,20000:15000 [--hold S] [--timeout S] [--budget S] \
      [--max-connecting K] [--json FILE] [--check KB]

Each step is N connections, or N:M with `tcp.max_connections: M` on the server. A step is
skipped when the machine's available memory is below 1.5 times `--kb-per-conn` (default
4 KB) per connection and side, or when the total time budget is spent.
`--check KB` makes it a test: every step must hold all its connections (capped ones
exactly M, with refusals counted) through the hold, with no connection lost, no frame
dropped for a full transmit queue or ARP queue, no mbuf held, and the server's RSS per
connection below KB; the exit status says. WS_BUILD_DIR picks the build (default
build/). Prints a table row and one JSON line (`RESULT {...}`) per step; `--json` also
writes them all to FILE.
"""
import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
import harness as h  # noqa: E402

SOCK = "/run/wirespeed-bench-wsim.sock"
SERVER_IP = "10.79.8.1"
CLIENT_IP = "10.79.8.2"
S_METRICS, C_METRICS = 9695, 9696
PER_SERVICE = 25000
BASE_PORT = 7000


def config(args, tmp, role, services, lcore, metrics, max_conns):
    d = os.path.join(tmp, role)
    os.makedirs(d, exist_ok=True)
    # --stats-interval-ms: dataplane.stats_interval_ms (default 100); a publication costs
    # the same whatever the number of connections (running sums, no walk).
    extra_dp = f"  stats_interval_ms: {args.stats_interval_ms}" if args.stats_interval_ms else ""
    shed = f"  syn_burst_budget: {args.syn_burst_budget}\n" if args.syn_burst_budget is not None else ""
    return h.write_config(
        d, device=f"net_memif0,role={role},socket={SOCK},id=0",
        address=f"{SERVER_IP if role == 'server' else CLIENT_IP}/24", services=services,
        prefix=f"wsim-{role[0]}", lcores=(lcore,), metrics_port=metrics,
        extra_dataplane=extra_dp,
        extra=f"tcp:\n  max_connections: {max_conns}\n{shed}"), d


def gauges(ctl):
    m = ctl.scrape()

    def v(name, **labels):
        return m.get((name, frozenset(labels.items())), 0.0)
    return {"established": v("wirespeed_tcp_connections", state="established"),
            "syn_sent": v("wirespeed_tcp_connections", state="syn_sent"),
            "tcp_memory": v("wirespeed_tcp_memory_bytes"),
            "pool_in_use": v("wirespeed_mempool_in_use", port="p0"),
            "refused": v("wirespeed_drops_total", reason="tcp_max_connections"),
            "syn_queue_full": v("wirespeed_drops_total", reason="tcp_syn_queue_full"),
            "tx_queue_full": v("wirespeed_drops_total", reason="tx_queue_full"),
            "arp_queue_full": v("wirespeed_drops_total", reason="arp_queue_full"),
            "retransmits": v("wirespeed_tcp_retransmitted_segments_total"),
            "cookies_valid": v("wirespeed_tcp_syncookies_total", result="valid")}


def available_kb():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1])
    return 0


def run(args, n, server_max):
    services_n = (n + PER_SERVICE - 1) // PER_SERVICE
    result = {"connections": n, "server_max_connections": server_max,
              "max_connecting": args.max_connecting, "stats_interval_ms": args.stats_interval_ms,
              "syn_burst_budget": args.syn_burst_budget}
    with tempfile.TemporaryDirectory(prefix="wsim-") as tmp:
        if os.path.exists(SOCK):
            os.unlink(SOCK)
        s_cfg, s_dir = config(args, tmp, "server", [
            f"{{ name: e{i}, kind: echo, protocol: tcp, port: {BASE_PORT + i}, framing: none }}"
            for i in range(services_n)], 0, S_METRICS, server_max)
        c_services = []
        left = n
        for i in range(services_n):
            k = min(PER_SERVICE, left)
            left -= k
            c_services.append(
                f'{{ name: p{i}, kind: ping, protocol: tcp, target: "{SERVER_IP}:{BASE_PORT + i}", '
                f"framing: none, message_size: 1, connections: {k}, rate: 1, "
                f"max_connecting: {args.max_connecting}, "
                f"duration_s: {int(args.timeout + args.hold + 30)} }}")
        c_cfg, c_dir = config(args, tmp, "client", c_services, 1, C_METRICS, n + 1000)
        server = h.Dataplane(s_cfg, s_dir)
        with server, h.Control(s_cfg, s_dir, S_METRICS) as sctl:
            time.sleep(0.5)
            s_base = h.rss_kb(server.proc.pid)
            client = h.Dataplane(c_cfg, c_dir)
            client.start(timeout=60)
            try:
                with h.Control(c_cfg, c_dir, C_METRICS) as cctl:
                    result.update(measure(args, server, client, sctl, cctl, s_base, n, server_max))
            finally:
                client.stop(timeout=60)
        if os.path.exists(SOCK):
            os.unlink(SOCK)
    return result


def wait_open(args, sctl, cctl, n, server_max):
    """Until every connection is established on both sides (a capped server: its table
    full and a refusal counted); returns the seconds taken and the last readings."""
    want = min(n, server_max)
    t0 = time.time()
    s = c = {}
    while time.time() - t0 < args.timeout:
        s, c = gauges(sctl), gauges(cctl)
        if s["established"] >= want and c["established"] >= want and \
                (server_max >= n or s["refused"] > 0):
            break
        time.sleep(0.5)
    return time.time() - t0, s, c


def hold(args, sctl, cctl):
    """Idles for args.hold seconds (nothing but each service's 1/s ping and the timers);
    the least established count seen on each side."""
    least_s = least_c = float("inf")
    end = time.time() + args.hold
    while True:
        s, c = gauges(sctl), gauges(cctl)
        least_s, least_c = min(least_s, s["established"]), min(least_c, c["established"])
        if time.time() >= end:
            return least_s, least_c, s, c
        time.sleep(min(5.0, max(0.1, end - time.time())))


def measure(args, server, client, sctl, cctl, s_base, n, server_max):
    # The client connects as soon as it runs: its cost per connection is the slope from
    # this first reading (with the connections it already had) to the last.
    c_base, c_est0 = h.rss_kb(client.proc.pid), gauges(cctl)["established"]
    opened_s, s0, c0 = wait_open(args, sctl, cctl, n, server_max)
    s_rss_open, c_rss_open = h.rss_kb(server.proc.pid), h.rss_kb(client.proc.pid)
    least_s, least_c, s, c = hold(args, sctl, cctl)
    s_rss, c_rss = h.rss_kb(server.proc.pid), h.rss_kb(client.proc.pid)
    est = max(1.0, s["established"])
    c_est = max(1.0, c["established"] - c_est0)
    return {
        "open_seconds": round(opened_s, 1),
        # From the client's first reading (it was already opening then) to the last.
        "open_rate_per_s": round((c0["established"] - c_est0) / max(1e-3, opened_s)),
        "hold_seconds": args.hold,
        "server_established_after_open": s0["established"],
        "client_established_after_open": c0["established"],
        "server_established": s["established"], "client_established": c["established"],
        "server_least_during_hold": least_s, "client_least_during_hold": least_c,
        "server_rss_mib": round(s_rss / 1024, 1), "client_rss_mib": round(c_rss / 1024, 1),
        "server_kb_per_conn_rss": round((s_rss - s_base) * 1.024 / est, 2),
        "client_kb_per_conn_rss": round((c_rss - c_base) * 1.024 / c_est, 2),
        "server_kb_per_conn_rss_after_open": round((s_rss_open - s_base) * 1.024 /
                                                   max(1.0, s0["established"]), 2),
        "client_kb_per_conn_rss_after_open": round((c_rss_open - c_base) * 1.024 /
                                                   max(1.0, c0["established"] - c_est0), 2),
        "server_kb_per_conn_tcp": round(s["tcp_memory"] / 1000 / est, 2),
        "client_kb_per_conn_tcp": round(c["tcp_memory"] / 1000 / max(1.0, c["established"]), 2),
        "server_pool_in_use": s["pool_in_use"], "client_pool_in_use": c["pool_in_use"],
        "refused_max_connections": s["refused"], "syn_queue_full": s["syn_queue_full"],
        "syncookies_valid": s["cookies_valid"],
        "client_tx_queue_full": c["tx_queue_full"], "client_arp_queue_full": c["arp_queue_full"],
        "client_retransmits": c["retransmits"], "server_retransmits": s["retransmits"],
    }


def failures(r, max_kb):
    """What a --check run objects to in one step's result."""
    want = min(r["connections"], r["server_max_connections"])
    capped = r["server_max_connections"] < r["connections"]
    bad = []
    if r["server_established"] != want or r["client_established"] != want:
        bad.append(f"established {r['server_established']:.0f} / {r['client_established']:.0f}"
                   f", want {want}")
    if min(r["server_least_during_hold"], r["client_least_during_hold"]) < want:
        bad.append("connections lost during the hold")
    if capped and r["refused_max_connections"] == 0:
        bad.append("no tcp_max_connections refusal counted")
    if r["client_tx_queue_full"] or r["client_arp_queue_full"]:
        bad.append("client frames dropped (tx_queue_full / arp_queue_full)")
    if r["server_pool_in_use"] or r["client_pool_in_use"]:
        bad.append("mbufs held by idle connections")
    if r["server_kb_per_conn_rss"] > max_kb:
        bad.append(f"server RSS {r['server_kb_per_conn_rss']} KB per connection > {max_kb}")
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", default="100000")
    ap.add_argument("--hold", type=float, default=5)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--budget", type=float, default=900)
    ap.add_argument("--max-connecting", type=int, default=256)
    ap.add_argument("--kb-per-conn", type=float, default=4)
    ap.add_argument("--stats-interval-ms", type=int)
    ap.add_argument("--syn-burst-budget", type=int)
    ap.add_argument("--json")
    ap.add_argument("--check", type=float, metavar="KB")
    args = ap.parse_args()
    h.need_root()
    sys.stdout.reconfigure(line_buffering=True)
    t0 = time.time()
    print("| connections | established server / client | open | KB/conn RSS server / client "
          "| KB/conn TCP engine server / client | RSS server / client | pool in use | refused |")
    results, bad = [], []
    for step in args.steps.split(","):
        n, _, m = step.partition(":")
        n = int(n)
        server_max = int(m) if m else n + 1000
        need_kb = int(1.5 * 2 * args.kb_per_conn * n)
        skip = None
        if available_kb() < need_kb:
            skip = f"{available_kb() // 1024} MiB available, {need_kb // 1024} MiB wanted"
        elif time.time() - t0 > args.budget:
            skip = f"the {args.budget:.0f} s budget is spent"
        if skip:
            print(f"step {step}: skipped, {skip}")
            bad += [f"step {step} skipped"] if args.check is not None else []
            continue
        r = run(args, n, server_max)
        report(r)
        results.append(r)
        if args.check is not None:
            bad += [f"step {step}: {b}" for b in failures(r, args.check)]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    for b in bad:
        print("FAIL " + b)
    sys.exit(1 if bad else 0)


def report(r):
    print(f"| {r['connections']:,} | {r['server_established']:,.0f} / {r['client_established']:,.0f} "
          f"| {r['open_seconds']} s | {r['server_kb_per_conn_rss']} / {r['client_kb_per_conn_rss']} "
          f"| {r['server_kb_per_conn_tcp']} / {r['client_kb_per_conn_tcp']} "
          f"| {r['server_rss_mib']} / {r['client_rss_mib']} MiB "
          f"| {r['server_pool_in_use']:.0f} / {r['client_pool_in_use']:.0f} "
          f"| {r['refused_max_connections']:.0f} |")
    print("RESULT " + json.dumps(r))


if __name__ == "__main__":
    main()
