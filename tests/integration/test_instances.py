#!/usr/bin/python3
"""Several data planes on one host, side by side:

- Two instances (a memif server and client), each with its own file_prefix, stats and
  capture segments, metrics port and control process. Both run at once: each control
  process reports its own instance (its port's MAC and address, its services), a ping
  crosses between them, and a capture of one sees only its own port.
- A third instance given the first one's file_prefix is refused at start with a message
  naming the prefix, exits 1, and leaves the first one untouched: its control process still
  reports it up, its segments are still its own, traffic still flows.
- The same config started with `lcores: auto` under `taskset -c 1` runs one pipeline on
  lcore 1, and `${NAME}` values come from the environment.

Bounded: about 40 seconds. memif socket and file prefixes wsin-*.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness as h  # noqa: E402

SOCK = "/run/wirespeed-itest-wsin.sock"
A_IP, B_IP = "10.79.8.1", "10.79.8.2"
A_METRICS, B_METRICS, C_METRICS = 9691, 9692, 9693


def config(tmp, name, role, ip, prefix, metrics, services, lcores="[1]"):
    d = os.path.join(tmp, name)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "wirespeed.yaml")
    svc = "\n".join(f"  - {s}" for s in services) or "  []"
    with open(path, "w") as f:
        f.write(f"""version: 1
dataplane:
  lcores: {lcores}
  idle: adaptive
  file_prefix: "{prefix}"
  hugepages: false
  memory_mb: 256
ports:
  - name: {name}
    device: "net_memif0,role={role},socket={SOCK},id=0"
    mtu: 1500
    address: {ip}/24
services:
{svc}
control:
  metrics_listen: 127.0.0.1:{metrics}
""")
    return path, d


def runtime_dir():
    """Where the data plane puts its segments (docs/metrics.md): root's default here."""
    return os.environ.get("WIRESPEED_RUNTIME_DIR") or "/run/wirespeed"


def status(cfg):
    r = subprocess.run([h.CONTROL, "-c", cfg, "status", "--json", "--interval", "0.2"],
                       capture_output=True, text=True, timeout=20)
    return json.loads(r.stdout) if r.returncode == 0 else {"error": r.stderr}


def main():
    h.need_root()
    res = h.Results("instances")
    if os.path.exists(SOCK):
        os.unlink(SOCK)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["WSIN_PREFIX"] = "wsin-a"
        a_cfg, a_dir = config(tmp, "pa", "server", A_IP, "${WSIN_PREFIX}", A_METRICS,
                              ["{ name: echo-a, kind: echo, protocol: tcp, port: 7 }"],
                              lcores="auto")
        rep = os.path.join(tmp, "ping.json")
        b_cfg, b_dir = config(tmp, "pb", "client", B_IP, "wsin-b", B_METRICS,
                              [f'{{ name: ping-b, kind: ping, protocol: tcp, target: "{A_IP}:7", '
                               f'message_size: 64, count: 2000, report: {rep} }}',
                               "{ name: sink-b, kind: sink, protocol: tcp, port: 9 }"])
        a = h.Dataplane(a_cfg, a_dir, env=dict(os.environ))
        # lcores: auto under an affinity of one CPU: one pipeline on that CPU.
        a.proc = None
        a.log = open(a.log_path, "w")
        a.proc = subprocess.Popen(["taskset", "-c", "1", h.DATAPLANE, "-c", a_cfg],
                                  stdout=a.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 20
        while "wirespeed: running" not in a.output() and time.time() < deadline:
            time.sleep(0.1)
        try:
            res.check("running 1 pipeline(s) on lcores 1" in a.output(),
                      "lcores: auto under taskset -c 1 runs one pipeline on lcore 1",
                      a.output()[-300:])
            with h.Control(a_cfg, a_dir, A_METRICS) as ca:
                res.check(os.path.exists(os.path.join(runtime_dir(), "wsin-a.stats")),
                          "${WSIN_PREFIX} expanded: the stats segment is wsin-a.stats")
                b = h.Dataplane(b_cfg, b_dir)
                with b, h.Control(b_cfg, b_dir, B_METRICS) as cb:
                    check_side_by_side(res, a_cfg, b_cfg, ca, cb, rep, tmp)
                    check_same_prefix(res, tmp, ca, a)
        finally:
            a.stop()
    return res.finish()


def check_side_by_side(res, a_cfg, b_cfg, ca, cb, rep, tmp):
    deadline = time.time() + 30
    while not os.path.exists(rep) and time.time() < deadline:
        time.sleep(0.2)
    time.sleep(0.3)
    with open(rep) as f:
        ping = json.load(f) if os.path.getsize(rep) else {}
    res.check(ping.get("messages") == 2000 and ping.get("errors") == 0,
              f"a ping crossed between the two instances ({ping.get('messages')} of 2000)")
    sa, sb = status(a_cfg), status(b_cfg)
    pa = [p["name"] for p in sa.get("ports", [])]
    pb = [p["name"] for p in sb.get("ports", [])]
    svc_a = [s["name"] for s in sa.get("services", [])]
    svc_b = [s["name"] for s in sb.get("services", [])]
    res.check(pa == ["pa"] and pb == ["pb"] and svc_a == ["echo-a"] and svc_b == ["ping-b", "sink-b"],
              f"each control process reports its own instance (ports {pa} / {pb}, "
              f"services {svc_a} / {svc_b})")
    up_a, up_b = ca.value("wirespeed_up"), cb.value("wirespeed_up")
    rx_a = ca.value("wirespeed_port_receive_packets_total", port="pa")
    rx_b = cb.value("wirespeed_port_receive_packets_total", port="pb")
    res.check(up_a == 1 and up_b == 1 and rx_a > 2000 and rx_b > 2000,
              f"both exporters up, each with its own port's counters ({rx_a:.0f} / {rx_b:.0f})")
    out = os.path.join(tmp, "a.pcapng")
    cap = subprocess.run([h.CONTROL, "-c", a_cfg, "capture", "--seconds", "1", "-w", out],
                         capture_output=True, text=True, timeout=20)
    info = subprocess.run(["capinfos", out], capture_output=True, text=True).stdout
    res.check(cap.returncode == 0 and "Name = pa/0" in info and "pb/" not in info,
              "a capture of one instance has its port only", cap.stderr + info[-300:])


def check_same_prefix(res, tmp, ca, a):
    c_cfg, c_dir = config(tmp, "pc", "server", "10.79.9.1", "wsin-a", C_METRICS, [])
    c_cfg_text = open(c_cfg).read().replace(SOCK, SOCK + ".c")
    with open(c_cfg, "w") as f:
        f.write(c_cfg_text)
    stats_path = os.path.join(runtime_dir(), "wsin-a.stats")
    ino = os.stat(stats_path).st_ino
    r = subprocess.run([h.DATAPLANE, "-c", c_cfg], capture_output=True, text=True, timeout=30)
    out = r.stdout + r.stderr
    res.check(r.returncode == 1 and "wsin-a" in out,
              "a second instance with the same file_prefix is refused (exit 1, names the prefix)",
              f"exit {r.returncode}: {out[-400:]}")
    time.sleep(1.2)
    res.check(a.proc.poll() is None and os.stat(stats_path).st_ino == ino
              and ca.value("wirespeed_up") == 1,
              "the first instance runs on with its own stats segment, reported up")
    if os.path.exists(SOCK + ".c"):
        os.unlink(SOCK + ".c")


if __name__ == "__main__":
    sys.exit(main())
