#!/usr/bin/python3
"""Per-seed statistics for a bench_recovery_relay.py run with --repeat N.

Repetition i of a cell runs Linux's transfer and wirespeed's on the relay seeded seed + i,
so the two transfers of a repetition are a pair. For each cell and direction this adds to
the record's figure how many pairs wirespeed won (the shorter transfer) and a 90 %
bootstrap interval of the ratio of the medians (goodput, wirespeed over Linux), from the
pairs resampled 4,000 times with a fixed seed, and moves the records to another table of
docs/performance.md, so that a run with more seeds sits beside the matrix instead of
replacing it.

  tests/bench/recovery_seed_stats.py RUN.json --table NAME [--out OUT.json]

Without --out the file is rewritten in place; running it again replaces the annotation. Then run tests/bench/make_performance.py.
"""
import argparse
import json
import os
import random
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_recovery_relay import record_id  # noqa: E402  (the ids the run's records carry)

RESAMPLES = 4000
STATS = "; faster in "  # where this script's annotation of a figure begins


def ratio(linux, ours):
    return statistics.median(linux) / statistics.median(ours)


def interval(linux, ours, rng):
    idx = range(len(linux))
    got = sorted(
        ratio([linux[i] for i in pick], [ours[i] for i in pick])
        for pick in ([rng.choice(idx) for _ in idx] for _ in range(RESAMPLES)))
    return got[int(0.05 * RESAMPLES)], got[int(0.95 * RESAMPLES) - 1]


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
                             f"interval of the ratio {lo:.2f}-{hi:.2f})")
            rec["table"] = table
    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run")
    ap.add_argument("--table", required=True)
    ap.add_argument("--out")
    a = ap.parse_args()
    with open(a.run) as f:
        run = annotate(json.load(f), a.table)
    with open(a.out or a.run, "w") as f:
        json.dump(run, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
