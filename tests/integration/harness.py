"""Shared pieces of the integration tests: network namespaces with veth/tap links,
the data plane and control processes, and readings of their counters.

Every test creates its own namespace and interfaces with unique names and removes
them on exit, whatever happens. Traffic goes only to those namespaces.
Runs as root under Debian's /usr/bin/python3 (it sees python3-scapy).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import prom  # noqa: E402  (tests/support/prom.py: the one exposition-format parser)

BUILD = os.environ.get("WS_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
DATAPLANE = os.path.join(BUILD, "dataplane", "wirespeed-dataplane")
CONTROL = os.path.join(BUILD, "control", "wirespeed-control")


def terminate(proc, timeout=10):
    """SIGTERM, then SIGKILL if `proc` has not exited within `timeout` seconds."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wrk_summary(out):
    """A wrk run's output read: requests/s ("rate", absent when wrk printed none), mean
    latency as printed, and "bad", its socket errors plus non-2xx answers."""
    res = {"out": out[-600:], "bad": 0}
    for line in out.splitlines():
        f = line.split()
        if line.startswith("Requests/sec:"):
            res["rate"] = float(f[1])
        elif f[:1] == ["Latency"]:
            res["latency"] = f[1]
        elif line.strip().startswith(("Socket errors:", "Non-2xx")):
            res["bad"] += sum(int(x.strip(",")) for x in f if x.strip(",").isdigit())
    return res


def require(*programs):
    """Raises, naming the fix, unless every program is installed."""
    missing = [p for p in programs if shutil.which(p) is None]
    if missing:
        verb = "is" if len(missing) == 1 else "are"
        raise RuntimeError(f"{', '.join(missing)} {verb} not installed: run deploy/install-deps.sh")


def sh(cmd, check=True, ns=None, capture=True, timeout=60):
    """Runs a shell command. Even with check=False, a program that is not installed
    (the shell's exit 127) raises: its empty output must not read as a result."""
    if ns:
        cmd = f"ip netns exec {ns} {cmd}"
    r = subprocess.run(cmd, shell=True, text=True, capture_output=capture, timeout=timeout)
    if r.returncode == 127 or (check and r.returncode != 0):
        hint = " (a program is not installed: run deploy/install-deps.sh)" if r.returncode == 127 else ""
        raise RuntimeError(f"command failed ({r.returncode}){hint}: {cmd}\n{r.stdout}\n{r.stderr}")
    return r


def steer_rx(dev, cpu_mask, ns=None):
    """RPS: the kernel's receive work for veth `dev` runs on the CPUs of `cpu_mask`. A frame
    sent into a veth is otherwise received in the sender's softirq, on the sender's CPU."""
    sh(f"sh -c 'echo {cpu_mask:x} > /sys/class/net/{dev}/queues/rx-0/rps_cpus'", ns=ns)


class Capture:
    """tcpdump writing `pcap` from `iface` in namespace `ns`. Its messages go to a log that
    stop() returns, so an empty or short capture comes with tcpdump's own account of it."""

    def __init__(self, ns, iface, pcap, args, timeout=10):
        require("tcpdump")
        self.pcap = pcap
        self.log_path = pcap + ".log"
        self.argv = ["ip", "netns", "exec", ns, "tcpdump", "-i", iface, "-w", pcap] + list(args)
        self.timeout = timeout
        self.proc = None

    def __enter__(self):
        return self.start()

    def start(self):
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(self.argv, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + self.timeout
        while "listening on" not in self.output():
            if self.proc.poll() is not None:
                raise RuntimeError(f"tcpdump exited with {self.proc.returncode}: "
                                   f"{' '.join(self.argv)}\n{self.output()}")
            if time.time() > deadline:
                self.stop()
                raise RuntimeError(f"tcpdump did not start in {self.timeout}s:\n{self.output()}")
            time.sleep(0.05)
        return self

    def output(self):
        with open(self.log_path) as f:
            return f.read()

    def settle(self, quiet=0.2, timeout=3.0):
        """Waits until the capture file has not grown for `quiet` seconds (at most `timeout`),
        so that stop() loses nothing still on its way: with -U and --immediate-mode tcpdump
        writes each packet as it arrives, so a file that stays the same size is complete."""
        deadline = time.time() + timeout
        size, since = -1, time.time()
        while time.time() < deadline:
            now = os.path.getsize(self.pcap) if os.path.exists(self.pcap) else 0
            if now != size:
                size, since = now, time.time()
            elif time.time() - since >= quiet:
                return
            time.sleep(0.05)

    def stop(self):
        """Ends the capture (tcpdump writes its counts on SIGTERM); returns its messages."""
        terminate(self.proc)
        self.log.close()
        return f"tcpdump exit {self.proc.returncode}: {self.output().strip()[-600:]}"

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.stop()


def progress(output, service, until_s):
    """A client service's progress lines ("NAME: T s, N messages, ...", one a second) up to
    `until_s`: [(seconds, messages)], and the seconds that ended with no new message."""
    counts = [(float(m.group(1)), int(m.group(2))) for m in
              re.finditer(rf"^{re.escape(service)}: ([\d.]+) s, (\d+) messages", output, re.M)]
    full = [c for c in counts if c[0] <= until_s]
    stalled = [f"{b[0]:.1f} s" for a, b in zip(full, full[1:]) if b[1] == a[1]]
    return full, stalled


_TEMP_DIRS = []


def temp_dir(prefix, parent=None):
    """A new directory for a test's configs, logs and captures. Results.finish() removes
    the top-level ones when every check passed and names them when one failed (kept for
    reading); one made inside `parent` goes with it."""
    path = tempfile.mkdtemp(prefix=prefix, dir=parent)
    if parent is None:
        _TEMP_DIRS.append(path)
    return path


class Results:
    """Counts checks and prints a closing line in the 'N passed, N failed' form."""

    def __init__(self, name):
        self.name = name
        self.passed = 0
        self.failed = 0

    def check(self, ok, what, detail=""):
        if ok:
            self.passed += 1
            print(f"  ok   {what}", flush=True)
        else:
            self.failed += 1
            print(f"  FAIL {what} {detail}", flush=True)
        return ok

    def finish(self):
        print(f"{self.name}: {self.passed} passed, {self.failed} failed", flush=True)
        ok = self.failed == 0 and self.passed > 0
        for d in _TEMP_DIRS:
            if ok:
                shutil.rmtree(d, ignore_errors=True)
            elif os.path.isdir(d):
                print(f"{self.name}: logs kept in {d}", flush=True)
        _TEMP_DIRS.clear()
        return 0 if ok else 1


class VethPeer:
    """A namespace `ns` holding `peer_if`; `dp_if` stays in the root namespace for
    the data plane's af_packet port. `tx_checksum_offload=True` leaves the peer's TX
    checksumming on (the kernel default), as a user's own veth setup would."""

    def __init__(self, tag, peer_ip, prefix=24, mtu=1500, tx_checksum_offload=False):
        self.ns = f"wst-{tag}"
        self.dp_if = f"wst-{tag}-dp"[:15]
        self.peer_if = f"wst-{tag}-pr"[:15]
        self.peer_ip = peer_ip
        self.prefix = prefix
        self.mtu = mtu
        self.tx_checksum_offload = tx_checksum_offload

    def __enter__(self):
        require("ip", "sysctl", "ethtool")
        self.teardown()
        sh(f"ip netns add {self.ns}")
        sh(f"ip link add {self.dp_if} mtu {self.mtu} type veth peer name {self.peer_if} mtu {self.mtu}")
        sh(f"ip link set {self.peer_if} netns {self.ns}")
        sh(f"sysctl -qw net.ipv6.conf.{self.dp_if}.disable_ipv6=1")
        sh(f"ip link set {self.dp_if} up")
        sh(f"sysctl -qw net.ipv6.conf.{self.peer_if}.disable_ipv6=1", ns=self.ns)
        sh(f"ip addr add {self.peer_ip}/{self.prefix} dev {self.peer_if}", ns=self.ns)
        # The kernel's queue into the tap stands for the port's receive ring: 8192 frames,
        # as on the af_packet ports above, so that a data plane descheduled for a moment
        # on this shared machine finds its backlog waiting rather than dropped.
        sh(f"ip link set {self.peer_if} txqueuelen 8192", ns=self.ns)
        sh(f"ip link set {self.peer_if} up", ns=self.ns)
        sh("ip link set lo up", ns=self.ns)
        # Locally generated packets leave veth with checksums unfinished
        # (CHECKSUM_PARTIAL); af_packet would hand them to us that way.
        if not self.tx_checksum_offload:
            self.set_tx_checksum_offload(False)
        return self

    def set_tx_checksum_offload(self, on):
        sh(f"ethtool -K {self.peer_if} tx {'on' if on else 'off'}", ns=self.ns)

    def teardown(self):
        sh(f"ip netns del {self.ns}", check=False)
        sh(f"ip link del {self.dp_if}", check=False)

    def __exit__(self, *exc):
        self.teardown()

    def device(self):
        # The PMD's receive ring is framecnt frames of framesz bytes. The old default of
        # 512 x 10 KiB overflowed under several TCP streams, and those losses happen in the
        # kernel, which the PMD does not report. Frames up to 1514 bytes get a deep ring of
        # 2 KiB frames; jumbo MTUs need 10 KiB frames (framesz must divide blocksz).
        ring = ("blocksz=4096,framesz=2048,framecnt=8192" if self.mtu <= 1500
                else "blocksz=20480,framesz=10240,framecnt=2048")
        return f"net_af_packet_{self.ns.replace('-', '_')},iface={self.dp_if},{ring},qpairs=1"


class TapPeer:
    """A DPDK tap port (net_tap): the PMD creates the interface; once the port runs,
    attach() moves it into the namespace and addresses it there. The tap PMD reads
    whole frames from the kernel's tun device (IP fragments included)."""

    def __init__(self, tag, peer_ip, prefix=24):
        self.ns = f"wst-{tag}"
        self.peer_if = f"wst-{tag}-tap"[:15]
        self.peer_ip = peer_ip
        self.prefix = prefix

    def __enter__(self):
        require("ip", "sysctl")
        self.teardown()
        sh(f"ip netns add {self.ns}")
        return self

    def attach(self):
        sh(f"ip link set {self.peer_if} netns {self.ns}")
        sh(f"sysctl -qw net.ipv6.conf.{self.peer_if}.disable_ipv6=1", ns=self.ns, check=False)
        sh(f"ip addr add {self.peer_ip}/{self.prefix} dev {self.peer_if}", ns=self.ns)
        sh(f"ip link set {self.peer_if} up", ns=self.ns)
        sh("ip link set lo up", ns=self.ns)

    def teardown(self):
        sh(f"ip netns del {self.ns}", check=False)
        sh(f"ip link del {self.peer_if}", check=False)

    def __exit__(self, *exc):
        self.teardown()

    def device(self):
        return f"net_tap_{self.ns.replace('-', '_')},iface={self.peer_if}"


# A UDP echo client to run in a peer's namespace: sends `count` datagrams to port 7 of
# `dst`, each first also to `sink_port` when given, and prints how many came back intact.
#   python3 SCRIPT DST COUNT [SINK_PORT]
UDP_ECHO_CLIENT = r"""
import socket, sys
dst, count = sys.argv[1], int(sys.argv[2])
sink = int(sys.argv[3]) if len(sys.argv) > 3 else None
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(0.5)
ok = 0
for i in range(count):
    msg = b"echo-%06d" % i
    if sink is not None:
        s.sendto(msg, (dst, sink))
    s.sendto(msg, (dst, 7))
    try:
        data, _ = s.recvfrom(2048)
        ok += data == msg
    except socket.timeout:
        pass
print(ok, flush=True)
"""


def write_script(tmpdir, name, text):
    """Writes `text` to tmpdir/name and returns the path."""
    path = os.path.join(tmpdir, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def write_config(tmpdir, *, device, address, services, prefix="wst", mtu=1500, idle="adaptive",
                 lcores=(1,), extra_dataplane="", extra="", metrics_port=9551, gateway=None,
                 mac=None, address6=None, gateway6=None, port_keys=()):
    """`address6` (X:X::X/N) gives the port both families (`addresses`); `gateway6` its
    IPv6 default router; `port_keys` more "key: value" lines under the port."""
    svc = "\n".join(f"  - {s}" for s in services) or "  []"
    if address6:
        address = f'[{address}, "{address6}"]'
    gw = f"\n    gateway: {gateway}" if gateway else ""
    gw += f'\n    gateway6: "{gateway6}"' if gateway6 else ""
    gw += f'\n    mac: "{mac}"' if mac else ""
    text = f"""version: 1
dataplane:
  lcores: [{", ".join(str(l) for l in lcores)}]
  idle: {idle}
  file_prefix: {prefix}
  hugepages: false
  memory_mb: 512
{extra_dataplane}
ports:
  - name: p0
    device: "{device}"
    mtu: {mtu}
{"".join(f"    {k}{chr(10)}" for k in port_keys)}    address{"es" if address6 else ""}: {address}{gw}
services:
{svc}
control:
  metrics_listen: 127.0.0.1:{metrics_port}
{extra}
"""
    path = os.path.join(tmpdir, "wirespeed.yaml")
    with open(path, "w") as f:
        f.write(text)
    return path


def memif_config(tmp, role, *, sock, ips, prefix, extra="", **kw):
    """One data plane of a pair over net_memif: its directory tmp/ROLE and its config there.
    Role "server" is the memif server at ips[0], any other role a memif client at ips[1]
    (/24); the DPDK file prefix is `prefix`-, then the role's first and last letters. `extra`
    may be a function of the directory (files it writes there). The rest as write_config
    (`device` replaces the memif device). Returns (config path, directory)."""
    d = os.path.join(tmp, role)
    os.makedirs(d, exist_ok=True)
    server = role == "server"
    device = kw.pop("device", None) or \
        f"net_memif0,role={'server' if server else 'client'},socket={sock},id=0"
    path = write_config(d, device=device, address=f"{ips[0] if server else ips[1]}/24",
                        prefix=f"{prefix}-{role[0]}{role[-1]}",
                        extra=extra(d) if callable(extra) else extra, **kw)
    return path, d


class Dataplane:
    def __init__(self, config, log_dir, env=None):
        self.config = config
        self.log_path = os.path.join(log_dir, "dataplane.log")
        self.proc = None
        self.env = env

    def start(self, timeout=20):
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen([DATAPLANE, "-c", self.config], stdout=self.log,
                                     stderr=subprocess.STDOUT, env=self.env)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"data plane exited with {self.proc.returncode}:\n{self.output()}")
            if "wirespeed: running" in self.output():
                return self
            time.sleep(0.1)
        raise RuntimeError(f"data plane did not start in {timeout}s:\n{self.output()}")

    def output(self):
        with open(self.log_path) as f:
            return f.read()

    def stop(self, timeout=10):
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None

    def cpu_seconds(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / ticks

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


class Control:
    """wirespeed-control serve, scraped over HTTP like Prometheus would."""

    def __init__(self, config, log_dir, port):
        self.config = config
        self.port = port
        self.log_path = os.path.join(log_dir, "control.log")
        self.proc = None

    def __enter__(self):
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen([CONTROL, "-c", self.config, "serve"], stdout=self.log,
                                     stderr=subprocess.STDOUT)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                self.scrape_text()
                return self
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("control process did not serve /metrics")

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()

    def scrape_text(self):
        return prom.scrape_text(self.port)

    def scrape(self):
        """{(name, frozenset(labels.items())): value}"""
        return prom.parse(self.scrape_text())

    def value(self, name, /, **labels):
        return prom.value(self.scrape(), name, **labels)

    def drops(self):
        """{reason: count}"""
        return {dict(k[1])["reason"]: v for k, v in self.scrape().items()
                if k[0] == "wirespeed_drops_total"}

    def wait_for(self, pred, timeout=5.0):
        deadline = time.time() + timeout
        while True:
            if pred():
                return True
            if time.time() > deadline:
                return False
            time.sleep(0.1)


def rss_kb(pid):
    """The resident set size of process `pid` in KiB (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def print_log_tails(log_dir, names=("dataplane.log", "control.log"), lines=20):
    """The last lines of each log that exists, for a failed test's output."""
    for name in names:
        p = os.path.join(log_dir, name)
        if os.path.exists(p):
            with open(p) as f:
                print(f"--- {name} (tail)\n" + "".join(f.readlines()[-lines:]))


def load_json(path):
    """The JSON in `path`, or {} when it is missing or incomplete (a report not written)."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def write_key(directory, name, hex_key):
    """A key file as the data plane wants it: hex text, readable by its owner only."""
    path = os.path.join(directory, name + ".key")
    with open(path, "w") as f:
        f.write(hex_key + "\n")
    os.chmod(path, 0o600)
    return path


def need_root():
    """Not root is a failure, not a skip: the suite cannot vouch for anything without it."""
    if os.geteuid() != 0:
        print("integration tests need root (network namespaces, DPDK): run them as root "
              "(tests/run.sh), or leave them out with tests/run.sh --no-integration")
        sys.exit(1)
