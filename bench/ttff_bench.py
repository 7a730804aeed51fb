#!/usr/bin/python3
"""Time to the first checksum failure with the gcc49 window, per flavour.

Each run is a fresh boot of the first-failure scenario (inode-load, no
tracer), stopped at the first "iget: checksum invalid"; the time is guest
time between two printk timestamps.  A run that sees none within the limit
counts as censored at the limit, and the median is then a lower bound.
Prints a Markdown section.
"""

import argparse
import pathlib
import re
import statistics
import tempfile

from bench import runs
from bench.section import print_section

RESULT_RE = re.compile(r"^first-failure: ([\d.]+) ([\d.]+|none)$", re.M)


def one_run(flavour, limit, out):
    what = f"{flavour} run in {out} printed no result"
    proc = runs.boot(["--flavour", flavour, "--scenario", "first-failure", "--duration",
                      str(limit), "--append", "ext4.chksum_window=gcc49", "--out", str(out)],
                     what, "no output")
    m = RESULT_RE.search((out / "console.log").read_text(errors="replace")
                         if (out / "console.log").exists() else "")
    if not m:
        runs.fail(what, runs.last_line(proc, "no output"))
    return None if m.group(2) == "none" else float(m.group(2)) - float(m.group(1))


def quartiles(values):
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], q[2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10, help="runs per flavour")
    ap.add_argument("--limit", type=int, default=300,
                    help="guest seconds before a run gives up")
    ap.add_argument("--flavour", action="append", choices=["unpatched", "patched"])
    args = ap.parse_args()
    if args.runs < 2:
        ap.error("--runs must be at least 2")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for flavour in args.flavour or ["unpatched", "patched"]:
            times = [one_run(flavour, args.limit, pathlib.Path(tmp) / f"{flavour}-{i}")
                     for i in range(args.runs)]
            seen = sorted(t for t in times if t is not None)
            censored = len(times) - len(seen)
            # Censored runs sort last, so the median stays exact while they
            # are fewer than half.
            padded = seen + [float(args.limit)] * censored
            med = statistics.median(padded)
            q1, q3 = quartiles(padded)
            bound = ">= " if censored * 2 >= len(times) else ""
            rows.append((f"{flavour}: median time to first failure ({len(times)} runs)",
                         f"{bound}{med:.1f} s"))
            rows.append((f"{flavour}: quartiles, min - max",
                         f"{q1:.1f} - {q3:.1f} s, {seen[0]:.1f} - {seen[-1]:.1f} s"
                         if seen else "no failure"))
            rows.append((f"{flavour}: runs without a failure in {args.limit} s", str(censored)))
            rows.append((f"{flavour}: each run, s",
                         " ".join("-" if t is None else f"{t:.1f}" for t in times)))
    print_section("Time to first checksum failure",
                  "Window gcc49, workload inode-load without any tracer, a fresh boot "
                  "per run (guest seconds from the workload's start to the first "
                  "\"iget: checksum invalid\").", rows)


if __name__ == "__main__":
    main()
