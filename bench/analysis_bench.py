#!/usr/bin/python3
"""Time and peak memory to correlate 10 million synthetic events.

The log is generated (analysis/synthlog.py) and written to a temporary
file by one child process, then read and correlated by another, so that
ru_maxrss measures the analysis alone: Linux carries a process's peak RSS
across fork and exec, so a parent holding the generated records would
count them too.  Goal on the lab host: under 30 s and
1 GiB; a miss is reported in the table, not as a failure.
"""

import argparse
import pathlib
import subprocess
import sys
import tempfile

from bench.section import print_section
from common import PY, REPO

# Measured from synthlog.generate: 6 calls, verify, iget, ~3.5 interrupts,
# a block issue and completion every 8 igets.
RECORDS_PER_IGET = 11.6
GOAL_S, GOAL_MIB = 30, 1024

GENERATE = """
import time
from analysis import synthlog
t = time.monotonic()
synthlog.generate(igets={igets}, k={k}, m={m}, seed=5).write({path!r})
print(time.monotonic() - t)
"""

CHILD = """
import resource, time
from analysis import chkwinlog, correlate, fsgeom, synthlog
t = time.monotonic()
log = chkwinlog.read({path!r})
read = time.monotonic() - t
geo = fsgeom.Geometry(4096, 256, 2048, synthlog.GEOMETRY["inode_tables"], "synth")
c = correlate.Correlation(log, geo)
total = time.monotonic() - t
print(len(log), read, total, len(c.failures), c.attributed(), len(c.arrivals),
      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def child(code):
    proc = subprocess.run([PY, "-c", code], capture_output=True, text=True,
                          cwd=REPO)
    if proc.returncode != 0:
        sys.exit(f"analysis_bench: error: {proc.stderr.strip().splitlines()[-1:]}")
    return proc.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--failures", type=int, default=50)
    args = ap.parse_args()
    analysis = str(REPO / "analysis")
    with tempfile.TemporaryDirectory() as tmp:
        path = str(pathlib.Path(tmp) / "log.bin")
        gen = float(child(GENERATE.format(
            analysis=analysis, igets=int(args.events / RECORDS_PER_IGET),
            k=args.failures, m=args.failures // 5, path=path)))
        out = child(CHILD.format(analysis=analysis, path=path))
        n, read, total, fails, attributed, arrivals, rss_kib = out.split()
    total, rss = float(total), int(rss_kib) / 1024
    ok = total < GOAL_S and rss < GOAL_MIB
    rows = [("events in the log", f"{int(n):,} (generated and written in {gen:.1f} s)"),
            ("read", f"{float(read):.2f} s"),
            ("read + correlate", f"{total:.2f} s (goal < {GOAL_S} s)"),
            ("peak RSS", f"{rss:.0f} MiB (goal < {GOAL_MIB} MiB)"),
            ("failures found, attributed", f"{fails}, {attributed}"),
            ("interrupt arrivals inside checksum calls", arrivals),
            ("result", "within goal" if ok else "OVER GOAL")]
    print_section("Analysis throughput",
                  "A synthetic log (analysis/synthlog.py) read and correlated by a "
                  "fresh process, whose peak RSS is the analysis's alone.", rows)


if __name__ == "__main__":
    main()
