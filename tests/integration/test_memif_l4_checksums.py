#!/usr/bin/python3
"""`ports[].l4_checksums: off` between two data planes over net_memif: TCP and UDP checksums
neither computed nor verified, as a veth pair treats its frames.

- Both ends off: a ping gets at least 500 echoes of 1 KiB back, each checked byte for byte; a TCP
  source's messages reach the sink, which checks the pattern of every byte, and a UDP
  source's datagrams reach theirs; no TCP or UDP checksum drop at the server.
- The option really leaves the checksums out: a client with checksums on, against the same
  server, drops the server's segments as `tcp_bad_checksum` (counted), so its connections
  never open. The server, which verifies nothing, took the client's SYNs.
- Refused at start on any other driver (net_tap here), with an error naming the key.

Bounded to about 40 s; memif socket and file prefixes are wsl4-*.
"""
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness as h  # noqa: E402

SOCK = "/run/wirespeed-itest-wsl4.sock"
SERVER_IP = "10.79.7.1"
CLIENT_IP = "10.79.7.2"
S_METRICS, C_METRICS = 9693, 9694
ECHOES = 500


def config(tmp, role, services, lcore, metrics, checksums="off", device=None):
    return h.memif_config(tmp, role, sock=SOCK, ips=(SERVER_IP, CLIENT_IP), prefix="wsl4",
                          device=device, services=services, lcores=(lcore,),
                          metrics_port=metrics, port_keys=[f"l4_checksums: {checksums}"])


def client_services(tmp, tag):
    return [
        f'{{ name: rtt, kind: ping, protocol: tcp, target: "{SERVER_IP}:7", '
        f"message_size: 1024, connections: 4, count: {ECHOES}, report: {tmp}/{tag}-ping.json }}",
        f'{{ name: bulk, kind: source, protocol: tcp, target: "{SERVER_IP}:9", '
        f"message_size: 65536, connections: 2, duration_s: 2, report: {tmp}/{tag}-source.json }}",
        f'{{ name: dgrams, kind: source, protocol: udp, target: "{SERVER_IP}:9", '
        f"message_size: 1200, rate: 20000, duration_s: 2, report: {tmp}/{tag}-udp.json }}"]



def run_client(res, tmp, tag, checksums, budget):
    """Runs a client to its end with its own control process; returns its last scrape."""
    c_cfg, c_dir = config(tmp, tag, client_services(tmp, tag), 1, C_METRICS, checksums)
    client = h.Dataplane(c_cfg, c_dir)
    client.start()
    m = {}
    try:
        with h.Control(c_cfg, c_dir, C_METRICS) as ctl:
            t0 = time.time()
            while client.proc.poll() is None and time.time() - t0 < budget:
                m = ctl.scrape() or m
                time.sleep(0.2)
    except Exception as e:  # noqa: BLE001 - a client without metrics is reported below
        res.check(False, f"{tag}: the client's control process", repr(e))
    rc = client.stop()
    return rc, client.output(), m


def both_off(res, tmp, ctl):
    rc, out, _ = run_client(res, tmp, "client", "off", 25)
    ping = h.load_json(f"{tmp}/client-ping.json")
    src = h.load_json(f"{tmp}/client-source.json")
    udp = h.load_json(f"{tmp}/client-udp.json")
    # The count is shared out over the connections: the last round may add a few.
    res.check(rc == 0 and ping.get("messages", 0) >= ECHOES and ping.get("errors", 1) == 0,
              f"both ends off: {ping.get('messages')} echoes of 1 KiB (at least {ECHOES}), "
              "each checked",
              f"{ping} {out[-400:]}")

    def sink_msgs():
        return ctl.value("wirespeed_service_messages_total", service="sink", direction="received")
    ctl.wait_for(lambda: sink_msgs() >= src.get("messages", 1 << 62), 3)
    m = ctl.scrape()
    got = h.prom.value(m, "wirespeed_service_messages_total", service="sink", direction="received")
    res.check(src.get("errors", 1) == 0 and src.get("messages", 0) > 0 and
              got == src.get("messages"),
              f"the TCP sink received and checked all {got:.0f} messages of 64 KiB",
              f"sink {got:.0f}; source {str(src)[:300]}")
    udp_got = h.prom.value(m, "wirespeed_service_messages_total", service="sink-udp",
                    direction="received")
    res.check(udp.get("messages", 0) > 0 and udp_got > 0.9 * udp.get("messages", 0),
              f"the UDP sink received {udp_got:.0f} of {udp.get('messages')} datagrams",
              f"source {str(udp)[:300]}")
    bad = h.prom.value(m, "wirespeed_drops_total", reason="tcp_bad_checksum") + \
        h.prom.value(m, "wirespeed_drops_total", reason="udp_bad_checksum")
    res.check(bad == 0, f"no checksum drops at the server ({bad:.0f})")


def mismatch(res, tmp, ctl):
    syns_before = ctl.value("wirespeed_tcp_received_segments_total")
    rc, out, m = run_client(res, tmp, "verifier", "on", 8)
    bad = h.prom.value(m, "wirespeed_drops_total", reason="tcp_bad_checksum")
    ping = h.load_json(f"{tmp}/verifier-ping.json")
    syns = ctl.value("wirespeed_tcp_received_segments_total") - syns_before
    res.check(bad > 0 and ping.get("messages", 0) == 0,
              f"a client that verifies drops the server's segments as tcp_bad_checksum ({bad:.0f}) "
              f"and gets no echo; the server took {syns:.0f} of its segments",
              f"{ping} {out[-300:]}")


def refused_elsewhere(res, tmp):
    cfg, d = config(tmp, "tap", ["{ name: echo, kind: echo, protocol: tcp, port: 7 }"], 1,
                    C_METRICS, "off", device="net_tap0,iface=wsl4tap0")
    dp = h.Dataplane(cfg, d)
    try:
        dp.start(timeout=15)
        started = True
    except RuntimeError:
        started = False
    dp.stop()
    out = dp.output()
    res.check(not started and "l4_checksums: off is for net_memif ports only" in out,
              "l4_checksums: off on net_tap is refused at start, naming the key", out[-400:])


def main():
    h.need_root()
    res = h.Results("memif-l4-checksums")
    with tempfile.TemporaryDirectory(prefix="wsl4-") as tmp:
        if os.path.exists(SOCK):
            os.unlink(SOCK)
        s_cfg, s_dir = config(tmp, "server", [
            "{ name: echo, kind: echo, protocol: tcp, port: 7 }",
            "{ name: sink, kind: sink, protocol: tcp, port: 9 }",
            "{ name: sink-udp, kind: sink, protocol: udp, port: 9 }"], 0, S_METRICS)
        server = h.Dataplane(s_cfg, s_dir)
        try:
            with server, h.Control(s_cfg, s_dir, S_METRICS) as ctl:
                both_off(res, tmp, ctl)
                mismatch(res, tmp, ctl)
            refused_elsewhere(res, tmp)
        except Exception as e:  # a broken setup is a failure with its cause, not a crash
            res.check(False, "memif l4_checksums run", repr(e))
        finally:
            if os.path.exists(SOCK):
                os.unlink(SOCK)
            if res.failed:
                for d in ("server", "client", "verifier", "tap"):
                    h.print_log_tails(os.path.join(tmp, d))
    sys.exit(res.finish())


if __name__ == "__main__":
    main()
