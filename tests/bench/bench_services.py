#!/usr/bin/python3
"""wirespeed service benchmarks: users' own tools against wirespeed and the kernel.

Programs, not tests. Workloads:
  http      wrk requests/s and latency percentiles at 1, 32 and 256 connections, and
            connections/s from a `Connection: close` client, against wirespeed's `http`
            service (af_packet on a veth) and against nginx-light on the kernel in another
            namespace over an identical veth, in the same run.
  connrate  stack to stack over memif: connections/s with `ping` + `reconnect: true` against
            `echo`, and round trips/s with `ping` on 64 kept-alive connections; beside the
            kernel-sockets twin (wsperf) between two namespaces over veth.
  stability connection rate over time: `ping` + `reconnect` for
            --minutes (default 10) against one long-lived server; the rate in the last minute
            against the first, the server's memory and TIME_WAIT population sampled along the
            way; then --phase-s seconds (15) of 64 connections, an overload (--overload, 4096
            connections offered at once) and the same 64-connection run after it: the
            after/before ratio says whether the overload left anything behind.
            Not part of `all`: run it by name.

    tests/bench/run_services.sh [--quick] [--reps N] [--duration S] [http] [connrate]

Each workload prints a Markdown table (our figure, the kernel's, the ratio), writes it with
the raw samples as JSON under tests/bench/results/, and replaces its section in
docs/benchmarks.md. Everything is bounded in time and removed on exit (see bench.py, whose
process, namespace and report helpers this program uses).
"""
import argparse
import datetime
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as B  # noqa: E402

WORKLOADS = ["http", "connrate", "stability"]
BODY = 438  # bytes of "/" on both servers


# ---------------------------------------------------------------------------------------
# wrk


def parse_wrk(text):
    """requests/s, latency p50/p90/p99 in µs (p99.9 and the maximum from wrk_tail.lua),
    socket errors, non-2xx from wrk --latency."""
    out = {}
    m = re.search(r"Requests/sec:\s+([\d.]+)", text)
    if not m:
        raise B.Failure(f"wrk printed no rate: {text.strip()[-300:]}")
    out["requests_per_second"] = float(m.group(1))
    units = {"us": 1.0, "ms": 1e3, "s": 1e6}
    for pct in ("50", "90", "99"):
        m = re.search(rf"^\s+{pct}%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
        if m:
            out[f"p{pct}_us"] = float(m.group(1)) * units[m.group(2)]
    for key, name in (("p999_us", "p99.9"), ("max_us", "max")):
        m = re.search(rf"^tail {re.escape(name)} (\d+) us$", text, re.M)
        if m:
            out[key] = float(m.group(1))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    out["socket_errors"] = sum(int(x) for x in m.groups()) if m else 0
    out["socket_error_detail"] = m.group(0) if m else ""
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    out["non_2xx"] = int(m.group(1)) if m else 0
    m = re.search(r"(\d+) requests in", text)
    out["requests"] = int(m.group(1)) if m else 0
    return out


def run_wrk(ns, url, conns, dur, close=False):
    hdr = ' -H "Connection: close"' if close else ""
    threads = 1
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "wrk_tail.lua")
    cmd = (f"taskset -c 1 wrk -t{threads} -c{conns} -d{dur}s --timeout 2s --latency{hdr} "
           f"-s {script} {url}")
    r = B.sh(cmd, ns=ns, check=False, timeout=dur + 30)
    if r.returncode != 0:
        raise B.Failure(f"wrk exit {r.returncode}: {(r.stdout + r.stderr).strip()[-300:]}")
    return parse_wrk(r.stdout)


class HttpTopology:
    """Client namespace wsb-hc with two identical veths: wsb-hc0 <-> wsb-hd0 (root namespace,
    wirespeed's af_packet port, 10.95.0.1) and wsb-hc1 <-> wsb-hn0 in namespace wsb-hn
    (nginx on the kernel, 10.95.1.1). The client gets port reuse settings so that a
    `Connection: close` run does not exhaust its ephemeral ports."""

    C, N = "wsb-hc", "wsb-hn"

    def __enter__(self):
        B.make_ns(self.C)
        B.make_ns(self.N)
        B.veth_pair("wsb-hd0", "wsb-hc0", None, self.C, None, "10.95.0.2", 1500)
        B.veth_pair("wsb-hn0", "wsb-hc1", self.N, self.C, "10.95.1.1", "10.95.1.2", 1500)
        # Kernel-generated frames leave veth with CHECKSUM_PARTIAL: af_packet would hand
        # them to the data plane unfinished, so the client side computes checksums.
        B.sh("ethtool -K wsb-hc0 tx off", ns=self.C, check=False)
        for k, v in (("net.ipv4.tcp_tw_reuse", 1), ("net.ipv4.ip_local_port_range", "1024 65000"),
                     ("net.core.somaxconn", 4096), ("net.ipv4.tcp_max_syn_backlog", 8192)):
            for ns in (self.C, self.N):
                B.sh(f"sysctl -qw {k}='{v}'", ns=ns, check=False)
        return self

    def __exit__(self, *exc):
        for ns in (self.C, self.N):
            B.sh(f"ip netns del {ns}", check=False)
            if ns in B._netns:
                B._netns.remove(ns)
        for l in ("wsb-hd0",):
            B.sh(f"ip link del {l}", check=False)
            if l in B._links:
                B._links.remove(l)


def nginx_conf(tmp):
    www = os.path.join(tmp, "www")
    os.makedirs(www, exist_ok=True)
    with open(os.path.join(www, "index.html"), "wb") as f:
        f.write(bytes((0x61 + i % 26) for i in range(BODY)))
    conf = os.path.join(tmp, "nginx.conf")
    with open(conf, "w") as f:
        f.write(f"""worker_processes 1;
worker_cpu_affinity 01;
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log warn;
events {{ worker_connections 8192; multi_accept on; }}
http {{
  access_log off;
  keepalive_requests 1000000;
  keepalive_timeout 65;
  sendfile on;
  tcp_nodelay on;
  types {{ text/html html; }}
  default_type text/html;
  client_body_temp_path {tmp}/nginx-body;
  proxy_temp_path {tmp}/nginx-proxy;
  fastcgi_temp_path {tmp}/nginx-fcgi;
  uwsgi_temp_path {tmp}/nginx-uwsgi;
  scgi_temp_path {tmp}/nginx-scgi;
  server {{
    listen 10.95.1.1:80 backlog=4096 reuseport;
    root {www};
    location = / {{ try_files /index.html =404; }}
  }}
}}
""")
    return conf


def bench_http(ctx):
    rep = B.Report("http", "10. HTTP: wrk against wirespeed `http` (af_packet) and nginx-light (kernel)",
                   ctx.command("http"))
    errors = []
    levels = [1, 32, 256]
    ws = {c: [None] * ctx.reps for c in levels}
    ng = {c: [None] * ctx.reps for c in levels}
    ws_close = [None] * ctx.reps
    ng_close = [None] * ctx.reps
    ws_cpu = []
    with HttpTopology() as topo:
        # wirespeed first: one data plane on lcore 0 (poll), wrk pinned to cpu 1.
        cfg = B.dp_config(os.path.join(ctx.tmp, "http-ws.yaml"), prefix="wsb-http", lcore=0,
                          device="net_af_packet0,iface=wsb-hd0,blocksz=4096,framesz=2048,framecnt=8192,qpairs=1",
                          address="10.95.0.1/24", mtu=1500, metrics_port=9593,
                          services=[f"{{ name: web, kind: http, protocol: tcp, port: 80, responses: "
                                    f"[ {{ path: \"/\", body_bytes: {BODY} }} ] }}"],
                          extra="tcp: { time_wait_ms: 1000 }")
        try:
            dp = B.start_dataplane(cfg, os.path.join(ctx.tmp, "http-ws.log"))
            B.sh("ping -c 3 -i 0.2 -W 1 10.95.0.1", ns=topo.C, check=False)
            for i in range(ctx.reps):
                for c in levels:
                    try:
                        ws[c][i] = run_wrk(topo.C, "http://10.95.0.1/", c, ctx.dur)
                    except B.Failure as e:
                        errors.append(f"wirespeed wrk -c{c}: {e}")
                try:
                    ws_close[i] = run_wrk(topo.C, "http://10.95.0.1/", 32, ctx.dur, close=True)
                except B.Failure as e:
                    errors.append(f"wirespeed Connection: close: {e}")
            B.stop(dp)
        except B.Failure as e:
            errors.append(f"wirespeed data plane: {e}")
        # nginx: one worker pinned to cpu 0, the same client on cpu 1.
        conf = nginx_conf(ctx.tmp)
        ngx = B.spawn(["nginx", "-c", conf], os.path.join(ctx.tmp, "nginx.log"), ns=topo.N)
        time.sleep(1.0)
        if ngx.poll() is not None:
            errors.append(f"nginx did not start: {B.tail(os.path.join(ctx.tmp, 'nginx.log'), 5)}")
        else:
            for i in range(ctx.reps):
                for c in levels:
                    try:
                        ng[c][i] = run_wrk(topo.C, "http://10.95.1.1/", c, ctx.dur)
                    except B.Failure as e:
                        errors.append(f"nginx wrk -c{c}: {e}")
                try:
                    ng_close[i] = run_wrk(topo.C, "http://10.95.1.1/", 32, ctx.dur, close=True)
                except B.Failure as e:
                    errors.append(f"nginx Connection: close: {e}")
            B.stop(ngx)
    rps = lambda s: s["requests_per_second"]  # noqa: E731
    rows = []
    for c in levels:
        rows.append([f"requests/s, {c} connection{'s' if c > 1 else ''}",
                     B.fmt_ms(B.pick(ws[c], rps), "/s"), B.fmt_ms(B.pick(ng[c], rps), "/s"),
                     B.ratio(B.pick(ws[c], rps), B.pick(ng[c], rps))])
        for p, key in B.LATENCY_POINTS:
            f = lambda s, key=key: s.get(f"{key}_us")  # noqa: E731
            rows.append([f"  latency {p}, {c} conn", B.fmt_ms(B.pick(ws[c], f), "µs"),
                         B.fmt_ms(B.pick(ng[c], f), "µs"),
                         B.ratio(B.pick(ws[c], f), B.pick(ng[c], f), True)])
    rows.append(["connections/s (`Connection: close`, 32 at once)", B.fmt_ms(B.pick(ws_close, rps), "/s"),
                 B.fmt_ms(B.pick(ng_close, rps), "/s"), B.ratio(B.pick(ws_close, rps), B.pick(ng_close, rps))])
    errs = lambda runs: sum((s or {}).get("socket_errors", 0) for runs_ in runs for s in runs_)  # noqa: E731
    rows.append(["wrk socket errors (all runs)", str(errs(list(ws.values()) + [ws_close])),
                 str(errs(list(ng.values()) + [ng_close])), ""])
    rep.add_table("", ["figure", "wirespeed `http`", "nginx-light (kernel)", "ratio"], rows)
    rep.note("Ratios >1 mean wirespeed is better (latency: nginx ÷ wirespeed). Goal: ≥ 2× "
             "nginx's requests/s at 32 connections. The kernel's client (wrk, one thread pinned to "
             "cpu 1) bounds this path: both servers get one core (cpu 0; wirespeed busy-polls it).")
    rep.note(f"`wrk -t1 -c N -d {ctx.dur}s --latency -s tests/bench/wrk_tail.lua` (the script prints p99.9 and the maximum) for GET / ({BODY}-byte body) over a veth at MTU "
             "1500. wirespeed: af_packet PMD on the root end; nginx: the same kind of veth into its "
             "own namespace, `worker_processes 1`, access log off, keep-alive.")
    rep.note(f"Median of {ctx.reps} runs; ±: (max−min)/median.")
    for e in errors:
        rep.note(f"FAILURE: {e}")
    rep.data = {"wirespeed": ws, "nginx": ng, "wirespeed_close": ws_close, "nginx_close": ng_close,
                "errors": errors, "cpu": ws_cpu}
    return rep


# ---------------------------------------------------------------------------------------
# connection rate and round trips stack to stack


def bench_connrate(ctx):
    rep = B.Report("connrate", "11. Connection rate and round trips: wirespeed over memif vs the kernel",
                   ctx.command("connrate"))
    errors = []
    dur = ctx.dur
    ws_cr = [None] * ctx.reps
    ws_rt = [None] * ctx.reps
    tcp = "tcp: { time_wait_ms: 1000, time_wait_reuse_ms: 5 }"
    try:
        with B.Memif(ctx.tmp, 1500, "cr", metrics_port=9595, tcp_extra=tcp, counters=False) as m:
            ws_cr = B.repeat(lambda: m.client(
                f"{{ name: cr, kind: ping, protocol: tcp, target: \"{B.Memif.SERVER_IP}:7\", "
                f"message_size: 64, connections: 64, reconnect: true, duration_s: {dur} }}", dur + 20),
                ctx.reps, errors)
            ws_rt = B.repeat(lambda: m.client(
                f"{{ name: rt, kind: ping, protocol: tcp, target: \"{B.Memif.SERVER_IP}:7\", "
                f"message_size: 64, connections: 64, duration_s: {dur} }}", dur + 20), ctx.reps, errors)
    except B.Failure as e:
        errors.append(str(e))
    k_cr = [None] * ctx.reps
    k_rt = [None] * ctx.reps
    with B.KernelPair(1500, offloads=True) as kp:
        for k, v in (("net.ipv4.tcp_tw_reuse", 1), ("net.ipv4.ip_local_port_range", "1024 65000")):
            B.sh(f"sysctl -qw {k}='{v}'", ns=kp.A, check=False)
        log = os.path.join(ctx.tmp, "cr-kernel-echo.log")
        srv = B.spawn([B.WSPERF, "echo", "--listen", f"{kp.IP_B}:7", "--cpu", "1", "--quiet"], log, ns=kp.B)
        time.sleep(0.5)

        def kclient(extra, tag):
            return B.wsperf(["ping", "--target", f"{kp.IP_B}:7", "--message-size", "64",
                             "--connections", "64", "--duration", str(dur), "--cpu", "0"] + extra,
                            kp.A, os.path.join(ctx.tmp, f"cr-kernel-{tag}.log"), dur + 20)

        k_cr = B.repeat(lambda: kclient(["--reconnect"], "reconnect"), ctx.reps, errors)
        k_rt = B.repeat(lambda: kclient([], "keepalive"), ctx.reps, errors)
        B.stop(srv)
    cps = lambda s: s.get("connections_per_second") or s.get("messages_per_second")  # noqa: E731
    mps = lambda s: s["messages_per_second"]  # noqa: E731
    rows = [
        ["connections/s (`ping` reconnect, 64 at once)", B.fmt_ms(B.pick(ws_cr, cps), "/s"),
         B.fmt_ms(B.pick(k_cr, cps), "/s"), B.ratio(B.pick(ws_cr, cps), B.pick(k_cr, cps))],
        *B.latency_rows("  connect+round trip {}", ws_cr, [(k_cr, B.rtt)]),
        ["round trips/s (64 kept-alive connections)", B.fmt_ms(B.pick(ws_rt, mps), "/s"),
         B.fmt_ms(B.pick(k_rt, mps), "/s"), B.ratio(B.pick(ws_rt, mps), B.pick(k_rt, mps))],
        *B.latency_rows("  round trip {}", ws_rt, [(k_rt, B.rtt)]),
    ]
    rep.add_table("", ["figure", "wirespeed ping → echo (memif)", "wsperf ping → echo (Linux veth)",
                       "ratio"], rows)
    rep.note("Goals (one core each): ≥ 1 M connections/s and ≥ 3 M round trips/s stack to "
             "stack. wirespeed: client process on lcore 1, server (`echo`, TCP) on lcore 0, both "
             "`idle: poll`, `tcp.time_wait_ms: 1000`, `time_wait_reuse_ms: 5` (the default 1 s takeover would cap one client at 28k connections/s to one server port: 28,232 ephemeral ports per second). Linux: `wsperf ping --connections 64 [--reconnect]` "
             "on cpu 0 → `wsperf echo` on cpu 1, namespaces over veth (MTU 1500, offloads on), "
             "client `tcp_tw_reuse=1`.")
    rep.note(f"Median of {ctx.reps} runs of {dur} s; ±: (max−min)/median. 64-byte messages, length32.")
    for e in errors:
        rep.note(f"FAILURE: {e}")
    rep.data = {"wirespeed_reconnect": ws_cr, "wirespeed_keepalive": ws_rt, "kernel_reconnect": k_cr,
                "kernel_keepalive": k_rt, "errors": errors}
    return rep


class Ctx:
    def __init__(self, args):
        self.quick = args.quick
        self.reps = args.reps or (1 if args.quick else 3)
        self.dur = args.duration or (3 if args.quick else 5)
        self.args = args
        self.stamp = datetime.datetime.utcnow().strftime("%Y%m%dT%H%M%SZ")
        self.tmp = os.path.join(B.RESULTS, f"{self.stamp}-services-logs")
        os.makedirs(self.tmp, exist_ok=True)

    def command(self, workload):
        q = " --quick" if self.quick else ""
        extra = f" --reps {self.args.reps}" if self.args.reps else ""
        extra += f" --duration {self.args.duration}" if self.args.duration else ""
        return f"sudo tests/bench/run_services.sh{q}{extra} {workload}"


PROGRESS_RATE = re.compile(r"^\S+: ([\d.]+) s, \d+ messages, .* (\d+) connections \((\d+)/s\)")


def per_second_rates(log):
    """(seconds, connections/s over the last interval) from a client's progress lines, from
    the differences of the cumulative connection counts: the rate printed in the line was the
    average since the start before 15:30 UTC on 2026-11-30 (logs of earlier runs read the
    same way here)."""
    out = []
    prev = None
    try:
        with open(log) as f:
            for line in f:
                m = PROGRESS_RATE.match(line)
                if m and ": done" not in line:
                    t, n = float(m.group(1)), int(m.group(2))
                    if prev is not None and t > prev[0]:
                        out.append((t, (n - prev[1]) / (t - prev[0])))
                    prev = (t, n)
    except OSError:
        pass
    return out


def dataplane_run_delay():
    """Seconds the data-plane processes' threads have waited for a CPU while runnable
    (/proc/PID/task/TID/schedstat, second field): time other work took from them."""
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{pid}/exe") != os.path.realpath(B.DATAPLANE):
                continue
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[1])
        except OSError:
            continue
    return total / 1e9


def minute_medians(rates, minutes):
    """[(minute, median connections/s, samples)] from (seconds, rate) pairs; minute 1 skips
    the first 5 s (start-up)."""
    out = []
    for m in range(1, minutes + 1):
        xs = [r for t, r in rates if max(5, (m - 1) * 60) < t <= m * 60]
        if xs:
            out.append((m, B.med(xs), len(xs)))
    return out


def bench_stability(ctx):
    minutes = ctx.args.minutes
    rep = B.Report("stability", f"12. Connection rate over {minutes} minutes, and recovery from overload",
                   ctx.command("stability") + f" --minutes {minutes}"
                   + (f" --overload {ctx.args.overload}" if ctx.args.overload != 4096 else "")
                   + (f" --phase-s {ctx.args.phase_s}" if ctx.args.phase_s != 15 else ""))
    errors = []
    samples = []
    long_run = over = after = before = None
    rates = []
    rates_before = []
    rates_after = []
    import threading
    stop_sampling = threading.Event()
    port = 9597
    wanted = ("wirespeed_mempool_in_use", "wirespeed_tcp_memory_bytes", "wirespeed_tcp_connections")

    def sample(t0):
        while not stop_sampling.wait(10):
            try:
                m = B.scrape(port)
            except OSError:
                continue
            row = {"t": round(time.time() - t0), "load": float(open("/proc/loadavg").read().split()[0]),
                   "run_delay_s": dataplane_run_delay()}
            for (name, labels), v in m.items():
                if name in wanted:
                    lab = dict(labels)
                    if name == "wirespeed_tcp_connections" and lab.get("state") not in ("time_wait", "established", "syn_received"):
                        continue
                    key = name.replace("wirespeed_", "") + (f"{{{lab['state']}}}" if "state" in lab else "")
                    row[key] = row.get(key, 0) + v
            samples.append(row)

    try:
        with B.Memif(ctx.tmp, 1500, "st", metrics_port=port, tcp_extra="tcp: { time_wait_ms: 1000, time_wait_reuse_ms: 5 }",
                     counters=True) as m:
            t0 = time.time()
            th = threading.Thread(target=sample, args=(t0,), daemon=True)
            th.start()
            dur = minutes * 60
            long_run = m.client(
                f"{{ name: cr, kind: ping, protocol: tcp, target: \"{B.Memif.SERVER_IP}:7\", "
                f"message_size: 64, connections: 64, reconnect: true, duration_s: {dur} }}", dur + 60)
            rates = per_second_rates(os.path.join(ctx.tmp, f"st-client-{m.n}.log"))
            # The overload is judged against a run of the same length and shape right before
            # it (a fresh client process, the same start-up), not against the long run.
            phase = ctx.args.phase_s
            short = (f"{{ name: cr, kind: ping, protocol: tcp, target: \"{B.Memif.SERVER_IP}:7\", "
                     f"message_size: 64, connections: 64, reconnect: true, duration_s: {phase} }}")
            before = m.client(short, phase + 75)
            rates_before = per_second_rates(os.path.join(ctx.tmp, f"st-client-{m.n}.log"))
            over = m.client(
                f"{{ name: flood, kind: ping, protocol: tcp, target: \"{B.Memif.SERVER_IP}:7\", "
                f"message_size: 64, connections: {ctx.args.overload}, reconnect: true, "
                f"duration_s: {phase} }}", phase + 75)
            time.sleep(2)
            after = m.client(short, phase + 75)
            rates_after = per_second_rates(os.path.join(ctx.tmp, f"st-client-{m.n}.log"))
            stop_sampling.set()
            th.join()
    except B.Failure as e:
        errors.append(str(e))
        stop_sampling.set()
    first = [r for t, r in rates if 5 <= t <= 60]
    last = [r for t, r in rates if t > max(60, minutes * 60 - 55)]
    rows = [
        ["connections/s, first minute (5–60 s)", B.fmt(B.med(first), "/s"), ""],
        ["connections/s, last minute", B.fmt(B.med(last), "/s"),
         B.ratio(B.med(last), B.med(first)) if first and last else "—"],
        ["connections/s, whole run", B.fmt(long_run and long_run.get("connections_per_second"), "/s"), ""],
        [f"connections/s, 64 at once for {ctx.args.phase_s} s before the overload",
         B.fmt(before and before.get("connections_per_second"), "/s"), ""],
        [f"connections/s offered {ctx.args.overload} at once (overload)",
         B.fmt(over and over.get("connections_per_second"), "/s"), ""],
        [f"connections/s, 64 at once for {ctx.args.phase_s} s after the overload",
         B.fmt(after and after.get("connections_per_second"), "/s"),
         B.ratio(after and after.get("connections_per_second"), before and before.get("connections_per_second"))],
        ["  median per-second rate from 3 s on, before → after",
         f"{B.fmt(B.med([r for t, r in rates_before if t >= 3]), '/s')} → "
         f"{B.fmt(B.med([r for t, r in rates_after if t >= 3]), '/s')}",
         B.ratio(B.med([r for t, r in rates_after if t >= 3]), B.med([r for t, r in rates_before if t >= 3]))
         if rates_before and rates_after else "—"],
        ["errors / failed connects (steady run)",
         f"{(long_run or {}).get('errors', '—')} / {(long_run or {}).get('connect_failures', '—')}", ""],
    ]
    rep.add_table("", ["figure", "wirespeed ping reconnect → echo (memif)", "ratio to first minute / before"],
                  rows)
    per_minute = minute_medians(rates, minutes)
    if per_minute:
        first_med = per_minute[0][1]
        rows = []
        for m, r, n in per_minute:
            inside = [x for x in samples if (m - 1) * 60 < x["t"] <= m * 60]
            load = B.fmt(max(x["load"] for x in inside)) if inside else "—"
            # Run-queue wait of both data planes over the minute: CPU time other work took.
            wait = "—"
            if len(inside) >= 2:
                dt = inside[-1]["t"] - inside[0]["t"]
                if dt > 0:
                    wait = f"{(inside[-1]['run_delay_s'] - inside[0]['run_delay_s']) / dt * 1e3:.1f} ms/s"
            rows.append([m, B.fmt(r, "/s"), B.ratio(r, first_med), n, load, wait])
        rep.add_table("Per minute: median of the client's per-second rates (minute 1 from 5 s on), the "
                      "highest 1-minute load average sampled, and how long the data planes' threads "
                      "waited for a CPU while runnable (other work on their cores):",
                      ["minute", "connections/s", "ratio to minute 1", "seconds sampled", "load",
                       "data-plane run-queue wait"], rows)
    if samples:
        keys = sorted({k for s in samples for k in s if k not in ("t", "load", "run_delay_s")})
        pick_rows = [s for i, s in enumerate(samples) if i % max(1, len(samples) // 8) == 0 or i == len(samples) - 1]
        rep.add_table("Server state sampled every 10 s (a subset of rows):",
                      ["t (s)"] + keys, [[s["t"]] + [B.fmt(s.get(k)) for k in keys] for s in pick_rows])
    rep.note("Goal: the rate in the tenth minute equals the first, and an overload "
             "(more offered than served) recovers by itself when the load drops. One server process "
             "(`echo`, lcore 0, `idle: poll`) serves every phase; each phase is a new client process "
             "(lcore 1). `tcp.time_wait_ms: 1000`, `time_wait_reuse_ms: 5` (the default 1 s takeover would cap one client at 28k connections/s to one server port: 28,232 ephemeral ports per second) on both.")
    for e in errors:
        rep.note(f"FAILURE: {e}")
    rep.data = {"rates": rates, "per_minute": per_minute, "steady": long_run, "before": before, "overload": over,
                "after": after, "rates_before": rates_before, "rates_after": rates_after, "server": samples,
                "errors": errors}
    return rep


FUNCS = {"http": bench_http, "connrate": bench_connrate, "stability": bench_stability}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="1 run of 3 s per figure")
    ap.add_argument("--reps", type=int, help="runs per figure (default 3, --quick 1)")
    ap.add_argument("--duration", type=int, help="seconds per run (default 5, --quick 3; max 10)")
    ap.add_argument("--minutes", type=int, default=10, help="stability: minutes of steady load (1..30)")
    ap.add_argument("--overload", type=int, default=4096,
                    help="stability: connections the overload phase offers at once (64..60000)")
    ap.add_argument("--phase-s", type=int, default=15,
                    help="stability: seconds of the before, overload and after phases (5..60)")
    ap.add_argument("--no-doc", action="store_true", help="do not touch docs/benchmarks.md")
    ap.add_argument("workloads", nargs="*", help=" ".join(WORKLOADS))
    args = ap.parse_args()
    bad = [w for w in args.workloads if w not in WORKLOADS]
    if bad:
        ap.error(f"unknown workload(s) {bad}; choose from {WORKLOADS}")
    if args.duration and not 1 <= args.duration <= 10:
        ap.error("--duration must be 1..10")
    if not 1 <= args.minutes <= 30:
        ap.error("--minutes must be 1..30")
    if not 64 <= args.overload <= 60000:
        ap.error("--overload must be 64..60000")
    if not 5 <= args.phase_s <= 60:
        ap.error("--phase-s must be 5..60")
    if os.geteuid() != 0:
        print("the benchmarks need root (network namespaces, DPDK): run as root", file=sys.stderr)
        return 1
    for b in (B.DATAPLANE, B.WSPERF):
        if not os.access(b, os.X_OK):
            print(f"missing {b}: build first", file=sys.stderr)
            return 1
    ctx = Ctx(args)
    todo = args.workloads or [w for w in WORKLOADS if w != "stability"]
    failed = B.run_workloads(todo, FUNCS, ctx, ctx.stamp, args.no_doc,
                             {"logs": ctx.tmp, "reps": ctx.reps, "duration_s": ctx.dur})
    return 1 if failed else 0

if __name__ == "__main__":
    sys.exit(main())
