#!/usr/bin/python3
"""Loader figures: workload slowdown under chkwin, cost per event, and the
highest event rate recorded with nothing lost.

One boot of the loader-bench scenario (same kernel, same boot for every
round): the inode loop alone and under chkwin in alternation, then under
chkwin with the cpu-clock sampler at rising rates.  Writes Markdown
(stdout, or --out FILE atomically).
"""

import argparse
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parent.parent
PY = "/usr/bin/python3"
SIGNAL_RE = re.compile(r"chkwin: signal: (\d+) checksum calls, (\d+) window hits, "
                       r"(\d+) lost records, (\d+) records in ([\d.]+) s")


def fields(console, key):
    return [ln.split()[1:] for ln in console.splitlines()
            if ln.startswith(key + ":")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flavour", default="unpatched")
    ap.add_argument("--seconds", type=int, default=10,
                    help="guest seconds of each measured piece")
    ap.add_argument("--out", type=pathlib.Path)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "run"
        cmd = [PY, str(REPO / "guest/run.py"), "--flavour", args.flavour,
               "--scenario", "loader-bench", "--duration", str(args.seconds),
               "--out", str(out)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        console = (out / "console.log").read_text(errors="replace") \
            if (out / "console.log").exists() else ""
    if proc.returncode != 0:
        sys.exit("loader_bench: error: the loader-bench guest failed: "
                 + (proc.stderr.strip().splitlines() or ["no output"])[-1])
    off = [int(f[1]) for f in fields(console, "bench-off")]
    on = [int(f[1]) for f in fields(console, "bench-on")]
    stops = SIGNAL_RE.findall(console)
    if not off or len(off) != len(on) or len(stops) < len(on):
        sys.exit("loader_bench: error: the guest printed no complete rounds")
    ratios = [a / b for a, b in zip(off, on) if b]
    calls = [int(s[0]) for s in stops[:len(on)]]
    # Time per pass grows by this much; spread over the checksum calls made.
    t = args.seconds
    per_call_us = [(t / b - t / a) / (c / b) * 1e6
                   for a, b, c in zip(off, on, calls) if a and b and c]
    rows = [("workload slowdown, passes alone / under chkwin (median of "
             f"{len(ratios)} rounds)", f"{statistics.median(ratios):.2f}x"),
            ("added cost per checksum call (median)",
             f"{statistics.median(per_call_us):.1f} us guest time")]
    best = None
    for (hz, *_), stop in zip(fields(console, "bench-rate"), stops[len(on):]):
        lost, records, seconds = int(stop[2]), int(stop[3]), float(stop[4])
        rate = records / seconds
        rows.append((f"sampler at {hz} Hz: records/s, lost", f"{rate:.0f}/s, {lost} lost"))
        if lost == 0 and (best is None or rate > best[0]):
            best = (rate, hz)
    rows.append(("highest event rate recorded with zero loss",
                 f"{best[0]:.0f} records/s (sampler {best[1]} Hz)" if best else "none"))
    text = ["# Loader figures", "",
            f"`{' '.join(['bench/loader_bench.py'] + sys.argv[1:])}`: one boot of "
            f"`{args.flavour}`, scenario `loader-bench`, {t} s pieces.", "",
            "| figure | value |", "| --- | --- |"]
    text += [f"| {k} | {v} |" for k, v in rows]
    report = "\n".join(text) + "\n"
    if args.out:
        fd, tmpname = tempfile.mkstemp(dir=args.out.parent, prefix=".tmp-")
        with os.fdopen(fd, "w") as f:
            f.write(report)
        os.replace(tmpname, args.out)
    print(report, end="")


if __name__ == "__main__":
    main()
