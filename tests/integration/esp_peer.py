#!/usr/bin/python3
"""An ESP peer for the data plane, built on scapy's IPsec layer (the kernel here has no ESP):
runs in the peer namespace, sends IPv4 through a raw socket and reads ESP from another.

  esp_peer.py CONFIG_JSON      prints one JSON object with the results

CONFIG_JSON: {"dp": ip, "peer": ip, "cipher": name, "mode": transport|tunnel, "esn": bool,
  "out": {"spi": n, "key": hex}  (peer -> data plane), "in": {"spi": n, "key": hex},
  "actions": [...]} where an action is
  {"seq": n}              the next packet's (64-bit with ESN) sequence number
  {"echo": [sizes]}       UDP datagrams to port 7, each reply decrypted and compared
  {"replay": n}           one echo, then its ESP packet sent n more times; counts replies
  {"wrong_key": true}     one echo sealed with another key; counts replies
  {"plaintext": true}     one plain UDP datagram to port 7; counts replies
  {"bad_spi": true}       one echo under an unknown SPI; counts replies
"""
import json
import os
import random
import socket
import struct
import sys
import warnings

warnings.filterwarnings("ignore")
# scapy.layers.* rather than scapy.all: the same classes without loading every layer, which
# costs about a second per process on a loaded machine (one process per test case here).
from scapy.compat import raw  # noqa: E402
from scapy.layers.inet import IP, UDP, fragment  # noqa: E402
from scapy.layers.ipsec import ESP, AuthAlgo, IPSecIntegrityError, SecurityAssociation  # noqa: E402,E501

AES = {"aes-gcm-128": 16, "aes-gcm-256": 32, "aes-cbc-128-hmac-sha256": 16,
       "aes-cbc-256-hmac-sha256": 32}


class EsnHmac(AuthAlgo):
    """scapy 2.5 leaves the high half of an extended sequence number out of ESP's ICV; RFC
    4303 2.2.1 appends it (not sent) after the ESP packet for the integrity check. This one
    does, taking the high half from the SA it belongs to (`sa.esn`, set per packet)."""

    def __init__(self, base, sa):
        super().__init__(base.name, base.mac, base.digestmod, base.icv_size, base.key_size)
        self.sa = sa

    def _icv(self, esp_bytes, key):
        mac = self.new_mac(key)
        mac.update(esp_bytes + struct.pack("!L", self.sa.esn))
        return mac.finalize()[:self.icv_size]

    def sign(self, pkt, key, esn_en=False, esn=0):
        pkt[ESP].data += self._icv(raw(pkt[ESP]), key)
        return pkt

    def verify(self, pkt, key, esn_en=False, esn=0):
        body = raw(pkt)[:len(raw(pkt)) - self.icv_size]
        if raw(pkt)[-self.icv_size:] != self._icv(body, key):
            raise IPSecIntegrityError("ICV (with the ESN high half) does not match")


def make_sa(cfg, spi, key, src, dst):
    key = bytes.fromhex(key)
    aes = AES[cfg["cipher"]]
    kw = dict(spi=spi, esn_en=cfg["esn"], esn=0)
    if "gcm" in cfg["cipher"]:
        kw.update(crypt_algo="AES-GCM", crypt_key=key, auth_algo="NULL", auth_key=None)
    else:
        kw.update(crypt_algo="AES-CBC", crypt_key=key[:aes], auth_algo="SHA2-256-128",
                  auth_key=key[aes:])
    if cfg["mode"] == "tunnel":
        kw["tunnel_header"] = IP(src=src, dst=dst)
    sa = SecurityAssociation(ESP, **kw)
    if cfg["esn"] and "gcm" not in cfg["cipher"]:
        sa.auth_algo = EsnHmac(sa.auth_algo, sa)
    return sa


class Peer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.tx = make_sa(cfg, cfg["out"]["spi"], cfg["out"]["key"], cfg["peer"], cfg["dp"])
        self.rx = make_sa(cfg, cfg["in"]["spi"], cfg["in"]["key"], cfg["dp"], cfg["peer"])
        self.send_sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
        self.recv_sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, 50)
        self.seq = 1
        self.port = 40000
        self.reply_seqs = []
        self.reply_top = 0  # the highest full sequence number received so far

    def send_ip(self, pkt):
        for frag in (fragment(pkt, fragsize=1400) if len(pkt) > 1500 else [pkt]):
            self.send_sock.sendto(raw(frag), (self.cfg["dp"], 0))

    def seal(self, payload, sa=None):
        self.port += 1
        plain = IP(src=self.cfg["peer"], dst=self.cfg["dp"]) / UDP(sport=self.port, dport=7) / payload
        sa = sa or self.tx
        # The high half only enters the ICV or AAD; scapy's SA takes it as `esn`, and its
        # `seq_num or ...` would replace a low half of 0, hence both set on the SA.
        sa.esn, sa.seq_num = self.seq >> 32, self.seq & 0xFFFFFFFF
        enc = sa.encrypt(plain)
        self.seq += 1
        return IP(raw(enc))

    def full_seq(self, low):
        """The 64-bit number of a reply whose header carries `low`: the one nearest to the
        highest seen so far (RFC 4303 appendix A, with a half-space window)."""
        if not self.cfg["esn"]:
            return low
        high = self.reply_top >> 32
        cand = [(h << 32) | low for h in (high - 1, high, high + 1) if 0 <= h < 1 << 32]
        return min(cand, key=lambda s: abs(s - self.reply_top))

    def replies(self, timeout, settle=0.05):
        """Decrypted replies: waits up to `timeout` for the first, then `settle` for more."""
        out = []
        self.recv_sock.settimeout(timeout)
        while True:
            try:
                data = self.recv_sock.recv(70000)
            except socket.timeout:
                return out
            self.recv_sock.settimeout(settle)
            ip = IP(data)
            if ESP not in ip or ip[ESP].spi != self.cfg["in"]["spi"]:
                continue
            seq = self.full_seq(ip[ESP].seq)
            self.reply_seqs.append(seq)
            self.reply_top = max(self.reply_top, seq)
            self.rx.esn = seq >> 32
            try:
                out.append(self.rx.decrypt(ip))
            except Exception as e:  # a bad ICV or padding: report, do not stop
                out.append(e)

    def echo(self, sizes):
        ok, bad = 0, []
        for n in sizes:
            payload = os.urandom(n)
            self.send_ip(self.seal(payload))
            got = self.replies(2.0)
            match = [p for p in got if not isinstance(p, Exception) and UDP in p
                     and p[UDP].dport == self.port and raw(p[UDP].payload) == payload]
            if len(match) == 1 and len(got) == 1:
                ok += 1
            else:
                bad.append({"size": n, "replies": len(got), "matching": len(match)})
        return {"ok": ok, "bad": bad}

    def replay(self, n):
        pkt = self.seal(b"replay me")
        self.send_ip(pkt)
        first = len(self.replies(1.5))
        for _ in range(n):
            self.send_ip(pkt)
        return {"first": first, "replayed_replies": len(self.replies(1.0, 1.0))}

    def wrong_key(self):
        bad = dict(self.cfg["out"], key="".join(random.choice("0123456789abcdef")
                                               for _ in self.cfg["out"]["key"]))
        sa = make_sa(self.cfg, bad["spi"], bad["key"], self.cfg["peer"], self.cfg["dp"])
        self.send_ip(self.seal(b"wrong key", sa))
        return {"replies": len(self.replies(1.0, 1.0))}

    def plaintext(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(1.5)
        s.sendto(b"plaintext", (self.cfg["dp"], 7))
        try:
            s.recv(100)
            plain_reply = 1
        except socket.timeout:
            plain_reply = 0
        return {"replies": plain_reply + len(self.replies(0.5))}

    def bad_spi(self):
        sa = make_sa(self.cfg, 0x7777, self.cfg["out"]["key"], self.cfg["peer"], self.cfg["dp"])
        self.send_ip(self.seal(b"bad spi", sa))
        return {"replies": len(self.replies(1.0, 1.0))}


def main():
    cfg = json.loads(sys.argv[1])
    peer = Peer(cfg)
    results = []
    for action in cfg["actions"]:
        (kind, arg), = action.items()
        if kind == "seq":
            peer.seq = arg
            results.append({"seq": arg})
        elif kind == "echo":
            results.append(peer.echo(arg))
        elif kind == "replay":
            results.append(peer.replay(arg))
        elif kind == "wrong_key":
            results.append(peer.wrong_key())
        elif kind == "plaintext":
            results.append(peer.plaintext())
        elif kind == "bad_spi":
            results.append(peer.bad_spi())
    print(json.dumps({"results": results, "reply_seqs": peer.reply_seqs}))


if __name__ == "__main__":
    main()
