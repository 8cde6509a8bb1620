#!/usr/bin/python3
"""A test gateway that puts the kernel's TCP behind ESP, for a kernel without ESP: runs in
the peer namespace, reads the IPv4 packets the kernel routes to the data plane from a tun
device, seals them with scapy's SecurityAssociation and sends them on the veth (a raw socket
bound to it); ESP from the data plane is opened the same way and written back into the tun,
where the kernel's TCP receives it. Runs until SIGTERM; prints a JSON line of counts then.

  esp_gateway.py CONFIG_JSON     (the same keys as esp_peer.py, plus "tun" and "veth")
"""
import fcntl
import json
import os
import select
import signal
import socket
import struct
import sys
import warnings

warnings.filterwarnings("ignore")
from scapy.compat import raw  # noqa: E402
from scapy.layers.inet import IP, TCP, fragment  # noqa: E402
from scapy.layers.ipsec import ESP  # noqa: E402
from scapy.packet import split_layers  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from esp_peer import make_sa  # noqa: E402

TUNSETIFF = 0x400454CA
IFF_TUN, IFF_NO_PI = 0x0001, 0x1000
SO_BINDTODEVICE = 25


def main():
    # The gateway only seals and opens: it never reads a TCP header, and scapy dissecting
    # one into fields (and copying those fields inside the SA) is most of its time per
    # packet. Unbound, the IP payload stays raw bytes, sealed and opened unchanged.
    split_layers(IP, TCP, frag=0, proto=6)
    cfg = json.loads(sys.argv[1])
    tx = make_sa(cfg, cfg["out"]["spi"], cfg["out"]["key"], cfg["peer"], cfg["dp"])
    rx = make_sa(cfg, cfg["in"]["spi"], cfg["in"]["key"], cfg["dp"], cfg["peer"])
    tun = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(tun, TUNSETIFF, struct.pack("16sH", cfg["tun"].encode(), IFF_TUN | IFF_NO_PI))
    out = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    out.setsockopt(socket.SOL_SOCKET, SO_BINDTODEVICE, cfg["veth"].encode())
    esp_in = socket.socket(socket.AF_INET, socket.SOCK_RAW, 50)
    counts = {"sealed": 0, "opened": 0, "bad": 0}
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    print("ready", flush=True)
    seq = 1
    while not stop:
        try:
            ready, _, _ = select.select([tun, esp_in], [], [], 0.2)
        except InterruptedError:
            continue
        if tun in ready:
            data = os.read(tun, 65535)
            if data[0] >> 4 != 4:  # the kernel's IPv6 chatter on a fresh link: not ours
                continue
            pkt = IP(data)
            sealed = raw(tx.encrypt(pkt, seq_num=seq))
            seq += 1
            if len(sealed) > 1500:
                for f in fragment(IP(sealed), fragsize=1400):
                    out.sendto(raw(f), (cfg["dp"], 0))
            else:
                out.sendto(sealed, (cfg["dp"], 0))
            counts["sealed"] += 1
        if esp_in in ready:
            ip = IP(esp_in.recv(70000))
            if ESP not in ip or ip[ESP].spi != cfg["in"]["spi"]:
                continue
            try:
                os.write(tun, raw(rx.decrypt(ip)))
                counts["opened"] += 1
            except Exception:  # noqa: BLE001 - a bad packet is counted, the run goes on
                counts["bad"] += 1
    print(json.dumps(counts), flush=True)


if __name__ == "__main__":
    main()
