#!/usr/bin/python3
"""ESP between two data planes over net_memif, every cipher, with `dataplane.faults` loss,
duplication and reordering on the server's receive path:

- a client data plane runs a 1 MiB TCP `source` for 3 s and a 4000-byte TCP `ping` of 200
  round trips (length32 framing: every byte is checked by the sink and by the ping);
- the server's sink verified at least what the source counts as sent, with no pattern error;
  the ping got every echo back;
- both directions went through the SAs (wirespeed_ipsec_packets_total) and no packet failed
  authentication; the injected duplicates were caught by the replay window (`replayed`).
- Two lcores on each side (AES-GCM-128 and AES-CBC-128 + HMAC): the source and the ping,
  every byte checked; a capture of the server's port (`wirespeed-control capture`, its
  first 200,000 frames: both connections' start, both SPIs) shows no sequence number twice
  under either SPI; each SA pair ran on one core, and no frame was handed between cores
  (both data planes pin the SA's peers to the same core).

Memif socket and file prefixes are wsmi-*.
"""
import collections
import os
import select
import subprocess
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
# Frames of the two-core captures. The whole run is 1.5 million frames with AES-GCM, which
# took tshark 35-55 s to read on a loaded machine; two SA users on two cores would number
# packets twice from the first frames of both connections on.
CAPTURE_FRAMES = 200000
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
    me, peer = (SERVER_IP, CLIENT_IP) if role == "server" else (CLIENT_IP, SERVER_IP)
    lcores = lcore if isinstance(lcore, tuple) else (lcore,)
    return h.memif_config(tmp, role, sock=SOCK, ips=(SERVER_IP, CLIENT_IP), prefix="wsmi",
                          services=services, lcores=lcores, metrics_port=metrics,
                          extra_dataplane=faults, extra=lambda d: extra(d, me, peer),
                          port_keys=[f"rx_queues: {len(lcores)}", f"tx_queues: {len(lcores)}"]
                          if len(lcores) > 1 else [])


def pair(base, cipher, lcores, connections, faults="", key_mul=(7, 11)):
    """Server (echo, sink) and client (source, ping) configs; returns both and the reports."""
    n = CIPHERS[cipher]
    k1 = bytes((i * key_mul[0] + n) & 0xFF for i in range(n)).hex()
    k2 = bytes((i * key_mul[1] + 3) & 0xFF for i in range(n)).hex()
    s_cfg, s_dir = config(
        base, "server", ["{ name: echo, kind: echo, protocol: tcp, port: 7 }",
                         "{ name: sink, kind: sink, protocol: tcp, port: 9 }"], lcores[0],
        S_METRICS, lambda d, me, peer: ipsec(d, cipher, me, peer, "0x2001", "0x1001", k2, k1),
        faults)
    src_rep = os.path.join(base, "source.json")
    ping_rep = os.path.join(base, "ping.json")
    c_cfg, c_dir = config(
        base, "client", [
            f'{{ name: load, kind: source, protocol: tcp, target: "{SERVER_IP}:9", '
            f'message_size: 1048576, connections: {connections}, duration_s: {SOURCE_S}, '
            f'report: {src_rep} }}',
            f'{{ name: rtt, kind: ping, protocol: tcp, target: "{SERVER_IP}:7", '
            f'message_size: 4000, count: {PINGS}, report: {ping_rep} }}'], lcores[1], C_METRICS,
        lambda d, me, peer: ipsec(d, cipher, me, peer, "0x1001", "0x2001", k1, k2))
    return s_cfg, s_dir, c_cfg, c_dir, src_rep, ping_rep


def run_client(res, label, c_cfg, c_dir):
    """Runs the client data plane until it finishes by itself (checked)."""
    client = h.Dataplane(c_cfg, c_dir)
    client.start()
    try:
        client.proc.wait(SOURCE_S + 60)
    except Exception:  # noqa: BLE001 - a hung client is reported below
        pass
    rc = client.stop()
    res.check(rc == 0, f"{label}: the client finished by itself (exit {rc})",
              client.output()[-400:])


def run_cipher(res, tmp, cipher):
    if os.path.exists(SOCK):
        os.unlink(SOCK)
    s_cfg, s_dir, c_cfg, c_dir, src_rep, ping_rep = pair(
        os.path.join(tmp, cipher), cipher, (0, 1), 1,
        "  faults: { seed: 7, loss_ppm: 3000, duplicate_ppm: 3000, reorder_ppm: 10000 }")
    server = h.Dataplane(s_cfg, s_dir)
    with server, h.Control(s_cfg, s_dir, S_METRICS) as ctl:
        run_client(res, cipher, c_cfg, c_dir)
        src, ping = h.load_json(src_rep), h.load_json(ping_rep)
        res.check(src.get("messages", 0) > 0 and src.get("errors", 1) == 0,
                  f"{cipher}: source sent {src.get('messages')} MiB over ESP", str(src)[:300])
        res.check(ping.get("messages", 0) == PINGS and ping.get("errors", 1) == 0,
                  f"{cipher}: ping got {ping.get('messages')}/{PINGS} echoes, verified",
                  str(ping)[:300])
        ctl.wait_for(lambda: ctl.value("wirespeed_service_received_bytes_total", service="sink")
                     >= src.get("bytes", 1 << 62), 3)
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


def capturing(cap, timeout=10):
    """Waits for `wirespeed-control capture` to say it is capturing (or to end); returns
    what it printed."""
    out = ""
    deadline = time.monotonic() + timeout
    while "capturing" not in out and time.monotonic() < deadline:
        ready, _, _ = select.select([cap.stderr], [], [], deadline - time.monotonic())
        line = cap.stderr.readline() if ready else ""
        if not line:
            break
        out += line
    return out


def esp_sequences(pcap):
    """{spi: [sequence numbers]} of the ESP packets in a capture."""
    out = subprocess.run(["tshark", "-r", pcap, "-Y", "esp", "-T", "fields", "-e", "esp.spi",
                          "-e", "esp.sequence"], capture_output=True, text=True, timeout=120)
    seqs = collections.defaultdict(list)
    for line in out.stdout.splitlines():
        if "\t" in line:
            spi, seq = line.split("\t")
            seqs[int(spi, 0)].append(int(seq))
    return seqs


def per_core(m, name):
    return sorted(v for (n, labels), v in m.items() if n == name)


def run_two_cores(res, tmp, cipher):
    """Two lcores each side; the SA pair's traffic must meet on one core."""
    if os.path.exists(SOCK):
        os.unlink(SOCK)
    base = os.path.join(tmp, "2c-" + cipher)
    s_cfg, s_dir, c_cfg, c_dir, src_rep, ping_rep = pair(base, cipher, ((0, 1), (0, 1)), 1,
                                                         key_mul=(5, 13))
    pcap = os.path.join(base, "server.pcapng")
    label = f"2 lcores {cipher}"
    with h.Dataplane(s_cfg, s_dir), h.Control(s_cfg, s_dir, S_METRICS) as ctl:
        cap = subprocess.Popen([h.CONTROL, "-c", s_cfg, "capture", "--snaplen", "64", "--count",
                                str(CAPTURE_FRAMES), "-w", pcap],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        started = capturing(cap)
        run_client(res, label, c_cfg, c_dir)
        src, ping = h.load_json(src_rep), h.load_json(ping_rep)
        ctl.wait_for(lambda: ctl.value("wirespeed_service_received_bytes_total", service="sink")
                     >= src.get("bytes", 1 << 62), 3)
        cap.send_signal(2)
        cap_log = started + cap.communicate(timeout=20)[1]
        sink = ctl.value("wirespeed_service_received_bytes_total", service="sink")
        res.check(src.get("errors", 1) == 0 and src.get("connections") == 1 and
                  sink >= src.get("bytes", 1 << 62) > 0 and
                  ctl.value("wirespeed_service_send_failures_total", service="sink") == 0,
                  f"{label}: the sink verified {sink / 2**20:.0f} MiB "
                  f"(source counted {src.get('bytes', 0) / 2**20:.0f} MiB)", str(src)[:300])
        res.check(ping.get("messages", 0) == PINGS and ping.get("errors", 1) == 0,
                  f"{label}: ping got {ping.get('messages')}/{PINGS} echoes, verified",
                  str(ping)[:300])
        auth = ctl.value("wirespeed_ipsec_errors_total", sa="in", reason="auth_failed")
        m = ctl.scrape()
        frames = per_core(m, "wirespeed_core_received_frames_total")
        handed = sum(per_core(m, "wirespeed_core_redirected_out_frames_total"))
        res.check(auth == 0 and handed == 0 and len(frames) == 2,
                  f"{label}: no auth_failed, no frame handed between cores "
                  f"(frames per core {frames}, handed {handed:.0f})")
    seqs = esp_sequences(pcap)
    dup = {spi: len(v) - len(set(v)) for spi, v in seqs.items()}
    res.check(len(seqs.get(0x1001, [])) > 1000 and len(seqs.get(0x2001, [])) > 1000 and
              not any(dup.values()),
              f"{label}: captured {len(seqs.get(0x1001, []))} + {len(seqs.get(0x2001, []))} "
              f"ESP packets, no sequence number twice under one SPI {dup}", cap_log[-300:])


def main():
    h.need_root()
    res = h.Results("memif-ipsec")
    with tempfile.TemporaryDirectory(prefix="wsmi-") as tmp:
        try:
            for cipher in ("aes-gcm-128", "aes-cbc-128-hmac-sha256"):
                run_two_cores(res, tmp, cipher)
            for cipher in CIPHERS:
                run_cipher(res, tmp, cipher)
        finally:
            if os.path.exists(SOCK):
                os.unlink(SOCK)
    sys.exit(res.finish())


if __name__ == "__main__":
    main()
