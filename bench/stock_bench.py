#!/usr/bin/python3
"""Fallback cost on Debian's stock arm64 kernel: the inode loop under
chkwin -m fallback against the loop untraced, in one boot.

One boot of the stock-bench scenario (guest/run.py --flavour stock):
rounds of two pieces, the loop alone and under chkwin -m fallback with its
log on tmpfs.  The slowdown is the untraced piece's pass rate over the
traced one's in the same round.  Prints a Markdown section on stdout.

    /usr/bin/python3 bench/stock_bench.py [--seconds 10] [--rounds 3]
"""

import argparse
import json
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parent.parent
PY = "/usr/bin/python3"
PIECE_RE = re.compile(r"^stock-bench: (off|fallback) (\d+) (\d+) ([\d.]+)"
                      r"(?: (\d+) (\d+) (\d+) (\d+))?\s*$", re.M)


def fail(msg):
    sys.exit(f"stock_bench: error: {msg}")


def boot(args, out):
    cmd = [PY, str(REPO / "guest/run.py"), "--flavour", "stock",
           "--scenario", "stock-bench", "--duration", str(args.seconds),
           "--append", f"chkwin.bench_rounds={args.rounds}", "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    console = (out / "console.log").read_text(errors="replace") \
        if (out / "console.log").exists() else ""
    if proc.returncode != 0:
        last = [ln for ln in console.splitlines() if ln.startswith("stock-bench:")]
        fail("the stock-bench guest failed: "
             + (last or proc.stderr.strip().splitlines() or ["no output"])[-1])
    status = json.loads((out / "status.json").read_text())
    release = re.search(r"Linux version (\S+) .* SMP Debian (\S+)", console)
    return console, status, release


def spread(values, fmt):
    return " / ".join(fmt.format(v) for v in
                      (min(values), statistics.median(values), max(values)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=10,
                    help="guest seconds of each piece (default 10)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    args = ap.parse_args()
    if args.seconds <= 0 or args.rounds <= 0:
        fail("--seconds and --rounds must be positive")
    with tempfile.TemporaryDirectory() as tmp:
        console, status, release = boot(args, pathlib.Path(tmp) / "run")
    pieces = {}
    for mode, rnd, passes, secs, calls, records, lost, nbytes in PIECE_RE.findall(console):
        pieces[mode, int(rnd)] = dict(
            passes=int(passes), seconds=float(secs), rate=int(passes) / float(secs),
            calls=int(calls or 0), records=int(records or 0), lost=int(lost or 0),
            bytes=int(nbytes or 0))
    rounds = sorted(r for m, r in pieces if m == "off" and ("fallback", r) in pieces)
    if len(rounds) != args.rounds or any(not pieces[m, r]["passes"]
                                         for m in ("off", "fallback") for r in rounds):
        fail(f"the guest printed {len(rounds)} complete rounds with passes, "
             f"not {args.rounds}")
    off = [pieces["off", r] for r in rounds]
    on = [pieces["fallback", r] for r in rounds]
    slow = [a["rate"] / b["rate"] for a, b in zip(off, on)]
    # The time a pass gains under the probes (and everything else chkwin
    # records), spread over its checksum calls.
    per_call = [(1 / b["rate"] - 1 / a["rate"]) * b["passes"] / b["calls"] * 1e6
                for a, b in zip(off, on) if b["calls"]]
    secs = sum(b["seconds"] for b in on)
    records = sum(b["records"] for b in on)
    cmd = " ".join(["bench/stock_bench.py"] + sys.argv[1:])
    kernel = f"{release.group(1)} (Debian {release.group(2)})" if release else "unknown"
    rows = [
        ("kernel (Debian's linux-image, unmodified), modes",
         f"{kernel}; chksum kprobe:chksum_update, iget kprobe+kretprobe, "
         "irq tp_btf+stack"),
        (f"inode loop slowdown under chkwin -m fallback, min / median / max "
         f"of {len(slow)} rounds", spread(slow, "{:.2f}x")),
        ("inode passes per minute, untraced / under chkwin (medians)",
         f"{statistics.median(p['rate'] for p in off) * 60:.1f} / "
         f"{statistics.median(p['rate'] for p in on) * 60:.1f}"),
        ("guest time added per checksum call, median",
         f"{statistics.median(per_call):.1f} us" if per_call else "no calls"),
        ("under chkwin: checksum calls per pass, records/s, bytes per record, lost",
         f"{sum(b['calls'] for b in on) / sum(b['passes'] for b in on):.0f}, "
         f"{records / secs:.0f}, "
         f"{sum(b['bytes'] for b in on) / max(records, 1):.1f} B, "
         f"{sum(b['lost'] for b in on)}"),
        ("the boot: guest seconds per piece, wall s, guest uptime s",
         f"{args.seconds}, {status['wall_seconds']:.0f}, {status['guest_uptime']:.0f}"),
    ]
    print("## Stock kernel: fallback overhead\n")
    print("| figure | value | command |")
    print("|---|---|---|")
    for figure, value in rows:
        print(f"| {figure} | {value} | `{cmd}` |")


if __name__ == "__main__":
    main()
