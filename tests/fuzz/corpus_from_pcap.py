#!/usr/bin/python3
"""Seed corpora from a capture of real traffic: every Ethernet frame of PCAP, cut at the
layer each fuzz target parses, written as tests/fuzz/corpus/<target>/<sha1 prefix>.

    corpus_from_pcap.py PCAP [OUT_DIR]      (OUT_DIR defaults to tests/fuzz/corpus)

ethernet and chained_input (byte 0 = 0: no cuts) get the whole frame, arp the ARP body,
ipv4 the IPv4 packet, tcp_options the TCP segment. Duplicates collapse by content.
"""
import hashlib
import os
import struct
import sys

from scapy.all import rdpcap  # Debian python3-scapy


def cuts(frame):
    out = {"ethernet": frame, "chained_input": b"\x00" + frame}
    if len(frame) < 14:
        return out
    etype = struct.unpack("!H", frame[12:14])[0]
    body = frame[14:]
    if etype == 0x0806:
        out["arp"] = body
    elif etype == 0x0800 and len(body) >= 20:
        out["ipv4"] = body
        ihl = (body[0] & 15) * 4
        total = struct.unpack("!H", body[2:4])[0]
        frag = struct.unpack("!H", body[6:8])[0] & 0x1FFF
        if body[9] == 6 and frag == 0 and ihl <= total <= len(body):
            out["tcp_options"] = body[ihl:total]
    return out


def main():
    pcap = sys.argv[1]
    out_dir = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "corpus")
    n = 0
    for pkt in rdpcap(pcap):
        for target, data in cuts(bytes(pkt)).items():
            d = os.path.join(out_dir, target)
            os.makedirs(d, exist_ok=True)
            path = os.path.join(d, hashlib.sha1(data).hexdigest()[:16])
            if not os.path.exists(path):
                with open(path, "wb") as f:
                    f.write(data)
                n += 1
    print(f"{n} new inputs under {out_dir}")


if __name__ == "__main__":
    main()
