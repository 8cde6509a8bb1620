#!/usr/bin/python3
"""Per-seed statistics for a bench_recovery_relay.py run with --repeat N.

Repetition i of a cell runs Linux's transfer and wirespeed's on the relay seeded seed + i,
so the two transfers of a repetition are a pair. For each cell and direction this adds to
the record's figure how many pairs wirespeed won (the shorter transfer) and a 90 %
bootstrap interval of the ratio of the medians (goodput, wirespeed over Linux), from the
pairs resampled 4,000 times with a fixed seed (and, for a run with --baseline, the same
against the baseline build's transfers), and moves the records to another table of
docs/performance.md, so that a run with more seeds sits beside the matrix instead of
replacing it.

  tests/bench/recovery_seed_stats.py RUN.json [MORE.json ...] --table NAME [--out OUT.json]

With more than one run (--out required), their cells are joined: a cell that more runs
measured (on further seeds: --seed after the last one used) gets all their transfers, its
figure the median of all, and the records are made again. Without --out the file is
rewritten in place; running it again replaces the annotation. Then run
tests/bench/make_performance.py.
"""
import argparse
import json
import os
import random
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "relay"))
from bench_recovery_relay import record_id, records  # noqa: E402  (the run's records)
import relay_net as rn  # noqa: E402

RESAMPLES = 4000
SOURCE = re.compile(r"(\d+) x 64 KiB per transfer.*?([\d.]+) s allowed per transfer; "
                    r"Linux endpoints with (\S+),")
STATS = "; faster in "  # where this script's annotation of a figure begins


def ratio(linux, ours):
    return statistics.median(linux) / statistics.median(ours)


def interval(linux, ours, rng):
    idx = range(len(linux))
    got = sorted(
        ratio([linux[i] for i in pick], [ours[i] for i in pick])
        for pick in ([rng.choice(idx) for _ in idx] for _ in range(RESAMPLES)))
    return got[int(0.05 * RESAMPLES)], got[int(0.95 * RESAMPLES) - 1]


def against_baseline(cell, direction, ours, rng):
    """With --baseline, the same pairing against the baseline build's transfers (run
    after Linux's, on the same seeds): ", against the baseline ..." or nothing."""
    base = cell.get("baseline", {}).get(direction, {}).get("samples", [])
    if len(base) != len(ours):
        return ""
    won = sum(o < b for o, b in zip(ours, base))
    lo, hi = interval(base, ours, rng)
    return (f"; against the baseline build, {ratio(base, ours):.2f}x, faster in {won} of "
            f"{len(ours)} pairs, interval {lo:.2f}-{hi:.2f}")


def annotate(run, table):
    rng = random.Random(1)
    records = {r["id"]: r for r in run["records"]}
    for cell in run["cells"]:
        for direction, theirs in cell["linux"].items():
            linux = theirs.get("samples", [])
            ours = cell["wirespeed"].get(direction, {}).get("samples", [])
            rec = records.get(record_id(cell, direction))
            if rec is None or len(linux) < 2 or len(linux) != len(ours):
                sys.exit(f"recovery_seed_stats: no paired samples for {record_id(cell, direction)}")
            won = sum(o < t for o, t in zip(ours, linux))
            lo, hi = interval(linux, ours, rng)
            # A file annotated before (a cell added with --update) keeps one annotation.
            figure = rec["figure"].split(STATS)[0].rstrip(")")
            rec["figure"] = (figure + f"{STATS}{won} of {len(ours)} pairs; 90 % bootstrap "
                             f"interval of the ratio {lo:.2f}-{hi:.2f}"
                             f"{against_baseline(cell, direction, ours, rng)})")
            rec["table"] = table
    return run


def run_args(runs):
    """The --count, --timeout and --linux-cc of runs to be joined, from their "source"
    lines (records() needs them); they must agree."""
    found = {SOURCE.search(r["run"]["source"]).groups() for r in runs}
    if len(found) != 1:
        sys.exit(f"recovery_seed_stats: the runs differ in count, timeout or cc: {found}")
    count, timeout, cc = found.pop()
    return argparse.Namespace(count=int(count), timeout=float(timeout), linux_cc=cc)


def joined(a, b, size):
    """Two median entries of one side and direction on different seeds as one: every
    transfer's seconds and timeouts, the sums added, the median transfer's time (the entry's
    per-transfer counters, one transfer's, are left out)."""
    samples = a["samples"] + b["samples"]
    timeouts = a["timeouts_samples"] + b["timeouts_samples"]
    mid = sorted(range(len(samples)), key=lambda i: samples[i])[len(samples) // 2]
    sums = {"sender_counters_sum": joined_sum(a["sender_counters_sum"], b["sender_counters_sum"]),
            "relay_sum": {d: joined_sum(a["relay_sum"][d], b["relay_sum"][d])
                          for d in a["relay_sum"]}}
    ok = a["ok"] and b["ok"]
    seconds = samples[mid]
    return {"seconds": seconds, "ok": ok, "sender_timeouts": timeouts[mid],
            "goodput_mbit": round(size * 8 / seconds / 1e6, 2), "samples": samples,
            "timeouts_samples": timeouts, **sums}


def joined_sum(a, b):
    return {k: a[k] + b[k] for k in a}


def join(runs, size):
    """The runs' cells, those measured more than once joined (joined())."""
    cells = {}
    for run in runs:
        for c in run["cells"]:
            key = (c["loss_pct"], c["delay_ms"], c["reorder_pct"])
            if key not in cells:
                cells[key] = c
                continue
            into = cells[key]
            for side in ("linux", "wirespeed", "baseline"):
                if side not in into and side not in c:
                    continue
                if side not in into or side not in c:
                    sys.exit(f"recovery_seed_stats: {key}: {side} in one run only")
                for d, entry in c[side].items():
                    if isinstance(entry, dict) and "samples" in entry:
                        into[side][d] = joined(into[side][d], entry, size)
    return list(cells.values())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", nargs="+")
    ap.add_argument("--table", required=True)
    ap.add_argument("--out")
    a = ap.parse_args()
    runs = []
    for path in a.run:
        with open(path) as f:
            runs.append(json.load(f))
    run = runs[0]
    if len(runs) > 1:
        if not a.out:
            sys.exit("recovery_seed_stats: joining runs needs --out")
        args = run_args(runs)
        run["cells"] = join(runs, args.count * (rn.MESSAGE + 4))
        run["records"] = records(run["cells"], args)
    run = annotate(run, a.table)
    with open(a.out or a.run[0], "w") as f:
        json.dump(run, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
