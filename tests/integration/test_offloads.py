#!/usr/bin/python3
"""Offloads on a net_tap port with a Linux peer: TCP transfers through the echo
service and from the http service (a 128 MiB generated body) with TSO on (the stack hands the port super-segments, which the tap PMD
cuts with librte_gso) and again with `offloads: software` (the stack segments
and checksums everything itself). Both times every byte that comes back is
checked, the frames the kernel receives never exceed the MTU, and the counters
prove which path ran.

usage: test_offloads.py
"""
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness as h  # noqa: E402

TOTAL = 48 << 20  # bytes through the echo service per mode
BODY = 128 << 20  # bytes of the generated HTTP body fetched per mode

# A bulk transfer from the data plane: GET a generated body and check every byte
# against the 64-byte line the http service repeats (stack/apps/http_service.cpp).
# Segments of 1434 or 1448 bytes are no multiple of that period, so a lost,
# duplicated or misplaced segment shows.
HTTP_CLIENT = r'''
import socket, sys, time
host, size = sys.argv[1], int(sys.argv[2])
line = b"wirespeed generated body 0123456789 abcdefghijklmnopqrstuvwxyz.\n"
s = socket.create_connection((host, 80), timeout=30)
s.sendall(b"GET /big.bin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
buf = b""
while b"\r\n\r\n" not in buf:
    b = s.recv(65536)
    if not b:
        break
    buf += b
head, _, rest = buf.partition(b"\r\n\r\n")
t0 = time.time()
got, bad = 0, 0
def check(b):
    global got, bad
    off = got % 64
    want = (line * ((off + len(b)) // 64 + 1))[off:off + len(b)]
    bad += want != b
    got += len(b)
check(rest)
while got < size:
    b = s.recv(1 << 20)
    if not b:
        break
    check(b)
dt = time.time() - t0
print(f"status={head.split(b' ')[1].decode() if head else '-'} body={got} bad_chunks={bad} mbps={got*8/dt/1e6:.0f}")
'''

CLIENT = r'''
import hashlib, socket, sys, threading, time
host, total = sys.argv[1], int(sys.argv[2])
data = hashlib.shake_128(b"wirespeed-offloads").digest(total)
s = socket.create_connection((host, 7), timeout=30)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
got = bytearray()
def rx():
    while len(got) < total:
        b = s.recv(1 << 20)
        if not b:
            break
        got.extend(b)
t = threading.Thread(target=rx)
t.start()
t0 = time.time()
view = memoryview(data)
off = 0
while off < total:
    off += s.send(view[off:off + (1 << 20)])
t.join(120)
dt = time.time() - t0
s.close()
bad = next((i for i in range(0, min(len(got), total), 4096) if got[i:i+4096] != data[i:i+4096]), -1)
same = hashlib.sha256(got).hexdigest() == hashlib.sha256(data).hexdigest()
print(f"sent={total} received={len(got)} equal={int(same)} first_bad_block={bad} mbps={len(got)*8/dt/1e6:.0f}")
'''


def free_port():
    """A TCP port nobody listens on now: other helpers' benchmarks run their own
    control processes on fixed ports, and scraping one of those would read their
    counters."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def frame_lengths(pcap):
    """Ethernet frame lengths in a capture, from tcpdump -e."""
    r = h.sh(f"tcpdump -r {pcap} -nn -e", timeout=120)
    return [int(m.group(1)) for m in re.finditer(r", length (\d+):", r.stdout)]


def run_mode(res, mode, n, tmp):
    dp_ip, peer_ip = f"10.81.{n}.1", f"10.81.{n}.2"
    metrics_port = free_port()
    extra_dp = "  offloads: software" if mode == "software" else ""
    peer = h.TapPeer(f"offl{n}", peer_ip)
    with peer:
        cfg = h.write_config(
            tmp, device=peer.device(), address=f"{dp_ip}/24", prefix=f"wst-offload-{n}",
            metrics_port=metrics_port, extra_dataplane=extra_dp,
            services=["{ name: echo-tcp, kind: echo, protocol: tcp, port: 7, framing: none }",
                      "{ name: web, kind: http, protocol: tcp, port: 80, responses: "
                      f"[ {{ path: /big.bin, body_bytes: {BODY}, content_type: application/octet-stream }} ] }}"])
        dp = h.Dataplane(cfg, tmp)
        with dp, h.Control(cfg, tmp, metrics_port) as ctl:
            peer.attach()
            log = dp.output()
            port_line = next((l for l in log.splitlines() if "wirespeed: port p0" in l), "")
            if mode == "tso":
                res.check("TSO on" in port_line, "tso: the port reports TSO on at start", port_line)
            else:
                res.check("TSO off (offloads: software)" in port_line,
                          "software: TSO off at start, named cause", port_line)
            pcap = os.path.join(tmp, f"{mode}.pcap")
            cap = h.Capture(peer.ns, peer.peer_if, pcap,
                            ["-nn", "-s", "80", "-c", "600000", "tcp", "and", "(src", "port", "7",
                             "or", "src", "port", "80)"])
            with cap:
                path = os.path.join(tmp, "client.py")
                open(path, "w").write(CLIENT)
                r = h.sh(f"/usr/bin/python3 {path} {dp_ip} {TOTAL}", ns=peer.ns, check=False, timeout=300)
                out = r.stdout.strip()
                print(f"  {mode}: {out} {r.stderr.strip()[-300:]}")
                res.check(f"received={TOTAL} equal=1" in out,
                          f"{mode}: {TOTAL >> 20} MiB echoed, every byte equal (SHA-256)", out)
                path = os.path.join(tmp, "http_client.py")
                open(path, "w").write(HTTP_CLIENT)
                r = h.sh(f"/usr/bin/python3 {path} {dp_ip} {BODY}", ns=peer.ns, check=False, timeout=300)
                out = r.stdout.strip()
                print(f"  {mode}: GET {out} {r.stderr.strip()[-300:]}")
                res.check(f"status=200 body={BODY} bad_chunks=0" in out,
                          f"{mode}: {BODY >> 20} MiB HTTP body from the data plane, every byte as generated", out)
                time.sleep(0.5)
                cap_log = cap.stop()
            lengths = frame_lengths(pcap)
            res.check(len(lengths) > 1000 and max(lengths) <= 1514,
                      f"{mode}: every frame the kernel received fits the MTU "
                      f"({len(lengths)} captured, largest {max(lengths) if lengths else 0})", cap_log)
            time.sleep(0.3)
            tso = ctl.value("wirespeed_tcp_tso_super_segments_total")
            tso_frames = ctl.value("wirespeed_tx_tso_frames_total")
            chained = ctl.value("wirespeed_tx_chained_frames_total")
            segs = ctl.value("wirespeed_tcp_sent_segments_total")
            rexmit = ctl.value("wirespeed_tcp_retransmitted_segments_total")
            print(f"  {mode}: tso_super_segments={tso:.0f} tx_tso_frames={tso_frames:.0f} "
                  f"tx_chained={chained:.0f} segments={segs:.0f} retransmits={rexmit:.0f} "
                  f"wire frames={len(lengths)}")
            if mode == "tso":
                res.check(tso > 1000 and tso_frames == tso,
                          "tso: super-segments were handed to the port (counted by TCP and MbufIo)",
                          f"{tso} {tso_frames}")
                # Each super-segment became several wire frames: the port did the cutting.
                data_frames = sum(1 for n in lengths if n > 200)
                res.check(data_frames >= 2 * tso, "tso: the wire carried at least 2 frames per super-segment",
                          f"{data_frames} data frames for {tso:.0f} super-segments")
            else:
                res.check(tso == 0 and tso_frames == 0 and chained == 0,
                          "software: no super-segment, no chained frame", f"{tso} {tso_frames} {chained}")
            res.check(rexmit < segs * 0.01, f"{mode}: retransmissions under 1% ({rexmit:.0f})")
            drops = {k: v for k, v in ctl.drops().items() if v and k not in ("eth_not_for_us", "ipv4_not_for_us")}
            res.check(not any(k in drops for k in ("frame_too_long", "no_mbuf", "tx_queue_full")),
                      f"{mode}: no frame_too_long / no_mbuf / tx_queue_full drops", str(drops))
        rc = dp.stop()
        res.check(rc == 0, f"{mode}: data plane exits cleanly", str(rc))


def main():
    h.need_root()
    h.require("tcpdump")
    res = h.Results("offloads")
    for n, mode in ((1, "tso"), (2, "software")):
        tmp = h.temp_dir(f"ws-offload-{mode}-")
        try:
            run_mode(res, mode, n, tmp)
        except Exception as e:  # a failed start is a failed check, then the other mode runs
            res.check(False, f"{mode}: ran to the end", repr(e))
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
