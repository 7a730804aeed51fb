#!/usr/bin/python3
"""chkwin-analyze: turn chkwin logs into answers (docs/log-format.md).

  read LOG                 the log as JSON lines, as chkwin --read -f json
  summary LOG              kernel, modes, duration, counts, lost, truncated
  correlate LOG            failures and the interrupts behind them (JSON/CSV)
  heatmap LOG -o DIR       arrival heat maps (PNG, SVG) and arrivals.txt
  compare LOG LOG...       failure rates with exact intervals and a verdict
  pool DIR DIR...          several runs of one experiment (lab_demo.py) as
                           one: its conditions' boots together, the verdicts
                           and the per-boot rates
  report DIR [LOG...]      report.html (self-contained) and report.md;
                           no LOG: the experiment in DIR (a lab_demo.py run:
                           its decisions, then every DIR/*/log.bin)
"""

import argparse
import csv
import json
import pathlib
import sys

from analysis import chkwinlog
from analysis import compare
from analysis import correlate
from analysis import documents
from analysis import summary

PROG = "chkwin-analyze"


class Fail(Exception):
    pass


def load(path, args):
    try:
        return correlate.load(path, args.geometry, args.image, warn)
    except correlate.LoadError as e:
        raise Fail(str(e)) from None


def warn(line):
    print(f"{PROG}: warning: {line}", file=sys.stderr)


def cmd_read(args):
    """Exit status as chkwin --read: 0 complete, 3 truncated, 1 corrupt."""
    from analysis import logjson
    try:
        log = chkwinlog.read(args.log)
    except chkwinlog.LogError as e:
        print(logjson.status_line("corrupt", 0, e.offset, str(e)))
        raise Fail(f"{args.log}: corrupt log: {e}") from None
    except OSError as e:
        raise Fail(f"{args.log}: {e.strerror}") from None
    for line in logjson.lines(log):
        print(line)
    if log.status == "truncated":
        print(f"{PROG}: error: {args.log}: {log.reason}", file=sys.stderr)
        return 3
    return 0


def cmd_summary(args):
    log, corr = load(args.log, args)
    s = summary.summarize(log, args.log, corr)
    print(json.dumps(s, indent=1) if args.json else summary.text(s), end="\n" if args.json else "")


CSV_ARRIVAL = ["call_ts", "call_end_ns", "cpu", "caller", "source", "ts",
               "offset_ns", "position", "class", "func", "offset", "pc"]


def cmd_correlate(args):
    log, corr = load(args.log, args)
    out = sys.stdout
    if args.arrivals:
        a, calls = corr.arrivals, corr.calls
        names = corr.caller_names
        rows = ([int(calls["ts"][a.call[i]]), int(calls["end_ns"][a.call[i]]),
                 int(a.cpu[i]), names.get(int(calls["caller"][a.call[i]]), ""),
                 str(a.source[i]), int(a.ts[i]), int(a.offset_ns[i]),
                 f"{a.position[i]:.4f}", chkwinlog.CLASSES[a.cls[i]]
                 if a.cls[i] < len(chkwinlog.CLASSES) else int(a.cls[i]),
                 int(a.func[i]), int(a.offset[i]), f"{int(a.pc[i]):#x}"]
                for i in range(len(a)))
        if args.format == "csv":
            w = csv.writer(out)
            w.writerow(CSV_ARRIVAL)
            w.writerows(rows)
        else:
            for r in rows:
                out.write(json.dumps(dict(zip(CSV_ARRIVAL, r))) + "\n")
        return
    if args.format == "csv":
        w = csv.writer(out)
        w.writerow(documents.FAILURE_CSV)
        w.writerows(f.csv_row() for f in corr.failures)
        return
    json.dump({"log": str(args.log), "status": log.status,
               "truncated": log.status == "truncated",
               "geometry": corr.geometry.source if corr.geometry else None,
               "calls": len(corr.calls), "arrivals_in_calls": len(corr.arrivals),
               "record": log.header.get("record", "all"),
               "window_hit_calls": corr.window_totals()[0],
               "window_hit_outcomes": corr.outcomes_by_caller(),
               "failures_by_kind": {k: {"failures": n, "attributed": a}
                                    for k, (n, a) in corr.by_kind().items()},
               "diagnoses": corr.diagnoses(),
               "failures": [f.to_json() for f in corr.failures],
               "attributed": corr.attributed()},
              out, indent=1)
    out.write("\n")


def cmd_heatmap(args):
    from analysis import heatmap  # matplotlib: only the commands that draw load it
    from analysis import windows
    log, corr = load(args.log, args)
    out = pathlib.Path(args.out)
    if args.function:
        try:
            symbols = windows.symbols_from(args.symbols) if args.symbols else None
        except (OSError, ValueError, IndexError) as e:
            raise Fail(f"{args.symbols}: not a System.map or kallsyms copy ({e})") from None
        try:
            ranges = [(name, heatmap.function_range(log, name, symbols))
                      for name in args.function]
        except heatmap.RangeError as e:
            raise Fail(str(e)) from None
        out.mkdir(parents=True, exist_ok=True)
        for name, (start, end) in ranges:
            stem = out / ("function-" + "".join(c if c.isalnum() or c in "._-" else "_"
                                                for c in name))
            cols = heatmap.function_map(log, corr, name, start, end, stem)
            print(f"wrote {stem.name}.png and .svg in {out}: arrivals in {name} "
                  f"({end - start} bytes) by CPU: "
                  f"{ {cpu: int(c.sum()) for cpu, c in cols.items()} }")
        return
    res = heatmap.write_all(log, corr, out)
    flag = " (truncated log)" if log.status == "truncated" else ""
    column = res["window_column"] if log.window_known() else \
        "unknown (no window symbols in this kernel)"
    print(f"wrote {', '.join(res['files'])} in {args.out}{flag}; arrivals in the "
          f"window column by CPU: {column}")


def cmd_compare(args):
    rows = [compare.row(p, *load(p, args)) for p in args.logs]
    if args.plot:
        compare.latency_plot(rows, args.plot)
    if args.json:
        print(json.dumps({"rows": rows, "verdict": compare.verdict(rows)}, indent=1))
    else:
        print(compare.text(rows), end="")


def cmd_report(args):
    from analysis import report
    top = pathlib.Path(args.dir)
    if (top / "experiment.json").exists() and not args.logs:
        try:
            doc = documents.load(top)
        except documents.ExperimentError as e:
            raise Fail(str(e)) from None
        try:
            lines = report.write_experiment(top, doc, args.geometry, args.image, warn)
        except correlate.LoadError as e:
            raise Fail(str(e)) from None
        print(f"wrote {top}/report.html and report.md")
        for _, text in lines:
            print(f"verdict: {text}")
        return
    logs = args.logs or sorted(str(p) for p in top.glob("*/log.bin"))
    if not logs:
        raise Fail(f"no logs given and no {args.dir}/*/log.bin")
    runs = [(p, *load(p, args)) for p in logs]
    verdict = report.write(args.dir, runs)
    print(f"wrote {args.dir}/report.html and report.md\nverdict: {verdict}")


def cmd_pool(args):
    from analysis import decisions
    from analysis import experiment
    from analysis import tables
    try:
        doc, differences = documents.pool([documents.load(d) for d in args.dirs], args.dirs,
                                          args.allow_different)
    except documents.ExperimentError as e:
        raise Fail(str(e)) from None
    res = experiment.Results(doc)
    print(f"pooled {len(args.dirs)} runs: the verdicts' error rates hold for a plan "
          "fixed in advance, not for runs pooled until a verdict came")
    for d in differences:
        print(f"pooled despite a difference: {d}")
    print()
    table = tables.condition_table([r for r in res.condition_rows if r["kind"] != "recorded"])
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    for line in table:
        print("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip())
    print()
    for key, text in decisions.verdicts(res):
        if key in ("window", "flavour", "dose", "rate-dose"):
            print(f"verdict: {text}")
    print()
    for line in tables.boot_rates(doc):
        print(line)


def main(argv=None):
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    geo = argparse.ArgumentParser(add_help=False)
    geo.add_argument("--geometry", metavar="JSON",
                     help="test disk geometry (the <image>.json of guest/testdisk.py)")
    geo.add_argument("--image", metavar="IMG",
                     help="ext4 image to read the geometry from (read-only)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("read", help="the log as JSON lines (chkwin --read -f json)")
    p.add_argument("log")
    p.set_defaults(func=cmd_read)
    p = sub.add_parser("summary", parents=[geo], help="one log at a glance")
    p.add_argument("log")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_summary)
    p = sub.add_parser("correlate", parents=[geo], help="attribute failures")
    p.add_argument("log")
    p.add_argument("-f", "--format", choices=["json", "csv"], default="json")
    p.add_argument("--arrivals", action="store_true",
                   help="one row per arrival inside a checksum call instead")
    p.set_defaults(func=cmd_correlate)
    p = sub.add_parser("heatmap", parents=[geo], help="arrival heat maps")
    p.add_argument("log")
    p.add_argument("-o", "--out", default="heatmap", help="output directory")
    p.add_argument("--function", action="append", metavar="NAME",
                   help="instead: arrivals by offset in NAME, a watched window, a "
                   "checksum function or (with --symbols) any function; repeatable")
    p.add_argument("--symbols", metavar="FILE",
                   help="System.map or kallsyms copy of the recorded kernel (same "
                   "KASLR offset) for --function")
    p.set_defaults(func=cmd_heatmap)
    p = sub.add_parser("compare", parents=[geo], help="kernels side by side")
    p.add_argument("logs", nargs="+")
    p.add_argument("--json", action="store_true")
    p.add_argument("--plot", metavar="PNG", help="latency distributions figure")
    p.set_defaults(func=cmd_compare)
    p = sub.add_parser("pool", help="several runs of one experiment as one")
    p.add_argument("dirs", nargs="+", metavar="DIR")
    p.add_argument("--allow-different", action="store_true",
                   help="pool runs whose settings or kernels differ (said in the output)")
    p.set_defaults(func=cmd_pool)
    p = sub.add_parser("report", parents=[geo], help="HTML and Markdown report")
    p.add_argument("dir")
    p.add_argument("logs", nargs="*", help="default: DIR/*/log.bin")
    p.set_defaults(func=cmd_report)
    args = ap.parse_args(argv)
    try:
        return args.func(args) or 0
    except Fail as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    except chkwinlog.LogError as e:
        print(f"{PROG}: error: cannot analyse: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 1


if __name__ == "__main__":
    sys.exit(main())
