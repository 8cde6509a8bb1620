#!/usr/bin/python3
"""Receive- and send-window autotuning against fixed 64 KiB buffers.

A path with 10 ms of added delay: this kernel has no netem, so the data plane's
own fault injection delays every frame it receives by 10 ms (the peer's data in
one direction, its ACKs in the other), which puts 10 ms into the round trip.

  receive: kernel `wsperf source` -> wirespeed `sink`   (our receive window)
  send:    wirespeed `source` -> kernel `wsperf sink`   (our send buffer)

each with `tcp.receive_buffer/send_buffer: auto` (the default) and with a fixed
65536 bytes. Prints a Markdown table (Mbit/s, ratio) and writes JSON beside it.

usage: bench_autotune.py [--seconds S] [--delay-ms D]
"""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
import harness as h  # noqa: E402

DP_IP, PEER_IP = "10.79.30.1", "10.79.30.2"


def arg(name, default):
    return type(default)(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def run(peer, tmp, direction, buffer, seconds, delay_ms, wsperf):
    tcp = "" if buffer == "auto" else f"tcp: {{ receive_buffer: {buffer}, send_buffer: {buffer} }}"
    faults = f"  faults: {{ seed: 3, delay_us: {delay_ms * 1000} }}"
    report = os.path.join(tmp, f"{direction}-{buffer}.json")
    if direction == "receive":
        cfg = h.write_config(tmp, device=peer.device(), address=f"{DP_IP}/24", prefix="wsb-auto",
                             idle="poll", extra_dataplane=faults, extra=tcp, metrics_port=9590,
                             services=["{ name: sink-tcp, kind: sink, protocol: tcp, port: 9 }"])
        with h.Dataplane(cfg, tmp):
            r = h.sh(f"{wsperf} source --target {DP_IP}:9 --message-size 65536 --duration {seconds} "
                     f"--report {report} --quiet --cpu 0", ns=peer.ns, check=False, timeout=seconds + 30)
        try:
            return json.load(open(report))["bits_per_second"] / 1e6
        except Exception as e:
            raise RuntimeError(f"no report from wsperf source ({e}):\n{r.stdout}\n{r.stderr}")
    sink_log = os.path.join(tmp, f"sink-{buffer}.log")
    sink = subprocess.Popen(["ip", "netns", "exec", peer.ns, wsperf, "sink", "--listen", f"{PEER_IP}:5009",
                             "--duration", str(seconds + 20), "--quiet"],
                            stdout=open(sink_log, "w"), stderr=subprocess.STDOUT)
    time.sleep(0.5)
    cfg = h.write_config(tmp, device=peer.device(), address=f"{DP_IP}/24", prefix="wsb-auto",
                         idle="poll", extra_dataplane=faults, extra=tcp, metrics_port=9590,
                         services=[f'{{ name: load, kind: source, protocol: tcp, target: "{PEER_IP}:5009", '
                                   f'message_size: 65536, duration_s: {seconds}, report: {report} }}'])
    dp = h.Dataplane(cfg, tmp)
    dp.start()
    try:
        dp.proc.wait(timeout=seconds + 30)
    except subprocess.TimeoutExpired:
        dp.stop()
    sink.terminate()
    sink.wait()
    try:
        return json.load(open(report))["bits_per_second"] / 1e6
    except Exception as e:
        raise RuntimeError(f"no report from the data plane's source ({e}):\n{dp.output()[-1000:]}\n"
                           f"wsperf sink: {open(sink_log).read()[-500:]}")


def main():
    h.need_root()
    seconds = arg("--seconds", 5)
    delay_ms = arg("--delay-ms", 10)
    wsperf = os.path.join(h.BUILD, "tools", "wsperf", "wsperf")
    tmp = tempfile.mkdtemp(prefix="wsb-auto-")
    rows = []
    with h.VethPeer("ba", PEER_IP) as peer:
        for direction in ("receive", "send"):
            auto = run(peer, tmp, direction, "auto", seconds, delay_ms, wsperf)
            fixed = run(peer, tmp, direction, 65536, seconds, delay_ms, wsperf)
            rows.append({"direction": direction, "autotuned_mbps": auto, "fixed_64k_mbps": fixed,
                         "ratio": auto / fixed if fixed else None})
    print(f"\n### TCP window autotuning, {delay_ms} ms added delay, af_packet veth, MTU 1500\n")
    print("| direction | autotuned (Mbit/s) | fixed 64 KiB (Mbit/s) | ratio |")
    print("| --- | ---: | ---: | ---: |")
    for r in rows:
        ratio = f"{r['ratio']:.1f}x" if r["ratio"] else "n/a"
        print(f"| {r['direction']} | {r['autotuned_mbps']:.0f} | {r['fixed_64k_mbps']:.0f} | {ratio} |")
    out = os.path.join(os.path.dirname(__file__), "results")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "autotune.json"), "w") as f:
        json.dump({"delay_ms": delay_ms, "seconds": seconds, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
