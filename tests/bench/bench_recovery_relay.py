#!/usr/bin/python3
"""Loss recovery over an impaired path, against Linux in the same run.

For each cell of the matrix (loss x one-way delay x reordering, the same impairments in
both directions of wsrelay, tests/relay/), four transfers of COUNT x 64 KiB messages:
Linux -> Linux and Linux -> wirespeed (wirespeed receiving), Linux -> Linux and
wirespeed -> Linux (wirespeed sending), interleaved repetition by repetition so the
machine's load falls on both alike. Each records the transfer time, the goodput and the sender's RTO
expirations: the data plane's wirespeed_tcp_recovery_total{kind="rto"}, a Linux sender's
TcpExtTCPTimeouts in its namespace. With --repeat N a cell's figure is the median transfer
time, and its RTO figure the median of the N transfers' counts. Every byte a Linux
endpoint or A's receiver gets is checked against the pattern; the data plane's sink counts
them.

Writes docs/results/DATE-recovery-relay.json (the per-cell data, and one record per cell
and direction for the recovery table of docs/performance.md: run
tests/bench/make_performance.py afterwards) and prints a markdown table.

The two CPUs are split as between two machines (relay_net.split_cpus): CPU 0 runs endpoint A,
the relay and, by RPS, their kernel receive work; CPU 1 the host under test, the data plane's
lcore or endpoint B's programs and B's kernel receive work. Shared (--shared-cpus), a
busy-polling data plane and the Linux side's programs competed for both CPUs, which a Linux
sender, working in softirq while its process sleeps, did not: the nearly clean cells measured
that more than either stack.

The namespaces have fixed names: each cell runs under the shared integration lock
(/tmp/ws-integration.lock, taken here), which is released between cells.

Each transfer runs on a relay started afresh with the seed, so the Linux and the wirespeed
transfer of a cell meet the same loss and reordering decisions at first (the sequences part
as soon as the two stacks send differently). Repetition i of a cell uses seed + i for all
its transfers: at 5-10 % loss one loss sequence decides more than the stacks do (a transfer
varies 2x between repetitions on the same seed, from timing alone), and the median over
several sequences is the steadier figure. --repeat N runs each of the
four transfers of a cell N times, Linux's two and wirespeed's two in turn, and keeps the
median (all N times are kept under "samples"; the data plane is started afresh for each
repetition): a 2 MiB
transfer at 1 ms takes 30-200 ms, and one scheduling hiccup on a loaded machine changes it
by 1.5x. --delays and --loss limit the matrix to some delays and loss
rates; --update FILE replaces those cells in an earlier run's JSON (the records are
rebuilt, the commands of both runs kept) instead of writing a new one; cells it did not have
are added, so the 20 ms half can be added to a run of the 1 ms half. --table NAME puts the
records in another table of docs/performance.md than "recovery". --reorder limits it to some
reordering rates. --receive-only runs
only the two receive transfers of each cell (a change to wirespeed's receiving side leaves
its sending figures as they were); with --update the earlier run's sending figures of those
cells are kept. --send-only is its mirror: only the two sending transfers (a change to
the sending side), and with --update the earlier run's receiving figures are kept. --baseline DIR adds, in each cell, the same wirespeed transfers (with
--receive-only the receive ones) with the data plane built in DIR (another commit's build
directory): after this build's receive transfers with --receive-only, else repetition by repetition
after Linux's pair, before or after this build's pair in turn, so that a change is
compared with its base in the same run, on the same load; they are kept under the cell's
"baseline" key (not in the records). --baseline-tcp SETTINGS (with --receive-only) gives
that baseline data plane, or with no --baseline this build's, these `tcp:` settings (e.g.
'delayed_ack_ms: 5'), so that a setting is compared with the default in the same run.

usage: sudo tests/bench/bench_recovery_relay.py [--count 64] [--timeout 60] [--seed 1]
           [--quick] [--repeat N] [--delays 1,20] [--loss 5,10] [--reorder 0,25]
           [--linux-cc cubic|bbr|reno]
           [--receive-only | --send-only] [--baseline BUILD_DIR]
           [--baseline-tcp SETTINGS] [--shared-cpus] [--capture DIR]
           [--out FILE | --update FILE] [--table NAME]
"""
import argparse
import contextlib
import datetime
import fcntl
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "relay"))
import relay_net as rn  # noqa: E402
import harness as h  # noqa: E402  (tests/integration, on the path relay_net set)

LOSS = (0.1, 1, 5, 10)
DELAY_MS = (1, 20)
REORDER = (0, 10, 25)
QUICK = ((1, 20, 0), (5, 1, 10), (10, 20, 25))
LOCK = "/tmp/ws-integration.lock"


def receive_only(imp, args, tmp):
    """The two receive transfers of a cell (rn.linux_pair's and rn.wirespeed_pair's
    first halves, each run args.repeat times on a relay started afresh), and with
    args.baseline the same to the baseline build's data plane."""
    linux = [rn.linux_receive(seeded(imp, i), args.count, args.timeout, args.linux_cc)
             for i in range(args.repeat)]
    base = (ws_receives(imp, args, tmp, args.baseline, args.baseline_tcp)
            if args.baseline or args.baseline_tcp else None)
    ws = ws_receives(imp, args, tmp)
    return ({"ws_receives": rn.median_entry(linux)}, {"ws_receives": ws},
            base and {"ws_receives": base})


def ws_receives(imp, args, tmp, build=None, tcp=None):
    """args.repeat transfers to the data plane's sink (of `build`, a build directory, when
    given; with `tcp`, lines of its `tcp:` section), each on a relay started afresh: their
    median entry."""
    cfg = h.write_config(
        tmp, device=rn.RelayNet.dp_device(), address=f"{rn.IP_DP}/24", prefix="wsr",
        port_keys=rn.RelayNet.dp_port_keys(),
        metrics_port=9591,
        services=["{ name: sink, kind: sink, protocol: tcp, port: %d }" % rn.SINK_PORT],
        extra=f"tcp:\n  {tcp}" if tcp else "")
    with built(build):
        ws = []
        with h.Dataplane(cfg, tmp), h.Control(cfg, tmp, 9591) as ctl:
            for i in range(args.repeat):
                with rn.Relay("dp", **seeded(imp, i)) as relay:
                    ws.append(rn._receive(ctl, args.count, args.timeout, args.linux_cc))
                ws[-1]["relay"] = relay.counters
        return rn.median_entry(ws)


def seeded(imp, i):
    """The impairments of repetition i: the relay's seed is the cell's plus i, the same for
    every transfer of the repetition."""
    return dict(imp, seed=imp["seed"] + i)


@contextlib.contextmanager
def built(build):
    """The data plane and control process of `build` (a build directory; None: this
    one's) for the duration."""
    saved = h.DATAPLANE, h.CONTROL
    if build:
        h.DATAPLANE = os.path.join(build, "dataplane", "wirespeed-dataplane")
        h.CONTROL = os.path.join(build, "control", "wirespeed-control")
    try:
        yield
    finally:
        h.DATAPLANE, h.CONTROL = saved


def interleaved(imp, args, tmp):
    """A cell's four transfers args.repeat times, Linux's pair and wirespeed's pair in
    turn (so a load that drifts during the cell falls on both alike), with args.baseline
    the baseline build's pair after Linux's too (before or after this build's, in turn):
    for each side and direction, the median entry
    (rn.median_entry, every repeat's seconds under "samples"); None for a baseline not
    asked for."""
    sides = ("linux", "wirespeed") + (("baseline",) if args.baseline else ())
    receive = not args.send_only
    runs = {side: [] for side in sides}
    for i in range(args.repeat):
        runs["linux"].append(rn.linux_pair(seeded(imp, i), args.count, args.timeout,
                                           args.linux_cc, receive=receive))
        for side in sides[1:] if i % 2 == 0 else sides[:0:-1]:
            with built(args.baseline if side == "baseline" else None):
                runs[side].append(rn.wirespeed_pair(seeded(imp, i), args.count, args.timeout, tmp,
                                                    cc=args.linux_cc, receive=receive))
    directions = ("ws_receives", "ws_sends") if receive else ("ws_sends",)
    med = {side: {d: rn.median_entry([r[d] for r in runs[side]])
                  for d in directions} for side in sides}
    return med["linux"], med["wirespeed"], med.get("baseline")


def run_cell(loss, delay, reorder, args, tmp):
    imp = dict(loss=loss, delay_ms=delay, reorder=reorder, seed=args.seed)
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with rn.RelayNet(), capture(args.capture, imp):
            base = None
            if args.receive_only:
                linux, ws, base = receive_only(imp, args, tmp)
            else:
                linux, ws, base = interleaved(imp, args, tmp)
    cell = {"loss_pct": loss, "delay_ms": delay, "reorder_pct": reorder,
            "load": round(os.getloadavg()[0], 1), "linux": linux, "wirespeed": ws}
    if base:
        cell["baseline"] = {"build": args.baseline or "this build", "tcp": args.baseline_tcp,
                            **base}
    return cell


@contextlib.contextmanager
def capture(directory, imp):
    """With --capture DIR: the cell's TCP headers at Linux endpoint A's interface, where
    A sends to either receiver and receives from either sender (harness.Capture in namespace
    A, 100 bytes a frame, on A's CPU), to DIR/cell-LOSS-DELAY-REORDER.pcap;
    tests/relay/sender_stalls.py reads it. Nothing without."""
    if not directory:
        yield
        return
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "cell-%g-%g-%g.pcap" % (imp["loss"], imp["delay_ms"],
                                                           imp["reorder"]))
    with h.Capture(rn.NS_A, "wsr-a", path, ["-s", "100", "-U", "--immediate-mode", "tcp"]) as dump:
        pin = rn._on(rn.NS_A)  # ["taskset", "-c", CPU] when the CPUs are split
        if pin:
            subprocess.run(["taskset", "-pc", pin[-1], str(dump.proc.pid)], check=True,
                           stdout=subprocess.DEVNULL)
        yield
        dump.settle()
        print(f"capture: {path}: {dump.stop()}", flush=True)


def goodput(entry, bytes_, timeout):
    """The goodput, or for a transfer that did not finish a bound below it (it moved at most
    the whole transfer in the time allowed); the flag says which."""
    if entry["ok"]:
        return entry["goodput_mbit"], False
    return round(bytes_ * 8 / timeout / 1e6, 3), True


def timeouts_text(entry):
    """A side's sender timeouts for a cell: with repeats, the median of the transfers' counts
    (the median-time transfer's own count says little: the spread of counts is wide and not
    in step with the times); with one transfer, its count."""
    samples = entry.get("timeouts_samples")
    v = statistics.median(samples) if samples else entry["sender_timeouts"]
    return str(int(v)) if float(v).is_integer() else f"{v:.1f}"


def record_id(cell, direction):
    """A cell's record id for one direction (ws_sends or ws_receives)."""
    return f"recovery-{cell['loss_pct']}-{cell['delay_ms']}-{cell['reorder_pct']}-{direction}"


def records(cells, args, table="recovery"):
    out = []
    size = args.count * (rn.MESSAGE + 4)
    for i, c in enumerate(cells):
        for d, what in (("ws_sends", "wirespeed sends"), ("ws_receives", "wirespeed receives")):
            if d not in c["wirespeed"]:
                continue
            ws, lx = c["wirespeed"][d], c["linux"][d]
            ours, ws_bound = goodput(ws, size, args.timeout)
            peer, lx_bound = goodput(lx, size, args.timeout)
            n = len(ws.get("timeouts_samples") or [0])
            of = f", median of {n}" if n > 1 else ""
            rto = (f"RTOs{of}: wirespeed {timeouts_text(ws)}, Linux {timeouts_text(lx)}"
                   if d == "ws_sends" else
                   f"Linux sender RTOs{of}: {timeouts_text(ws)} against wirespeed, "
                   f"{timeouts_text(lx)} against Linux")
            late = "; did not finish (bound)" if ws_bound or lx_bound else ""
            out.append({
                "id": record_id(c, d),
                "table": table,
                "figure": (f"loss {c['loss_pct']} %, delay {c['delay_ms']} ms, reordering "
                           f"{c['reorder_pct']} %, {what} ({rto}{late})"),
                "unit": "Mbit/s", "ours": ours, "peer": peer,
                "peer_name": f"Linux {args.linux_cc} <-> Linux, same run", "better": "higher",
                "ratio": round(ours / peer, 2), "readme": False, "headline": False,
                "rank": 300 + 2 * i + (d == "ws_receives")})
    return out


def markdown(cells):
    base = any("baseline" in c for c in cells)
    lines = ["| loss | delay | reorder | dir | Linux s (Mbit/s) | wirespeed s (Mbit/s) | "
             "RTOs ws / Linux (medians) |" + (" baseline s (Mbit/s), RTOs |" if base else ""),
             "| --- | --- | --- | --- | --- | --- | --- |" + (" --- |" if base else "")]
    for c in cells:
        for d in ("ws_sends", "ws_receives"):
            if d not in c["wirespeed"]:
                continue
            ws, lx = c["wirespeed"][d], c["linux"][d]

            def cell(e):
                return f"{e['seconds']} ({e['goodput_mbit']})" if e["ok"] else "failed"
            b = c.get("baseline", {}).get(d)
            lines.append(f"| {c['loss_pct']} % | {c['delay_ms']} ms | {c['reorder_pct']} % | "
                         f"{d} | {cell(lx)} | {cell(ws)} | "
                         f"{timeouts_text(ws)} / {timeouts_text(lx)} |"
                         + (f" {cell(b)}, {timeouts_text(b)} |" if b else
                            (" |" if base else "")))
    return "\n".join(lines)


def update(args, cells, command, start, load0):
    """Replaces the cells of args.update's run that this run measured, rebuilds its
    records, and notes this run's command, time and load beside the first one's."""
    with open(args.update) as f:
        doc = json.load(f)
    key = lambda c: (c["loss_pct"], c["delay_ms"], c["reorder_pct"])  # noqa: E731
    new = {key(c): c for c in cells}
    replaced = sum(1 for c in doc["cells"] if key(c) in new)
    added = len(new) - replaced
    if args.receive_only or args.send_only:  # the earlier run's other direction stays
        for c in doc["cells"]:
            if key(c) in new:
                for side in ("linux", "wirespeed"):
                    new[key(c)][side] = {**c[side], **new[key(c)][side]}
    doc["cells"] = [new.pop(key(c), c) for c in doc["cells"]] + list(new.values())
    run = doc["run"]
    run["command"] += f"; then {command}"
    run["measured"] += f"; then {start.strftime('%Y-%m-%d %H:%M UTC')}"
    run["load"] += f"; then {load0:.1f} / {os.getloadavg()[0]:.1f}"
    only = "receive" if args.receive_only else "send" if args.send_only else None
    kept = {"receive": ", sending figures kept", "send": ", receiving figures kept"}
    what = " and ".join(w for w in (replaced and f"{replaced} cells measured again",
                                    added and f"{added} cells added") if w)
    run["source"] += (f"; then {what} with {args.repeat} "
                      + (f"{only} transfers" if only else "transfers per direction")
                      + " each (median kept)" + (kept.get(only, "") if replaced else ""))
    table = args.table or next((r["table"] for r in doc["records"] if "table" in r), "recovery")
    doc["records"] = records(doc["cells"], args, table)
    with open(args.update, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    print(markdown(doc["cells"]))
    print(f"updated {args.update}")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=64, help="64 KiB messages per transfer")
    ap.add_argument("--timeout", type=float, default=60, help="seconds allowed per transfer")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="three cells only")
    ap.add_argument("--linux-cc", default="cubic",
                    help="the Linux endpoints' congestion control (wirespeed runs cubic)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="transfers per cell, direction and side (the median is kept)")
    ap.add_argument("--delays", default=",".join(str(d) for d in DELAY_MS),
                    help="one-way delays (ms) of the matrix to run, comma-separated")
    ap.add_argument("--loss", default=",".join(str(l) for l in LOSS),
                    help="loss rates (%%) of the matrix to run, comma-separated")
    ap.add_argument("--reorder", default=",".join(str(r) for r in REORDER),
                    help="reordering rates (%%) of the matrix to run, comma-separated")
    ap.add_argument("--shared-cpus", action="store_true",
                    help="no pinning: every program and softirq where the scheduler puts it "
                         "(default: CPU 0 for endpoint A and the relay, CPU 1 for the host "
                         "under test)")
    only = ap.add_mutually_exclusive_group()
    only.add_argument("--receive-only", action="store_true",
                      help="only the receive transfers (with --update: keep the sending ones)")
    only.add_argument("--send-only", action="store_true",
                      help="only the send transfers (with --update: keep the receiving ones)")
    out = ap.add_mutually_exclusive_group()
    out.add_argument("--out", help="JSON path (default docs/results/DATE-recovery-relay.json)")
    out.add_argument("--update", help="an earlier run's JSON whose cells this run replaces")
    ap.add_argument("--table", help="the docs/performance.md table the records go to "
                    "(default: recovery; with --update, the earlier run's)")
    ap.add_argument("--capture", metavar="DIR",
                    help="each cell's TCP headers at Linux endpoint A into DIR (see capture())")
    ap.add_argument("--baseline", metavar="BUILD_DIR",
                    help="also run wirespeed's transfers with this build's data plane")
    ap.add_argument("--baseline-tcp", metavar="SETTINGS",
                    help="with --receive-only: the baseline's tcp: settings, e.g. "
                    "'delayed_ack_ms: 5' (without --baseline, on this build)")
    args = ap.parse_args()
    rn.split_cpus(not args.shared_cpus)
    args.baseline = args.baseline and os.path.abspath(args.baseline)
    if args.baseline and not os.path.exists(
            os.path.join(args.baseline, "dataplane", "wirespeed-dataplane")):
        print(f"bench_recovery_relay: no data plane built in {args.baseline}")
        return 2
    if args.baseline_tcp and not args.receive_only:
        print("bench_recovery_relay: --baseline-tcp needs --receive-only")
        return 2
    if args.repeat < 1:
        print("bench_recovery_relay: --repeat must be at least 1")
        return 2
    if os.geteuid() != 0:
        print("bench_recovery_relay: needs root (namespaces)")
        return 2
    delays = {float(d) for d in args.delays.split(",")}
    losses = {float(l) for l in args.loss.split(",")}
    reorders = {float(r) for r in args.reorder.split(",")}
    grid = QUICK if args.quick else [(l, d, r) for l in LOSS for d in DELAY_MS for r in REORDER]
    grid = [c for c in grid if c[1] in delays and c[0] in losses and c[2] in reorders]
    tmp = tempfile.mkdtemp(prefix="ws-recovery-")
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    start = datetime.datetime.now(datetime.timezone.utc)
    load0 = os.getloadavg()[0]
    cells = []
    for loss, delay, reorder in grid:
        c = run_cell(loss, delay, reorder, args, tmp)
        print(json.dumps(c), flush=True)
        cells.append(c)
    command = "sudo tests/bench/bench_recovery_relay.py " + " ".join(sys.argv[1:])
    if args.update:
        return update(args, cells, command + f" (commit {commit})", start, load0)
    doc = {"run": {
        "workload": "loss recovery over wsrelay",
        "section": "19",
        "measured": start.strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit,
        "command": command,
        "load": f"{load0:.1f} / {os.getloadavg()[0]:.1f} (other work on the 2 CPUs)",
        "source": (f"written by bench_recovery_relay.py: {args.count} x 64 KiB per transfer, "
                   f"seeds {args.seed}..{args.seed + args.repeat - 1} (repetition i: seed + "
                   f"i), {args.timeout:.0f} s allowed per transfer; Linux "
                   f"endpoints with {args.linux_cc}, wirespeed with cubic; Linux and "
                   "wirespeed interleaved repetition by repetition, each transfer on a "
                   f"relay started afresh with its repetition's seed; figures the median of "
                   f"{args.repeat}")},
        "records": records(cells, args, args.table or "recovery"), "cells": cells}
    out = args.out or os.path.join(ROOT, "docs", "results",
                                   start.strftime("%Y-%m-%d") + "-recovery-relay.json")
    with open(out, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    print(markdown(cells))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
