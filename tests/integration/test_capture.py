#!/usr/bin/python3
"""Packet capture against the real binaries (`wirespeed-control capture`):

- 200 pings from a Linux peer captured, both directions; tshark counts 200 requests
  and 200 replies, the file has one interface per port/queue with the MTU, and
  nanosecond timestamps.
- A TCP transfer (8 MiB through the echo service) captured: tshark finds no malformed
  frame and no bad TCP checksum, and sees the payload both ways.
- Hostile frames from scapy (bad UDP and TCP checksums, a truncated IPv4 header, a
  bad IP version, a UDP datagram and a SYN to closed ports) captured with --drops: each
  frame, told apart by its IP ID, carries the expected drop reason in frame.comment.
- --count, --direction and --snaplen are honoured; -w - pipes into tshark.
- A capture reader killed with SIGKILL: the data plane withdraws the request within
  seconds, and a new capture can start (the lock went with the dead reader).
- Debian's dpdk-dumpcap attaches to a data plane that runs on hugepages (DPDK's pdump
  needs the shared memory of multi-process) and captures 20 frames of a ping.
- Full rate over memif: a source -> sink transfer between two data planes while a
  capture writes into a pipe that nobody reads for a while. The data plane keeps
  moving data in every second, and the copies it could not place are counted
  (capture summary and wirespeed_capture_dropped_copies_total).

Bounded: about a minute. Namespace wst-cap, memif socket and file prefixes wscp-*.
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness as h  # noqa: E402

DP_IP = "10.78.40.1"
PEER_IP = "10.78.40.2"
METRICS = 9681
MTU = 1500
SOCK = "/run/wirespeed-itest-wscp.sock"
S_METRICS, C_METRICS = 9682, 9683
SOURCE_S = 6


def tshark(*args):
    r = subprocess.run(["tshark", *args], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"tshark {' '.join(args)} failed: {r.stderr}")
    return r.stdout


def fields(path, *names, display_filter=None):
    args = ["-r", path, "-T", "fields"]
    for n in names:
        args += ["-e", n]
    if display_filter:
        args += ["-Y", display_filter]
    return [line.split("\t") for line in tshark(*args).splitlines() if line.strip()]


class Capture:
    """wirespeed-control capture in the background; returns once it is capturing."""

    def __init__(self, config, out, *args, stdout=None, log=None):
        self.log_path = log or (out + ".log")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen([h.CONTROL, "-c", config, "capture", *args, "-w", out],
                                     stdout=stdout, stderr=self.log)
        deadline = time.time() + 10
        while "capturing" not in self.text():
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"capture did not start: {self.text()}")
            time.sleep(0.05)

    def text(self):
        with open(self.log_path) as f:
            return f.read()

    def stop(self, timeout=15):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        rc = self.proc.wait(timeout)
        return rc, self.text()


def check_pings(res, cfg, tmp):
    out = os.path.join(tmp, "ping.pcapng")
    cap = Capture(cfg, out, "--port", "p0")
    h.sh(f"ping -c 200 -i 0.005 -W 1 {DP_IP}", ns="wst-cap", timeout=60)
    rc, log = cap.stop()
    res.check(rc == 0, "capture of pings exits 0", log)
    req = fields(out, "icmp.seq", display_filter=f"icmp.type == 8 && ip.dst == {DP_IP}")
    rep = fields(out, "icmp.seq", display_filter=f"icmp.type == 0 && ip.src == {DP_IP}")
    res.check(len(req) == 200 and len(rep) == 200,
              f"tshark counts {len(req)} echo requests (rx) and {len(rep)} replies (tx) of 200")
    info = subprocess.run(["capinfos", out], capture_output=True, text=True).stdout
    res.check("nanoseconds" in info and "Name = p0/0" in info and "MTU 1500" in info,
              "one interface p0/0 with the MTU, nanosecond timestamps", info[:600])
    flags = fields(out, "frame.packet_flags_direction", "icmp.type", display_filter="icmp")
    dirs = {(int(f[0], 16), f[1]) for f in flags}
    res.check(dirs == {(1, "8"), (2, "0")},
              f"requests are flagged inbound, replies outbound ({dirs})")


def check_options(res, cfg, tmp):
    out = os.path.join(tmp, "count.pcapng")
    cap = Capture(cfg, out, "--port", "p0", "--direction", "rx", "--count", "10", "--snaplen", "60")
    h.sh(f"ping -c 30 -i 0.01 -s 500 {DP_IP}", ns="wst-cap", timeout=30)
    rc, log = cap.proc.wait(15), cap.text()
    rows = fields(out, "frame.cap_len", "frame.len", "frame.packet_flags_direction")
    res.check(rc == 0 and len(rows) == 10, f"--count 10 stops after 10 frames ({len(rows)})", log)
    res.check(all(r[0] == "60" and int(r[1]) > 500 and int(r[2], 16) == 1 for r in rows),
              "--snaplen 60 keeps 60 bytes of each frame and its wire length; rx only",
              str(rows[:3]))
    # -w - into tshark through a pipe.
    p = subprocess.Popen(f"{h.CONTROL} -c {cfg} capture --seconds 3 -w - | tshark -r - "
                         f"-Y 'icmp.type == 8' -T fields -e icmp.seq",
                         shell=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1)
    h.sh(f"ping -c 5 -i 0.05 {DP_IP}", ns="wst-cap")
    stdout, _ = p.communicate(timeout=30)
    res.check(len(stdout.split()) == 5, f"-w - | tshark -r - sees the 5 requests ({stdout.split()})")
    r = subprocess.run([h.CONTROL, "-c", cfg, "capture", "--port", "nope", "-w", "/dev/null"],
                       capture_output=True, text=True, timeout=20)
    res.check(r.returncode == 1 and "no port named 'nope'" in r.stderr,
              "an unknown port is refused by name", r.stderr)


def check_tcp(res, cfg, tmp):
    out = os.path.join(tmp, "tcp.pcapng")
    cap = Capture(cfg, out, "--port", "p0")
    client = (
        "import socket,threading\n"
        f"s=socket.create_connection(('{DP_IP}',7),timeout=20)\n"
        "data=bytes(range(256))*32768\n"
        "got=bytearray()\n"
        "def rd():\n"
        "    while len(got)<len(data):\n"
        "        b=s.recv(1<<16)\n"
        "        if not b: break\n"
        "        got.extend(b)\n"
        "t=threading.Thread(target=rd);t.start();s.sendall(data);t.join(60)\n"
        "print('same' if bytes(got)==data else 'differ')\n")
    r = h.sh(f"/usr/bin/python3 -c \"{client}\"", ns="wst-cap", timeout=90)
    rc, log = cap.stop()
    res.check("same" in r.stdout, "8 MiB echoed intact while captured", r.stdout + r.stderr)
    bad = fields(out, "frame.number", display_filter="_ws.malformed || _ws.expert.severity == error")
    res.check(len(bad) == 0, f"tshark finds no malformed frame ({len(bad)})")
    cks = tshark("-r", out, "-o", "tcp.check_checksum:TRUE", "-Y", "tcp.checksum.status == 0",
                 "-T", "fields", "-e", "frame.number", "-e", "frame.packet_flags_direction",
                 "-e", "ip.src", "-e", "tcp.seq_raw", "-e", "tcp.len", "-e", "tcp.flags.str",
                 "-e", "frame.len")
    res.check(cks.strip() == "", "no bad TCP checksum in the capture",
              "(frame, direction, source, seq, len, flags, frame length): " + cks[:600])
    lens = fields(out, "tcp.len", "ip.src", display_filter="tcp.len > 0")
    to_us = sum(int(a) for a, src in lens if src == PEER_IP)
    from_us = sum(int(a) for a, src in lens if src == DP_IP)
    # The reader may fall behind on this shared 2-core machine: then the copies it missed
    # are counted, and what is missing from the file is at most what they could hold.
    m = re.search(r", (\d+) copies dropped", log)
    lost = int(m.group(1)) if m else -1
    mss = MTU - 40
    res.check(lost >= 0 and to_us + lost * mss >= 8 << 20 and from_us + lost * mss >= 8 << 20
              and (lost > 0 or (to_us >= 8 << 20 and from_us >= 8 << 20)),
              f"payload both ways in the capture ({to_us} B in, {from_us} B out, "
              f"{lost} copies dropped and counted)", log)


HOSTILE = r'''
from scapy.all import Ether, IP, UDP, TCP, Raw, sendp, get_if_hwaddr
import sys
iface, dst, dmac = sys.argv[1], sys.argv[2], sys.argv[3]
src = get_if_hwaddr(iface)
def ip(i, **kw):
    return Ether(src=src, dst=dmac) / IP(src="10.78.40.2", dst=dst, id=i, **kw)
frames = [
    ip(101) / UDP(sport=4000, dport=7, chksum=0x1234) / Raw(b"x" * 20),
    ip(102) / TCP(sport=4001, dport=7, flags="S", chksum=0x1234),
    ip(103) / UDP(sport=4002, dport=9999) / Raw(b"closed"),
    ip(104) / TCP(sport=4003, dport=9998, flags="S"),
]
short = bytes(ip(105) / UDP(sport=4004, dport=7))[:14 + 12]   # IPv4 header cut short
badver = bytearray(bytes(ip(106) / UDP(sport=4005, dport=7) / Raw(b"v")))
badver[14] = 0x65                                              # version 6, IHL 5
sendp(frames, iface=iface, verbose=False)
sendp([Ether(short), Ether(bytes(badver))], iface=iface, verbose=False)
'''

EXPECTED = {"101": "udp_bad_checksum", "102": "tcp_bad_checksum", "103": "udp_port_unreachable",
            "104": "tcp_no_listener"}


def check_drops(res, cfg, tmp, dp_mac, peer_if):
    out = os.path.join(tmp, "drops.pcapng")
    cap = Capture(cfg, out, "--drops")
    script = os.path.join(tmp, "hostile.py")
    with open(script, "w") as f:
        f.write(HOSTILE)
    h.sh(f"/usr/bin/python3 {script} {peer_if} {DP_IP} {dp_mac}", ns="wst-cap", timeout=60)
    time.sleep(0.5)
    rc, log = cap.stop()
    rows = fields(out, "ip.id", "frame.comment", "frame.len")
    by_id = {str(int(r[0], 16)) if r[0].startswith("0x") else r[0]: r[1] for r in rows if r[0]}
    for ip_id, reason in EXPECTED.items():
        res.check(by_id.get(ip_id) == reason,
                  f"dropped frame IP ID {ip_id} has comment {reason}", f"got {by_id.get(ip_id)}")
    comments = [r[1] for r in rows]
    res.check("ipv4_truncated" in comments,
              f"the truncated IPv4 header is captured with its reason ({comments})")
    # Not IPv4 to tshark either, so told apart by its reason alone.
    res.check("ipv4_bad_version" in comments, "the frame with IP version 6 in an IPv4 "
              "ethertype is captured as ipv4_bad_version")
    res.check(all(c for c in comments), "every captured drop has a reason")


def check_reader_killed(res, cfg, tmp, dp):
    out = os.path.join(tmp, "killed.pcapng")
    cap = Capture(cfg, out)
    cap.proc.send_signal(signal.SIGKILL)
    cap.proc.wait()
    deadline = time.time() + 8
    while "capture disarmed" not in dp.output() and time.time() < deadline:
        time.sleep(0.2)
    res.check("capture disarmed" in dp.output(),
              "the data plane withdraws a killed reader's request")
    again = Capture(cfg, os.path.join(tmp, "again.pcapng"), "--seconds", "1")
    rc, log = again.stop()
    res.check(rc == 0, "a new capture starts after the killed one", log)


class Hugepages:
    """Reserves 2 MiB hugepages and mounts hugetlbfs for the test; restores both after."""

    def __init__(self, pages):
        self.pages = pages
        self.path = "/proc/sys/vm/nr_hugepages"

    def __enter__(self):
        with open(self.path) as f:
            self.before = int(f.read())
        with open(self.path, "w") as f:
            f.write(str(max(self.before, self.pages)))
        with open(self.path) as f:
            got = int(f.read())
        if got < self.pages:
            raise RuntimeError(f"could reserve only {got} of {self.pages} hugepages "
                               f"({self.path}); free memory or reserve them at boot")
        os.makedirs("/dev/hugepages", exist_ok=True)
        self.mounted = h.sh("mountpoint -q /dev/hugepages", check=False).returncode != 0
        if self.mounted:
            h.sh("mount -t hugetlbfs nodev /dev/hugepages")
        return self

    def __exit__(self, *exc):
        if self.mounted:
            h.sh("umount /dev/hugepages", check=False)
        with open(self.path, "w") as f:
            f.write(str(self.before))


def check_dpdk_dumpcap(res, tmp):
    with h.VethPeer("cah", PEER_IP) as peer, Hugepages(256):
        cfg = h.write_config(tmp, device=f"net_af_packet0,iface={peer.dp_if}",
                             address=f"{DP_IP}/24", prefix="wscp-h", metrics_port=METRICS,
                             services=["{ name: echo-udp, kind: echo, protocol: udp, port: 7 }"])
        with open(cfg) as f:
            text = f.read()
        with open(cfg, "w") as f:
            f.write(text.replace("hugepages: false", "hugepages: true").replace(
                "memory_mb: 512", "memory_mb: 256"))
        dp = h.Dataplane(cfg, tmp)
        with dp:
            res.check("dpdk-dumpcap and dpdk-pdump may attach" in dp.output(),
                      "with hugepages the data plane registers the pdump server")
            out = os.path.join(tmp, "dumpcap.pcapng")
            log = open(os.path.join(tmp, "dumpcap.log"), "w")
            p = subprocess.Popen(["timeout", "30", "dpdk-dumpcap", "--file-prefix", "wscp-h", "-i",
                                  "net_af_packet0", "-c", "20", "-w", out],
                                 stdout=log, stderr=subprocess.STDOUT)
            time.sleep(3)
            h.sh(f"ping -c 15 -i 0.05 {DP_IP}", ns=peer.ns, check=False)
            rc = p.wait(40)
            with open(log.name) as f:
                text = f.read()
            frames = fields(out, "frame.number") if os.path.exists(out) else []
            res.check(rc == 0 and len(frames) == 20,
                      f"dpdk-dumpcap captured {len(frames)} of 20 frames (exit {rc})", text[-500:])


def memif_config(tmp, role, services, lcore, metrics):
    d = os.path.join(tmp, role)
    os.makedirs(d, exist_ok=True)
    ip = "10.79.4.1" if role == "server" else "10.79.4.2"
    path = h.write_config(d, device=f"net_memif0,role={role},socket={SOCK},id=0",
                          address=f"{ip}/24", services=services, prefix=f"wscp-{role[0]}",
                          lcores=(lcore,), metrics_port=metrics)
    return path, d


def check_full_rate(res, tmp):
    if os.path.exists(SOCK):
        os.unlink(SOCK)
    s_cfg, s_dir = memif_config(tmp, "server", [
        "{ name: sink, kind: sink, protocol: tcp, port: 9 }"], 0, S_METRICS)
    rep = os.path.join(tmp, "source.json")
    c_cfg, c_dir = memif_config(tmp, "client", [
        '{ name: load, kind: source, protocol: tcp, target: "10.79.4.1:9", '
        f'message_size: 65536, connections: 1, duration_s: {SOURCE_S}, report: {rep} }}'],
        1, C_METRICS)
    server = h.Dataplane(s_cfg, s_dir)
    with server, h.Control(s_cfg, s_dir, S_METRICS) as ctl:
        client = h.Dataplane(c_cfg, c_dir)
        client.start()
        time.sleep(1)
        # A reader that stalls: its pipe fills, its ring fills, the data plane drops copies.
        log = os.path.join(tmp, "stall.log")
        stall = subprocess.Popen(
            f"({h.CONTROL} -c {s_cfg} capture --seconds {SOURCE_S - 2} -w - 2>{log}; "
            f"echo $? > {log}.rc) | "
            f"(sleep {SOURCE_S - 3}; cat > /dev/null)", shell=True)
        stall.wait(SOURCE_S + 20)
        try:
            client.proc.wait(SOURCE_S + 30)
        except subprocess.TimeoutExpired:
            pass
        rc = client.stop()
        out = client.output()
        with open(log) as f:
            summary = f.read()
        with open(log + ".rc") as f:
            stall_rc = int(f.read().strip() or -1)
        res.check(server.proc.poll() is None, "the server data plane kept running")
        res.check(rc == 0, f"the client finished by itself (exit {rc})", out[-300:])
        full, stalled = h.progress(out, "load", SOURCE_S)
        res.check(len(full) >= 3 and not stalled,
                  f"data moved in every second while captured ({[n for _, n in full]})",
                  f"stalled at {stalled}")
        m = re.search(r"(\d+) frames written .*?, (\d+) copies dropped", summary)
        dropped = int(m.group(2)) if m else 0
        res.check(m is not None and dropped > 0,
                  f"the capture counted {dropped} copies dropped (reader stalled)", summary)
        res.check(stall_rc != 0 and "withdrew the capture because this reader stalled" in summary,
                  "the stalled reader learns that the data plane withdrew its request, says so "
                  f"and exits non-zero ({stall_rc})", summary)
        time.sleep(1.2)
        metric = ctl.value("wirespeed_capture_dropped_copies_total")
        copied = ctl.value("wirespeed_capture_copied_frames_total")
        res.check(metric >= dropped > 0 and copied > 0,
                  f"metrics: {copied:.0f} copied, {metric:.0f} copies dropped")
        try:
            with open(rep) as f:
                src = json.load(f)
        except (OSError, ValueError):
            src = {}
        res.check(src.get("errors", 1) == 0 and src.get("messages", 0) > 0,
                  f"source: {src.get('messages')} messages, {src.get('bits_per_second', 0) / 1e9:.2f} "
                  "Gbit/s, no error")


def main():
    h.need_root()
    res = h.Results("capture")
    with tempfile.TemporaryDirectory() as tmp, h.VethPeer("cap", PEER_IP) as peer:
        cfg = h.write_config(tmp, device=f"net_af_packet0,iface={peer.dp_if}",
                             address=f"{DP_IP}/24", prefix="wscp-a", metrics_port=METRICS,
                             services=["{ name: echo-udp, kind: echo, protocol: udp, port: 7 }",
                                       "{ name: echo-tcp, kind: echo, protocol: tcp, port: 7, "
                                       "framing: none }"])
        dp = h.Dataplane(cfg, tmp)
        with dp:
            mac = re.search(r"mac ([0-9a-f:]{17})", dp.output()).group(1)
            h.sh(f"ip neigh replace {DP_IP} lladdr {mac} dev {peer.peer_if}", ns=peer.ns)
            check_pings(res, cfg, tmp)
            check_options(res, cfg, tmp)
            check_tcp(res, cfg, tmp)
            check_drops(res, cfg, tmp, mac, peer.peer_if)
            check_reader_killed(res, cfg, tmp, dp)
    with tempfile.TemporaryDirectory() as tmp:
        check_dpdk_dumpcap(res, tmp)
    with tempfile.TemporaryDirectory() as tmp:
        check_full_rate(res, tmp)
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
