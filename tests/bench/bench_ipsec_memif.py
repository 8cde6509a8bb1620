#!/usr/bin/python3
"""ESP against plaintext, stack to stack over memif, one core each (lcore 0 server, lcore 1
client): a TCP `source` of 1 MiB messages to a `sink` for SECONDS, at MTU 1500 and 9000,
plaintext and then each cipher, the variants taking turns within each repetition so that
compared runs are made within a minute of each other. Prints one line per run and a
summary table (Gbit/s of verified payload, and ESP as a fraction of plaintext).

  sudo flock /tmp/ws-integration.lock /usr/bin/python3 tests/bench/bench_ipsec_memif.py [SECONDS] [REPS]
"""
import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
import harness as h  # noqa: E402
import test_memif_ipsec as m  # noqa: E402

VARIANTS = ["plaintext"] + list(m.CIPHERS)


def run(tmp, variant, mtu, seconds):
    if os.path.exists(m.SOCK):
        os.unlink(m.SOCK)
    base = os.path.join(tmp, f"{variant}-{mtu}")
    n = m.CIPHERS.get(variant, 0)
    k1 = bytes((i * 7 + n) & 0xFF for i in range(n)).hex()
    k2 = bytes((i * 11 + 3) & 0xFF for i in range(n)).hex()

    def extra(out_spi, in_spi, ko, ki):
        if variant == "plaintext":
            return lambda d, me, peer: ""
        return lambda d, me, peer: m.ipsec(d, variant, me, peer, out_spi, in_spi, ko, ki)

    s_cfg, s_dir = m.config(base, "server", ["{ name: sink, kind: sink, protocol: tcp, port: 9 }"],
                            0, m.S_METRICS, extra("0x2001", "0x1001", k2, k1))
    rep = os.path.join(base, "source.json")
    c_cfg, c_dir = m.config(base, "client", [
        f'{{ name: load, kind: source, protocol: tcp, target: "{m.SERVER_IP}:9", '
        f'message_size: 1048576, connections: 1, duration_s: {seconds}, report: {rep} }}'],
        1, m.C_METRICS, extra("0x1001", "0x2001", k1, k2))
    for cfg in (s_cfg, c_cfg):
        with open(cfg) as f:
            text = f.read()
        with open(cfg, "w") as f:
            f.write(text.replace("    mtu: 1500\n", f"    mtu: {mtu}\n", 1))
    with h.Dataplane(s_cfg, s_dir):
        client = h.Dataplane(c_cfg, c_dir)
        client.start()
        try:
            client.proc.wait(seconds + 60)
        except Exception:  # noqa: BLE001
            pass
        client.stop()
    r = h.load_json(rep)
    return r.get("bits_per_second", 0) / 1e9 if r.get("errors", 1) == 0 else 0.0


def main():
    h.need_root()
    seconds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    results = {}
    with tempfile.TemporaryDirectory(prefix="wsmi-bench-") as tmp:
        for rep in range(reps):
            for mtu in (1500, 9000):
                for v in VARIANTS:
                    g = run(tmp, v, mtu, seconds)
                    results.setdefault((mtu, v), []).append(g)
                    print(f"rep {rep} mtu {mtu} {v}: {g:.2f} Gbit/s", flush=True)
    print("\n| MTU | variant | Gbit/s (median) | vs plaintext |\n| --- | --- | --- | --- |")
    for mtu in (1500, 9000):
        base = statistics.median(results[(mtu, "plaintext")])
        for v in VARIANTS:
            g = statistics.median(results[(mtu, v)])
            print(f"| {mtu} | {v} | {g:.2f} | {g / base:.2f}× |" if base else f"| {mtu} | {v} | {g:.2f} | - |")
    print(json.dumps({f"{k[0]} {k[1]}": v for k, v in results.items()}))


if __name__ == "__main__":
    main()
