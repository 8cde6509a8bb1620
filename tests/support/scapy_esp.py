#!/usr/bin/python3
"""ESP packets through scapy's IPsec layer (python3-scapy over python3-cryptography): an
implementation of RFC 4303 we did not write, for checking ours.

  scapy_esp.py seal          print ESP packets scapy built, one per line
  scapy_esp.py open FILE     decrypt the packets in FILE with scapy, print each inner packet

A line is: cipher mode esn seq key_hex outer_packet_hex inner_hex, space separated. `inner` is
what ESP protects: the L4 segment in transport mode, the whole inner IPv4 packet in tunnel mode.
Keys are key || salt (GCM) or cipher key || HMAC key (CBC), as wirespeed's key files hold them.
"""
import sys
import warnings

warnings.filterwarnings("ignore")
from scapy.all import IP, UDP, raw  # noqa: E402
from scapy.layers.ipsec import ESP, SecurityAssociation  # noqa: E402

LOCAL, REMOTE = "10.77.0.1", "10.77.0.2"
INNER_LOCAL, INNER_REMOTE = "10.99.0.1", "10.99.0.2"
SPI = 0x00001001
CIPHERS = {
    "aes-gcm-128": (16, True),
    "aes-gcm-256": (32, True),
    "aes-cbc-128-hmac-sha256": (16, False),
    "aes-cbc-256-hmac-sha256": (32, False),
}


def key_for(cipher, n):
    aes, gcm = CIPHERS[cipher]
    size = aes + (4 if gcm else 32)
    return bytes((n * 37 + i * 11) & 0xFF for i in range(size))


def make_sa(cipher, mode, esn, key, seq_hi, src, dst):
    aes, gcm = CIPHERS[cipher]
    kw = dict(spi=SPI, esn_en=esn, esn=seq_hi)
    if gcm:
        kw.update(crypt_algo="AES-GCM", crypt_key=key, auth_algo="NULL", auth_key=None)
    else:
        kw.update(crypt_algo="AES-CBC", crypt_key=key[:aes], auth_algo="SHA2-256-128",
                  auth_key=key[aes:])
    if mode == "tunnel":
        kw["tunnel_header"] = IP(src=src, dst=dst)
    return SecurityAssociation(ESP, **kw)


def cases():
    n = 0
    for cipher, (_, gcm) in CIPHERS.items():
        for mode in ("transport", "tunnel"):
            # scapy 2.5 leaves the ESN high half out of the HMAC (RFC 4303 2.2.1 puts it in):
            # ESN is checked against scapy with GCM only, where it is part of the AAD.
            for esn in ((False, True) if gcm else (False,)):
                for size in (0, 1, 2, 3, 13, 14, 15, 16, 17, 100, 1400):
                    n += 1
                    yield n, cipher, mode, esn, size


def seal():
    for n, cipher, mode, esn, size in cases():
        key = key_for(cipher, n)
        seq_hi = 7 if esn else 0
        seq = 1000 + n
        sa = make_sa(cipher, mode, esn, key, seq_hi, REMOTE, LOCAL)
        payload = bytes((n + i) & 0xFF for i in range(size))
        if mode == "tunnel":
            plain = IP(src=INNER_REMOTE, dst=INNER_LOCAL, id=n) / UDP(sport=4000 + n, dport=7) / payload
            inner = raw(plain)
        else:
            plain = IP(src=REMOTE, dst=LOCAL, id=n) / UDP(sport=4000 + n, dport=7) / payload
            inner = raw(plain[UDP])
        outer = sa.encrypt(plain, seq_num=seq)
        full_seq = (seq_hi << 32) | seq
        print(cipher, mode, int(esn), full_seq, key.hex(), raw(outer).hex(), inner.hex())


def open_file(path):
    with open(path) as f:
        for line in f:
            cipher, mode, esn, full_seq, key, outer, _ = line.split()
            esn = esn == "1"
            sa = make_sa(cipher, mode, esn, bytes.fromhex(key), int(full_seq) >> 32, LOCAL, REMOTE)
            pkt = sa.decrypt(IP(bytes.fromhex(outer)))
            print(raw(pkt).hex() if mode == "tunnel" else raw(pkt[IP].payload).hex())


if __name__ == "__main__":
    if sys.argv[1:] == ["seal"]:
        seal()
    elif len(sys.argv) == 3 and sys.argv[1] == "open":
        open_file(sys.argv[2])
    else:
        sys.exit(__doc__)
