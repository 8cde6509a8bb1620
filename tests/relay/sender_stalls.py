#!/usr/bin/python3
"""What a lossy transfer's time is made of, from a capture of its TCP headers.

    sender_stalls.py CAPTURE.pcap [--gap-ms 100] [--answer-ms 50] [--one-way-ms D]
    sender_stalls.py --self-test

For every TCP connection in the capture (bench_recovery_relay.py --capture writes one per
cell, taken at Linux endpoint A), the side that sent payload is the sender. Printed per
connection: its length, the sender's data segments and retransmissions (tshark's
analysis), the ACKs the other side sent per data segment, and the sender's silences: gaps
of more than --gap-ms between two data segments, with their number, their summed length
and how many fell in each length class (0.2 s, 0.4 s, ...: a retransmission timeout backs
off by doubling, RFC 6298 5.5). A silence ended by a retransmission is a timeout; the share
of those retransmissions that drew no ACK within --answer-ms shows whether the receiver
answers them (a segment and its ACK each lost with probability p leave 1 - (1 - p)^2
unanswered; a receiver that holds its ACK leaves more).

On a path with 10 % loss and a 1 ms delay the silences are most of a transfer's time, and
the receiver's part is the unanswered share and the ACKs per segment: docs/performance.md,
"Loss recovery against Linux".

With --one-way-ms D (the relay's delay each way), also the flight ends: a data segment after
which the sender sent nothing for 5 ms. Each is put at the receiver D later, with the
segments of its flight that arrived since the receiver's last ACK (sent D before the sender
saw it): k of them. Per k (1, 2, 3, 4 or more), how many flight ends there were and how many
the receiver ACKed within 5 ms of the round trip (2 D), the rest waiting for a timer (a
delayed ACK holds the last of an odd run: RFC 5681 4.2).
"""
import argparse
import bisect
import collections
import itertools
import os
import subprocess
import sys
import tempfile

FIELDS = ("frame.time_relative", "tcp.stream", "ip.src", "ip.dst", "tcp.len",
          "tcp.analysis.retransmission", "tcp.seq", "tcp.ack")
FLIGHT_PAUSE_S = 0.005  # no data for this long ends a flight
AT_ONCE_S = 0.005       # an ACK this soon after the round trip answered at once


def read(pcap):
    """Per TCP stream, its frames in order as (time, source, destination, length, resent,
    sequence number, acknowledgment number), the numbers relative (tshark's)."""
    cmd = ["tshark", "-r", pcap, "-Y", "tcp", "-T", "fields", "-E", "separator=|"]
    for f in FIELDS:
        cmd += ["-e", f]
    run = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        raise ValueError(f"tshark cannot read {pcap}: {run.stderr.strip()[-300:]}")
    streams = collections.defaultdict(list)
    for line in run.stdout.splitlines():
        t, stream, src, dst, length, resent, seq, ack = line.split("|")
        streams[int(stream)].append((float(t), src, dst, int(length or 0), bool(resent),
                                     int(seq or 0), int(ack or 0)))
    return streams


def analyse(frames, gap_s, answer_s):
    """The figures of one connection (see the module's description); None without data."""
    sent = collections.Counter(f[1] for f in frames if f[3] > 0)
    if not sent:
        return None
    sender = sent.most_common(1)[0][0]
    data = [f for f in frames if f[1] == sender and f[3] > 0]
    acks = [f[0] for f in frames if f[1] != sender]
    silences, timeouts, unanswered = [], 0, 0
    for before, after in zip(data, data[1:]):
        gap = after[0] - before[0]
        if gap <= gap_s:
            continue
        silences.append(gap)
        if not after[4]:  # ended by new data: not a timeout's retransmission
            continue
        timeouts += 1
        i = bisect.bisect_right(acks, after[0])
        if not (i < len(acks) and acks[i] <= after[0] + answer_s):
            unanswered += 1
    classes = collections.Counter(round(g, 1) for g in silences)
    return {"sender": sender, "receiver": data[0][2], "seconds": frames[-1][0] - frames[0][0],
            "data": len(data), "resent": sum(1 for f in data if f[4]),
            "acks_per_segment": len(acks) / len(data), "silences": len(silences),
            "silent_s": sum(silences), "classes": sorted(classes.items()),
            "timeouts": timeouts, "unanswered": unanswered}


def flight_ends(frames, sender, one_way_s):
    """{k: [flight ends, answered at once]} for one connection (the module's description)."""
    data = [f for f in frames if f[1] == sender and f[3] > 0]
    acks = [(f[0], f[6]) for f in frames if f[1] != sender]
    ack_times = [a[0] for a in acks]
    highest = list(itertools.accumulate((a for _, a in acks), max))  # cumulative ACK so far
    out = collections.defaultdict(lambda: [0, 0])
    for i, (t, _, _, length, _, seq, _) in enumerate(data):
        if i + 1 < len(data) and data[i + 1][0] - t < FLIGHT_PAUSE_S:
            continue
        end = seq + length
        # the highest ACK the receiver sent before this segment reached it
        n = bisect.bisect_right(ack_times, t + 2 * one_way_s)
        acked = highest[n - 1] if n else 0
        if acked >= end:
            continue  # a copy of data it had: answered by what it sent before
        first = i
        while first > 0 and data[first][0] - data[first - 1][0] < FLIGHT_PAUSE_S:
            first -= 1
        k = sum(1 for f in data[first:i + 1] if f[5] >= acked)
        later = itertools.islice(acks, bisect.bisect_left(ack_times, t), None)
        answer = next((at for at, a in later if a >= end), None)
        if answer is None:
            continue
        row = out[min(max(k, 1), 4)]
        row[0] += 1
        if answer - t - 2 * one_way_s < AT_ONCE_S:
            row[1] += 1
    return dict(out)


def flight_line(ends):
    return "flight ends, segments since the receiver's last ACK: " + ", ".join(
        f"{k if k < 4 else '4+'}: {n} ({a} ACKed at once)" for k, (n, a) in sorted(ends.items()))


def report(streams, gap_s, answer_s, one_way_s=None):
    lines = []
    for n, frames in sorted(streams.items()):
        a = analyse(frames, gap_s, answer_s)
        if a is None:
            continue
        share = a["unanswered"] / a["timeouts"] if a["timeouts"] else 0.0
        lines.append(
            f"stream {n}: {a['sender']} -> {a['receiver']}, {a['seconds']:.1f} s, "
            f"{a['data']} data segments ({a['resent']} resent), "
            f"{a['acks_per_segment']:.2f} ACKs per segment; {a['silences']} silences over "
            f"{gap_s * 1000:.0f} ms, {a['silent_s']:.1f} s in all "
            f"({', '.join(f'{c:.1f} s x{k}' for c, k in a['classes'])}), "
            f"{a['timeouts']} ended by a retransmission, {a['unanswered']} of those "
            f"({share:.2f}) drew no ACK within {answer_s * 1000:.0f} ms")
        if one_way_s is not None:
            lines.append(f"  {flight_line(flight_ends(frames, a['sender'], one_way_s))}")
    return lines


def self_test():
    """A made-up transfer: data every millisecond, ACKed, with a 0.2 s silence whose
    retransmission is answered, a 0.4 s one whose retransmission is not and a 0.3 s one
    ended by new data, unanswered too but no timeout; and a file that is no capture,
    refused."""
    from scapy.all import IP, TCP, Ether, wrpcap  # noqa: PLC0415 (Debian's scapy, self-test only)

    pkts, t, seq = [], 1000.0, 1

    def data(resent=False):
        nonlocal seq
        s = seq - 100 if resent else seq
        p = Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / TCP(sport=5000, dport=9, seq=s,
                                                                flags="A") / (b"x" * 100)
        p.time = t
        pkts.append(p)
        if not resent:
            seq += 100

    def ack(at):
        p = Ether() / IP(src="10.0.0.2", dst="10.0.0.1") / TCP(sport=9, dport=5000, ack=seq,
                                                                flags="A")
        p.time = at
        pkts.append(p)

    for _ in range(10):
        data()
        ack(t + 0.0005)
        t += 0.001
    t += 0.2
    data(resent=True)
    ack(t + 0.001)
    t += 0.4
    data(resent=True)
    t += 0.3
    data()
    t += 0.001
    data()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "made-up.pcap")
        wrpcap(path, pkts)
        a = analyse(read(path)[0], 0.1, 0.05)
        bad = os.path.join(d, "not-a-capture.pcap")
        with open(bad, "w") as f:
            f.write("not a capture\n")
        try:
            read(bad)
            print("sender_stalls self-test: FAILED: a file that is no capture was read")
            return 1
        except ValueError:
            pass
    want = {"sender": "10.0.0.1", "data": 14, "silences": 3, "timeouts": 2, "unanswered": 1,
            "classes": [(0.2, 1), (0.3, 1), (0.4, 1)]}
    got = {k: a[k] for k in want}
    if got != want or abs(a["silent_s"] - 0.901) > 0.01:
        print(f"sender_stalls self-test: FAILED: {got}, silent {a['silent_s']:.3f} s")
        return 1
    ends = flight_ends_self_test(IP, TCP, Ether, wrpcap)
    if ends != {1: [1, 0], 2: [1, 1], 3: [1, 1]}:
        print(f"sender_stalls self-test: FAILED: flight ends {ends}")
        return 1
    print("sender_stalls self-test: ok (three silences, two timeouts, one unanswered; "
          "three flight ends)")
    return 0


def flight_ends_self_test(IP, TCP, Ether, wrpcap):
    """Three flights over a path of 10 ms each way, 0.1 s apart: three segments ACKed
    together at once; three whose first two are ACKed before the third arrives, which waits
    40 ms; two ACKed together at once. Their flight ends, by k."""
    pkts, seq = [], 1

    def frame(at, src, dst, payload=b"", **kw):
        p = Ether() / IP(src=src, dst=dst) / TCP(flags="A", **kw) / payload
        p.time = at
        pkts.append(p)

    def flight(t, n, acks):
        nonlocal seq
        ends = []
        for i in range(n):
            frame(t + i * 0.0001, "10.0.0.1", "10.0.0.2", b"x" * 100, sport=5000, dport=9,
                  seq=seq)
            seq += 100
            ends.append(seq)
        for after, upto in acks:  # (seconds after the flight's first segment, segments)
            frame(t + after, "10.0.0.2", "10.0.0.1", sport=9, dport=5000, ack=ends[upto - 1])

    flight(1.0, 3, [(0.0205, 3)])
    flight(1.1, 3, [(0.02012, 2), (0.0602, 3)])
    flight(1.2, 2, [(0.0204, 2)])
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "flights.pcap")
        wrpcap(path, pkts)
        frames = read(path)[0]
    return flight_ends(frames, "10.0.0.1", 0.01)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("pcap", nargs="?")
    ap.add_argument("--gap-ms", type=float, default=100)
    ap.add_argument("--answer-ms", type=float, default=50)
    ap.add_argument("--one-way-ms", type=float,
                    help="the path's delay each way: also count the flight ends")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    if not args.pcap:
        ap.error("a capture, or --self-test")
    if not os.path.exists(args.pcap):
        print(f"sender_stalls: no such capture: {args.pcap}")
        return 2
    try:
        streams = read(args.pcap)
    except ValueError as e:
        print(f"sender_stalls: {e}")
        return 2
    one_way = args.one_way_ms / 1000 if args.one_way_ms is not None else None
    lines = report(streams, args.gap_ms / 1000, args.answer_ms / 1000, one_way)
    for line in lines:
        print(line)
    if not lines:
        print(f"sender_stalls: no TCP connection carrying data in {args.pcap}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
