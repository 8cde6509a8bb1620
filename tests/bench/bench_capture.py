#!/usr/bin/python3
"""What packet capture costs the data plane: source -> sink over memif, one core per side,
with the server's capture off, and on (a `wirespeed-control capture` of every frame in both
directions at full snap length, written to /dev/null), and with a build from before capture
existed (--baseline BUILD_DIR) to show that "off" is within noise of it.

Three variants take turns within each repetition of each message size (forward in even
repetitions, backward in odd ones), so a drift of this VM's speed does not favour one of
them. Each figure is the median over the repetitions of the second half of a run (the
steady state), with the spread. The capture runs on the server (the sink: it copies every
received data segment and every ACK it sends); its reader shares the 2 cores with both
data planes, which is part of what "on" costs here.

usage: tests/bench/run_capture.sh [--reps N] [--ws-duration S] [--baseline DIR
       [--baseline-label TEXT]] [--no-doc]

The fair baseline is the same commit built with the capture check compiled out
(CaptureTap::armed() returning false), so that only the check differs.
"""
import argparse
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import bench as b  # noqa: E402

SIZES = [64, 1048576]


def run_variant(ctx, variant, binary, size, tag, errors):
    b.DATAPLANE = binary
    cap = None
    try:
        with b.Memif(ctx.tmp, 1500, tag, counters=False) as m:
            if variant == "on":
                log = os.path.join(ctx.tmp, f"{tag}-capture.log")
                cap = subprocess.Popen([b.CONTROL, "-c", m.cfg, "capture", "-w", "/dev/null"],
                                       stderr=open(log, "w"))
                deadline = time.time() + 10
                while "capturing" not in open(log).read():
                    if cap.poll() is not None or time.time() > deadline:
                        raise b.Failure(f"capture did not start: {open(log).read()}")
                    time.sleep(0.05)
            r = b.repeat(lambda: m.client(
                f"{{ name: load, kind: source, protocol: tcp, target: \"{b.Memif.SERVER_IP}:9\", "
                f"message_size: {size}, connections: 1, duration_s: {ctx.ws_dur} }}",
                ctx.ws_dur + 15), 1, errors)[0]
            if cap is not None:
                cap.send_signal(2)
                cap.wait(20)
                text = open(log).read()
                mm = re.search(r"(\d+) frames written .*?, (\d+) copies dropped", text)
                if r is not None and mm:
                    r["capture_written"] = int(mm.group(1))
                    r["capture_dropped"] = int(mm.group(2))
            return r
    except b.Failure as e:
        errors.append(f"{variant} {size} B: {e}")
        return None
    finally:
        if cap is not None and cap.poll() is None:
            cap.kill()


def bench_capture(ctx):
    rep = b.Report("capture", "18. Packet capture: cost of capture off and on (memif, source -> sink)",
                   "sudo tests/bench/run_capture.sh" + (f" --reps {ctx.reps}") +
                   (" --baseline DIR" if ctx.baseline else ""))
    errors = []
    variants = [("off", b.DATAPLANE), ("on", b.DATAPLANE)]
    if ctx.baseline:
        variants.insert(0, ("before", os.path.join(ctx.baseline, "dataplane", "wirespeed-dataplane")))
    here = b.DATAPLANE
    runs = {(v, s): [] for v, _ in variants for s in SIZES}
    for s in SIZES:
        for i in range(ctx.reps):
            order = variants if i % 2 == 0 else variants[::-1]
            for v, binary in order:
                runs[(v, s)].append(run_variant(ctx, v, binary, s, f"cap-{v}-{s}-{i}", errors))
    b.DATAPLANE = here
    rep.data["runs"] = {f"{v}/{s}": r for (v, s), r in runs.items()}

    def steady(v, s):
        return [r.get("steady_messages_per_second") for r in runs[(v, s)] if r]

    rows = []
    for s in SIZES:
        unit, scale = ("M msg/s", 1e-6) if s < 65536 else ("Gbit/s", s * 8 / 1e9)
        cells = [f"{s} B"]
        meds = {}
        for v, _ in variants:
            xs = [x * scale for x in steady(v, s) if x]
            meds[v] = b.med(xs) if xs else None
            sp = b.spread(xs)
            cells.append(f"{b.fmt(meds[v])} {unit}" + (f" (±{sp / 2:.0f} %)" if sp is not None else "")
                         if xs else "—")
        drops = [r.get("capture_dropped", 0) for r in runs[("on", s)] if r]
        written = [r.get("capture_written", 0) for r in runs[("on", s)] if r]
        cells.append(f"{b.fmt(b.med(written))} / {b.fmt(b.med(drops))}" if written else "—")
        if "before" in meds:
            cells.append(b.ratio(meds["off"], meds["before"]))
        cells.append(b.ratio(meds["on"], meds["off"]))
        rows.append(cells)
    headers = ["message"] + [f"capture {v}" if v != "before" else ctx.baseline_label
                             for v, _ in variants]
    headers.append("frames written / copies dropped (on)")
    if ctx.baseline:
        headers.append("off / baseline")
    headers.append("on / off")
    rep.add_table("Steady-state rate of one source connection into the sink (median of "
                  f"{ctx.reps}; in brackets half the range over the median).", headers, rows)
    rep.note("With capture off a core pays one load and one predictable branch per RX burst "
             "and per TX flush. With it on, the sink's core copies each frame into its ring "
             "and the reader (a third process on this 2-core VM) formats pcapng; copies it "
             "cannot keep up with are dropped and counted, never waited for.")
    for e in errors:
        rep.note(f"FAILURE: {e}")
    return rep


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--ws-duration", type=int, default=5)
    ap.add_argument("--baseline", help="a build directory of wirespeed without the capture check")
    ap.add_argument("--baseline-label", default="before capture existed",
                    help="what the baseline build is, for the table's column")
    ap.add_argument("--no-doc", action="store_true")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench_capture: needs root (DPDK, memif sockets)", file=sys.stderr)
        return 1
    if args.baseline and not os.access(os.path.join(args.baseline, "dataplane",
                                                    "wirespeed-dataplane"), os.X_OK):
        print(f"bench_capture: no data plane binary under {args.baseline}", file=sys.stderr)
        return 1
    ns = argparse.Namespace(quick=False, reps=args.reps, duration=None,
                            ws_duration=args.ws_duration)
    ctx = b.Ctx(ns)
    ctx.baseline = args.baseline
    ctx.baseline_label = args.baseline_label
    failed = b.run_workloads(["capture"], {"capture": bench_capture}, ctx, ctx.stamp, args.no_doc,
                             {"reps": ctx.reps, "baseline": args.baseline})
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
