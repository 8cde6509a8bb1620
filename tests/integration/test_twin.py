#!/usr/bin/python3
"""The kernel-sockets twin against wirespeed's TCP services on the batch pipeline:
the twin in a namespace exchanges messages of 1 byte to 1 MiB with
wirespeed's echo, sink, source and ping, every message checked).

For each message size (1 B, 64 B, 1 KiB, 64 KiB, 1 MiB) one data plane runs `echo` and `sink`
servers and `source` and `ping` clients, all length32 over TCP, against `tools/wsperf` in a
namespace behind a veth pair:

- wsperf ping --verify  -> wirespeed echo    (every echoed byte checked by wsperf)
- wsperf source         -> wirespeed sink    (messages counted by wirespeed)
- wirespeed source      -> wsperf sink --verify (every byte checked by wsperf)
- wirespeed ping        -> wsperf echo --verify (every echoed byte checked by wirespeed's ping)

The counts on both ends must agree: wsperf's JSON reports, wirespeed's client reports and
its service counters read through wirespeed-control, and the pipeline counters
(wirespeed_pipeline_messages_total = every message wirespeed's source, ping and echo pushed).
The whole test is bounded to about three minutes.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness as h  # noqa: E402

DP_IP = "10.78.31.1"
PEER_IP = "10.78.31.2"
METRICS_PORT = 9631
WSPERF = os.path.join(h.BUILD, "tools", "wsperf", "wsperf")
# (size, messages each way): large enough to fill batches, small enough for ~3 minutes.
CASES = [(1, 3000), (64, 3000), (1024, 2000), (65536, 200), (1048576, 16)]
DEADLINE_S = 170


def wsperf(ns, tmp, name, args, timeout=None):
    report = os.path.join(tmp, f"{name}.json")
    argv = ["ip", "netns", "exec", ns, WSPERF] + args + ["--report", report, "--quiet"]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    p.report = report
    p.name = name
    return p


def finish(p, timeout, terminate=False):
    """Waits (or stops a server), returns its JSON report ({} with the output if none)."""
    if terminate and p.poll() is None:
        p.terminate()
    try:
        out = p.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        p.kill()
        out = p.communicate()[0]
    try:
        with open(p.report) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {"output": (out or "")[-400:], "rc": p.returncode}


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def run_size(res, peer, tmp, size, n, t_end):
    ns = peer.ns
    tag = f"{size}B"
    # The twin's servers first: wirespeed's clients connect as soon as the data plane runs.
    w_sink = wsperf(ns, tmp, f"wsperf-sink-{tag}",
                    ["sink", "--listen", f"{PEER_IP}:5009", "--verify", "--duration", "90"])
    w_echo = wsperf(ns, tmp, f"wsperf-echo-{tag}",
                    ["echo", "--listen", f"{PEER_IP}:5007", "--verify", "--duration", "90"])
    # Both listening before the data plane starts (its clients connect at once).
    deadline = time.time() + 10
    while time.time() < deadline:
        r = h.sh("ss -ltnH", ns=ns, check=False)
        if f"{PEER_IP}:5009" in r.stdout and f"{PEER_IP}:5007" in r.stdout:
            break
        time.sleep(0.1)
    src_report = os.path.join(tmp, f"ws-source-{tag}.json")
    ping_report = os.path.join(tmp, f"ws-ping-{tag}.json")
    cfg = h.write_config(
        tmp, device=peer.device(), address=f"{DP_IP}/24", prefix="wst-pipe-twin",
        metrics_port=METRICS_PORT,
        services=[
            "{ name: echo, kind: echo, protocol: tcp, port: 7 }",
            "{ name: sink, kind: sink, protocol: tcp, port: 9 }",
            f'{{ name: load, kind: source, protocol: tcp, target: "{PEER_IP}:5009", '
            f"message_size: {size}, count: {n}, duration_s: 0, report: {src_report} }}",
            f'{{ name: rtt, kind: ping, protocol: tcp, target: "{PEER_IP}:5007", '
            f"message_size: {size}, count: {n}, duration_s: 0, report: {ping_report} }}",
        ])
    dp = h.Dataplane(cfg, tmp)
    try:
        dp.start()
        with h.Control(cfg, tmp, METRICS_PORT) as ctl:
            budget = max(10, min(60, t_end - time.time()))
            k_ping = wsperf(ns, tmp, f"wsperf-ping-{tag}",
                            ["ping", "--target", f"{DP_IP}:7", "--message-size", str(size),
                             "--count", str(n), "--verify", "--timeout", str(int(budget))])
            k_src = wsperf(ns, tmp, f"wsperf-source-{tag}",
                           ["source", "--target", f"{DP_IP}:9", "--message-size", str(size),
                            "--count", str(n)])
            kp = finish(k_ping, budget + 5)
            ks = finish(k_src, budget + 5)
            # wirespeed's clients write their JSON report once their connections closed.
            deadline = time.time() + budget
            while time.time() < deadline and not (os.path.exists(src_report) and
                                                  os.path.exists(ping_report)):
                time.sleep(0.2)
            ws_src, ws_ping = load(src_report), load(ping_report)

            def svc(name, direction):
                return ctl.value("wirespeed_service_messages_total", service=name,
                                 direction=direction)

            # Counters are published every 100 ms: wait until they settle at the expected value.
            ctl.wait_for(lambda: svc("sink", "received") >= n and svc("echo", "sent") >= n, 5)
            ctl.wait_for(lambda: ctl.value("wirespeed_pipeline_messages_total") >= 3 * n, 5)
            m = ctl.scrape()
            pipe_msgs = m.get(("wirespeed_pipeline_messages_total", frozenset()), 0)
            pipe_pulled = m.get(("wirespeed_pipeline_pulled_bytes_total", frozenset()), 0)
            text = ctl.scrape_text()
        ksink = finish(w_sink, 15, terminate=True)
        kecho = finish(w_echo, 15, terminate=True)
    finally:
        dp.stop()
        for p in (w_sink, w_echo):
            if p.poll() is None:
                p.kill()
                p.wait()

    res.check(kp.get("messages") == n and kp.get("verify_errors") == 0 and
              kp.get("protocol_errors") == 0,
              f"{tag}: wsperf ping -> wirespeed echo: {n} echoes, every byte verified "
              f"(p50 {kp.get('rtt_us', {}).get('p50', 0):.0f} us)", json.dumps(kp)[:400])
    res.check(svc_value(m, "echo", "received") == n and svc_value(m, "echo", "sent") == n,
              f"{tag}: wirespeed echo counted {n} messages in and out",
              str(svc_value(m, "echo", "received")))
    res.check(ks.get("messages") == n and svc_value(m, "sink", "received") == n,
              f"{tag}: wsperf source -> wirespeed sink: {n} sent, {n} counted",
              f"{json.dumps(ks)[:300]} sink={svc_value(m, 'sink', 'received')}")
    res.check(ws_src.get("messages") == n and ws_src.get("errors") == 0 and
              ksink.get("messages") == n and ksink.get("bytes") == n * size and
              ksink.get("verify_errors") == 0 and ksink.get("protocol_errors") == 0,
              f"{tag}: wirespeed source -> wsperf sink: {n} messages, every byte verified "
              f"({ws_src.get('messages_per_second', 0):.0f} msg/s)",
              json.dumps({"source": ws_src, "sink": ksink})[:600])
    res.check(ws_ping.get("messages") == n and ws_ping.get("errors") == 0 and
              kecho.get("messages") == n and kecho.get("verify_errors") == 0,
              f"{tag}: wirespeed ping -> wsperf echo: {n} round trips, every byte verified "
              f"(p50 {ws_ping.get('rtt_us', {}).get('p50', 0):.0f} us)",
              json.dumps({"ping": ws_ping, "echo": kecho})[:600])
    # Every message wirespeed sent went through a pipeline: source, ping and echo, n each.
    res.check(pipe_msgs == 3 * n and pipe_pulled == 3 * n * (size + 4),
              f"{tag}: wirespeed_pipeline_messages_total = {pipe_msgs:.0f} (3 x {n}), "
              f"pulled bytes match", f"pulled={pipe_pulled:.0f}")
    r = subprocess.run(["promtool", "check", "metrics"], input=text, text=True,
                       capture_output=True, timeout=20)
    res.check(r.returncode == 0 and not r.stdout.strip() and not r.stderr.strip(),
              f"{tag}: promtool check metrics is clean", (r.stdout + r.stderr)[:400])


def svc_value(m, service, direction):
    return m.get(("wirespeed_service_messages_total",
                  frozenset({"service": service, "direction": direction}.items())), 0)


def main():
    h.need_root()
    h.require("ss", "promtool")
    if not os.path.exists(WSPERF):
        print(f"missing {WSPERF}")
        return 1
    res = h.Results("twin")
    t_end = time.time() + DEADLINE_S
    with tempfile.TemporaryDirectory(prefix="wst-pipe-twin-") as tmp, \
            h.VethPeer("pipe-twin", PEER_IP) as peer:
        for size, n in CASES:
            if time.time() > t_end:
                res.check(False, f"{size} B: not run, the test's time budget is spent")
                continue
            run_size(res, peer, tmp, size, n, t_end)
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
