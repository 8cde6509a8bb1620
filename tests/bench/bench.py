#!/usr/bin/python3
"""wirespeed system benchmarks: the data plane against the Linux kernel, same machine, same run.

Programs, not tests. Each workload prints one Markdown table (our figure, the peer's figure,
the ratio), writes it and the raw samples as JSON under tests/bench/results/, and replaces its
section in docs/benchmarks.md together with the machine description and the command that
reproduces it. Run through tests/bench/run.sh (as root):

    tests/bench/run.sh [--quick] [udp] [tcp-bulk] [tcp-rtt] [sweep] [scrape]

Every measurement is bounded in time (≤ 10 s, every child has a timeout) and everything the
benchmark creates (namespaces and veths named wsb*, the memif socket /run/wirespeed-bench*.sock,
processes) is removed on exit, on error and on SIGINT/SIGTERM. Traffic goes only to loopback
and to the namespaces created here.
"""
import argparse
import atexit
import datetime
import itertools
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import harness  # noqa: E402
import prom  # noqa: E402  (tests/support, on the path harness sets)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
BUILD = os.environ.get("WS_BUILD_DIR", os.path.join(ROOT, "build-bench"))
DATAPLANE = os.path.join(BUILD, "dataplane", "wirespeed-dataplane")
CONTROL = os.path.join(BUILD, "control", "wirespeed-control")
WSPERF = os.path.join(BUILD, "tools", "wsperf", "wsperf")
RESULTS = os.path.join(HERE, "results")
DOC = os.path.join(ROOT, "docs", "benchmarks.md")
# Overridable so that two benchmark runs on one machine (several engineers) do not share the
# memif socket or the control ports; the defaults are what docs/benchmarks.md describes.
MEMIF_SOCK = os.environ.get("WS_BENCH_MEMIF_SOCK", "/run/wirespeed-bench.sock")
METRICS_PORT = int(os.environ.get("WS_BENCH_METRICS_PORT", "9591"))

WORKLOADS = ["micro", "udp", "tcp-bulk", "tcp-rtt", "sweep", "scrape", "mtu", "backoff", "ipv6"]

# ---------------------------------------------------------------------------------------
# Cleanup: every process and network object is registered when created and removed at exit.

_procs = []
_netns = []
_links = []
_files = []


def _cleanup():
    for p in list(_procs):
        if p.poll() is None:
            try:
                p.send_signal(signal.SIGINT)
                p.wait(5)
            except Exception:
                pass
        if p.poll() is None:
            p.kill()
            try:
                p.wait(5)
            except Exception:
                pass
    _procs.clear()
    for ns in list(_netns):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    _netns.clear()
    for link in list(_links):
        subprocess.run(["ip", "link", "del", link], capture_output=True)
    _links.clear()
    for f in list(_files):
        try:
            os.unlink(f)
        except OSError:
            pass


def _on_signal(signum, _frame):
    _cleanup()
    sys.exit(128 + signum)


atexit.register(_cleanup)
signal.signal(signal.SIGTERM, _on_signal)
signal.signal(signal.SIGINT, _on_signal)


def sh(cmd, ns=None, check=True, timeout=30):
    """The integration harness' sh(): a program that is not installed raises even with
    check=False."""
    return harness.sh(cmd, check=check, ns=ns, timeout=timeout)


def spawn(argv, log_path, ns=None):
    if ns:
        argv = ["ip", "netns", "exec", ns] + argv
    log = open(log_path, "w")
    p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    p.log_path = log_path
    _procs.append(p)
    return p


def stop(p, timeout=8):
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    if p in _procs:
        _procs.remove(p)
    return p.returncode


def wait_exit(p, timeout):
    """Waits for a client that ends by itself; kills it at the deadline. Returns rc or None."""
    try:
        rc = p.wait(timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        rc = None
    if p in _procs:
        _procs.remove(p)
    return rc


def tail(path, n=15):
    try:
        with open(path) as f:
            return "".join([l for l in f.readlines() if not l.startswith("TELEMETRY:")][-n:])
    except OSError:
        return ""


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


class Failure(Exception):
    """A measurement that did not produce a figure; the message goes into the table notes."""

    def __init__(self, msg):
        lines = [l.strip() for l in str(msg).splitlines()
                 if l.strip() and not l.startswith("TELEMETRY:")]
        super().__init__(" | ".join(lines))


# ---------------------------------------------------------------------------------------
# Network objects


def make_ns(name):
    sh(f"ip netns del {name}", check=False)
    sh(f"ip netns add {name}")
    _netns.append(name)
    sh("ip link set lo up", ns=name)
    return name


def veth_pair(a, b, ns_a, ns_b, ip_a, ip_b, mtu):
    """veth a<->b; a goes to ns_a (None: root), b to ns_b; addresses /24 (None: none)."""
    sh(f"ip link del {a}", check=False)
    sh(f"ip link add {a} mtu {mtu} type veth peer name {b} mtu {mtu}")
    _links.append(a)
    for dev, ns, ip in ((a, ns_a, ip_a), (b, ns_b, ip_b)):
        if ns:
            sh(f"ip link set {dev} netns {ns}")
        sh(f"sysctl -qw net.ipv6.conf.{dev}.disable_ipv6=1", ns=ns, check=False)
        if ip:
            sh(f"ip addr add {ip}/24 dev {dev}", ns=ns)
        sh(f"ip link set {dev} up", ns=ns)


def kernel_drops(dev):
    """RX drops the kernel counted on a root-namespace device, and its backlog drops."""
    out = {}
    try:
        j = json.loads(sh(f"ip -s -j link show dev {dev}").stdout)
        out["veth_rx_dropped"] = j[0]["stats64"]["rx"]["dropped"]
        out["veth_rx_packets"] = j[0]["stats64"]["rx"]["packets"]
    except (RuntimeError, ValueError, KeyError, IndexError):
        pass
    try:
        with open("/proc/net/softnet_stat") as f:
            out["softnet_dropped"] = sum(int(l.split()[1], 16) for l in f if l.strip())
    except (OSError, ValueError, IndexError):
        pass
    return out


def set_offloads(dev, ns, on):
    v = "on" if on else "off"
    sh(f"ethtool -K {dev} tso {v} gso {v} gro {v}", ns=ns, check=False)


class KernelPair:
    """Two namespaces wsb-ka / wsb-kb joined by the veth wsb-ka0 / wsb-kb0 (10.98.0.1/.2)."""

    A, B = "wsb-ka", "wsb-kb"
    IP_A, IP_B = "10.98.0.1", "10.98.0.2"

    def __init__(self, mtu=1500, offloads=True):
        self.mtu = mtu
        self.offloads = offloads

    def __enter__(self):
        make_ns(self.A)
        make_ns(self.B)
        veth_pair("wsb-ka0", "wsb-kb0", self.A, self.B, self.IP_A, self.IP_B, self.mtu)
        set_offloads("wsb-ka0", self.A, self.offloads)
        set_offloads("wsb-kb0", self.B, self.offloads)
        return self

    def __exit__(self, *exc):
        for ns in (self.A, self.B):
            sh(f"ip netns del {ns}", check=False)
            if ns in _netns:
                _netns.remove(ns)
        if "wsb-ka0" in _links:
            _links.remove("wsb-ka0")


# ---------------------------------------------------------------------------------------
# Data plane configs


# Lines under every port of the data planes dp_config writes, unless the caller gives its
# own: an A/B sets it per variant (bench_http_memif_ab.py's `+l4off`).
PORT_EXTRA = ""


def dp_config(path, *, prefix, lcore, device, address, mtu, services, metrics_port,
              hugepages=False, extra="", mac=None, dp_extra="", port_extra=""):
    svc = "\n".join(f"  - {s}" for s in services)
    port_extra = port_extra or PORT_EXTRA
    # One address as `address:`; a list (both families) as `addresses:`.
    addr = (f"address: {address}" if isinstance(address, str)
            else "addresses: [" + ", ".join(f'"{a}"' for a in address) + "]")
    text = f"""version: 1
dataplane:
  lcores: [{lcore}]
  idle: poll
  file_prefix: {prefix}
  hugepages: {"true" if hugepages else "false"}
  memory_mb: 512
{dp_extra}
ports:
  - name: p0
    device: "{device}"
    mtu: {mtu}
    {addr}
{f'    mac: "{mac}"' if mac else ""}
{port_extra}
services:
{svc}
{extra}
control:
  metrics_listen: 127.0.0.1:{metrics_port}
"""
    with open(path, "w") as f:
        f.write(text)
    return path


def start_dataplane(cfg, log_path, timeout=25, exe=None):
    p = spawn([exe or DATAPLANE, "-c", cfg], log_path)
    deadline = time.time() + timeout
    while time.time() < deadline:
        if p.poll() is not None:
            _procs.remove(p)
            raise Failure(f"data plane exited with {p.returncode} at start: {tail(log_path, 5)}")
        if "wirespeed: running" in tail(log_path, 200):
            return p
        time.sleep(0.1)
    stop(p)
    raise Failure(f"data plane did not start in {timeout}s: {tail(log_path, 5)}")


def scrape(port):
    """{(name, frozenset(labels)): value} from wirespeed-control serve."""
    return prom.scrape(port, timeout=3)


metric = prom.value


def start_control(cfg, log_path, port, timeout=10, exe=None):
    p = spawn([exe or CONTROL, "-c", cfg, "serve"], log_path)
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            scrape(port)
            return p
        except OSError:
            time.sleep(0.1)
    stop(p)
    raise Failure(f"wirespeed-control serve did not answer: {tail(log_path, 5)}")


# ---------------------------------------------------------------------------------------
# Statistics and tables


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def spread(xs):
    """Relative spread (max-min)/median of the samples, in percent."""
    xs = [x for x in xs if x is not None]
    if len(xs) < 2:
        return None
    m = statistics.median(xs)
    return 100.0 * (max(xs) - min(xs)) / m if m else None


def fmt(v, unit=""):
    if v is None:
        return "—"
    if isinstance(v, str):
        return v
    a = abs(v)
    if a >= 1e9:
        s = f"{v / 1e9:.2f} G"
    elif a >= 1e6:
        s = f"{v / 1e6:.2f} M"
    elif a >= 1e4:
        s = f"{v / 1e3:.1f} k"
    elif a >= 100:
        s = f"{v:.0f} "
    elif a >= 10:
        s = f"{v:.1f} "
    else:
        s = f"{v:.2f} "
    return (s + unit).strip()


def fmt_ms(samples, unit="", scale=1.0):
    """median ± spread% of samples (None for failed runs)."""
    good = [x * scale for x in samples if x is not None]
    if not good:
        return "FAIL"
    m = statistics.median(good)
    sp = spread(good)
    s = fmt(m, unit)
    if sp is not None:
        s += f" ±{sp:.0f}%"
    if len(good) < len(samples):
        s += f" ({len(samples) - len(good)}/{len(samples)} failed)"
    return s


def ratio(ours, theirs, lower_is_better=False):
    o = med(ours) if isinstance(ours, list) else ours
    t = med(theirs) if isinstance(theirs, list) else theirs
    if not o or not t:
        return "—"
    r = t / o if lower_is_better else o / t
    return f"{r:.2f}×"


def table(headers, rows):
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join(" --- " for _ in headers) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(out)


class Report:
    def __init__(self, name, title, command):
        self.name = name
        self.title = title
        self.command = command
        self.tables = []
        self.notes = []
        self.data = {}
        self.records = []  # docs/results records, written unless --no-doc

    def add_table(self, caption, headers, rows):
        self.tables.append((caption, table(headers, rows)))

    def note(self, text):
        self.notes.append(text)

    def markdown(self, machine):
        out = [f"## {self.title}", "",
               f"Measured {datetime.datetime.utcnow().strftime('%Y-%m-%d %H:%M UTC')} on {machine}. "
               f"Reproduce with `{self.command}`.", ""]
        for caption, t in self.tables:
            if caption:
                out += [caption, ""]
            out += [t, ""]
        if self.notes:
            out += ["Notes:", ""] + [f"- {n}" for n in self.notes] + [""]
        return "\n".join(out)


def machine_description():
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
            mem = f", {kb / 1024 / 1024:.0f} GiB RAM"
    except (OSError, ValueError):
        pass
    return (f"{cpu}, {os.cpu_count()} CPUs{mem}, Linux {platform.release()}, no NIC "
            f"(memif/veth/af_packet only), shared with other work (expect noise)")


def update_doc(report, machine):
    section = report.markdown(machine)
    begin = f"<!-- bench:{report.name}:begin -->"
    end = f"<!-- bench:{report.name}:end -->"
    block = f"{begin}\n{section}\n{end}"
    try:
        with open(DOC) as f:
            doc = f.read()
    except OSError:
        doc = "# Benchmarks\n"
    if begin in doc and end in doc:
        pre, rest = doc.split(begin, 1)
        _, post = rest.split(end, 1)
        doc = pre + block + post
    else:
        doc = doc.rstrip("\n") + "\n\n" + block + "\n"
    with open(DOC, "w") as f:
        f.write(doc)


# ---------------------------------------------------------------------------------------
# Clients


def wsperf(args, ns, log, timeout):
    """Runs a wsperf client to completion; returns its JSON report or raises Failure."""
    rep = log.replace(".log", ".json")
    if os.path.exists(rep):
        os.unlink(rep)
    p = spawn([WSPERF] + args + ["--report", rep, "--quiet"], log, ns=ns)
    rc = wait_exit(p, timeout)
    r = read_json(rep)
    if rc != 0 or r is None:
        raise Failure(f"wsperf {' '.join(args[:1])} rc={rc}: {tail(log, 3).strip()}")
    return r


class Memif:
    """Two data planes over net_memif: a server process (echo :7 and sink :9 over TCP, or
    `server_services`) on lcore 0 and short-lived client processes on lcore 1 that run one source/ping and exit.
    link="afpacket": the two processes use the two ends of a root-namespace veth pair
    (wsb-s2s-a / wsb-s2s-b) through af_packet instead (used where memif cannot take the MTU).
    dual=True: both processes also get an IPv6 address (SERVER_IP6, CLIENT_IP6), with duplicate
    address detection off so that both families are usable as soon as the process runs."""

    SERVER_IP, CLIENT_IP = "10.96.0.1", "10.96.0.2"
    SERVER_IP6, CLIENT_IP6 = "fd00:96::1", "fd00:96::2"

    def __init__(self, tmp, mtu, tag, metrics_port=None, hugepages=False, tcp_extra="",
                 link="memif", counters=True, dp_extra="", port_extra="", server_services=None,
                 dual=False, server_build=None):
        metrics_port = METRICS_PORT if metrics_port is None else metrics_port
        self.dual = dual
        # Another build's data plane and control process for the server (an A/B against a
        # baseline); the clients always run this build.
        self.server_exe = server_build and os.path.join(server_build, "dataplane", "wirespeed-dataplane")
        self.server_ctl = server_build and os.path.join(server_build, "control", "wirespeed-control")
        if dual:
            tcp_extra = (tcp_extra + "\n" if tcp_extra else "") + "ipv6:\n  dad_transmits: 0"
        self.server_services = server_services or [
            "{ name: echo, kind: echo, protocol: tcp, port: 7 }",
            "{ name: sink, kind: sink, protocol: tcp, port: 9 }",
            "{ name: echo-udp, kind: echo, protocol: udp, port: 7 }",
            "{ name: sink-udp, kind: sink, protocol: udp, port: 9 }"]
        self.dp_extra = dp_extra  # lines under dataplane: / under the port (the mtu workload)
        self.port_extra = port_extra
        self.link = link
        self.counters = counters
        self.ctl_server = self.ctl_client = None
        self.tmp = tmp
        self.mtu = mtu
        self.tag = tag
        self.metrics_port = metrics_port
        self.hugepages = hugepages
        self.tcp_extra = tcp_extra
        self.server = None
        self.n = 0

    def device(self, role):
        if self.link == "afpacket":
            iface = "wsb-s2s-a" if role == "server" else "wsb-s2s-b"
            return f"net_af_packet0,iface={iface},blocksz=20480,framesz=10240,qpairs=1"
        return f"net_memif0,role={role},socket={MEMIF_SOCK},id=0"

    def addresses(self, role):
        v4 = f"{self.SERVER_IP if role == 'server' else self.CLIENT_IP}/24"
        if not self.dual:
            return v4
        return [v4, f"{self.SERVER_IP6 if role == 'server' else self.CLIENT_IP6}/64"]

    def __enter__(self):
        if self.link == "afpacket":
            veth_pair("wsb-s2s-a", "wsb-s2s-b", None, None, None, None, self.mtu)
        if os.path.exists(MEMIF_SOCK):
            os.unlink(MEMIF_SOCK)
        _files.append(MEMIF_SOCK)
        self.cfg = dp_config(
            os.path.join(self.tmp, f"{self.tag}-server.yaml"), prefix=f"wsb-srv-{self.tag}",
            lcore=0, device=self.device("server"), address=self.addresses("server"), mtu=self.mtu,
            services=self.server_services,
            metrics_port=self.metrics_port, hugepages=self.hugepages, extra=self.tcp_extra,
            mac="02:00:00:00:96:01", dp_extra=self.dp_extra, port_extra=self.port_extra)
        self.log = os.path.join(self.tmp, f"{self.tag}-server.log")
        self.server = start_dataplane(self.cfg, self.log, exe=self.server_exe)
        if self.counters:
            # Two control processes read the counters of the server and of whichever client
            # runs (the client's stats segment goes when it exits: it is read just before).
            self.client_cfg = dp_config(
                os.path.join(self.tmp, f"{self.tag}-client-ctl.yaml"), prefix=f"wsb-cli-{self.tag}",
                lcore=1, device=self.device("client"), address=self.addresses("client"), mtu=self.mtu,
                services=["{ name: x, kind: sink, protocol: tcp, port: 9 }"],
                metrics_port=self.metrics_port + 1)
            self.ctl_server = start_control(self.cfg, os.path.join(self.tmp, f"{self.tag}-ctl-s.log"),
                                            self.metrics_port, exe=self.server_ctl)
            self.ctl_client = start_control(self.client_cfg,
                                            os.path.join(self.tmp, f"{self.tag}-ctl-c.log"),
                                            self.metrics_port + 1)
        return self

    def counters_of(self, port):
        try:
            m = scrape(port)
        except OSError:
            return {}
        out = {k[0].replace("wirespeed_", "") + ("" if not k[1] else "{" + ",".join(
            f"{a}={b}" for a, b in sorted(k[1])) + "}"): v for k, v in m.items()
            if (k[0].startswith("wirespeed_tcp_") and k[0].endswith("_total"))
            or k[0] == "wirespeed_drops_total"}
        return out

    def __exit__(self, *exc):
        for c in (self.ctl_server, self.ctl_client):
            if c:
                stop(c)
        if self.server:
            stop(self.server)
        if self.link == "afpacket":
            sh("ip link del wsb-s2s-a", check=False)
            if "wsb-s2s-a" in _links:
                _links.remove("wsb-s2s-a")

    def client(self, service, timeout):
        """Runs one client service ("{ kind: ..., ... }"); returns its report. When the server
        process dies (a crash is a finding: it is recorded in CRASHES with the kernel's line),
        the server is restarted and the measurement tried once more. A safety net: the memif
        disconnect crash that made this necessary is fixed (dataplane/unmap_guard.hpp), so a
        crash recorded here is a new bug."""
        try:
            return self._client_once(service, timeout)
        except ServerDied as e:
            CRASHES.append(str(e))
            print(f"  server crashed: {e}", flush=True)
            self.log = os.path.join(self.tmp, f"{self.tag}-server-restart{len(CRASHES)}.log")
            self.server = start_dataplane(self.cfg, self.log, exe=self.server_exe)
            try:
                return self._client_once(service, timeout)
            except ServerDied as e2:
                CRASHES.append(str(e2))
                self.log = os.path.join(self.tmp, f"{self.tag}-server-restart{len(CRASHES)}b.log")
                self.server = start_dataplane(self.cfg, self.log, exe=self.server_exe)
                raise Failure(f"server crashed twice in a row: {e2}")

    def _client_once(self, service, timeout):
        self.n += 1
        name = f"{self.tag}-client-{self.n}"
        rep = os.path.join(self.tmp, f"{name}.json")
        svc = service.rstrip().rstrip("}") + f", report: {rep} }}"
        cfg = dp_config(os.path.join(self.tmp, f"{name}.yaml"), prefix=f"wsb-cli-{self.tag}",
                        lcore=1, device=self.device("client"), address=self.addresses("client"),
                        mtu=self.mtu, services=[svc], metrics_port=self.metrics_port + 1,
                        hugepages=self.hugepages, extra=self.tcp_extra, mac="02:00:00:00:96:02",
                        dp_extra=self.dp_extra, port_extra=self.port_extra)
        log = os.path.join(self.tmp, f"{name}.log")
        before = self.counters_of(self.metrics_port) if self.counters else {}
        t0 = time.time()
        p = spawn([DATAPLANE, "-c", cfg], log)
        client_counters = {}
        dm = re.search(r"duration_s: (\d+)", service)
        if self.counters and dm:
            # The client's counters, read shortly before it ends (start-up takes ~1 s).
            end = t0 + 0.8 + int(dm.group(1)) - 0.3
            while time.time() < end and p.poll() is None:
                time.sleep(0.05)
            client_counters = {k: v for k, v in self.counters_of(self.metrics_port + 1).items() if v}
        rc = wait_exit(p, timeout)
        r = read_json(rep)
        if self.counters:
            time.sleep(0.15)
            after = self.counters_of(self.metrics_port)
            server_delta = {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0)}
        else:
            server_delta = {}
        if self.server.poll() is not None:
            pid, code = self.server.pid, self.server.returncode
            if self.server in _procs:
                _procs.remove(self.server)
            kern = [l for l in sh("dmesg", check=False).stdout.splitlines()
                    if f"[{pid}]" in l and "segfault" in l]
            raise ServerDied(f"the server data plane (pid {pid}, exit {code}) died while client "
                             f"`{service.strip()}` ran (client exit {rc}); server log {self.log}; "
                             f"kernel: {kern[-1].strip() if kern else 'no segfault line'}")
        if rc is None:
            raise Failure(f"client did not finish within {timeout}s (killed); log {log}: "
                          f"{tail(log, 3).strip()}")
        if rc != 0 or r is None:
            raise Failure(f"client exit {rc}, report {'missing' if r is None else 'present'}; "
                          f"log {log}: {tail(log, 3).strip()}")
        r.update(steady_state(log, r))
        r["client_counters"] = client_counters
        r["server_counters"] = server_delta
        return r


class ServerDied(Exception):
    pass


CRASHES = []


PROGRESS = re.compile(r"^\S+: (done: )?([\d.]+) s, (\d+) messages")


def steady_state(log, report):
    """Rate over the second half of a client run, from its progress lines (the first
    seconds of a wirespeed connection are a slow ramp; see docs/benchmarks.md)."""
    pts = []
    try:
        with open(log) as f:
            for line in f:
                m = PROGRESS.match(line.strip())
                if m:
                    pts.append((float(m.group(2)), int(m.group(3))))
    except OSError:
        return {}
    if len(pts) < 2:
        return {}
    t_end, n_end = pts[-1]
    mid = next(((t, n) for t, n in pts if t >= t_end / 2), pts[0])
    if t_end - mid[0] < 0.5:
        return {}
    mps = (n_end - mid[1]) / (t_end - mid[0])
    size = report.get("message_size") or 0
    return {"steady_messages_per_second": mps, "steady_bits_per_second": mps * size * 8,
            "steady_window_s": [mid[0], t_end], "progress": pts}


def repeat(fn, reps, errors):
    """Runs fn() reps times; a Failure becomes None and its message is kept (once)."""
    out = []
    for _ in range(reps):
        try:
            out.append(fn())
        except Failure as e:
            msg = str(e).replace("\n", " ")[:400]
            if msg not in errors:
                errors.append(msg)
            out.append(None)
    return out


def pick(samples, f):
    return [None if s is None else f(s) for s in samples]


# The points every latency table reports, as (label, key of a report's rtt_us).
LATENCY_POINTS = (("p50", "p50"), ("p99", "p99"), ("p99.9", "p999"), ("max", "max"))


def rtt(sample, key):
    """A client report's (wirespeed's or wsperf's) round-trip point `key`, in µs."""
    return sample["rtt_us"].get(key)


def latency_rows(label, ours, peers):
    """One row per latency point, `label` formatted with the point's name: our median, then
    each peer's median and the ratio (peer ÷ ours). `ours` are rtt_us reports; each peer is
    (samples, get) with get(sample, key) the point or None."""
    rows = []
    for name, key in LATENCY_POINTS:
        mine = pick(ours, lambda s, k=key: rtt(s, k))
        row = [label.format(name), fmt_ms(mine, "µs")]
        for samples, get in peers:
            theirs = pick(samples, lambda s, k=key, g=get: g(s, k))
            row += [fmt_ms(theirs, "µs"), ratio(mine, theirs, lower_is_better=True)]
        rows.append(row)
    return rows


def gbps(r):
    return r["bits_per_second"] / 1e9


# ---------------------------------------------------------------------------------------
# Workload 1: UDP through the data plane (af_packet) vs the kernel on the same veth


def bench_udp(ctx):
    rep = Report("udp", "1. UDP echo and 64-byte sink: data plane (af_packet) vs kernel, same veth",
                 ctx.command("udp"))
    reps, dur = ctx.reps, ctx.dur
    tmp = ctx.tmp
    ns, dp_if, ns_if = "wsb-u", "wsb-u-dp", "wsb-u-pr"
    dp_ip, ns_ip = "10.97.0.1", "10.97.0.2"
    make_ns(ns)
    veth_pair(dp_if, ns_if, None, ns, None, ns_ip, 1500)
    # The kernel leaves UDP checksums partial on veth; af_packet would pass them unfinished.
    sh(f"ethtool -K {ns_if} tx off", ns=ns)
    errors = []
    count = ctx.ping_count
    ping_args = ["ping", "--protocol", "udp", "--target", f"{dp_ip}:7", "--message-size", "64",
                 "--count", str(count), "--duration", str(dur), "--cpu", "0"]
    src_args = ["source", "--protocol", "udp", "--target", f"{dp_ip}:9", "--message-size", "64",
                "--duration", str(dur), "--cpu", "0"]

    # --- the data plane on the root end (af_packet), lcore 1
    port = 9581
    cfg = dp_config(os.path.join(tmp, "udp-dp.yaml"), prefix="wsb-udp", lcore=1,
                    device=f"net_af_packet0,iface={dp_if},blocksz=20480,framesz=10240,qpairs=1",
                    address=f"{dp_ip}/24", mtu=1500,
                    services=["{ name: echo-udp, kind: echo, protocol: udp, port: 7 }",
                              "{ name: sink-udp, kind: sink, protocol: udp, port: 9 }"],
                    metrics_port=port)
    ws_ping, ws_sink, ws_sent = [None] * reps, [None] * reps, [None] * reps
    try:
        dp = start_dataplane(cfg, os.path.join(tmp, "udp-dp.log"))
        ctl = start_control(cfg, os.path.join(tmp, "udp-ctl.log"), port)
        sh(f"ping -c 1 -W 2 {dp_ip}", ns=ns, check=False)  # resolve ARP first
        ws_ping = repeat(lambda: wsperf(ping_args, ns, os.path.join(tmp, "udp-ws-ping.log"),
                                        dur + 5), reps, errors)

        def counts():
            m = scrape(port)
            c = {"sink": metric(m, "wirespeed_service_messages_total", service="sink-udp",
                                direction="received"),
                 "port_rx": metric(m, "wirespeed_port_receive_packets_total", port="p0"),
                 "port_missed": metric(m, "wirespeed_port_receive_missed_packets_total", port="p0")}
            for (name, labels), v in m.items():
                if name == "wirespeed_drops_total":
                    c["drop:" + dict(labels).get("reason", "?")] = v
            return c

        def dp_sink():
            before = counts()
            before.update(kernel_drops(dp_if))
            r = wsperf(src_args, ns, os.path.join(tmp, "udp-ws-src.log"), dur + 5)
            time.sleep(0.4)  # stats are published every 100 ms
            after = counts()
            after.update(kernel_drops(dp_if))
            delta = {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0)}
            return {"received_pps": delta.get("sink", 0) / r["seconds"],
                    "sent_pps": r["messages_per_second"], "sent": r["messages"], "counters": delta}

        s = repeat(dp_sink, reps, errors)
        rep.data["dp_sink_runs"] = s
        for x in s:
            if x:
                c = x["counters"]
                rep.note(f"Data-plane sink run: wsperf sent {x['sent']:.0f} datagrams; the kernel counted "
                         f"{c.get('veth_rx_packets', 0):.0f} received and "
                         f"{c.get('veth_rx_dropped', 0):.0f} dropped on `{dp_if}` and "
                         f"{c.get('softnet_dropped', 0):.0f} backlog drops (softnet_stat); the port received "
                         f"{c.get('port_rx', 0):.0f}, reported {c.get('port_missed', 0):.0f} missed "
                         f"(af_packet ring drops); the sink counted {c.get('sink', 0):.0f}; stack drops: "
                         + (", ".join(f"{k[5:]} {v:.0f}" for k, v in c.items() if k.startswith("drop:"))
                            or "none") + ".")
        ws_sink = pick(s, lambda x: x["received_pps"])
        ws_sent = pick(s, lambda x: x["sent_pps"])
        if dp.poll() is not None:
            errors.append(f"data plane exited during the run: {tail(dp.log_path, 4)}")
        stop(ctl)
        stop(dp)
        rep.data["dataplane_log_tail"] = tail(dp.log_path, 10)
    except Failure as e:
        errors.append(str(e))

    # --- the kernel on the same veth: the root end gets the address
    sh(f"ip addr add {dp_ip}/24 dev {dp_if}")
    k_ping, k_sink, k_sent = [None] * reps, [None] * reps, [None] * reps
    try:
        echo = spawn([WSPERF, "echo", "--protocol", "udp", "--listen", f"{dp_ip}:7", "--cpu", "1",
                      "--quiet"], os.path.join(tmp, "udp-k-echo.log"))
        time.sleep(0.3)
        k_ping = repeat(lambda: wsperf(ping_args, ns, os.path.join(tmp, "udp-k-ping.log"),
                                       dur + 5), reps, errors)
        stop(echo)

        def k_sink_run():
            sj = os.path.join(tmp, "udp-k-sink.json")
            if os.path.exists(sj):
                os.unlink(sj)
            sink = spawn([WSPERF, "sink", "--protocol", "udp", "--listen", f"{dp_ip}:9", "--cpu", "1",
                          "--quiet", "--report", sj], os.path.join(tmp, "udp-k-sink.log"))
            time.sleep(0.3)
            r = wsperf(src_args, ns, os.path.join(tmp, "udp-k-src.log"), dur + 5)
            time.sleep(0.2)
            stop(sink)
            s = read_json(sj)
            if s is None:
                raise Failure("wsperf sink wrote no report")
            return {"received_pps": s["messages"] / r["seconds"], "sent_pps": r["messages_per_second"]}

        s = repeat(k_sink_run, reps, errors)
        k_sink = pick(s, lambda x: x["received_pps"])
        k_sent = pick(s, lambda x: x["sent_pps"])
    finally:
        sh(f"ip addr del {dp_ip}/24 dev {dp_if}", check=False)

    rows = []
    mps = lambda s: s["messages_per_second"]
    rows.append(["UDP echo round trips/s (64 B, 1 outstanding)", fmt_ms(pick(ws_ping, mps), "/s"),
                 fmt_ms(pick(k_ping, mps), "/s"), ratio(pick(ws_ping, mps), pick(k_ping, mps))])
    rows += latency_rows("UDP echo RTT {}", ws_ping, [(k_ping, rtt)])
    rows.append(["64 B datagrams received by the sink /s", fmt_ms(ws_sink, "pps"), fmt_ms(k_sink, "pps"),
                 ratio(ws_sink, k_sink)])
    rows.append(["  (offered by wsperf source /s)", fmt_ms(ws_sent, "pps"), fmt_ms(k_sent, "pps"), ""])
    rep.add_table("", ["figure", "wirespeed (af_packet, lcore 1)", "Linux kernel (wsperf, cpu 1)",
                       "ratio (>1: wirespeed better)"], rows)
    rep.note(f"Client: wsperf in namespace `{ns}` pinned to cpu 0 on veth `{ns_if}` "
             f"(tx checksum offload off); server on the root end `{dp_if}`: first the data plane "
             "(af_packet PMD, `idle: poll`), then, with the data plane stopped and the address moved "
             "to the root end, `wsperf echo`/`wsperf sink` on kernel sockets.")
    rep.note(f"Each figure: median of {reps} runs of ≤ {dur} s (ping: ≤ {count} round trips); ±: "
             "(max−min)/median. Sink rate = datagrams the server counted "
             "(`wirespeed_service_messages_total{direction=\"received\"}` / wsperf sink report) ÷ "
             "the source's run time.")
    rep.note("Both servers sit behind the same veth and the same sending kernel, so the sink figure "
             "is bounded by what one core of wsperf+veth can offer; af_packet copies each frame "
             "through a TPACKET ring, which is what this table measures, not a NIC.")
    for e in errors:
        rep.note(f"FAILURE: {e}")
    rep.data.update({"ws_ping": ws_ping, "k_ping": k_ping, "ws_sink_pps": ws_sink, "k_sink_pps": k_sink,
                     "ws_offered_pps": ws_sent, "k_offered_pps": k_sent, "errors": errors})
    sh(f"ip netns del {ns}", check=False)
    _netns.remove(ns)
    sh(f"ip link del {dp_if}", check=False)
    _links.remove(dp_if)
    return rep


# ---------------------------------------------------------------------------------------
# Kernel-side measurements (two namespaces over veth)


def kernel_source_sink(ctx, kp, size, tag, errors, connections=1, reps=None, extra=()):

    def run():
        sink = spawn([WSPERF, "sink", "--listen", f"{kp.IP_B}:9", "--cpu", "1", "--quiet"],
                     os.path.join(ctx.tmp, f"k-sink-{tag}.log"), ns=kp.B)
        time.sleep(0.2)
        try:
            return wsperf(["source", "--target", f"{kp.IP_B}:9", "--message-size", str(size),
                           "--connections", str(connections), "--duration", str(ctx.k_dur), "--cpu", "0",
                           *extra],
                          kp.A, os.path.join(ctx.tmp, f"k-src-{tag}.log"), ctx.k_dur + 8)
        finally:
            stop(sink)

    return repeat(run, ctx.reps if reps is None else reps, errors)


_PAIRS = itertools.count()


def paired_source_runs(ctx, m, kp, size, errors, reps=None):
    """wirespeed source -> sink over the memif pair m and the twin's over the veth pair kp,
    alternating, ctx.reps pairs. This machine's speed drifts by up to 1.5x within minutes
    (both stacks move together), so a ratio is only meaningful between runs made side by
    side. The memif server busy-polls, so it is stopped (SIGSTOP) while the kernel runs."""
    ws, k = [], []
    for i in range(ctx.reps if reps is None else reps):
        ws += repeat(lambda: m.client(
            f"{{ name: load, kind: source, protocol: tcp, target: \"{Memif.SERVER_IP}:9\", "
            f"message_size: {size}, connections: 1, duration_s: {ctx.ws_dur} }}",
            ctx.ws_dur + 15), 1, errors)
        os.kill(m.server.pid, signal.SIGSTOP)
        try:
            k += kernel_source_sink(ctx, kp, size, f"{kp.mtu}-{size}-pair{next(_PAIRS)}", errors,
                                    reps=1)
        finally:
            os.kill(m.server.pid, signal.SIGCONT)
    return ws, k


def pair_ratio(ws, k, fw, fk):
    """Median of the ratios of side-by-side runs (paired_source_runs), with their spread."""
    rs = [fw(a) / fk(b) for a, b in zip(ws, k)
          if a is not None and b is not None and fw(a) and fk(b)]
    if not rs:
        return "—"
    out = f"{statistics.median(rs):.2f}×"
    if len(rs) > 1:
        out += f" ({min(rs):.2f}–{max(rs):.2f})"
    return out


def kernel_ping_echo(ctx, kp, size, tag, errors, dur=None):
    dur = dur or ctx.dur
    def run():
        echo = spawn([WSPERF, "echo", "--listen", f"{kp.IP_B}:7", "--cpu", "1", "--quiet"],
                     os.path.join(ctx.tmp, f"k-echo-{tag}.log"), ns=kp.B)
        time.sleep(0.2)
        try:
            return wsperf(["ping", "--target", f"{kp.IP_B}:7", "--message-size", str(size),
                           "--duration", str(dur), "--cpu", "0"],
                          kp.A, os.path.join(ctx.tmp, f"k-ping-{tag}.log"), dur + 8)
        finally:
            stop(echo)

    return repeat(run, ctx.reps, errors)


def sockperf_pp(ctx, kp, errors):
    """sockperf ping-pong, 64 B over TCP, full round-trip times; returns [{p50,p99,p999,max}]"""

    def run():
        srv = spawn(["taskset", "-c", "1", "sockperf", "sr", "--tcp", "-i", kp.IP_B, "-p", "11111"],
                    os.path.join(ctx.tmp, "sockperf-sr.log"), ns=kp.B)
        time.sleep(0.5)
        try:
            log = os.path.join(ctx.tmp, "sockperf-pp.log")
            p = spawn(["taskset", "-c", "0", "sockperf", "pp", "--tcp", "-i", kp.IP_B, "-p", "11111",
                       "-m", "64", "-t", str(ctx.dur), "--full-rtt"], log, ns=kp.A)
            rc = wait_exit(p, ctx.dur + 10)
            text = open(log).read()
            vals = {}
            for m in re.finditer(r"--->\s+percentile\s+([\d.]+)\s+=\s+([\d.]+)", text):
                vals[float(m.group(1))] = float(m.group(2))
            rate = re.search(r"Summary: Round trip is ([\d.]+) usec|RttTime=([\d.]+)", text)
            obs = re.search(r"SentMessages=(\d+);\s*ReceivedMessages=(\d+)", text)
            vt = re.search(r"\[Valid Duration\] RunTime=([\d.]+) sec; SentMessages=(\d+); ReceivedMessages=(\d+)", text)
            if rc != 0 or 50.0 not in vals:
                raise Failure(f"sockperf pp rc={rc}: {tail(log, 3).strip()}")
            top = re.search(r"--->\s+<MAX> observation\s+=\s+([\d.]+)", text)
            out = {"p50": vals[50.0], "p99": vals.get(99.0), "p999": vals.get(99.9),
                   "max": float(top.group(1)) if top else None, "text_tail": tail(log, 20)}
            if vt:
                out["round_trips_per_second"] = int(vt.group(3)) / float(vt.group(1))
            del rate, obs
            return out
        finally:
            stop(srv)

    return repeat(run, ctx.reps, errors)


# ---------------------------------------------------------------------------------------
# Workload 2: TCP bulk stack-to-stack over memif vs Linux over veth


def ws_source_runs(ctx, m, size, errors):
    """wirespeed source → sink runs over the pair m, cached per (link, MTU, size) so that the
    sweep and the bulk table share their 64 KiB and 1 MiB runs within one invocation."""
    key = ("ws-source", m.link, m.mtu, m.tcp_extra, size)
    if key not in ctx.cache:
        ctx.cache[key] = repeat(lambda: m.client(
            f"{{ name: load, kind: source, protocol: tcp, target: \"{Memif.SERVER_IP}:9\", "
            f"message_size: {size}, connections: 1, duration_s: {ctx.ws_dur} }}",
            ctx.ws_dur + 15), ctx.reps, errors)
    return ctx.cache[key]


def kernel_source_runs(ctx, mtu, offloads, size, errors):
    key = ("k-source", mtu, offloads, size)
    if key not in ctx.cache:
        with KernelPair(mtu, offloads=offloads) as kp:
            ctx.cache[key] = kernel_source_sink(ctx, kp, size, f"{mtu}-{size}-{offloads}", errors)
    return ctx.cache[key]


def steady_gbps(r):
    v = r.get("steady_bits_per_second")
    return None if v is None else v / 1e9


def steady_mps(r):
    return r.get("steady_messages_per_second")


def loss_summary(runs):
    """Median per run of the sender's drops at a full TX ring and its retransmitted segments."""
    good = [r for r in runs if r is not None and r.get("client_counters")]
    if not good:
        return "—"
    txq = med([r["client_counters"].get("drops_total{reason=tx_queue_full}", 0) for r in good])
    rtx = med([r["client_counters"].get("tcp_retransmitted_segments_total", 0) for r in good])
    return f"{txq:.0f} / {rtx:.0f}"


def two_ratios(w_whole, w_steady, k):
    return f"{ratio(w_whole, k)} / {ratio(w_steady, k)}"


def bench_tcp_bulk(ctx):
    rep = Report("tcp-bulk", "2. TCP bulk throughput, one core each: wirespeed stack-to-stack vs Linux over veth",
                 ctx.command("tcp-bulk"))
    errors = []
    sizes = [1048576, 65536]
    rows = []
    raw = {}
    for mtu in (1500, 9000):
        ws, link = {}, "memif"
        try:
            with Memif(ctx.tmp, mtu, f"bulk{mtu}") as m:
                for size in sizes:
                    ws[size] = ws_source_runs(ctx, m, size, errors)
        except Failure as e:
            errors.append(f"MTU {mtu} over memif: {e}")
            if mtu > 1500:
                # memif cannot take jumbo frames (DPDK 22.11's PMD caps frames at 1518 bytes):
                # try the same two processes over af_packet on a veth pair instead.
                link = "af_packet"
                try:
                    with Memif(ctx.tmp, mtu, f"bulk{mtu}af", link="afpacket") as m:
                        for size in sizes:
                            ws[size] = ws_source_runs(ctx, m, size, errors)
                except Failure as e2:
                    errors.append(f"MTU {mtu} over af_packet/veth: {e2}")
        for size in sizes:
            w = ws.get(size, [None])
            ww, wsd = pick(w, gbps), pick(w, steady_gbps)
            koff = pick(kernel_source_runs(ctx, mtu, False, size, errors), gbps)
            kon = pick(kernel_source_runs(ctx, mtu, True, size, errors), gbps)
            rows.append([f"{mtu}", f"{size // 1024} KiB", link, fmt_ms(ww, "Gbit/s"), fmt_ms(wsd, "Gbit/s"),
                         loss_summary(w), fmt_ms(koff, "Gbit/s"), two_ratios(ww, wsd, koff),
                         fmt_ms(kon, "Gbit/s"), two_ratios(ww, wsd, kon)])
            raw[f"{mtu}/{size}"] = {"link": link, "wirespeed": w,
                                    "kernel_offloads_off": ctx.cache.get(("k-source", mtu, False, size)),
                                    "kernel_offloads_on": ctx.cache.get(("k-source", mtu, True, size))}
    rep.add_table("", ["MTU", "message", "wirespeed link", "wirespeed, whole run",
                       "wirespeed, 2nd half of run", "sender tx_queue_full drops / retransmits",
                       "Linux veth, GSO/GRO/TSO off", "ratio whole / 2nd half",
                       "Linux veth, offloads on", "ratio whole / 2nd half"], rows)
    rep.note("wirespeed: `source` (1 connection, length32 framing) in one data-plane process on lcore 1 "
             "→ `sink` in another on lcore 0, joined by `net_memif` (`idle: poll`, `--no-huge`, defaults "
             "otherwise). Linux: `wsperf source --cpu 0` in namespace wsb-ka → `wsperf sink --cpu 1` in "
             "wsb-kb over a veth pair at the same MTU; offloads toggled with `ethtool -K tso/gso/gro` on "
             "both ends.")
    rep.note(f"wirespeed runs last {ctx.ws_dur} s; \"whole run\" is the client's JSON report (it includes "
             "the connection's start), \"2nd half\" is the rate between the progress line at half the run "
             "and the end: a wirespeed connection needs about 2–3 s to ramp up. "
             f"Linux runs last {ctx.k_dur} s (it reaches its rate within milliseconds). Median of "
             f"{ctx.reps} runs; ±: (max−min)/median. Ratios >1: wirespeed faster.")
    rep.note("\"sender tx_queue_full drops / retransmits\": medians per run of the wirespeed client's "
             "`wirespeed_drops_total{reason=\"tx_queue_full\"}` and "
             "`wirespeed_tcp_retransmitted_segments_total`, read by `wirespeed-control serve` about "
             "0.3 s before the client ends. A frame refused by a full TX ring is freed and counted, so "
             "the sender inflicts losses on itself that TCP must then recover (fast retransmit, RTO).")
    rep.note("Goal: ≥ 3× the kernel's per-core throughput at MTU 1500 without offloads.")
    for e in errors:
        rep.note(f"FAILURE: {e}")
    rep.data = {"runs": raw, "errors": errors}
    return rep


# ---------------------------------------------------------------------------------------
# Workload 3: 64-byte TCP round trip


def bench_tcp_rtt(ctx):
    rep = Report("tcp-rtt", "3. 64-byte TCP round-trip latency: wirespeed over memif vs Linux over veth",
                 ctx.command("tcp-rtt"))
    errors = []
    ws = [None] * ctx.reps
    try:
        with Memif(ctx.tmp, 1500, "rtt") as m:
            ws = repeat(lambda: m.client(
                f"{{ name: rtt, kind: ping, protocol: tcp, target: \"{Memif.SERVER_IP}:7\", "
                f"message_size: 64, duration_s: {ctx.dur} }}", ctx.dur + 15), ctx.reps, errors)
    except Failure as e:
        errors.append(str(e))
    with KernelPair(1500, offloads=True) as kp:
        sp = sockperf_pp(ctx, kp, errors)
        kw = kernel_ping_echo(ctx, kp, 64, "rtt", errors)
    mps = lambda s: s["messages_per_second"]
    rows = latency_rows("{} round trip", ws, [(sp, lambda s, k: s.get(k)), (kw, rtt)]) + [
        ["round trips/s (1 outstanding)", fmt_ms(pick(ws, mps), "/s"),
         fmt_ms(pick(sp, lambda s: s.get("round_trips_per_second")), "/s"),
         ratio(pick(ws, mps), pick(sp, lambda s: s.get("round_trips_per_second"))),
         fmt_ms(pick(kw, mps), "/s"), ratio(pick(ws, mps), pick(kw, mps))],
    ]
    rep.add_table("", ["figure", "wirespeed ping→echo (memif)", "sockperf pp → sockperf sr (Linux)",
                       "ratio", "wsperf ping → echo (Linux)", "ratio"], rows)
    rep.note("Ratios >1 mean wirespeed is better (for latency: kernel ÷ wirespeed). Goal: "
             "p50 at most half the kernel's, i.e. a ratio ≥ 2× against sockperf.")
    rep.note("wirespeed: `ping` (64 B, length32, 1 connection) on lcore 1 → `echo` on lcore 0 over memif, "
             "`idle: poll`. Linux: namespaces wsb-ka (client, cpu 0) and wsb-kb (server, cpu 1) over veth, "
             f"MTU 1500; `sockperf sr --tcp` / `sockperf pp --tcp -m 64 -t {ctx.dur} --full-rtt` (full "
             "round trips, not sockperf's default half-RTT), and `wsperf ping`/`wsperf echo`.")
    rep.note(f"Median of {ctx.reps} runs of {ctx.dur} s; ±: (max−min)/median.")
    for e in errors:
        rep.note(f"FAILURE: {e}")
    rep.data = {"wirespeed": ws, "sockperf": sp, "wsperf": kw, "errors": errors}
    return rep


# ---------------------------------------------------------------------------------------
# Workload 4: message-size sweep


# The pipeline variants: what batching and the MSS-multiple batch are each worth.
SWEEP_VARIANTS = [
    ("default", ""),
    ("batching off", "pipeline:\n  batching: false"),
    ("fixed 64512-byte batch", "pipeline:\n  mss_multiple: false\n  max_batch_bytes: 64512"),
]


SWEEP_JUMBO_MTU = 9000


def bench_sweep(ctx):
    rep = Report("sweep", "4. Message-size sweep: wirespeed over memif vs wsperf (Linux) over veth",
                 ctx.command("sweep"))
    errors = []
    sizes = [8, 64, 1024, 8192, 65536, 1048576]
    ws_src = {v: {} for v, _ in SWEEP_VARIANTS}
    ws_ping = {v: {} for v, _ in SWEEP_VARIANTS}
    k_src, k_ping, k_jumbo, jumbo_src = {}, {}, {}, {}
    # Every variant gets its own server process (the `pipeline:` settings apply to both
    # ends). The variants take turns within each repetition of each size, forward in even
    # repetitions and backward in odd ones, so a drift of the machine's speed does not
    # favour one of them; the default's runs are paired with the twin's.
    variants = list(enumerate(SWEEP_VARIANTS))
    with KernelPair(1500, offloads=True) as kp:
        for s in sizes:
            k_src[s] = []
            for variant, _ in SWEEP_VARIANTS:
                ws_src[variant][s], ws_ping[variant][s] = [], []
            for r in range(ctx.reps):
                for vi, (variant, extra) in (variants if r % 2 == 0 else variants[::-1]):
                    try:
                        with Memif(ctx.tmp, 1500, f"sweep{vi}", tcp_extra=extra) as m:
                            if vi == 0:
                                # The headline figures: wirespeed and the twin side by side.
                                w, k = paired_source_runs(ctx, m, kp, s, errors, reps=1)
                                ws_src[variant][s] += w
                                k_src[s] += k
                            else:
                                ws_src[variant][s] += repeat(lambda: m.client(
                                    f"{{ name: load, kind: source, protocol: tcp, target: "
                                    f"\"{Memif.SERVER_IP}:9\", message_size: {s}, connections: 1, "
                                    f"duration_s: {ctx.ws_dur} }}", ctx.ws_dur + 15), 1, errors)
                            ws_ping[variant][s] += repeat(lambda: m.client(
                                f"{{ name: rtt, kind: ping, protocol: tcp, target: \"{Memif.SERVER_IP}:7\", "
                                f"message_size: {s}, duration_s: {ctx.ping_dur} }}", ctx.ping_dur + 15),
                                1, errors)
                    except Failure as e:
                        errors.append(f"{variant}, {s} B: {e}")
    # The same source -> sink runs at MTU 9000 on both sides (memif against veth with MTU 9000
    # and the kernel's offloads): wirespeed's segment and batch sizes follow the MTU.
    try:
        with Memif(ctx.tmp, SWEEP_JUMBO_MTU, "sweep-jumbo") as m, \
                KernelPair(SWEEP_JUMBO_MTU, offloads=True) as kp:
            for s in sizes:
                jumbo_src[s], k_jumbo[s] = paired_source_runs(ctx, m, kp, s, errors)
    except Failure as e:
        errors.append(f"MTU {SWEEP_JUMBO_MTU}: {e}")
    for s in sizes:
        k_src.setdefault(s, [None])
        k_jumbo.setdefault(s, [None])
    with KernelPair(1500, offloads=True) as kp:
        for s in sizes:
            k_ping[s] = kernel_ping_echo(ctx, kp, s, f"sweep-{s}", errors, dur=ctx.ping_dur)
    mps = lambda r: r["messages_per_second"]
    p50 = lambda r: r["rtt_us"]["p50"]
    rows1, rows2, rows3, rows4 = [], [], [], []
    for s in sizes:
        w, k = jumbo_src.get(s, [None]), k_jumbo[s]
        rows4.append([f"{s}", fmt_ms(pick(w, mps), "msg/s"), fmt_ms(pick(w, steady_mps), "msg/s"),
                      fmt_ms(pick(k, mps), "msg/s"),
                      f"{pair_ratio(w, k, mps, mps)} / {pair_ratio(w, k, steady_mps, mps)}",
                      fmt_ms(pick(w, steady_gbps), "Gbit/s"), fmt_ms(pick(k, gbps), "Gbit/s"),
                      pair_ratio(w, k, steady_gbps, gbps), loss_summary(w)])
        w, k = ws_src["default"].get(s, [None]), k_src[s]
        rows1.append([f"{s}", fmt_ms(pick(w, mps), "msg/s"), fmt_ms(pick(w, steady_mps), "msg/s"),
                      fmt_ms(pick(k, mps), "msg/s"),
                      f"{pair_ratio(w, k, mps, mps)} / {pair_ratio(w, k, steady_mps, mps)}",
                      fmt_ms(pick(w, steady_gbps), "Gbit/s"), fmt_ms(pick(k, gbps), "Gbit/s"),
                      pair_ratio(w, k, steady_gbps, gbps), loss_summary(w)])
        w, k = ws_ping["default"].get(s, [None]), k_ping[s]
        # The four latency points as columns: wirespeed, Linux, ratio for each.
        cols = latency_rows("{}", w, [(k, rtt)])
        rows2.append([f"{s}"] + [c for r in cols for c in r[1:]] +
                     [fmt_ms(pick(w, mps), "/s"), fmt_ms(pick(k, mps), "/s")])
        row = [f"{s}"]
        for variant, _ in SWEEP_VARIANTS:
            w = ws_src[variant].get(s, [None])
            row += [fmt_ms(pick(w, steady_mps), "msg/s"), fmt_ms(pick(w, steady_gbps), "Gbit/s")]
        for variant, _ in SWEEP_VARIANTS:
            row.append(fmt_ms(pick(ws_ping[variant].get(s, [None]), p50), "µs"))
        rows3.append(row)
    rep.add_table("Throughput, source → sink, one connection:",
                  ["message B", "wirespeed msg/s, whole run", "wirespeed msg/s, 2nd half", "Linux msg/s",
                   "ratio whole / 2nd half", "wirespeed Gbit/s, 2nd half", "Linux Gbit/s", "ratio",
                   "sender tx_queue_full drops / retransmits"], rows1)
    rep.add_table(f"Throughput at MTU {SWEEP_JUMBO_MTU} on both sides (wirespeed over memif, Linux over "
                  "veth), source → sink, one connection:",
                  ["message B", "wirespeed msg/s, whole run", "wirespeed msg/s, 2nd half", "Linux msg/s",
                   "ratio whole / 2nd half", "wirespeed Gbit/s, 2nd half", "Linux Gbit/s", "ratio",
                   "sender tx_queue_full drops / retransmits"], rows4)
    rep.add_table("Round trip, ping → echo, one connection, one message outstanding:",
                  ["message B"] + [f"{who} {name}" if who else "ratio" for name, _ in LATENCY_POINTS
                                   for who in ("wirespeed", "Linux", "")] +
                  ["wirespeed round trips/s", "Linux round trips/s"], rows2)
    heads = ["message B"]
    for variant, _ in SWEEP_VARIANTS:
        heads += [f"{variant}: msg/s", f"{variant}: Gbit/s"]
    heads += [f"{variant}: ping p50" for variant, _ in SWEEP_VARIANTS]
    rep.add_table("What each pipeline idea is worth (wirespeed only; source rates over the 2nd half "
                  "of the run, ping → echo p50):", heads, rows3)
    rep.note("wirespeed: client process on lcore 1 → server process on lcore 0 over net_memif, MTU 1500, "
             "`idle: poll`, defaults otherwise. Linux: `wsperf` client in namespace wsb-ka (cpu 0) → "
             "`wsperf` server in wsb-kb (cpu 1) over veth, MTU 1500, offloads on (the kernel's default).")
    rep.note(f"Source runs: wirespeed {ctx.ws_dur} s (whole-run figure from its report, 2nd-half figure "
             f"from its progress lines, see table 2), Linux {ctx.k_dur} s. Ping runs: {ctx.ping_dur} s each. "
             f"Median of {ctx.reps} runs; ±: (max−min)/median. Ratios >1: wirespeed better "
             "(latency: Linux ÷ wirespeed). Goals: ≥ 5× the kernel's msg/s at 8 and 64 B, "
             "≥ 2× its Gbit/s at 1 MiB.")
    rep.note("Throughput ratios are paired: each wirespeed run is followed at once by a Linux run "
             "(the memif server stopped with SIGSTOP meanwhile), and the ratio is the median of the "
             "pairs' ratios, with their range in brackets. This VM's speed drifts by up to 1.5× within "
             "minutes, for both stacks alike, so figures from runs minutes apart do not compare.")
    rep.note("Variants (both processes, `pipeline:` section): *default* (batches the largest multiple "
             "of the MSS under 65535 bytes, 45 × 1448 = 65160, batching mode with the default `backoff_us`, 20 µs); "
             "*batching off* (`batching: false`: every message is handed to TCP at once); *fixed "
             "64512-byte batch* (`mss_multiple: false`, `max_batch_bytes: 64512`: batches ignore the "
             "MSS). The source, the ping and the echo each send through one pipeline per connection. "
             "Each variant has its own server process; the variants take turns within each "
             "repetition of each size (forward, then backward), so they are measured within a "
             "minute of each other.")
    for e in errors:
        rep.note(f"FAILURE: {e}")
    rep.note(f"MTU {SWEEP_JUMBO_MTU} table: default pipeline settings (batches of 7 × 8948 = 62636 bytes); "
             "the kernel pair is the same veth pair with MTU 9000 on both ends, offloads on.")
    rep.data = {"ws_source": ws_src, "ws_ping": ws_ping, "k_source": k_src, "k_ping": k_ping,
                "ws_source_jumbo": jumbo_src, "k_source_jumbo": k_jumbo, "jumbo_mtu": SWEEP_JUMBO_MTU,
                "variants": dict(SWEEP_VARIANTS), "errors": errors}
    return rep


# ---------------------------------------------------------------------------------------
# Workload backoff: pipeline.backoff_us chosen by measurement

BACKOFF_US = [0, 5, 10, 20, 50, 100, 200]
BACKOFF_SOURCES = [8, 1024, 65536]


def bench_backoff(ctx):
    """For each backoff_us: 8 B, 1 KiB and 64 KiB sources (msg/s and Gbit/s over the 2nd half
    of the run) and a 64-byte ping (p50/p99/p99.9/max), wirespeed over memif. One server; the client
    process gets the backoff (a sink has no pipeline, and a one-outstanding ping never
    batches, so the server's value does not matter). The values are interleaved, forward in
    odd rounds and backward in even ones, so a load that drifts during the run does not
    favour the values measured last. 2 rounds by default (--reps), about 4 minutes."""
    dur = ctx.args.ws_duration or 3
    ping_dur = ctx.args.duration or 1
    rep = Report("backoff", "13. `pipeline.backoff_us`: throughput and round trip against the backoff",
                 ctx.command("backoff"))
    errors = []
    rounds = ctx.args.reps or 2
    src = {b: {size: [] for size in BACKOFF_SOURCES} for b in BACKOFF_US}
    ping = {b: [] for b in BACKOFF_US}
    try:
        with Memif(ctx.tmp, 1500, "backoff") as m:
            for rnd in range(rounds):
                order = BACKOFF_US if rnd % 2 == 0 else list(reversed(BACKOFF_US))
                for b in order:
                    m.tcp_extra = f"pipeline:\n  backoff_us: {b}"
                    for size in BACKOFF_SOURCES:
                        src[b][size] += repeat(lambda: m.client(
                            f"{{ name: load, kind: source, protocol: tcp, target: \"{Memif.SERVER_IP}:9\", "
                            f"message_size: {size}, connections: 1, duration_s: {dur} }}", dur + 15),
                            1, errors)
                    ping[b] += repeat(lambda: m.client(
                        f"{{ name: rtt, kind: ping, protocol: tcp, target: \"{Memif.SERVER_IP}:7\", "
                        f"message_size: 64, duration_s: {ping_dur} }}", ping_dur + 15), 1, errors)
                print(f"  round {rnd + 1}/{rounds} done", flush=True)
    except Failure as e:
        errors.append(str(e))
    rows = []
    summary = {}
    for b in BACKOFF_US:
        row = [f"{b}"]
        for size in BACKOFF_SOURCES:
            w = src[b][size] or [None]
            row.append(fmt_ms(pick(w, steady_mps), "msg/s"))
            if size == 65536:
                row.append(fmt_ms(pick(w, steady_gbps), "Gbit/s"))
        w = ping[b] or [None]
        row += [fmt_ms(pick(w, lambda r, k=key: rtt(r, k)), "µs") for _, key in LATENCY_POINTS]
        rows.append(row)
        summary[b] = {size: med([x for x in pick(src[b][size] or [None], steady_mps) if x is not None] or [0])
                      for size in BACKOFF_SOURCES}
    # The suggestion: for each source size, each backoff's rate as a fraction of the best one;
    # the backoff with the highest worst-case fraction (ties: the smaller backoff, for latency).
    best = {size: max(summary[b][size] for b in BACKOFF_US) or 1 for size in BACKOFF_SOURCES}
    score = {b: min(summary[b][size] / best[size] for size in BACKOFF_SOURCES) for b in BACKOFF_US}
    pick_b = max(BACKOFF_US, key=lambda b: (round(score[b], 2), -b))
    rep.add_table("Source → sink (one connection, msg/s over the 2nd half of the run) and 64-byte "
                  "ping → echo, wirespeed over memif, `backoff_us` set in the client process:",
                  ["backoff_us", "8 B msg/s", "1 KiB msg/s", "64 KiB msg/s", "64 KiB Gbit/s",
                  ] + [f"ping 64 B {name}" for name, _ in LATENCY_POINTS], rows)
    rep.note("Score per backoff: the lowest, over the three source sizes, of its msg/s divided by "
             "the best msg/s of that size; " + ", ".join(f"{b}: {score[b]:.2f}" for b in BACKOFF_US) +
             f". Highest score (ties to the smaller backoff): **{pick_b} µs**.")
    rep.note(f"Client process on lcore 1, server on lcore 0, `idle: poll`, MTU 1500; sources {dur} s, "
             f"ping {ping_dur} s; {rounds} interleaved round(s), one run per value and round (median; "
             "±: (max−min)/median). A ping with one message outstanding never enters batching mode, "
             "so the backoff shows in its latency only through the load of the machine.")
    for e in errors:
        rep.note(f"FAILURE: {e}")
    rep.data = {"backoff_us": BACKOFF_US, "sources": src, "ping": ping, "score": score,
                "suggested_backoff_us": pick_b, "errors": errors}
    print(f"  suggested backoff_us: {pick_b} (scores {score})", flush=True)
    return rep


# ---------------------------------------------------------------------------------------
# Workload 5: scrape impact


def bench_scrape(ctx):
    rep = Report("scrape", "5. Scrape impact: 64-byte source → sink with and without /metrics every 100 ms",
                 ctx.command("scrape"))
    errors = []
    runs = ctx.scrape_runs
    dur = ctx.scrape_dur
    base, scraped = [], []
    scrapes = []
    try:
        with Memif(ctx.tmp, 1500, "scrape", metrics_port=9595, counters=False) as m:
            ctl = start_control(m.cfg, os.path.join(ctx.tmp, "scrape-ctl.log"), 9595)
            svc = (f"{{ name: load, kind: source, protocol: tcp, target: \"{Memif.SERVER_IP}:9\", "
                   f"message_size: 64, duration_s: {dur} }}")
            # Interleave the two conditions so drifting background load hits both alike.
            for i in range(runs):
                base += repeat(lambda: m.client(svc, dur + 15), 1, errors)
                scraper = spawn(["/usr/bin/python3", "-c", SCRAPER, "9595", "0.1"],
                                os.path.join(ctx.tmp, "scraper.log"))
                time.sleep(0.2)
                scraped += repeat(lambda: m.client(svc, dur + 15), 1, errors)
                stop(scraper)
                try:
                    scrapes.append(int(open(scraper.log_path).read().split()[-1]))
                except (ValueError, IndexError, OSError):
                    pass
            stop(ctl)
    except Failure as e:
        errors.append(str(e))
    rows = []
    stats = {}
    for label, runs_ in (("no scraping", base), ("scraped every 100 ms", scraped)):
        for fig, f in (("2nd half of run", steady_mps), ("whole run", lambda r: r["messages_per_second"])):
            xs = [x for x in pick(runs_, f) if x is not None]
            stats[(label, fig)] = xs
            rows.append([label, fig, len(xs), fmt(med(xs), "msg/s"),
                         fmt(min(xs), "msg/s") if xs else "—", fmt(max(xs), "msg/s") if xs else "—",
                         f"{spread(xs):.1f}%" if spread(xs) is not None else "—"])
    rep.add_table("", ["condition", "figure", "runs", "median", "min", "max", "spread (max−min)/median"], rows)
    good_b, good_s = stats[("no scraping", "2nd half of run")], stats[("scraped every 100 ms", "2nd half of run")]
    if good_b and good_s:
        diff = 100.0 * (med(good_s) - med(good_b)) / med(good_b)
        within = min(good_b) <= med(good_s) <= max(good_b)
        rep.note(f"2nd-half figures: the median with scraping differs by {diff:+.1f}% from the median "
                 f"without; the scraped median is {'inside' if within else 'OUTSIDE'} the range of the "
                 "unscraped runs.")
    if scrapes:
        rep.note(f"Scrapes completed per scraped run: {', '.join(str(x) for x in scrapes)} "
                 f"(target {int(dur / 0.1)}).")
    rep.note(f"wirespeed `source` 64 B, 1 connection, {dur} s (lcore 1) → `sink` (lcore 0) over memif; "
             "`wirespeed-control serve` runs for the whole benchmark (on whatever core the scheduler "
             "gives it: the machine has 2 cores, both busy-polled by data planes) and is scraped by a "
             "Python loop (`urllib`, a fresh connection each time) every 100 ms in the scraped runs. "
             "Runs alternate between the two conditions.")
    for e in errors:
        rep.note(f"FAILURE: {e}")
    rep.data = {"unscraped": base, "scraped": scraped, "scrapes": scrapes, "errors": errors}
    return rep


SCRAPER = r"""
import sys, time, urllib.request, signal
port, period = sys.argv[1], float(sys.argv[2])
n = 0
def done(*_):
    print(n, flush=True); sys.exit(0)
signal.signal(signal.SIGINT, done); signal.signal(signal.SIGTERM, done)
nxt = time.monotonic()
while True:
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=1).read()
        n += 1
    except OSError:
        pass
    nxt += period
    time.sleep(max(0.0, nxt - time.monotonic()))
"""


# ---------------------------------------------------------------------------------------
# Micro benchmarks (Google Benchmark, tests/bench/micro_bench.cpp)


def bench_micro(ctx):
    rep = Report("micro", "6. Micro benchmarks (Google Benchmark, no DPDK)", ctx.command("micro"))
    exe = os.path.join(BUILD, "tests", "bench", "micro_bench")
    if not os.access(exe, os.X_OK):
        rep.note(f"FAILURE: {exe} is not built (Google Benchmark not found by meson?)")
        return rep
    out = os.path.join(ctx.tmp, "micro.json")
    min_time = "0.05" if ctx.quick else "0.3"
    r = subprocess.run(["taskset", "-c", "1", exe, f"--benchmark_min_time={min_time}",
                        "--benchmark_out=" + out, "--benchmark_out_format=json"],
                       capture_output=True, text=True, timeout=240)
    data = read_json(out)
    if r.returncode != 0 or data is None:
        rep.note(f"FAILURE: micro_bench exit {r.returncode}: {r.stderr[-400:]}")
        return rep
    rows = []
    for b in data.get("benchmarks", []):
        rate = ""
        if "items_per_second" in b:
            rate = fmt(b["items_per_second"], "/s")
        bps = fmt(b["bytes_per_second"], "B/s") if "bytes_per_second" in b else ""
        rows.append([f"`{b['name']}`", f"{b['real_time']:.1f} {b.get('time_unit', 'ns')}",
                     f"{b['cpu_time']:.1f} {b.get('time_unit', 'ns')}", bps, rate])
    rep.add_table("", ["benchmark", "wall time / iteration", "CPU time / iteration", "bytes/s", "items/s"],
                  rows)
    ctxs = data.get("context", {})
    rep.note(f"`{os.path.relpath(exe, ROOT)} --benchmark_min_time={min_time}` pinned to cpu 1; library "
             f"build type {ctxs.get('library_build_type', '?')} (that is Google Benchmark's own build, "
             "the code measured is the release build of libwsstack).")
    rep.note("`BM_StackUdpEcho`: one Ethernet/IPv4/UDP frame to an echo socket through "
             "`ws::Stack::receive`, reply built and checksummed, on a PacketIo that recycles one buffer "
             "(nic_csum:1 = RX checksums marked good as a NIC would). `BM_FrameDecoder1MiB`: a 1 MiB "
             "length32 stream of msg-byte messages fed in 1448-byte reads (collect:1 = whole messages).")
    rep.data = data
    return rep



# ---------------------------------------------------------------------------------------
# Workload: throughput against the MTU


MTU_VARIANTS = [
    # (label, lines under dataplane:, lines under the port)
    ("offloads auto", "", ""),
    ("offloads: software", "  offloads: software", ""),
    ("frame_buffers: whole", "", "    frame_buffers: whole"),
]


def bench_mtu(ctx):
    rep = Report("mtu", "9. TCP bulk throughput against the MTU: wirespeed stack-to-stack vs Linux over veth",
                 ctx.command("mtu"))
    errors = []
    size = 1048576
    mtus = (1500, 4000, 9000)
    ws = {}
    links = {}
    for mtu in mtus:
        for label, dp_extra, port_extra in MTU_VARIANTS:
            tag = f"mtu{mtu}-{MTU_VARIANTS.index((label, dp_extra, port_extra))}"
            key = (mtu, label)
            for link in ("memif", "afpacket"):
                try:
                    with Memif(ctx.tmp, mtu, tag + link[0], link=link, dp_extra=dp_extra,
                               port_extra=port_extra) as m:
                        ws[key] = repeat(lambda: m.client(
                            f"{{ name: load, kind: source, protocol: tcp, target: \"{Memif.SERVER_IP}:9\", "
                            f"message_size: {size}, connections: 1, duration_s: {ctx.ws_dur} }}",
                            ctx.ws_dur + 15), ctx.reps, errors)
                    links[key] = "memif" if link == "memif" else "af_packet/veth"
                except Failure as e:
                    errors.append(f"MTU {mtu} {label} over {link}: {e}")
                    continue
                if any(r is not None for r in ws[key]):
                    break
    kern = {}
    for mtu in mtus:
        for on in (False, True):
            kern[(mtu, on)] = kernel_source_runs(ctx, mtu, on, size, errors)

    def med_of(runs, f):
        xs = [x for x in pick(runs or [None], f) if x is not None]
        return med(xs) if xs else None

    rows = []
    for mtu in mtus:
        row = [f"{mtu}"]
        for label, _, _ in MTU_VARIANTS:
            w = ws.get((mtu, label), [None])
            row.append(fmt_ms(pick(w, steady_gbps), "Gbit/s") + f" ({links.get((mtu, label), '—')})")
        koff, kon = kern[(mtu, False)], kern[(mtu, True)]
        row += [fmt_ms(pick(koff, gbps), "Gbit/s"), fmt_ms(pick(kon, gbps), "Gbit/s"),
                ratio(pick(ws.get((mtu, "offloads auto"), [None]), steady_gbps), pick(koff, gbps))]
        rows.append(row)
    # The ratio 9000 / 1500 per column (medians).
    r_row = ["9000 / 1500"]
    for label, _, _ in MTU_VARIANTS:
        a = med_of(ws.get((9000, label)), steady_gbps)
        b = med_of(ws.get((1500, label)), steady_gbps)
        r_row.append(f"{a / b:.2f}x" if a and b else "—")
    for on in (False, True):
        a, b = med_of(kern[(9000, on)], gbps), med_of(kern[(1500, on)], gbps)
        r_row.append(f"{a / b:.2f}x" if a and b else "—")
    r_row.append("")
    rows.append(r_row)
    rep.add_table("", ["MTU"] + [f"wirespeed, {l}" for l, _, _ in MTU_VARIANTS] +
                  ["Linux veth, GSO/GRO/TSO off", "Linux veth, offloads on",
                   "wirespeed (auto) / Linux off"], rows)
    rep.note("wirespeed: `source` (1 connection, 1 MiB messages, length32) in one data-plane process on "
             "lcore 1 → `sink` in another on lcore 0 (`idle: poll`, `--no-huge`), rate over the second "
             "half of each run. The link is `net_memif`, which the data plane runs above its advertised "
             "1518-byte frame limit (the data plane gives memif a buffer that holds a whole frame, "
             "`bsize`: see docs/config.md; the mbufs stay 2 KiB chains unless `whole`); where "
             "memif fails, af_packet over a root-namespace veth is used and named in the cell.")
    rep.note("memif offers no checksum offload and no TSO, so `offloads auto` and `offloads: software` "
             "run the same code over memif except for the RX checksum flags (none either way): the two "
             "columns show the noise. `frame_buffers: whole` uses MTU-sized mbufs instead of 2 KiB "
             "chains. TSO itself is measured on net_tap in tests/integration/test_offloads.py.")
    rep.note(f"Linux: wsperf source → sink over a veth pair between two namespaces at the same MTU, "
             f"offloads toggled with ethtool. Median of {ctx.reps} runs; ±: (max−min)/median.")
    rep.note("Goal: MTU 9000 gives at least 2.5x the throughput of MTU 1500 on one core.")
    for e in errors:
        rep.note(f"FAILURE: {e}")
    rep.data = {"wirespeed": {f"{k[0]}/{k[1]}": v for k, v in ws.items()},
                "kernel": {f"{k[0]}/{'on' if k[1] else 'off'}": v for k, v in kern.items()},
                "links": {f"{k[0]}/{k[1]}": v for k, v in links.items()}, "errors": errors}
    return rep

# ---------------------------------------------------------------------------------------
# Workload 22: IPv6 against IPv4, stack to stack over memif

FAMILIES = (("IPv4", Memif.SERVER_IP), ("IPv6", f"[{Memif.SERVER_IP6}]"))


def family_runs(ctx, m, runs, key, service, timeout, errors):
    """ctx.reps repetitions of `service(host)` against each family on the pair m, the two
    families taking turns (IPv4 first in even repetitions, IPv6 first in odd ones) so that
    load drift favours neither; runs[(key, family)] gets every sample (None: failed)."""
    for i in range(ctx.reps):
        for fam, host in (FAMILIES if i % 2 == 0 else FAMILIES[::-1]):
            runs.setdefault((key, fam), []).extend(
                repeat(lambda: m.client(service(host), timeout), 1, errors))


def family_record(rid, figure, unit, v6, v4, better, rank):
    """A docs/results record: IPv6 as ours, IPv4 of the same run as the peer (the ratio from
    the rounded figures)."""
    r = v6 / v4 if better == "higher" else v4 / v6
    return {"id": rid, "table": "ipv6", "figure": figure, "unit": unit, "ours": v6, "peer": v4,
            "peer_name": "IPv4, same run", "better": better, "ratio": round(r, 3),
            "readme": False, "headline": False, "rank": rank}


def bench_ipv6(ctx):
    rep = Report("ipv6", "22. IPv6 against IPv4, stack to stack over memif (one core each)",
                 ctx.command("ipv6"))
    errors, runs = [], {}
    for mtu in (1500, 9000):
        try:
            with Memif(ctx.tmp, mtu, f"v6bulk{mtu}", dual=True) as m:
                family_runs(ctx, m, runs, f"bulk{mtu}", lambda host: (
                    f"{{ name: load, kind: source, protocol: tcp, target: \"{host}:9\", "
                    f"message_size: 1048576, connections: 1, duration_s: {ctx.ws_dur} }}"),
                    ctx.ws_dur + 15, errors)
        except Failure as e:
            errors.append(f"bulk at MTU {mtu}: {e}")
    try:
        with Memif(ctx.tmp, 1500, "v6rtt", dual=True) as m:
            for conns in (1, 64):
                family_runs(ctx, m, runs, f"rtt{conns}", lambda host, c=conns: (
                    f"{{ name: rtt, kind: ping, protocol: tcp, target: \"{host}:7\", "
                    f"message_size: 64, connections: {c}, duration_s: {ctx.dur} }}"),
                    ctx.dur + 15, errors)
    except Failure as e:
        errors.append(f"round trips: {e}")

    def get(key, fam, f):
        return pick(runs.get((key, fam), [None]), f)

    mps = lambda s: s["messages_per_second"]  # noqa: E731

    def latency_figures(conns):
        # Every latency point of the round trips with `conns` connections.
        return [(f"rtt{conns}-{key}", f"64 B TCP round trip {name}, {conns} connection"
                 f"{'s' if conns > 1 else ''}", f"rtt{conns}",
                 lambda s, k=key: rtt(s, k), "µs", "lower") for name, key in LATENCY_POINTS]

    figures = [  # (id, figure, key, sample -> value, unit, better)
        ("bulk-1500", "TCP bulk, 1 MiB messages, MTU 1500 (2nd half of run)", "bulk1500",
         steady_gbps, "Gbit/s", "higher"),
        ("bulk-1500-whole", "TCP bulk, 1 MiB messages, MTU 1500 (whole run)", "bulk1500", gbps,
         "Gbit/s", "higher"),
        ("bulk-9000", "TCP bulk, 1 MiB messages, MTU 9000 (2nd half of run)", "bulk9000",
         steady_gbps, "Gbit/s", "higher"),
        ("bulk-9000-whole", "TCP bulk, 1 MiB messages, MTU 9000 (whole run)", "bulk9000", gbps,
         "Gbit/s", "higher"),
        ("rtt1-rate", "64 B TCP round trips/s, 1 connection", "rtt1", mps, "/s", "higher"),
        *latency_figures(1),
        ("rtt64-rate", "64 B TCP round trips/s, 64 connections", "rtt64", mps, "/s", "higher"),
        *latency_figures(64),
    ]
    rows, medians = [], {}
    for rid, figure, key, f, unit, better in figures:
        v4, v6 = get(key, "IPv4", f), get(key, "IPv6", f)
        medians[rid] = (med(v6), med(v4))
        # Repetition i of each family ran back to back: their ratio cancels slow load drift.
        paired = [(b / a if better == "lower" else a / b) for a, b in zip(v6, v4) if a and b]
        rows.append([figure, fmt_ms(v4, unit), fmt_ms(v6, unit), ratio(v6, v4, better == "lower"),
                     f"{med(paired):.2f}×" if paired else "—"])
    rep.add_table("", ["figure", "IPv4", "IPv6", "ratio of medians (>1: IPv6 better)",
                       "median of the per-repetition ratios"], rows)
    rep.note("One data plane per side over `net_memif` (client process on lcore 1, server on "
             "lcore 0, `idle: poll`, `--no-huge`), each port with an IPv4 and an IPv6 address "
             "(`ipv6.dad_transmits: 0`); the server's `echo` (:7) and `sink` (:9) answer both "
             "families. Each repetition runs IPv4 and IPv6 back to back against the same server "
             "(IPv4 first in even repetitions, IPv6 first in odd ones), so both figures of a row "
             "come from the same minutes of the same run.")
    rep.note(f"Bulk: `source` (1 connection, 1 MiB messages, length32) → `sink`, {ctx.ws_dur} s per "
             f"run; round trips: `ping` (64 B) → `echo`, {ctx.dur} s per run. Median of {ctx.reps} "
             "runs per family; ±: (max−min)/median. Goal: IPv6 at least 0.95× of IPv4. IPv6 "
             "carries 20 bytes less payload per segment than IPv4 (MSS = MTU − 60 against − 40), "
             "1.4 % of a 1500-byte MTU and 0.2 % of 9000.")
    for e in errors:
        rep.note(f"FAILURE: {e}")
    rep.data = {"runs": {f"{k[0]}/{k[1]}": v for k, v in runs.items()}, "errors": errors}
    rank = {"bulk-1500": 400, "bulk-9000": 401, "rtt1-p50": 402, "rtt1-rate": 403,
            "rtt64-rate": 404, "rtt64-p50": 405}
    scale = {"/s": (1e3, "k/s", 1), "Gbit/s": (1, "Gbit/s", 2), "µs": (1, "µs", 2)}
    rep.records = []
    for rid, figure, _, _, unit, better in figures:
        v6, v4 = medians[rid]
        if rid in rank and v6 and v4:
            div, shown, nd = scale[unit]
            rep.records.append(family_record(f"ipv6-{rid}", figure, shown, round(v6 / div, nd),
                                             round(v4 / div, nd), better, rank[rid]))
    return rep


def write_doc_results(ctx, rep, loads):
    """docs/results/<date>-<workload>.json for tests/bench/make_performance.py."""
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    now = datetime.datetime.utcnow()
    run = {"workload": rep.name, "section": rep.title.split(".")[0],
           "measured": now.strftime("%Y-%m-%d %H:%M UTC"), "commit": commit,
           "command": rep.command, "load": f"{loads[0]} at start, {loads[1]} at end",
           "source": f"tests/bench/bench.py {rep.name}; medians of {ctx.reps} runs per figure, "
                     "every sample in tests/bench/results/"}
    path = os.path.join(ROOT, "docs", "results", now.strftime("%Y-%m-%d") + f"-{rep.name}.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"run": run, "records": rep.records}, f, indent=2, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {path}: run tests/bench/make_performance.py", flush=True)


# ---------------------------------------------------------------------------------------


class Ctx:
    def __init__(self, args):
        self.quick = args.quick
        self.reps = args.reps or (1 if args.quick else 3)
        self.dur = args.duration or (2 if args.quick else 3)
        # wirespeed source runs are longer: the first seconds of a connection are a ramp.
        self.ws_dur = args.ws_duration or (3 if args.quick else 5)
        self.cache = {}
        self.k_dur = args.duration or 2      # Linux throughput runs
        self.ping_dur = args.duration or 2   # sweep round-trip runs
        self.ping_count = 200000
        self.scrape_runs = 3 if args.quick else 5
        self.scrape_dur = 3 if args.quick else 4
        self.args = args
        self.stamp = datetime.datetime.utcnow().strftime("%Y%m%dT%H%M%SZ")
        self.tmp = os.path.join(RESULTS, f"{self.stamp}-logs")  # logs stay with the results
        os.makedirs(self.tmp, exist_ok=True)

    def command(self, workload):
        q = " --quick" if self.quick else ""
        extra = ""
        if self.args.reps:
            extra += f" --reps {self.args.reps}"
        if self.args.duration:
            extra += f" --duration {self.args.duration}"
        if self.args.ws_duration:
            extra += f" --ws-duration {self.args.ws_duration}"
        return f"sudo tests/bench/run.sh{q}{extra} {workload}"


FUNCS = {"udp": bench_udp, "tcp-bulk": bench_tcp_bulk, "tcp-rtt": bench_tcp_rtt, "sweep": bench_sweep,
         "scrape": bench_scrape, "micro": bench_micro, "mtu": bench_mtu, "backoff": bench_backoff,
         "ipv6": bench_ipv6}


def run_workloads(todo, funcs, ctx, stamp, no_doc, json_extra=None, machine=None):
    """Runs each workload of `todo` (funcs[w](ctx) returns a Report), one program failure not
    hiding the others; prints its markdown, writes RESULTS/<stamp>-<w>.md and .json (plus
    `json_extra`) and, unless `no_doc`, updates docs/benchmarks.md. Shared by bench.py and
    bench_services.py. Returns how many workloads failed as programs."""
    machine = machine or machine_description()
    failed = 0
    for w in todo:
        t0 = time.time()
        print(f"\n=== {w}", flush=True)
        CRASHES.clear()
        load0 = open("/proc/loadavg").read().split()[0]
        try:
            rep = funcs[w](ctx)
        except Exception as e:  # keep going: one broken workload must not hide the others
            import traceback
            traceback.print_exc()
            rep = Report(w, f"{w}: benchmark program error", ctx.command(w))
            rep.note(f"FAILURE: the benchmark program itself failed: {e!r}")
            failed += 1
        _cleanup()
        for c in CRASHES:
            rep.note(f"CRASH (the run was repeated on a restarted server): {c}")
        rep.data["crashes"] = list(CRASHES)
        load1 = open("/proc/loadavg").read().split()[0]
        rep.note(f"Machine load (1-minute load average, {os.cpu_count()} CPUs) at the start and end of "
                 f"this workload: {load0} / {load1}. Other work shared the cores; anything above ~2 "
                 "means the benchmark's processes were time-sliced with it.")
        rep.data["loadavg"] = [load0, load1]
        md = rep.markdown(machine)
        print(md, flush=True)
        print(f"({w}: {time.time() - t0:.0f} s)", flush=True)
        base = os.path.join(RESULTS, f"{stamp}-{w}")
        with open(base + ".md", "w") as f:
            f.write(md)
        record = {"workload": w, "machine": machine, "command": rep.command,
                  "tables": [t for _, t in rep.tables], "notes": rep.notes, "data": rep.data}
        record.update(json_extra or {})
        with open(base + ".json", "w") as f:
            json.dump(record, f, indent=1, default=str)
        if not no_doc:
            update_doc(rep, machine)
            if rep.records:
                write_doc_results(ctx, rep, (load0, load1))
    return failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="1 run of 2 s per figure")
    ap.add_argument("--reps", type=int, help="runs per figure (default 3, --quick 1)")
    ap.add_argument("--duration", type=int, help="seconds per run (default 3, --quick 2; max 10)")
    ap.add_argument("--ws-duration", type=int, help="seconds per wirespeed source run (default 5, --quick 3)")
    ap.add_argument("--no-doc", action="store_true", help="do not touch docs/benchmarks.md")
    ap.add_argument("workloads", nargs="*", help=" ".join(WORKLOADS))
    args = ap.parse_args()
    bad = [w for w in args.workloads if w not in WORKLOADS]
    if bad:
        ap.error(f"unknown workload(s) {bad}; choose from {WORKLOADS}")
    if args.duration and not 1 <= args.duration <= 10:
        ap.error("--duration must be 1..10")
    if os.geteuid() != 0:
        print("the benchmarks need root (network namespaces, DPDK): run as root", file=sys.stderr)
        return 1
    for b in (DATAPLANE, CONTROL, WSPERF):
        if not os.access(b, os.X_OK):
            print(f"missing {b}: build first (meson setup build-bench && meson compile -C build-bench)",
                  file=sys.stderr)
            return 1
    ctx = Ctx(args)
    os.makedirs(RESULTS, exist_ok=True)
    machine = machine_description()
    stamp = ctx.stamp
    todo = args.workloads or WORKLOADS
    print(f"wirespeed benchmarks: {', '.join(todo)}; {ctx.reps} run(s) × {ctx.dur} s per figure; "
          f"logs in {ctx.tmp}", flush=True)
    failed = run_workloads(todo, FUNCS, ctx, stamp, args.no_doc,
                           {"quick": ctx.quick, "reps": ctx.reps, "duration_s": ctx.dur,
                            "logs": os.path.join(RESULTS, f"{stamp}-logs")}, machine)
    print(f"logs: {ctx.tmp}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
