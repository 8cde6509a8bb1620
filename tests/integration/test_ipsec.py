#!/usr/bin/python3
"""IPsec ESP against scapy's IPsec layer, an implementation we did not write, as the peer in
a network namespace (the kernel here has no ESP):

- UDP datagrams of 1..1400 bytes through the echo service over ESP, every reply decrypted
  by scapy and compared, for every cipher in transport and tunnel mode. The largest are
  fragmented ESP both ways: the peer's outer fragments are reassembled before ESP, ours are
  sealed whole first.
- ESN with every cipher, both directions crossing 2^32 (the data plane's SA starts from a
  sequence record just below it, the peer's numbers likewise), so the high half is in every
  AAD and ICV on both sides of the boundary. scapy 2.5 leaves the high half out of its HMAC
  (RFC 4303 2.2.1 appends it); the peer's EsnHmac puts it in.
- Negative cases: replays counted as `replayed` and not answered, a wrong key as
  `auth_failed`, plaintext from the protected peer as drop reason `ipsec_policy`, an unknown
  SPI as `ipsec_no_sa`.
- After a restart the outbound SA continues above every sequence number it used (read off
  the wire by the peer).
- tshark decrypts a capture of each run through its ESP SA table
  (`esp.enable_encryption_decode`): every ESP packet holds the inner UDP, none is malformed.
- The status screen lists both SAs with their packets, and no key appears in the data
  plane's output or the status screen.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import harness as h  # noqa: E402

DP_IP = "10.78.90.1"
PEER_IP = "10.78.90.2"
METRICS_PORT = 9593
PEER_SCRIPT = os.path.join(os.path.dirname(__file__), "esp_peer.py")
CIPHERS = {"aes-gcm-128": 20, "aes-gcm-256": 36, "aes-cbc-128-hmac-sha256": 48,
           "aes-cbc-256-hmac-sha256": 64}
SIZES = list(range(1, 33)) + [63, 64, 65, 100, 255, 256, 500, 1000, 1300, 1399, 1400]


def keys(cipher, seed):
    n = CIPHERS[cipher]
    return (bytes((seed * 17 + i * 5) & 0xFF for i in range(n)).hex(),
            bytes((seed * 29 + i * 3 + 1) & 0xFF for i in range(n)).hex())


def ipsec_section(tmp, cipher, mode, esn, k_out, k_in):
    paths = [h.write_key(tmp, "a-to-b", k_out), h.write_key(tmp, "b-to-a", k_in)]
    esn_s = "true" if esn else "false"
    return f"""ipsec:
  state_dir: {tmp}/state
  sas:
    - {{ name: a-to-b, direction: outbound, spi: 0x00001001, mode: {mode}, local: {DP_IP},
        remote: {PEER_IP}, cipher: {cipher}, key_file: {paths[0]}, esn: {esn_s} }}
    - {{ name: b-to-a, direction: inbound, spi: 0x00002001, mode: {mode}, local: {DP_IP},
        remote: {PEER_IP}, cipher: {cipher}, key_file: {paths[1]}, esn: {esn_s},
        replay_window: 64 }}
  policies:
    - {{ remote: {PEER_IP}/32, action: protect, outbound_sa: a-to-b, inbound_sa: b-to-a }}
"""


def run_peer(peer, cipher, mode, esn, k_out, k_in, actions):
    cfg = {"dp": DP_IP, "peer": PEER_IP, "cipher": cipher, "mode": mode, "esn": esn,
           "out": {"spi": 0x2001, "key": k_in}, "in": {"spi": 0x1001, "key": k_out},
           "actions": actions}
    out = h.sh(f"/usr/bin/python3 {PEER_SCRIPT} '{json.dumps(cfg)}'", ns=peer.ns, timeout=300)
    return json.loads(out.stdout.strip().splitlines()[-1])


# tcpdump options of the ESP captures: every packet written as it arrives (--immediate-mode,
# -U), so Capture.settle() can tell when the capture is complete.
ESP_CAPTURE = ["-U", "--immediate-mode", "-s", "0"]

TSHARK_ENC = {"aes-gcm-128": "AES-GCM with 16 octet ICV [RFC4106]",
              "aes-gcm-256": "AES-GCM with 16 octet ICV [RFC4106]",
              "aes-cbc-128-hmac-sha256": "AES-CBC [RFC3602]",
              "aes-cbc-256-hmac-sha256": "AES-CBC [RFC3602]"}


def tshark_check(r, label, pcap, cipher, k_out, k_in, inner="udp", least=len(SIZES)):
    """Decrypts both directions with tshark's ESP SA table; every ESP frame must carry
    `inner` (udp or tcp), none may be malformed."""
    aes = {"aes-gcm-128": 0, "aes-gcm-256": 0, "aes-cbc-128-hmac-sha256": 16,
           "aes-cbc-256-hmac-sha256": 32}[cipher]

    def record(src, dst, spi, key):
        enc, auth, auth_key = (key, "NULL", "") if aes == 0 else (
            key[:2 * aes], "HMAC-SHA-256-128 [RFC4868]", "0x" + key[2 * aes:])
        return (f'uat:esp_sa:"IPv4","{src}","{dst}","{spi}","{TSHARK_ENC[cipher]}",'
                f'"0x{enc}","{auth}","{auth_key}"')
    base = (f"tshark -r {pcap} -o esp.enable_encryption_decode:TRUE "
            f"-o esp.enable_authentication_check:TRUE "
            f"-o '{record(DP_IP, PEER_IP, '0x00001001', k_out)}' "
            f"-o '{record(PEER_IP, DP_IP, '0x00002001', k_in)}'")
    protos = h.sh(base + " -Y esp -T fields -e frame.protocols", check=False).stdout.split()
    bad = h.sh(base + " -Y '_ws.malformed || _ws.expert.severity >= 8388608' -T fields "
               "-e frame.number", check=False).stdout.split()
    found = [p for p in protos if ":esp:" in p and inner in p.split(":esp:")[1].split(":")]
    r.check(len(protos) >= least and len(found) == len(protos) and not bad,
            f"{label}: tshark decrypted {len(found)}/{len(protos)} ESP packets to "
            f"{inner.upper()}, {len(bad)} malformed", " ".join(sorted(set(protos))[:3]))


ESN_START = (1 << 32) - 12  # the data plane's first outbound number in the ESN runs


def esn_actions():
    """The peer's numbers: one packet far enough below 2^32 for a fresh window to place it in
    the first subspace, then a jump to just below 2^32 and the sizes across it."""
    return [{"seq": (1 << 32) - 200}, {"echo": [8]}, {"seq": (1 << 32) - 9}, {"echo": SIZES}]


def write_seq_record(tmp, next_seq):
    """The outbound SA's sequence record, as the data plane writes it, so it starts there."""
    os.makedirs(f"{tmp}/state", mode=0o700, exist_ok=True)
    with open(f"{tmp}/state/out-00001001-{PEER_IP}.seq", "w") as f:
        f.write(f"wirespeed esp sequence v1\nnext {next_seq}\n")


def one_setup(r, peer, cipher, mode, esn, actions, check):
    tmp = h.temp_dir("ws-ipsec-")
    if esn:
        write_seq_record(tmp, ESN_START)
    k_out, k_in = keys(cipher, len(cipher) + (7 if mode == "tunnel" else 0))
    cfg = h.write_config(tmp, device=peer.device(), address=f"{DP_IP}/24", prefix="wst-ipsec",
                         metrics_port=METRICS_PORT,
                         services=["{ name: echo, kind: echo, protocol: udp, port: 7 }"],
                         extra=ipsec_section(tmp, cipher, mode, esn, k_out, k_in))
    pcap = os.path.join(tmp, "esp.pcap")
    with h.Dataplane(cfg, tmp) as dp, h.Control(cfg, tmp, METRICS_PORT) as ctl:
        with h.Capture(peer.ns, peer.peer_if, pcap, ESP_CAPTURE + ["ip"]) as cap:
            res = run_peer(peer, cipher, mode, esn, k_out, k_in, actions)
            cap.settle()
        ctl.wait_for(lambda: ctl.value("wirespeed_ipsec_packets_total", sa="a-to-b",
                                       direction="outbound") > 0, 3)
        check(res, ctl)
        status = h.sh(f"{h.CONTROL} -c {cfg} status --json --interval 0.2").stdout
        sas = {sa["name"]: sa for sa in json.loads(status).get("ipsec_sas", [])}
        r.check(sas.get("a-to-b", {}).get("packets", 0) > 0 and
                sas.get("b-to-a", {}).get("spi") == "0x00002001" and
                sas.get("b-to-a", {}).get("cipher") == cipher and
                k_out not in status and k_in not in status,
                f"{cipher} {mode}: the status screen lists both SAs with packets, no key",
                status[-300:])
        out = dp.output()
    r.check(k_out not in out and k_in not in out,
            f"{cipher} {mode}: no key in the data plane's output")
    if "echo" in actions[0] and not esn:
        tshark_check(r, f"{cipher} {mode}", pcap, cipher, k_out, k_in)
    return tmp, k_out, k_in, res


def echo_checks(r, label):
    def check(res, ctl):
        e = res["results"][0]
        r.check(e["ok"] == len(SIZES) and not e["bad"],
                f"{label}: {e['ok']}/{len(SIZES)} datagrams of 1..1400 bytes echoed over ESP",
                json.dumps(e["bad"][:5]))
        sent = ctl.value("wirespeed_ipsec_packets_total", sa="a-to-b", direction="outbound")
        got = ctl.value("wirespeed_ipsec_packets_total", sa="b-to-a", direction="inbound")
        r.check(sent >= len(SIZES) and got >= len(SIZES),
                f"{label}: SA counters (out {sent:.0f}, in {got:.0f})")
    return check


def esn_checks(r, label):
    def check(res, ctl):
        first, e = res["results"][1], res["results"][3]
        r.check(first["ok"] == 1 and e["ok"] == len(SIZES) and not e["bad"],
                f"{label} esn: {e['ok']}/{len(SIZES)} datagrams echoed across 2^32 both ways",
                json.dumps([first, e["bad"][:5]]))
        seqs = res["reply_seqs"]
        want = list(range(ESN_START, ESN_START + len(SIZES) + 1))
        r.check(sorted(seqs) == want,
                f"{label} esn: our numbers run {want[0]:#x}..{want[-1]:#x}, once each",
                json.dumps(seqs[:3] + seqs[-3:]))
        r.check(ctl.value("wirespeed_ipsec_errors_total", sa="b-to-a", reason="auth_failed") == 0,
                f"{label} esn: no auth_failed on our side")
    return check


def negative_checks(r):
    def check(res, ctl):
        replay, wrong, plain, spi = res["results"]
        r.check(replay["first"] == 1 and replay["replayed_replies"] == 0,
                "replayed ESP packets get no answer", json.dumps(replay))
        r.check(ctl.wait_for(lambda: ctl.value("wirespeed_ipsec_errors_total", sa="b-to-a",
                                               reason="replayed") == 3),
                "replays counted as replayed",
                str(ctl.value("wirespeed_ipsec_errors_total", sa="b-to-a", reason="replayed")))
        r.check(wrong["replies"] == 0 and ctl.value("wirespeed_ipsec_errors_total", sa="b-to-a",
                                                    reason="auth_failed") == 1,
                "a wrong key is counted as auth_failed and nothing is delivered")
        r.check(plain["replies"] == 0 and ctl.drops().get("ipsec_policy", 0) >= 1,
                "plaintext from the protected peer is dropped as ipsec_policy",
                json.dumps(ctl.drops()))
        r.check(spi["replies"] == 0 and ctl.drops().get("ipsec_no_sa", 0) == 1,
                "an unknown SPI is dropped as ipsec_no_sa")
    return check


def main():
    h.need_root()
    r = h.Results("ipsec")
    with h.VethPeer("es", PEER_IP) as peer:
        for cipher in CIPHERS:
            for mode in ("transport", "tunnel"):
                one_setup(r, peer, cipher, mode, False, [{"echo": SIZES}],
                          echo_checks(r, f"{cipher} {mode}"))
        for i, cipher in enumerate(CIPHERS):
            mode = ("transport", "tunnel")[i % 2]
            one_setup(r, peer, cipher, mode, True, esn_actions(),
                      esn_checks(r, f"{cipher} {mode}"))
        tmp, k_out, k_in, _ = one_setup(
            r, peer, "aes-gcm-128", "transport", False,
            [{"replay": 3}, {"wrong_key": True}, {"plaintext": True}, {"bad_spi": True}],
            negative_checks(r))
        restart_continuity(r, peer, tmp, k_out, k_in)
    sys.exit(r.finish())


def restart_continuity(r, peer, tmp, k_out, k_in):
    """The same state_dir across two runs: the second run's first sequence number is above
    every number of the first run."""
    cfg = os.path.join(tmp, "wirespeed.yaml")
    seqs = []
    for _ in range(2):
        with h.Dataplane(cfg, tmp):
            res = run_peer(peer, "aes-gcm-128", "transport", False, k_out, k_in,
                           [{"echo": [10, 20, 30]}])
            seqs.append(res["reply_seqs"])
    r.check(len(seqs[0]) == 3 and len(seqs[1]) == 3 and min(seqs[1]) > max(seqs[0]),
            "after a restart the outbound SA continues above the numbers it used",
            json.dumps(seqs))


if __name__ == "__main__":
    main()
