#!/usr/bin/python3
"""Renders the headline performance tables from the benchmark JSON in docs/results/.

Every docs/results/*.json holds one benchmark run: {"run": {workload, section, measured,
commit, command, load, source}, "records": [{id, figure, unit, ours, peer, peer_name,
better, ratio, headline, readme, rank}]}; rows are ordered by rank. The table goes between the markers
  <!-- performance:headline:begin --> ... <!-- performance:headline:end -->
in docs/performance.md (records with "headline": true) and README.md (records with "readme": true), and one
page per run, docs/results/<name>.md, so the tables are never edited by hand. A record with
"table": NAME goes instead into the table between <!-- performance:NAME:begin --> and
<!-- performance:NAME:end --> in docs/performance.md (the scaling table, for one).

  make_performance.py             rewrites the tables in place
  make_performance.py --check     fails when a committed table differs from the JSON
  make_performance.py --self-test shows --check fails on a hand-edited cell and bad JSON
"""
import argparse
import glob
import json
import os
import re
import shutil
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
RUN_KEYS = ("workload", "section", "measured", "commit", "command", "source")
RECORD_KEYS = ("id", "rank", "headline", "figure", "unit", "ours", "peer", "peer_name", "better", "ratio", "readme")


class BadResults(Exception):
    pass


def load_records(results_dir):
    """Every record with its run's fields, checked; sorted by file name, then file order."""
    records = []
    files = sorted(glob.glob(os.path.join(results_dir, "*.json")))
    if not files:
        raise BadResults(f"no *.json in {results_dir}")
    for path in files:
        name = os.path.basename(path)
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except ValueError as e:
            raise BadResults(f"{name}: not JSON: {e}") from e
        run = doc.get("run", {})
        missing = [k for k in RUN_KEYS if k not in run]
        if missing:
            raise BadResults(f"{name}: run lacks {missing}")
        for rec in doc.get("records", []):
            missing = [k for k in RECORD_KEYS if k not in rec]
            if missing:
                raise BadResults(f"{name}: record {rec.get('id')} lacks {missing}")
            check_ratio(name, rec)
            records.append(dict(rec, run=run, file=name))
    return sorted(records, key=lambda r: r["rank"])


def check_ratio(name, rec):
    """The stored ratio (from unrounded figures) agrees with the rounded ones within 3%."""
    if rec["better"] not in ("higher", "lower"):
        raise BadResults(f"{name}: {rec['id']}: better must be higher or lower")
    ours, peer = float(rec["ours"]), float(rec["peer"])
    if ours <= 0 or peer <= 0:
        raise BadResults(f"{name}: {rec['id']}: figures must be positive")
    expect = ours / peer if rec["better"] == "higher" else peer / ours
    if abs(expect - rec["ratio"]) > 0.03 * expect:
        raise BadResults(f"{name}: {rec['id']}: ratio {rec['ratio']} but the figures give "
                         f"{expect:.2f}")


def fmt(value):
    """As transcribed: 7.84 stays 7.84, 22.0 stays 22.0, 1080 becomes 1,080."""
    return f"{value:,}" if isinstance(value, int) else str(value)


def short_runs(measured, command):
    """A run updated by reruns keeps them all as "A; then B; then C": the table shows the
    first and last dates and the first command, the run's page every one of them. Returns
    the date and the command cell (markdown)."""
    dates, commands = measured.split("; then "), command.split("; then ")
    if len(dates) > 1:
        measured = f"{dates[0]} to {dates[-1]} ({len(dates)} runs)"
    if len(commands) > 1:
        return measured, f"`{commands[0]}` and {len(commands) - 1} reruns (on the run's page)"
    return measured, f"`{command}`"


def render(records, full, table="headline"):
    """The markdown table: every record (docs/performance.md) or a shorter one (README);
    `table` picks the records of one named table of docs/performance.md."""
    if full and table != "headline":
        head = ("| figure | measured | against | ratio | date | commit | command |\n"
                "| --- | --- | --- | --- | --- | --- | --- |\n")
    elif full:
        head = ("| figure | wirespeed | peer | ratio (>1: wirespeed better) | date | commit "
                "| command |\n| --- | --- | --- | --- | --- | --- | --- |\n")
    else:
        head = "| figure | wirespeed | peer | ratio |\n| --- | --- | --- | --- |\n"
    rows = []
    for r in records:
        if r.get("table", "headline") != table:
            continue
        if table == "headline" and not (r["headline"] if full else r["readme"]):
            continue
        unit = r["unit"]
        cells = [r["figure"], f"{fmt(r['ours'])} {unit}",
                 f"{fmt(r['peer'])} {unit}, {r['peer_name']}", f"{r['ratio']:.2f}×"]
        if full:
            run = r["run"]
            page = "results/" + r["file"][:-len(".json")] + ".md"
            measured, command = short_runs(run["measured"], run["command"])
            cells += [f"[{measured}]({page})", f"`{run['commit']}`", command]
        rows.append("| " + " | ".join(cells) + " |\n")
    note = ("\n_Generated by `tests/bench/make_performance.py` from `docs/results/*.json`; "
            "do not edit by hand._\n")
    return head + "".join(rows) + note


def render_run_page(name, run, records):
    """docs/results/<name>.md: one run's records with everything known about the run."""
    lines = [f"# {run['workload']}: {run['measured']}", "",
             "<!-- Generated by tests/bench/make_performance.py from "
             f"{name}.json; do not edit by hand. -->", "",
             f"- Command: `{run['command']}`",
             f"- Commit that recorded it: `{run['commit']}`",
             f"- Load average (1 min) at start / end: {run.get('load', 'not recorded')}",
             f"- Full table and notes: docs/benchmarks.md, table {run['section']}",
             f"- Source: {run['source']}", "",
             "| figure | wirespeed | peer | ratio | better |",
             "| --- | --- | --- | --- | --- |"]
    for r in records:
        lines.append(f"| {r['figure']} | {fmt(r['ours'])} {r['unit']} | {fmt(r['peer'])} "
                     f"{r['unit']}, {r['peer_name']} | {r['ratio']:.2f}× | {r['better']} |")
    return "\n".join(lines) + "\n"


def run_pages(results_dir, records):
    pages = {}
    for r in records:
        name = r["file"][:-len(".json")]
        pages.setdefault(name, (r["run"], []))[1].append(r)
    return {os.path.join(results_dir, n + ".md"): render_run_page(n, run, recs)
            for n, (run, recs) in pages.items()}


def replace_between(text, body, path, table="headline"):
    begin, end = f"<!-- performance:{table}:begin -->", f"<!-- performance:{table}:end -->"
    pattern = re.compile(re.escape(begin) + r"\n.*?" + re.escape(end), re.DOTALL)
    if len(pattern.findall(text)) != 1:
        raise BadResults(f"{path}: needs exactly one {begin} ... {end} block")
    return pattern.sub(lambda _: begin + "\n" + body + end, text)


def targets(root):
    return [(os.path.join(root, "docs", "performance.md"), True),
            (os.path.join(root, "README.md"), False)]


def run(root, check):
    try:
        records = load_records(os.path.join(root, "docs", "results"))
        stale = []
        results_dir = os.path.join(root, "docs", "results")
        pages = run_pages(results_dir, records)
        known = set(pages) | {p for p in glob.glob(os.path.join(results_dir, "*.md"))}
        for path in sorted(known):
            old = open(path, encoding="utf-8").read() if os.path.exists(path) else None
            new = pages.get(path)
            if new is None:
                raise BadResults(f"{os.path.relpath(path, root)} has no JSON: remove it")
            if new != old:
                stale.append(os.path.relpath(path, root))
                if not check:
                    with open(path, "w", encoding="utf-8") as f:
                        f.write(new)
        tables = sorted({r.get("table", "headline") for r in records} - {"headline"})
        for path, full in targets(root):
            with open(path, encoding="utf-8") as f:
                old = f.read()
            new = replace_between(old, render(records, full), path)
            for t in tables if full else []:
                new = replace_between(new, render(records, True, t), path, t)
            if new != old:
                stale.append(os.path.relpath(path, root))
                if not check:
                    with open(path, "w", encoding="utf-8") as f:
                        f.write(new)
    except BadResults as e:
        print(f"make_performance: {e}")
        return 1
    if check and stale:
        print(f"out of date with docs/results/*.json: {', '.join(stale)}; "
              "run tests/bench/make_performance.py (never edit the tables by hand)")
        return 1
    print(f"{'checked' if check else 'rendered'} {len(records)} records into "
          f"{', '.join(os.path.relpath(p, root) for p, _ in targets(root))} and "
          f"{len(pages)} pages in docs/results/")
    return 0


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(os.path.join(ROOT, "docs", "results"), os.path.join(tmp, "docs", "results"))
        for path, _ in targets(ROOT):
            shutil.copy(path, os.path.join(tmp, os.path.relpath(path, ROOT)))
        if run(tmp, check=False) != 0 or run(tmp, check=True) != 0:
            print("self-test: rendering the committed JSON failed")
            return 1
        perf = os.path.join(tmp, "docs", "performance.md")
        with open(perf, encoding="utf-8") as f:
            text = f.read()
        with open(perf, "w", encoding="utf-8") as f:
            f.write(re.sub(r"(\| \d+\.\d+)×", r"\g<1>9×", text, count=1))
        if run(tmp, check=True) == 0:
            print("self-test: a hand-edited ratio passed --check")
            return 1
        bad = os.path.join(tmp, "docs", "results", "zz-bad.json")
        with open(bad, "w") as f:
            json.dump({"run": {k: "x" for k in RUN_KEYS}, "records": [
                {"id": "b", "figure": "f", "unit": "u", "ours": 2.0, "peer": 1.0,
                 "peer_name": "p", "better": "higher", "ratio": 5.0, "readme": False,
                 "headline": False,
                 "rank": 99}]}, f)
        if run(tmp, check=False) == 0:
            print("self-test: a ratio that contradicts its figures was rendered")
            return 1
    print("self-test: --check fails on a hand-edited table and on a contradicting ratio")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    return self_test() if args.self_test else run(ROOT, args.check)


if __name__ == "__main__":
    sys.exit(main())
