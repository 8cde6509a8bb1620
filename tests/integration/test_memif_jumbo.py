#!/usr/bin/python3
"""TCP at MTU 9000 between two data planes over net_memif (chained mbufs
everywhere the stack reads or writes packets, end to end through the real binaries).

A server data plane (lcore 0: `echo` and `sink` over TCP) and a client data plane
(lcore 1: a 1 MiB `source` for 4 s and an 8000-byte `ping` of 300 round trips, both
length32) talk over one memif pair at MTU 9000, once with 2 KiB chained mbufs
(`frame_buffers: auto`) and once with whole-frame mbufs (`frame_buffers: whole`).
Checked each time:

- the port note says memif gets one whole-frame buffer (bsize) per frame: DPDK 22.11's
  memif merges frames that span several buffers with stale ring slots, which stalled
  exactly this transfer (docs/benchmarks.md, "The chained-memif stall, found");
- the source moved data in every full second of its run (no stall) and reports no error;
  the sink verified every byte (a pattern error resets the connection and counts a
  failure) and received at least what the source counts as sent;
- the ping got all 300 echoes back, each verified;
- the server saw no PAWS-rejected segment (the stale-slot replay's signature) and at most
  1 % of its segments out of window (retransmissions of data it already had).

Bounded to about a minute; memif socket and file prefixes are wsmj-*.
"""
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness as h  # noqa: E402

SOCK = "/run/wirespeed-itest-wsmj.sock"
SERVER_IP = "10.79.0.1"
CLIENT_IP = "10.79.0.2"
S_METRICS, C_METRICS = 9671, 9672
SOURCE_S = 4
PINGS = 300


def config(tmp, role, services, lcore, metrics, frame_buffers):
    return h.memif_config(tmp, role, sock=SOCK, ips=(SERVER_IP, CLIENT_IP), prefix="wsmj",
                          services=services, mtu=9000, lcores=(lcore,), metrics_port=metrics,
                          port_keys=[f"frame_buffers: {frame_buffers}"] if frame_buffers else [])


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def run_variant(res, tmp, label, frame_buffers):
    if os.path.exists(SOCK):
        os.unlink(SOCK)
    s_cfg, s_dir = config(tmp, "server", [
        "{ name: echo, kind: echo, protocol: tcp, port: 7 }",
        "{ name: sink, kind: sink, protocol: tcp, port: 9 }"], 0, S_METRICS, frame_buffers)
    src_rep = os.path.join(tmp, f"{label}-source.json")
    ping_rep = os.path.join(tmp, f"{label}-ping.json")
    c_cfg, c_dir = config(tmp, "client", [
        f'{{ name: load, kind: source, protocol: tcp, target: "{SERVER_IP}:9", '
        f'message_size: 1048576, connections: 1, duration_s: {SOURCE_S}, report: {src_rep} }}',
        f'{{ name: rtt, kind: ping, protocol: tcp, target: "{SERVER_IP}:7", '
        f'message_size: 8000, count: {PINGS}, report: {ping_rep} }}'], 1, C_METRICS, frame_buffers)
    server = h.Dataplane(s_cfg, s_dir)
    with server, h.Control(s_cfg, s_dir, S_METRICS) as ctl:
        note = server.output()
        res.check("one 9024-byte memif buffer per frame" in note,
                  f"{label}: the server's memif port holds a whole frame per buffer",
                  note.strip().splitlines()[-2][:300] if note.strip() else "")
        client = h.Dataplane(c_cfg, c_dir)
        client.start()
        try:
            client.proc.wait(SOURCE_S + 40)
        except Exception:  # noqa: BLE001 - a hung client is the failure reported below
            pass
        rc = client.stop()
        out = client.output()
        res.check(rc == 0, f"{label}: the client data plane finished by itself (exit {rc})",
                  out[-400:])
        src, ping = load(src_rep), load(ping_rep)
        res.check(src.get("messages", 0) > 0 and src.get("errors", 1) == 0,
                  f"{label}: source sent {src.get('messages')} MiB messages without error", str(src)[:300])
        # Progress lines: "load: 2.0 s, N messages, ..." each second of the run.
        full, stalled = h.progress(out, "load", SOURCE_S)
        res.check(len(full) >= 2 and not stalled,
                  f"{label}: the transfer moved in every second ({[n for _, n in full]})",
                  f"no progress in the second ending at {stalled}")
        res.check(ping.get("messages", 0) == PINGS and ping.get("errors", 1) == 0,
                  f"{label}: ping got {ping.get('messages')}/{PINGS} 8000-byte echoes, verified",
                  str(ping)[:300])
        time.sleep(0.3)
        m = ctl.scrape()

        def val(name, **labels):
            return m.get((name, frozenset(labels.items())), 0.0)
        sink_bytes = val("wirespeed_service_received_bytes_total", service="sink")
        res.check(val("wirespeed_service_send_failures_total", service="sink") == 0
                  and sink_bytes >= src.get("bytes", 1 << 62),
                  f"{label}: the sink verified {sink_bytes / 2**20:.0f} MiB, no pattern error "
                  f"(source counted {src.get('bytes', 0) / 2**20:.0f} MiB)")
        segs = val("wirespeed_tcp_received_segments_total")
        paws = val("wirespeed_drops_total", reason="tcp_paws_rejected")
        oow = val("wirespeed_drops_total", reason="tcp_out_of_window")
        res.check(paws == 0 and oow <= 0.01 * max(segs, 1),
                  f"{label}: server took {segs:.0f} segments, {paws:.0f} PAWS-rejected, "
                  f"{oow:.0f} out of window")


def main():
    h.need_root()
    res = h.Results("memif-jumbo")
    with tempfile.TemporaryDirectory(prefix="wsmj-") as tmp:
        try:
            run_variant(res, tmp, "chained 2 KiB mbufs", "")
            run_variant(res, tmp, "whole-frame mbufs", "whole")
        finally:
            if os.path.exists(SOCK):
                os.unlink(SOCK)
    sys.exit(res.finish())


if __name__ == "__main__":
    main()
