#!/usr/bin/env python3
"""The control plane against the real data plane.

A kernel peer in a namespace sends UDP datagrams at a paced, known rate to wirespeed's
UDP sink over af_packet. While it runs:
- a real Prometheus server (Debian package) scrapes wirespeed-control every second, and a
  PromQL rate() through its HTTP API must match the rate the peer sent within 5 %;
- the lifetimes of point 3: the control process starts first and serves wirespeed_up 0,
  picks the data plane up when it starts, is killed with SIGKILL and restarted in the middle
  of the traffic without the data plane losing a datagram, and counters never go backwards
  within one data-plane lifetime; the data plane is killed with SIGKILL and restarted and
  is picked up again; a clean stop gives wirespeed_up 0;
- `promtool check metrics` is clean on a scrape of the live data plane, and `status`
  names the cause when the data plane is absent;
- once the traffic is over, `status` (text and JSON) shows the totals since start: the
  sink's messages and bytes equal what the peer sent.

Usage: test_control.py   (root; WS_BUILD_DIR = the build directory)
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
import harness as h  # noqa: E402

DP_IP = "10.79.0.1"
PEER_IP = "10.79.0.2"
RATE = 2000          # datagrams per second from the peer
SEND_SECONDS = 30    # the sender stops by itself after this
PREFIX = "wst-ctl"

SENDER = r"""
import socket, sys, time
dst, port, rate, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
payload = b"x" * 64
sent = 0
start = time.monotonic()
while True:
    elapsed = time.monotonic() - start
    if elapsed >= seconds:
        break
    due = int(elapsed * rate)
    while sent < due:
        s.sendto(payload, (dst, port))
        sent += 1
    time.sleep(0.001)
print(sent, flush=True)
"""

def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Prometheus:
    def __init__(self, tmp, target_port):
        self.port = free_port()
        self.dir = os.path.join(tmp, "prom")
        os.makedirs(self.dir)
        cfg = os.path.join(self.dir, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global: { scrape_interval: 1s, evaluation_interval: 1s }\n"
                    "scrape_configs:\n"
                    "  - job_name: wirespeed\n"
                    f"    static_configs: [ {{ targets: ['127.0.0.1:{target_port}'] }} ]\n")
        self.log = open(os.path.join(self.dir, "prom.log"), "w")
        self.proc = subprocess.Popen(
            ["prometheus", f"--config.file={cfg}", f"--storage.tsdb.path={self.dir}/data",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=self.log, stderr=subprocess.STDOUT)

    def query(self, q):
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode({"query": q})
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                res = json.load(r)["data"]["result"]
        except OSError:
            return None
        return float(res[0]["value"][1]) if res else None

    def stop(self):
        h.terminate(self.proc)


def kill9(proc):
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def main():
    h.need_root()
    h.require("prometheus", "promtool")
    r = h.Results("control")
    tmp = h.temp_dir("wst-ctl-")
    metrics_port = free_port()
    received = lambda c: c.value("wirespeed_service_messages_total", service="sink-udp",  # noqa: E731
                                 direction="received")
    prom = None
    with h.VethPeer("ctl", PEER_IP) as peer:
        cfg = h.write_config(tmp, device=peer.device(), address=f"{DP_IP}/24", prefix=PREFIX,
                             metrics_port=metrics_port,
                             services=["{ name: sink-udp, kind: sink, protocol: udp, port: 9 }",
                                       "{ name: echo-udp, kind: echo, protocol: udp, port: 7 }"])
        dp = h.Dataplane(cfg, tmp)
        ctl = h.Control(cfg, tmp, metrics_port)
        try:
            # 1. Control first: it serves wirespeed_up 0, and status names the cause.
            ctl.__enter__()
            r.check(ctl.value("wirespeed_up") == 0.0, "control without a data plane serves wirespeed_up 0")
            st = subprocess.run([h.CONTROL, "-c", cfg, "status"], capture_output=True, text=True)
            r.check(st.returncode != 0 and "not running" in (st.stdout + st.stderr),
                    "status without a data plane fails and says why", st.stdout + st.stderr)

            # 2. The data plane starts and is picked up.
            dp.start()
            r.check(ctl.wait_for(lambda: ctl.value("wirespeed_up") == 1.0, 10),
                    "control picks up the data plane when it starts")
            pc = subprocess.run("promtool check metrics", shell=True, input=ctl.scrape_text(),
                                capture_output=True, text=True)
            r.check(pc.returncode == 0 and not (pc.stdout + pc.stderr).strip(),
                    "promtool check metrics is clean on the live data plane", pc.stdout + pc.stderr)
            st = subprocess.run([h.CONTROL, "-c", cfg, "status", "--json"], capture_output=True,
                                text=True)
            ok = st.returncode == 0
            try:
                doc = json.loads(st.stdout)
            except ValueError:
                ok = False
            r.check(ok and "ports" in doc, "status --json describes the running data plane",
                    st.stdout[:300] + st.stderr)

            # 3. Paced traffic while Prometheus scrapes.
            prom = Prometheus(tmp, metrics_port)
            sender_path = os.path.join(tmp, "sender.py")
            with open(sender_path, "w") as f:
                f.write(SENDER)
            sender = subprocess.Popen(
                f"ip netns exec {peer.ns} /usr/bin/python3 {sender_path} {DP_IP} 9 {RATE} {SEND_SECONDS}",
                shell=True, stdout=subprocess.PIPE, text=True)
            t0 = time.time()
            samples = []
            backwards = []
            stop_sampling = threading.Event()

            def sample():
                while not stop_sampling.is_set():
                    try:
                        v = received(ctl)
                        if samples and v < samples[-1]:
                            backwards.append((samples[-1], v))
                        samples.append(v)
                    except OSError:
                        pass  # the control process is being restarted
                    time.sleep(0.2)

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()

            # Prometheus needs more than the 10 s range of samples before rate() means anything.
            rate = None
            deadline = t0 + SEND_SECONDS - 2
            while time.time() < deadline:
                time.sleep(0.5)
                n = prom.query('count_over_time(wirespeed_up[60s])')
                if n is not None and n >= 13 and time.time() - t0 >= 14:
                    rate = prom.query('rate(wirespeed_service_messages_total'
                                      '{service="sink-udp",direction="received"}[10s])')
                    break
            r.check(rate is not None and abs(rate - RATE) <= 0.05 * RATE,
                    f"Prometheus rate() over a real scrape matches the sent rate within 5% "
                    f"({rate} vs {RATE}/s)")
            up_min = prom.query('min_over_time(wirespeed_up[10s])')
            r.check(up_min == 1.0, "Prometheus stored wirespeed_up 1 throughout", str(up_min))

            # 4. The control process crashes mid-traffic: the data plane does not notice.
            stop_sampling.set()
            sampler.join()
            before = received(ctl)
            echoed = lambda c: c.value("wirespeed_service_messages_total",  # noqa: E731
                                       service="echo-udp", direction="received")
            echoed_before = echoed(ctl)
            kill9(ctl.proc)
            echo_path = h.write_script(tmp, "echo.py", h.UDP_ECHO_CLIENT)
            e = h.sh(f"/usr/bin/python3 {echo_path} {DP_IP} 300", ns=peer.ns, timeout=60)
            r.check(int(e.stdout.strip() or 0) == 300,
                    "UDP echo answers every datagram while the control process is down",
                    e.stdout)
            ctl = h.Control(cfg, tmp, metrics_port)
            ctl.__enter__()
            # The echoes sent while it was down moved the counters on (the sink's sender may
            # already have finished on a loaded machine). The echoes can all fall inside one
            # publication interval (stats_interval_ms), so wait for the next one.
            ctl.wait_for(lambda: echoed(ctl) >= echoed_before + 300, 3)
            after = received(ctl)
            echoed_after = echoed(ctl)
            r.check(ctl.value("wirespeed_up") == 1.0 and after >= before
                    and echoed_after >= echoed_before + 300,
                    f"a restarted control process picks the running data plane up, counters "
                    f"moved on (echo-udp {echoed_before} -> {echoed_after}, "
                    f"sink {before} -> {after})")
            samples.append(after)
            stop_sampling.clear()
            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()

            out, _ = sender.communicate(timeout=SEND_SECONDS + 30)
            sent = int(out.strip() or 0)
            time.sleep(1.5)  # the last datagrams and one publication interval
            stop_sampling.set()
            sampler.join()
            total = received(ctl)
            r.check(not backwards, "counters never went backwards within the data plane's lifetime",
                    str(backwards[:3]))
            r.check(sent > 0 and total == sent,
                    f"every datagram sent was counted once ({total} of {sent})")

            # The status screen shows totals since start next to the (now idle) rates.
            st = subprocess.run([h.CONTROL, "-c", cfg, "status", "--json", "--interval", "0.3"],
                                capture_output=True, text=True)
            try:
                doc = json.loads(st.stdout)
                sink = next(s for s in doc["services"] if s["name"] == "sink-udp")
                port = doc["ports"][0]
            except (ValueError, KeyError, StopIteration, IndexError):
                doc, sink, port = {}, {}, {}
            r.check(sink.get("messages", {}).get("received") == sent
                    and sink.get("received_bytes") == 64 * sent
                    and sink.get("messages_per_second", {}).get("received") == 0
                    and port.get("rx_packets", 0) >= sent and port.get("rx_bytes", 0) > 64 * sent,
                    f"status --json: totals since start after the traffic ({sent} datagrams)",
                    json.dumps({"sink": sink, "port": port})[:600] + st.stderr)
            st = subprocess.run([h.CONTROL, "-c", cfg, "status", "--interval", "0.3"],
                                capture_output=True, text=True)
            row = [ln.split() for ln in st.stdout.splitlines() if ln.startswith("sink-udp ")]
            r.check(len(row) == 1 and row[0][2] == str(sent) and row[0][3] == str(64 * sent),
                    "status: the sink's row shows its messages and bytes since start",
                    st.stdout + st.stderr)

            # 5. The data plane crashes: wirespeed_up drops to 0; a restart is picked up.
            kill9(dp.proc)
            r.check(ctl.wait_for(lambda: ctl.value("wirespeed_up") == 0.0, 10),
                    "a killed data plane shows as wirespeed_up 0")
            dp = h.Dataplane(cfg, tmp)
            dp.start()
            r.check(ctl.wait_for(lambda: ctl.value("wirespeed_up") == 1.0, 10),
                    "a restarted data plane is picked up again")
            e = h.sh(f"/usr/bin/python3 {echo_path} {DP_IP} 100", ns=peer.ns, timeout=60)
            r.check(int(e.stdout.strip() or 0) == 100, "the restarted data plane answers", e.stdout)
            r.check(ctl.wait_for(lambda: ctl.value("wirespeed_service_messages_total",
                                                   service="echo-udp", direction="received") == 100, 5),
                    "the new lifetime's counters start from zero and count exactly")

            # 6. A clean stop.
            rc = dp.stop()
            r.check(rc == 0, "the data plane stops cleanly on SIGINT", str(rc))
            r.check(ctl.wait_for(lambda: ctl.value("wirespeed_up") == 0.0, 10),
                    "after a clean stop wirespeed_up is 0")
            r.check(ctl.proc.poll() is None, "the control process outlived both data planes")
        except Exception as ex:  # noqa: BLE001
            r.check(False, "test ran to the end", repr(ex))
        finally:
            if prom:
                prom.stop()
            ctl.__exit__(None, None, None)
            dp.stop()
            if r.failed:
                h.print_log_tails(tmp)
            shutil.rmtree(tmp, ignore_errors=True)
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
