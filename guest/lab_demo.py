#!/usr/bin/python3
"""The lab experiment: {unpatched, patched} x {window off, gcc49}.

Every cell boots its kernel and runs the `record` scenario: the workload
(inode-load by default: the inode-heavy loop beside loadgen; or rk-loop,
Russell King's find | xargs md5sum loop) under the chkwin loader, with its
cpu-clock sampler at --sample-hz as an extra interrupt source (0: none),
for a fixed number of guest seconds.  Each cell's console.log, log.bin,
cmdline.txt and status.json stay in results/<timestamp>/<cell>/, so that
`analysis/chkwin-analyze report results/<timestamp>` rebuilds the report
offline.  At the end the report is written there, its verdict printed and
results/latest pointed at the run.
"""

import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
PY = "/usr/bin/python3"
FLAVOURS, WINDOWS = ("unpatched", "patched"), ("off", "gcc49")
ALL_CELLS = [f"{f}-{w}" for f in FLAVOURS for w in WINDOWS]
WORKLOADS = ("inode-load", "rk-loop")
# Wall seconds a cell costs beyond its guest duration (boot, loader start,
# drain), used for the time-left estimate until a cell has been measured.
OVERHEAD = 30


def cell_list(text):
    """'unpatched-gcc49:180,unpatched-off' -> [(cell, seconds or None)]."""
    cells = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        name, _, secs = item.partition(":")
        if name not in ALL_CELLS:
            raise argparse.ArgumentTypeError(
                f"unknown cell {name!r} (cells: {', '.join(ALL_CELLS)})")
        if secs and not (secs.isdigit() and int(secs) > 0):
            raise argparse.ArgumentTypeError(f"{item!r}: seconds must be positive")
        cells.append((name, int(secs) if secs else None))
    if not cells:
        raise argparse.ArgumentTypeError("no cells")
    return cells


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=int, default=150,
                    help="guest seconds per cell (default 150: about 12 "
                         "minutes for the four cells)")
    ap.add_argument("--smp", type=int, default=2)
    ap.add_argument("--mem", type=int, default=1024, help="MiB")
    ap.add_argument("--sample-hz", type=int, default=20000,
                    help="the loader's cpu-clock sampler (-F), 0 = none")
    ap.add_argument("--workload", choices=WORKLOADS, default="inode-load")
    ap.add_argument("--cells", type=cell_list, default=cell_list(",".join(ALL_CELLS)),
                    help="comma-separated FLAVOUR-WINDOW[:SECONDS] "
                         f"(default: {','.join(ALL_CELLS)})")
    ap.add_argument("--results", type=pathlib.Path, default=REPO / "results",
                    help="where results/<timestamp>/ and latest go")
    args = ap.parse_args(argv)
    if args.duration <= 0 or args.smp <= 0 or args.mem <= 0 or args.sample_hz < 0:
        ap.error("--duration, --smp and --mem must be positive, --sample-hz >= 0")
    return args


def new_top(results):
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for n in range(100):
        top = results / (stamp if n == 0 else f"{stamp}-{n}")
        try:
            top.mkdir(parents=True)
            return top
        except FileExistsError:
            continue
    sys.exit(f"demo: error: cannot make a new directory under {results}")


def append_for(window, args):
    words = [f"ext4.chksum_window={window}", f"chkwin.workload={args.workload}"]
    if args.sample_hz:
        words.append(f"chkwin.loader=-F,{args.sample_hz}")
    return " ".join(words)


def minutes(seconds):
    return f"{int(seconds) // 60}:{int(seconds) % 60:02d}"


def run_cell(n, total, cell, duration, left, args, out):
    flavour, window = cell.split("-")
    print(f"demo: [{n}/{total}] {cell}: {args.workload}, {duration} s guest time; "
          f"about {minutes(left)} left", flush=True)
    start = time.monotonic()
    proc = subprocess.run(
        [PY, str(REPO / "guest/run.py"), "--flavour", flavour, "--scenario",
         "record", "--duration", str(duration), "--smp", str(args.smp),
         "--mem", str(args.mem), "--append", append_for(window, args),
         "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True)
    wall = time.monotonic() - start
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        why = lines[-1] if lines else f"guest/run.py exited {proc.returncode}"
        return None, wall, why
    status = json.loads((out / "status.json").read_text())
    print(f"demo: [{n}/{total}] {cell}: {status['checksum_invalid']} checksum "
          f"failures, {wall:.0f} s wall", flush=True)
    return status, wall, None


def point_latest(results, top):
    tmp = results / ".latest.tmp"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(top.name)
    os.replace(tmp, results / "latest")


def main(argv=None):
    args = parse_args(argv)
    top = new_top(args.results)
    cells = [(c, d or args.duration) for c, d in args.cells]
    (top / "demo.json").write_text(json.dumps({
        "cells": [{"cell": c, "duration": d} for c, d in cells],
        "workload": args.workload, "sample_hz": args.sample_hz,
        "smp": args.smp, "mem": args.mem}, indent=2) + "\n")
    rows, overhead = [], OVERHEAD
    for n, (cell, duration) in enumerate(cells, 1):
        left = sum(d + overhead for _, d in cells[n - 1:])
        status, wall, err = run_cell(n, len(cells), cell, duration, left, args,
                                     top / cell)
        if err:
            sys.exit(f"demo: error: cell {cell} failed: {err}; "
                     f"everything recorded so far is in {top}")
        overhead = max(0, wall - duration)
        rows.append((cell, duration, status["checksum_invalid"], wall))
    print(f"\n{'cell':<16} {'guest s':>7} {'failures':>8} {'wall s':>7}")
    for cell, duration, fails, wall in rows:
        print(f"{cell:<16} {duration:>7} {fails:>8} {wall:>7.0f}")
    (top / "summary.json").write_text(json.dumps(
        [dict(zip(("cell", "duration", "failures", "wall_seconds"), r))
         for r in rows], indent=2) + "\n")

    proc = subprocess.run([PY, str(REPO / "analysis/chkwin-analyze"), "report",
                           str(top)], capture_output=True, text=True)
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        sys.exit(f"demo: error: the report failed: "
                 f"{lines[-1] if lines else proc.returncode}; runs are in {top}")
    m = re.search(r"^verdict: (.*)$", proc.stdout, re.M)
    point_latest(args.results, top)
    print(f"\nverdict: {m.group(1) if m else '(none printed)'}")
    print(f"report: {top / 'report.html'}")
    print(f"latest: {args.results / 'latest'} -> {top.name}")


if __name__ == "__main__":
    main()
