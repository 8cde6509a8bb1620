#!/usr/bin/env python3
"""A TCP ping keeps making progress beside bulk TCP over memif, and the client stops cleanly.

Two data planes over net_memif, one lcore each, idle: adaptive. The server runs a TCP sink
(:9) and echo (:7); the client runs a TCP source of 4 connections of 1 MiB messages into the
sink and a TCP ping of 64-byte messages through the echo. The bulk traffic keeps the TX
queues at the pressure mark (tcp.low_buffers): the server's with ACKs, the client's with
data. The ping must complete round trips in every second of the run (it waits its turn at
the mark, it is never starved), and the client must exit 0 when it is stopped with SIGINT
while its connections are still busy.

Bounded: RUN_SECONDS of traffic plus start-up and stop timeouts (under 60 s).
Usage: test_memif_ping_stall.py   (root; WS_BUILD_DIR = the build directory)
"""
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness as h  # noqa: E402

TAG = "mpst"
SOCK = f"/run/wirespeed-wst-{TAG}-{os.getpid()}.sock"
SERVER_IP, CLIENT_IP = "10.96.0.1", "10.96.0.2"
RUN_SECONDS = 10


def main():
    h.need_root()
    res = h.Results("memif-ping-stall")
    tmp = h.temp_dir(f"wst-{TAG}-")
    if os.path.exists(SOCK):
        os.unlink(SOCK)
    srv_dir, cli_dir = os.path.join(tmp, "srv"), os.path.join(tmp, "cli")
    os.makedirs(srv_dir)
    os.makedirs(cli_dir)
    device = f"net_memif0,role={{}},socket={SOCK},id=0"
    srv_cfg = h.write_config(srv_dir, device=device.format("server"), address=f"{SERVER_IP}/24",
                             prefix=f"wst-{TAG}-srv", lcores=(0,), mac="02:00:00:00:96:01",
                             metrics_port=9575,
                             services=["{ name: sink, kind: sink, protocol: tcp, port: 9 }",
                                       "{ name: echo, kind: echo, protocol: tcp, port: 7 }"])
    cli_cfg = h.write_config(cli_dir, device=device.format("client"), address=f"{CLIENT_IP}/24",
                             prefix=f"wst-{TAG}-cli", lcores=(1,), mac="02:00:00:00:96:02",
                             metrics_port=9576,
                             services=[f'{{ name: bulk, kind: source, protocol: tcp, target: '
                                       f'"{SERVER_IP}:9", message_size: 1048576, connections: 4, '
                                       f'duration_s: 60 }}',
                                       f'{{ name: ping, kind: ping, protocol: tcp, target: '
                                       f'"{SERVER_IP}:7", message_size: 64, duration_s: 60 }}'])
    server, client = h.Dataplane(srv_cfg, srv_dir), h.Dataplane(cli_cfg, cli_dir)
    try:
        server.start(25)
        client.start(25)
        with h.Control(srv_cfg, srv_dir, 9575) as sctl, h.Control(cli_cfg, cli_dir, 9576) as cctl:
            time.sleep(RUN_SECONDS + 0.5)
            metrics = {"server": sctl.scrape_text(), "client": cctl.scrape_text()}
            srv_drops = sctl.drops()
        out = client.output()
        pings, stalled = h.progress(out, "ping", RUN_SECONDS)
        bulk, _ = h.progress(out, "bulk", RUN_SECONDS)
        res.check(len(bulk) >= RUN_SECONDS - 2 and bulk[-1][1] > 0,
                  "bulk source moves data", f"(progress {bulk[-3:]})")
        gbits = re.findall(r"^bulk: [\d.]+ s, \d+ messages, ([\d.]+) Gbit/s", out, re.M)
        print(f"  bulk {gbits[-1] if gbits else '?'} Gbit/s at the last report; server "
              f"tx_queue_full drops {srv_drops.get('tx_queue_full', 0):.0f}", flush=True)
        res.check(len(pings) >= RUN_SECONDS - 2 and not stalled,
                  f"ping completes round trips every second ({pings[-1][1] if pings else 0} "
                  f"in {len(pings)} s)", f"(stalled at {stalled})")
        rc = client.stop(15)
        res.check(rc == 0, "client data plane exits 0 on SIGINT under load",
                  f"(exit {rc}; log {client.log_path})")
        rc = server.stop(15)
        res.check(rc == 0, "server data plane exits 0 on SIGINT", f"(exit {rc})")
    except RuntimeError as e:
        res.check(False, "data planes start", str(e))
    finally:
        client.stop(5)
        server.stop(5)
        if os.path.exists(SOCK):
            os.unlink(SOCK)
    if res.failed:
        print(client.output()[-3000:])
        for who, text in locals().get("metrics", {}).items():
            keep = [l for l in text.splitlines() if not l.startswith("#") and
                    ("drop" in l or "tcp" in l or "tx" in l) and not l.endswith(" 0")]
            print(f"--- {who} metrics (non-zero)\n" + "\n".join(keep))
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
