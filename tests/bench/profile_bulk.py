#!/usr/bin/python3
"""Where a bulk transfer's time goes on each side: one `source` -> `sink` run over memif (two
data planes, one core each, as `run.sh tcp-bulk` runs them), profiled with `perf record -e
cpu-clock -a -g` for PROFILE s once the connection has ramped up, then each process's samples
put in the categories of docs/performance.md's MTU table (the memif PMD, the copy-and-sum
into the frame, the source's pattern fill, memmove, the receive checksum, the idle loop, the
rest).

  tests/bench/profile_bulk.py BUILD_DIR [--mtu 1500] [--size 1048576] [--profile 2]
                              [--keep PERF_DATA]

Needs root and perf. Run it under the integration lock (flock /tmp/ws-integration.lock) with
nothing else running."""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as B  # noqa: E402

# The first pattern a sample's line matches names its category (order matters).
CATEGORIES = (
    ("memif PMD", re.compile(r"librte_net_memif")),
    ("copy-and-sum into the frame", re.compile(r"sum_blocks_avx2<true>|csum_copy")),
    ("pattern fill", re.compile(r"fill_avx2|fill_pattern|fill_words")),
    ("pattern check", re.compile(r"match_words|check_pattern")),
    ("receive checksum", re.compile(r"sum_blocks_avx2<false>|csum_partial")),
    ("memmove / memcpy", re.compile(r"memmove|memcpy")),
    ("loop polling (Pipeline::run, poll_rx)", re.compile(r"Pipeline::run\b|Pipeline::poll_rx")),
)


def categorise(report):
    """{category: percent} from `perf report --sort dso,sym --percentage relative` lines."""
    shares = {}
    for line in report.splitlines():
        m = re.match(r"\s+([0-9.]+)%\s", line)
        if not m:
            continue
        name = next((c for c, rx in CATEGORIES if rx.search(line)), "everything else")
        shares[name] = shares.get(name, 0.0) + float(m.group(1))
    return shares


def busiest_pids(data):
    """The two processes with the most samples (the two data planes)."""
    out = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "pid",
                          "--stdio", "-g", "none"], capture_output=True, text=True).stdout
    pids = []
    for line in out.splitlines():
        m = re.match(r"\s+[0-9.]+%\s+(\d+):(\S+)", line)
        if m and m.group(2).startswith("wirespeed"):
            pids.append(int(m.group(1)))
    return pids[:2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("--mtu", type=int, default=1500)
    ap.add_argument("--size", type=int, default=1048576)
    ap.add_argument("--profile", type=float, default=2.0)
    ap.add_argument("--keep", help="where to keep perf's data (default: a temporary file)")
    a = ap.parse_args()
    B.DATAPLANE = os.path.join(a.build, "dataplane", "wirespeed-dataplane")
    B.CONTROL = os.path.join(a.build, "control", "wirespeed-control")
    with tempfile.TemporaryDirectory() as tmp:
        data = a.keep or os.path.join(tmp, "perf.data")
        duration = int(a.profile + 5)

        def record():
            time.sleep(3.0)  # past the ramp-up
            subprocess.run(["perf", "record", "-e", "cpu-clock", "-F", "5000", "-a", "-g", "-o",
                            data, "--", "sleep", str(a.profile)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)

        with B.Memif(tmp, a.mtu, f"prof{a.mtu}") as m:
            t = threading.Thread(target=record)
            t.start()
            r = m.client(f"{{ name: load, kind: source, protocol: tcp, "
                         f"target: \"{B.Memif.SERVER_IP}:9\", message_size: {a.size}, "
                         f"connections: 1, duration_s: {duration} }}", duration + 20)
            t.join()
        rate = (r.get("steady_bits_per_second") or r.get("bits_per_second") or 0) / 1e9
        print(f"MTU {a.mtu}, {a.size}-byte messages: {rate:.1f} Gbit/s (steady part)")
        for pid in busiest_pids(data):
            rep = subprocess.run(["perf", "report", "-i", data, "--no-children", "--pid", str(pid),
                                  "--sort", "dso,sym", "--stdio", "-g", "none",
                                  "--percentage", "relative"],
                                 capture_output=True, text=True).stdout
            print(f"process {pid}:")
            for name, share in sorted(categorise(rep).items(), key=lambda kv: -kv[1]):
                print(f"  {name:40s} {share:5.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
