#!/usr/bin/python3
"""One end of a pattern transfer: COUNT length32 messages of SIZE bytes of the
deterministic pattern (docs/framing.md), as `wsperf source` and wirespeed's `source` send
them. Prints one JSON line.

recv: accepts one connection on IP:PORT, reads it to the end and checks every byte;
      seconds run from the accept to the peer's FIN.
send: connects to IP:PORT with congestion control CC (TCP_CONGESTION: a namespace may
      only default to the algorithms the host allows), sends, and waits for the peer's
      FIN, which says it has everything; seconds run from the connect. Its line carries
      the socket's TCP_INFO at that moment (tcp_info below): how the kernel's sender saw
      the receiver.

usage: pattern_peer.py recv IP PORT SIZE COUNT TIMEOUT_S
       pattern_peer.py send IP PORT SIZE COUNT TIMEOUT_S CC
"""
import hashlib
import json
import socket
import struct
import sys
import time

M64 = (1 << 64) - 1


def pattern_key(seq):
    z = (seq + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def stream(size, count):
    """The COUNT messages of SIZE pattern bytes, each after its 4-byte length."""
    # Byte i of word w of a message is byte (i) of its key plus word_mix(w) (mod 256).
    words = (size + 7) // 8
    mixes = [((w * 0x9E3779B1) & 0xFFFFFFFF) >> 24 for w in range(words)]
    for seq in range(count):
        key = pattern_key(seq).to_bytes(8, "little")
        variants = [bytes((k + m) & 0xFF for k in key) for m in range(256)]
        payload = b"".join(variants[m] for m in mixes)[:size]
        yield size.to_bytes(4, "big") + payload


def expected_sha(size, count):
    h = hashlib.sha256()
    for m in stream(size, count):
        h.update(m)
    return h.hexdigest()


# struct tcp_info (include/uapi/linux/tcp.h): the fields a sender's recovery shows in, by
# byte offset and struct format. Older kernels return a shorter struct: fields past its end
# are left out.
TCP_INFO_FIELDS = (
    ("ca_state", 1, "B"), ("snd_cwnd", 80, "I"), ("snd_ssthresh", 76, "I"),
    ("reordering", 88, "I"), ("total_retrans", 100, "I"), ("segs_out", 136, "I"),
    ("segs_in", 140, "I"), ("min_rtt_us", 148, "I"), ("srtt_us", 68, "I"),
    ("data_segs_out", 156, "I"), ("busy_us", 168, "Q"), ("rwnd_limited_us", 176, "Q"),
    ("sndbuf_limited_us", 184, "Q"), ("delivered", 192, "I"), ("dsack_dups", 216, "I"),
    ("reord_seen", 220, "I"), ("snd_wnd", 228, "I"))


def tcp_info(s):
    """TCP_INFO_FIELDS of socket s (srtt in microseconds: the kernel's rtt field)."""
    raw = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    return {name: struct.unpack_from(fmt, raw, off)[0] for name, off, fmt in TCP_INFO_FIELDS
            if off + struct.calcsize(fmt) <= len(raw)}


def send(ip, port, size, count, timeout, cc):
    data = b"".join(stream(size, count))
    out = {"bytes": 0, "seconds": None, "intact": False, "error": None}
    s = socket.socket()
    try:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
        s.settimeout(timeout)
        t0 = time.monotonic()
        s.connect((ip, port))
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        while s.recv(65536):  # whatever the peer sends, until its FIN
            if time.monotonic() - t0 > timeout:
                raise TimeoutError(f"not finished in {timeout} s")
        out["seconds"] = time.monotonic() - t0
        out["bytes"] = len(data)
        out["intact"] = True  # the receiver checks; its FIN came after all of it
        out["tcp_info"] = tcp_info(s)
    except Exception as e:  # reported in the JSON: the caller counts a failed transfer
        out["error"] = repr(e)
    s.close()
    print(json.dumps(out), flush=True)


def recv(ip, port, size, count, timeout):
    want = expected_sha(size, count)
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((ip, port))
    ls.listen(1)
    ls.settimeout(timeout)
    print("listening", file=sys.stderr, flush=True)
    out = {"bytes": 0, "seconds": None, "intact": False, "error": None}
    try:
        s, _ = ls.accept()
        t0 = time.monotonic()
        s.settimeout(timeout)
        h = hashlib.sha256()
        while True:
            b = s.recv(1 << 20)
            if not b:
                break
            h.update(b)
            out["bytes"] += len(b)
            if time.monotonic() - t0 > timeout:
                raise TimeoutError(f"not finished in {timeout} s")
        out["seconds"] = time.monotonic() - t0
        out["intact"] = out["bytes"] == count * (size + 4) and h.hexdigest() == want
        s.close()
    except Exception as e:  # reported in the JSON: the caller counts a failed transfer
        out["error"] = repr(e)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    args = sys.argv[2:]
    common = (args[0], int(args[1]), int(args[2]), int(args[3]), float(args[4]))
    if sys.argv[1] == "send":
        send(*common, args[5])
    else:
        recv(*common)
