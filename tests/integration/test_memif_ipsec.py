#!/usr/bin/python3
"""ESP between two data planes over net_memif, every cipher, with `dataplane.faults` loss,
duplication and reordering on the server's receive path:

- a client data plane runs a 1 MiB TCP `source` for 3 s and a 4000-byte TCP `ping` of 200
  round trips (length32 framing: every byte is checked by the sink and by the ping);
- the server's sink verified at least what the source counts as sent, with no pattern error;
  the ping got every echo back;
- both directions went through the SAs (wirespeed_ipsec_packets_total) and no packet failed
  authentication; the injected duplicates were caught by the replay window (`replayed`).

Memif socket and file prefixes are wsmi-*.
"""
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness as h  # noqa: E402

SOCK = "/run/wirespeed-itest-wsmi.sock"
SERVER_IP = "10.79.2.1"
CLIENT_IP = "10.79.2.2"
S_METRICS, C_METRICS = 9681, 9682
SOURCE_S = 3
PINGS = 200
CIPHERS = {"aes-gcm-128": 20, "aes-gcm-256": 36, "aes-cbc-128-hmac-sha256": 48,
           "aes-cbc-256-hmac-sha256": 64}


def ipsec(d, cipher, me, peer, out_spi, in_spi, k_out, k_in):
    paths = [h.write_key(d, "out", k_out), h.write_key(d, "in", k_in)]
    return f"""ipsec:
  state_dir: {d}/state
  sas:
    - {{ name: out, direction: outbound, spi: {out_spi}, local: {me}, remote: {peer},
        cipher: {cipher}, key_file: {paths[0]} }}
    - {{ name: in, direction: inbound, spi: {in_spi}, local: {me}, remote: {peer},
        cipher: {cipher}, key_file: {paths[1]} }}
  policies:
    - {{ remote: {peer}/32, action: protect, outbound_sa: out, inbound_sa: in }}
"""


def config(tmp, role, services, lcore, metrics, extra, faults=""):
    d = os.path.join(tmp, role)
    os.makedirs(d, exist_ok=True)
    me, peer = (SERVER_IP, CLIENT_IP) if role == "server" else (CLIENT_IP, SERVER_IP)
    path = h.write_config(d, device=f"net_memif0,role={role},socket={SOCK},id=0",
                          address=f"{me}/24", services=services, prefix=f"wsmi-{role[0]}",
                          lcores=(lcore,), metrics_port=metrics, extra_dataplane=faults,
                          extra=extra(d, me, peer))
    return path, d


def run_cipher(res, tmp, cipher):
    if os.path.exists(SOCK):
        os.unlink(SOCK)
    n = CIPHERS[cipher]
    k1 = bytes((i * 7 + n) & 0xFF for i in range(n)).hex()
    k2 = bytes((i * 11 + 3) & 0xFF for i in range(n)).hex()
    base = os.path.join(tmp, cipher)
    s_cfg, s_dir = config(
        base, "server", ["{ name: echo, kind: echo, protocol: tcp, port: 7 }",
                         "{ name: sink, kind: sink, protocol: tcp, port: 9 }"], 0, S_METRICS,
        lambda d, me, peer: ipsec(d, cipher, me, peer, "0x2001", "0x1001", k2, k1),
        "  faults: { seed: 7, loss_ppm: 3000, duplicate_ppm: 3000, reorder_ppm: 10000 }")
    src_rep = os.path.join(base, "source.json")
    ping_rep = os.path.join(base, "ping.json")
    c_cfg, c_dir = config(
        base, "client", [
            f'{{ name: load, kind: source, protocol: tcp, target: "{SERVER_IP}:9", '
            f'message_size: 1048576, connections: 1, duration_s: {SOURCE_S}, report: {src_rep} }}',
            f'{{ name: rtt, kind: ping, protocol: tcp, target: "{SERVER_IP}:7", '
            f'message_size: 4000, count: {PINGS}, report: {ping_rep} }}'], 1, C_METRICS,
        lambda d, me, peer: ipsec(d, cipher, me, peer, "0x1001", "0x2001", k1, k2))
    server = h.Dataplane(s_cfg, s_dir)
    with server, h.Control(s_cfg, s_dir, S_METRICS) as ctl:
        client = h.Dataplane(c_cfg, c_dir)
        client.start()
        try:
            client.proc.wait(SOURCE_S + 60)
        except Exception:  # noqa: BLE001 - a hung client is reported below
            pass
        rc = client.stop()
        res.check(rc == 0, f"{cipher}: the client finished by itself (exit {rc})",
                  client.output()[-400:])
        src, ping = h.load_json(src_rep), h.load_json(ping_rep)
        res.check(src.get("messages", 0) > 0 and src.get("errors", 1) == 0,
                  f"{cipher}: source sent {src.get('messages')} MiB over ESP", str(src)[:300])
        res.check(ping.get("messages", 0) == PINGS and ping.get("errors", 1) == 0,
                  f"{cipher}: ping got {ping.get('messages')}/{PINGS} echoes, verified",
                  str(ping)[:300])
        time.sleep(0.3)
        sink = ctl.value("wirespeed_service_received_bytes_total", service="sink")
        res.check(ctl.value("wirespeed_service_send_failures_total", service="sink") == 0
                  and sink >= src.get("bytes", 1 << 62),
                  f"{cipher}: the sink verified {sink / 2**20:.0f} MiB "
                  f"(source counted {src.get('bytes', 0) / 2**20:.0f} MiB)")
        inb = ctl.value("wirespeed_ipsec_packets_total", sa="in", direction="inbound")
        outb = ctl.value("wirespeed_ipsec_packets_total", sa="out", direction="outbound")
        auth = ctl.value("wirespeed_ipsec_errors_total", sa="in", reason="auth_failed")
        replayed = ctl.value("wirespeed_ipsec_errors_total", sa="in", reason="replayed")
        res.check(inb > 1000 and outb > 1000 and auth == 0,
                  f"{cipher}: server SA packets in {inb:.0f}, out {outb:.0f}, auth_failed {auth:.0f}, "
                  f"replayed {replayed:.0f} (injected duplicates)")


def main():
    h.need_root()
    res = h.Results("memif-ipsec")
    with tempfile.TemporaryDirectory(prefix="wsmi-") as tmp:
        try:
            for cipher in CIPHERS:
                run_cipher(res, tmp, cipher)
        finally:
            if os.path.exists(SOCK):
                os.unlink(SOCK)
    sys.exit(res.finish())


if __name__ == "__main__":
    main()
