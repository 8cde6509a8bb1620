#!/usr/bin/env python3
"""A memif peer that goes away never takes the data plane down.

One wirespeed data plane runs a `net_memif` port in the server role (TCP sink on :9, echo
on :7) on lcore 0. Client data planes (memif client role, lcore 1) connect to it one after
the other at MTU 9000 (chained mbufs) and push bulk TCP at it:
- even runs end by themselves after RUN_SECONDS (the client resets its connections, closes
  its port and exits while the server is still receiving);
- odd runs are killed with SIGKILL in the middle of the transfer (a dead peer: the kernel
  closes the memif control socket under the server's feet).
Either way DPDK's memif PMD handles the disconnect in the EAL interrupt thread, which
unmaps the shared rings (memif_disconnect -> memif_free_regions) while the server's lcore
may be inside rte_eth_rx_burst/tx_burst on them. Before the unmap guard
(dataplane/unmap_guard.cpp) the server died with SIGSEGV inside librte_net_memif.

Checks, per run: the client moved data (report or progress lines), the server process is
still alive afterwards; at the end: the server's sink counted bytes from every run, the
server stops cleanly on SIGINT (exit 0, "wirespeed: stopped"), and the unmap guard's
metrics are exported with no wait that hit its time bound.
Then the client role: a second server stops (SIGINT) under a client that is pushing
data; the client must stay up and end by itself after CLIENT_SECONDS.

The server busy-polls (idle: poll, as in tests/bench where the crashes were first seen):
its core is then nearly always inside a burst, the case the guard is for.

How often it failed without the guard: 4 of 4 runs (4 crashes in 15 disconnects) before
the memif bsize fix (18645b6), when a stale-descriptor replay kept the server's core
copying frames in rx_burst; since that fix the window is one ordinary burst and
WS_UNMAP_GUARD=off crashed the server once in about 100 disconnects here, so this test is
a survival check; tests/unit/dataplane/unmap_guard_test.cpp shows the mechanism.

Bounded: RUNS runs of RUN_SECONDS each plus one of CLIENT_SECONDS (about 40 s in all),
every wait has a timeout.
Usage: test_memif_disconnect.py [runs]   (root; WS_BUILD_DIR = the build directory;
WS_TEST_MTU and WS_TEST_MSG change the MTU and message size, default 9000 and 65536)
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness as h  # noqa: E402

TAG = "memif"
SOCK = f"/run/wirespeed-wst-{TAG}-{os.getpid()}.sock"
SERVER_IP, CLIENT_IP = "10.97.0.1", "10.97.0.2"
SERVER_METRICS = 9573
CLIENT_METRICS = 9574
MTU = int(os.environ.get("WS_TEST_MTU", "9000"))
MSG = int(os.environ.get("WS_TEST_MSG", "65536"))
RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 8
RUN_SECONDS = 2
KILL_AFTER = 1.2  # seconds into the transfer (the first progress line comes at 1 s)
CLIENT_SECONDS = 3  # the client-role run, whose server is stopped under it
# Bulk data through the server's echo as well, so that the server is sending when its
# peer goes: with the peer gone the ring stays full, the server's TX backlog is retried
# every loop iteration, and the core is in tx_burst when the disconnect unmaps the ring.
# (With only a sink, the server idles a few ms after the last segment and the race is
# rare; before the memif bsize fix the stale-descriptor replay kept it busy.)
ECHOED = ('{{ name: back, kind: source, protocol: tcp, target: "' + SERVER_IP +
          ':7", message_size: 65536, connections: 1, duration_s: {seconds} }}')


def config(path, *, role, prefix, lcore, address, mac, services, metrics_port, idle="adaptive"):
    svc = "\n".join(f"  - {s}" for s in services)
    text = f"""version: 1
dataplane:
  lcores: [{lcore}]
  idle: {idle}
  file_prefix: {prefix}
  hugepages: false
  memory_mb: 512
ports:
  - name: p0
    device: "net_memif0,role={role},socket={SOCK},id=0"
    mtu: {MTU}
    address: {address}
    mac: "{mac}"
services:
{svc}
control:
  metrics_listen: 127.0.0.1:{metrics_port}
"""
    with open(path, "w") as f:
        f.write(text)
    return path


def wait_line(log_path, pattern, proc, timeout):
    """True once `pattern` appears in the log; False on timeout or process exit."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        with open(log_path) as f:
            if re.search(pattern, f.read(), re.M):
                return True
        if proc.poll() is not None:
            return False
        time.sleep(0.05)
    return False


def segfault_line(pid):
    r = h.sh("dmesg", check=False)
    lines = [l for l in r.stdout.splitlines() if f"[{pid}]" in l and "segfault" in l]
    return lines[-1].strip() if lines else "no segfault line in dmesg"


def client_bytes(log_path):
    """Bytes the source reported: its final summary, else its last progress line."""
    with open(log_path) as f:
        text = f.read()
    msgs = re.findall(r"^load: (?:done: )?[\d.]+ s, (\d+) messages", text, re.M)
    return int(msgs[-1]) * MSG if msgs else 0


def main():
    h.need_root()
    res = h.Results("memif-disconnect")
    tmp = h.temp_dir(f"wst-{TAG}-")
    server = None
    ctl = None
    clients = []
    try:
        if os.path.exists(SOCK):
            os.unlink(SOCK)
        srv_cfg = config(os.path.join(tmp, "server.yaml"), role="server", prefix=f"wst-{TAG}-srv",
                         lcore=0, address=f"{SERVER_IP}/24", mac="02:00:00:00:97:01",
                         services=["{ name: sink, kind: sink, protocol: tcp, port: 9 }",
                                   "{ name: echo, kind: echo, protocol: tcp, port: 7 }"],
                         metrics_port=SERVER_METRICS, idle="poll")
        srv_log = os.path.join(tmp, "server.log")
        server = subprocess.Popen([h.DATAPLANE, "-c", srv_cfg], stdout=open(srv_log, "w"),
                                  stderr=subprocess.STDOUT)
        if not res.check(wait_line(srv_log, r"^wirespeed: running", server, 25),
                         "memif server data plane starts"):
            print(open(srv_log).read())
            return res.finish()
        ctl = h.Control(srv_cfg, tmp, SERVER_METRICS).__enter__()

        survived = 0
        served = 0
        t_start = time.time()
        for i in range(RUNS):
            kill = i % 2 == 1
            rep = os.path.join(tmp, f"client-{i}.json")
            cfg = config(os.path.join(tmp, f"client-{i}.yaml"), role="client",
                         prefix=f"wst-{TAG}-cli", lcore=1, address=f"{CLIENT_IP}/24",
                         mac="02:00:00:00:97:02",
                         services=[f'{{ name: load, kind: source, protocol: tcp, target: '
                                   f'"{SERVER_IP}:9", message_size: {MSG}, connections: 1, '
                                   f'duration_s: {RUN_SECONDS}, report: {rep} }}',
                                   ECHOED.format(seconds=RUN_SECONDS)],
                         metrics_port=CLIENT_METRICS)
            log = os.path.join(tmp, f"client-{i}.log")
            p = subprocess.Popen([h.DATAPLANE, "-c", cfg], stdout=open(log, "w"),
                                 stderr=subprocess.STDOUT)
            clients.append(p)
            how = "killed mid-transfer" if kill else f"ends after {RUN_SECONDS} s"
            if kill:
                # The first progress line comes one second into the transfer.
                flowing = wait_line(log, r"^load: [\d.]+ s, [1-9]\d* messages", p, 20)
                time.sleep(max(0.0, KILL_AFTER - 1.0))
                p.kill()
                p.wait(10)
                rc = "SIGKILL"
                moved = client_bytes(log)
            else:
                try:
                    rc = p.wait(RUN_SECONDS + 25)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(10)
                    rc = "timeout"
                r = None
                if os.path.exists(rep):
                    with open(rep) as f:
                        r = json.load(f)
                moved = int(r["bytes"]) if r else 0
                flowing = rc == 0 and moved > 0
            # The disconnect is handled asynchronously by the server's interrupt thread.
            time.sleep(0.2)
            alive = server.poll() is None
            survived += alive
            served += moved > 0
            res.check(flowing and moved > 0, f"run {i + 1}/{RUNS} ({how}): client moved "
                      f"{moved / 1e6:.1f} MB", f"(client exit {rc}; log {log})")
            if not res.check(alive, f"run {i + 1}/{RUNS}: server alive after the client left",
                             f"(server exit {server.returncode}: {segfault_line(server.pid)})"):
                break
        print(f"  {survived} of {RUNS} disconnects survived, {served} runs served, "
              f"{time.time() - t_start:.1f} s", flush=True)

        if server.poll() is None:
            m = ctl.scrape()
            guarded = m.get(("wirespeed_unmap_guarded_total", frozenset()))
            waits = m.get(("wirespeed_unmap_waits_total", frozenset()))
            waited = m.get(("wirespeed_unmap_wait_seconds_total", frozenset()), 0.0)
            longest = m.get(("wirespeed_unmap_wait_max_seconds", frozenset()), 0.0)
            timeouts = m.get(("wirespeed_unmap_wait_timeouts_total", frozenset()))
            sunk = m.get(("wirespeed_service_received_bytes_total",
                          frozenset({("service", "sink")})), 0.0)
            res.check(None not in (guarded, waits, timeouts),
                      f"unmap guard metrics exported: {guarded:.0f} guarded munmap calls, "
                      f"{waits:.0f} waited ({waited * 1e6:.0f} us in all, longest {longest * 1e6:.0f} us), "
                      f"{timeouts:.0f} "
                      f"timed out" if None not in (guarded, waits, timeouts) else
                      "unmap guard metrics exported", f"({guarded}, {waits}, {timeouts})")
            res.check(guarded is not None and guarded >= RUNS,
                      "every disconnect's unmap went through the guard")
            res.check(timeouts == 0, "no unmap wait hit its time bound")
            res.check(sunk > 0, f"server sink received {sunk / 1e6:.1f} MB over all runs")
            server.send_signal(signal.SIGINT)
            try:
                rc = server.wait(15)
            except subprocess.TimeoutExpired:
                server.kill()
                rc = "timeout"
            out = open(srv_log).read()
            res.check(rc == 0 and "wirespeed: stopped" in out,
                      f"server stops cleanly on SIGINT (exit {rc})")

        # The client role: a fresh server, a client pushing bulk data, and the server stops
        # under it. The client must outlive the disconnect and end by itself.
        if os.path.exists(SOCK):
            os.unlink(SOCK)
        srv_log2 = os.path.join(tmp, "server2.log")
        server = subprocess.Popen([h.DATAPLANE, "-c", srv_cfg], stdout=open(srv_log2, "w"),
                                  stderr=subprocess.STDOUT)
        if res.check(wait_line(srv_log2, r"^wirespeed: running", server, 25),
                     "second memif server starts"):
            cfg = config(os.path.join(tmp, "client-last.yaml"), role="client",
                         prefix=f"wst-{TAG}-cli", lcore=1, address=f"{CLIENT_IP}/24",
                         mac="02:00:00:00:97:02",
                         services=[f'{{ name: load, kind: source, protocol: tcp, target: '
                                   f'"{SERVER_IP}:9", message_size: {MSG}, connections: 1, '
                                   f'duration_s: {CLIENT_SECONDS} }}',
                                   ECHOED.format(seconds=CLIENT_SECONDS)],
                         metrics_port=CLIENT_METRICS)
            log = os.path.join(tmp, "client-last.log")
            p = subprocess.Popen([h.DATAPLANE, "-c", cfg], stdout=open(log, "w"),
                                 stderr=subprocess.STDOUT)
            clients.append(p)
            flowing = wait_line(log, r"^load: [\d.]+ s, [1-9]\d* messages", p, 20)
            res.check(flowing, "client data plane moves data", f"(log {log})")
            # A clean stop: the server resets the connections and then closes its port, so
            # the client is busy with the resets when the disconnect unmaps its rings
            # (the case that crashed servers most often above).
            server.send_signal(signal.SIGINT)
            try:
                src = server.wait(15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(10)
                src = "timeout"
            # Its own shutdown closes the port after the cores detached: no wait, no hang.
            res.check(src == 0 and "wirespeed: stopped" in open(srv_log2).read(),
                      f"server with a busy client attached stops cleanly (exit {src})")
            time.sleep(0.5)
            res.check(p.poll() is None, "client alive after its server stopped",
                      f"(client exit {p.returncode}: {segfault_line(p.pid)})")
            try:
                rc = p.wait(CLIENT_SECONDS + 15)
            except subprocess.TimeoutExpired:
                rc = "timeout"
            out = open(log).read()
            res.check(rc == 0 and "wirespeed: stopped" in out,
                      f"client ends by itself after {CLIENT_SECONDS} s (exit {rc})",
                      f"({segfault_line(p.pid) if rc not in (0, 'timeout') else ''})")
    finally:
        for p in clients:
            if p.poll() is None:
                p.kill()
                p.wait(10)
        if ctl:
            ctl.__exit__(None, None, None)
        if server and server.poll() is None:
            server.kill()
            server.wait(10)
        if os.path.exists(SOCK):
            os.unlink(SOCK)
        if res.failed == 0:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"  logs kept in {tmp}")
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
