#!/usr/bin/python3
"""The kernel's TCP over ESP to wirespeed's TCP: a tun gateway in the peer namespace
(esp_gateway.py, scapy's IPsec layer) carries the kernel's packets for the data plane's
address as ESP and the replies back. For every cipher in transport and tunnel mode, a kernel
TCP client sends MiB of random bytes through the data plane's TCP echo (framing none) and
compares the SHA-256 of what came back; tshark decrypts a capture of the veth through its
ESP SA table and finds TCP in every ESP packet, none malformed.

  test_ipsec_tcp.py [MiB per run, default 2]

2 MiB is about 1,500 full-sized segments each way, some 3,300 ESP packets per run: the
window opens fully and the replay window slides fifty times over. The gateway seals each
packet in Python, so every MiB costs about 1.3 s per run and a CPU (16 MiB took 20-29 s).
"""
import json
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import harness as h  # noqa: E402
import test_ipsec as t  # noqa: E402

HERE = os.path.dirname(__file__)
TUN = "wst-esptun"
TUN_MTU = 1400  # room for the largest ESP overhead here (CBC tunnel: 77 bytes) in 1500


def run(r, peer, cipher, mode, mib):
    tmp = h.temp_dir("ws-ipsec-tcp-")
    k_out, k_in = t.keys(cipher, len(cipher) + 3)
    cfg = h.write_config(tmp, device=peer.device(), address=f"{t.DP_IP}/24", prefix="wst-ipsec",
                         metrics_port=t.METRICS_PORT,
                         services=["{ name: echo, kind: echo, protocol: tcp, port: 7, framing: none }"],
                         extra=t.ipsec_section(tmp, cipher, mode, False, k_out, k_in))
    gw_cfg = {"dp": t.DP_IP, "peer": t.PEER_IP, "cipher": cipher, "mode": mode, "esn": False,
              "out": {"spi": 0x2001, "key": k_in}, "in": {"spi": 0x1001, "key": k_out},
              "tun": TUN, "veth": peer.peer_if}
    pcap = os.path.join(tmp, "esp.pcap")
    label = f"{cipher} {mode}"
    with h.Dataplane(cfg, tmp):
        gw = subprocess.Popen(["ip", "netns", "exec", peer.ns, "/usr/bin/python3",
                               os.path.join(HERE, "esp_gateway.py"), json.dumps(gw_cfg)],
                              stdout=subprocess.PIPE, text=True)
        cap = None
        try:
            if gw.stdout.readline().strip() != "ready":
                r.check(False, f"{label}: the gateway started")
                return
            h.sh(f"ip link set {TUN} mtu {TUN_MTU} up", ns=peer.ns)
            h.sh(f"ip route add {t.DP_IP}/32 dev {TUN} src {t.PEER_IP}", ns=peer.ns)
            cap = h.Capture(peer.ns, peer.peer_if, pcap,
                            t.ESP_CAPTURE + ["esp or ip[6:2] & 0x1fff != 0"]).start()
            out = h.sh(f"/usr/bin/python3 {os.path.join(HERE, 'tcp_sha.py')} {t.DP_IP} 7 "
                       f"{mib << 20}", ns=peer.ns, timeout=600, check=False)
            res = json.loads(out.stdout.strip().splitlines()[-1]) if out.stdout.strip() else {}
            r.check(res.get("bytes") == mib << 20 and res.get("sent") == res.get("received"),
                    f"{label}: kernel TCP echoed {res.get('bytes', 0) / 2**20:.0f} MiB through "
                    f"ESP, SHA-256 equal ({res.get('seconds', 0):.1f} s)", out.stderr[-300:])
        finally:
            if cap:
                cap.settle()
                cap.stop()
            gw.send_signal(signal.SIGTERM)
            try:
                gw.wait(10)
            except subprocess.TimeoutExpired:
                gw.kill()
    t.tshark_check(r, label, pcap, cipher, k_out, k_in, inner="tcp", least=100)


def main():
    h.need_root()
    mib = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    r = h.Results("ipsec-tcp")
    with h.VethPeer("es", t.PEER_IP) as peer:
        for cipher in t.CIPHERS:
            for mode in ("transport", "tunnel"):
                run(r, peer, cipher, mode, mib)
    sys.exit(r.finish())


if __name__ == "__main__":
    main()
