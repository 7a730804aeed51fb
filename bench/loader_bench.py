#!/usr/bin/python3
"""Recording cost: the inode loop under chkwin, its kprobe fallback and the
kernel's own event tracing, against nothing, in one boot.

One boot of the loader-bench scenario: rounds of pieces (by default
nothing, chkwin, chkwin -m fallback, tracefs events read from
trace_pipe_raw), then chkwin with the cpu-clock sampler at rising rates.
Each tracer's slowdown is the untraced piece's pass rate over its own in
the same round.  With --flavour stock (Debian's kernel) only nothing and
the fallback make sense.  Prints a Markdown section.
"""

import argparse
import json
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

from bench import runs
from bench.section import print_section
from common import PY, REPO

NAMES = {"floor": "floor (chkwin's programs return at once)",
         "chkwin": "chkwin (tracepoints)", "fallback": "chkwin -m fallback (kprobes)",
         "failures": "chkwin -R failures (flight recorder)",
         "eager": "chkwin --wakeup-kb 0 (reader woken per record)",
         "tracefs": "tracefs events, trace_pipe_raw"}
RATES = "2000,5000,10000,20000,50000"
# guest/scenarios/loader-bench's lines; JSON is chkwin's closing record
# (loader/chkwin.c) or the same keys from the other tracers.
PIECE_RE = re.compile(r"^bench-piece: (\w+) (\d+) (\d+) ([\d.]+) (\d+) (\{.*\})\s*$", re.M)
RATE_RE = re.compile(r"^bench-rate: (\d+) (\d+) ([\d.]+) (\{.*\})\s*$", re.M)


def spread(values, fmt):
    return " / ".join(fmt.format(v) for v in (min(values), statistics.median(values),
                                              max(values)))


def boot(args, out, root="initramfs", extra="", slack=300):
    """One loader-bench boot; extra goes on the kernel command line, slack
    is wall seconds the watchdog allows beyond the pieces."""
    append = (f"chkwin.bench_modes=off,{','.join(args.modes)} "
              f"chkwin.bench_rounds={args.rounds} chkwin.bench_rates={args.rates or 'none'}")
    if args.flavour != "stock":
        append += f" ext4.chksum_window={args.window}"
    if extra:
        append += " " + extra
    # The watchdog's default allows for one piece; the boot runs them all.
    pieces = args.rounds * (1 + len(args.modes)) + len(args.rates.split(",") if args.rates else [])
    package = getattr(args, "stock_package", None)    # peers.py has no such option
    which = ["--stock-package", package] if package else []
    # peers.py may run on instruction time (guest/run.py --clock icount).
    clock = ["--clock", "icount", "--shift", str(args.shift)] \
        if getattr(args, "clock", "host") == "icount" else []
    cmd = [PY, str(REPO / "guest/run.py"), "--flavour", args.flavour, *which, "--root", root,
           "--scenario", "loader-bench", "--duration", str(args.seconds), "--mem", "2048",
           *clock, "--append", append, "--timeout", str(4 * pieces * args.seconds + slack),
           "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    console = (out / "console.log").read_text(errors="replace") \
        if (out / "console.log").exists() else ""
    if proc.returncode != 0:
        last = [ln for ln in console.splitlines() if ln.startswith("loader-bench:")]
        runs.fail("the loader-bench guest failed",
                  last[-1] if last else runs.last_line(proc, "no output"))
    return console


def closing_record(text, name):
    """A piece's closing record; exits with a one-line error if it is not
    one (the keys every tracer fills, as integers)."""
    try:
        found = json.loads(text)
        if all(isinstance(found.get(k), int) for k in ("records", "lost", "checksum_calls")):
            return found
    except ValueError:
        pass
    sys.exit(f"{name}: error: a bench line carries no closing record: {text[:80]}")


def parse_pieces(console, args, name):
    """The bench-piece lines: {(mode, round): figures}, and the rounds;
    exits with a one-line error unless every round has every mode."""
    pieces = {}
    for mode, rnd, passes, seconds, nbytes, result in PIECE_RE.findall(console):
        found = closing_record(result, name)
        pieces[mode, int(rnd)] = dict(rate=int(passes) / float(seconds), passes=int(passes),
                                      bytes=int(nbytes), events=found["records"],
                                      lost=found["lost"], calls=found["checksum_calls"],
                                      window_hits=found.get("window_hits", 0),
                                      seconds=float(seconds))
    rounds = sorted({r for m, r in pieces if m == "off"})
    if len(rounds) != args.rounds or any((m, r) not in pieces or not pieces[m, r]["passes"]
                                         for m in ["off"] + args.modes for r in rounds):
        sys.exit(f"{name}: error: the guest printed {len(rounds)} complete "
                 f"rounds with passes, not {args.rounds}")
    return pieces, rounds


def untraced_row(pieces, rounds):
    off_rate = statistics.median(pieces["off", r]["rate"] for r in rounds)
    return ("untraced: inode passes per minute, median", f"{off_rate * 60:.1f}")


def slowdown(name, pieces, mode, rounds):
    """mode's pieces by round, and the row of its slowdowns: the untraced
    piece's pass rate over mode's, in each round."""
    mine = [pieces[mode, r] for r in rounds]
    slow = [pieces["off", r]["rate"] / p["rate"] for r, p in zip(rounds, mine)]
    return mine, (f"{name}: slowdown, min / median / max of {len(slow)} rounds",
                  spread(slow, "{:.2f}x"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flavour", default="unpatched", choices=["unpatched", "patched", "stock"])
    ap.add_argument("--stock-package", help="with --flavour stock: guest/run.py's "
                    "--stock-package (a package name or a series such as 6.12)")
    ap.add_argument("--window", default="off", help="ext4.chksum_window for the boot")
    ap.add_argument("--seconds", type=int, default=15,
                    help="guest seconds of each measured piece")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--modes", default="floor,chkwin,eager,failures,fallback,tracefs",
                    help="tracers to compare with nothing (comma-separated)")
    ap.add_argument("--rates", default=RATES,
                    help="sampler rates in Hz after the rounds; empty for none")
    args = ap.parse_args()
    args.modes = [m for m in args.modes.split(",") if m]
    if args.seconds <= 0 or args.rounds <= 0 or not set(args.modes) <= set(NAMES):
        ap.error(f"--seconds and --rounds must be positive, --modes among {','.join(NAMES)}")
    with tempfile.TemporaryDirectory() as tmp:
        console = boot(args, pathlib.Path(tmp) / "run")
    pieces, rounds = parse_pieces(console, args, "loader_bench")
    release = re.search(r"Linux version (\S+) ", console)
    rows = [("kernel", release.group(1) if release else "unknown"),
            untraced_row(pieces, rounds)]
    for mode in args.modes:
        # On a stock kernel chkwin's own plan has no tracepoints to use.
        name = "chkwin -m auto (its own plan)" if args.flavour == "stock" and \
            mode == "chkwin" else NAMES[mode]
        mine, row = slowdown(name, pieces, mode, rounds)
        rows.append(row)
        rows.append((f"{name}: inode passes per minute, median",
                     f"{statistics.median(p['rate'] for p in mine) * 60:.1f}"))
        nbytes, events = sum(p["bytes"] for p in mine), sum(p["events"] for p in mine)
        passes = sum(p["passes"] for p in mine)
        rows.append((f"{name}: bytes per event, events per inode pass, lost",
                     f"{nbytes / events:.1f} B, {events / passes:.0f}, "
                     f"{sum(p['lost'] for p in mine)}" if events and passes else "no events"))
        if mode != "tracefs":
            # The time a pass gains under chkwin, spread over its checksum calls.
            cost = [(1 / p["rate"] - 1 / pieces["off", r]["rate"]) * p["passes"] / p["calls"] * 1e6
                    for r, p in zip(rounds, mine) if p["calls"]]
            rows.append((f"{name}: added guest time per checksum call, median",
                         f"{statistics.median(cost):.1f} us" if cost else "no calls"))
    best = None
    for hz, _, _, result in RATE_RE.findall(console):
        found = closing_record(result, "loader_bench")
        rate, lost = found["records"] / found["seconds"], found["lost"]
        arrivals = (found.get("irq_arrivals", 0) + found.get("sampler_ticks", 0)) \
            / found["seconds"]
        rows.append((f"chkwin -F {hz} (sampler): records/s, interrupt arrivals/s, lost",
                     f"{rate:.0f}/s, {arrivals:.0f}/s, {lost}"))
        if lost == 0 and (best is None or rate > best[0]):
            best = (rate, hz)
    if args.rates:
        rows.append(("highest record rate with zero loss",
                     f"{best[0]:.0f}/s (sampler {best[1]} Hz)" if best else "none"))
    window = "" if args.flavour == "stock" else f" (window {args.window})"
    intro = (f"One boot of `{args.flavour}`{window}, {args.seconds} s pieces of the inode "
             "loop, the tracers in turn in every round; a slowdown is the untraced "
             "piece's pass rate over the traced one's in the same round.")
    if "tracefs" in args.modes:
        intro += ("  chkwin merges entry and exit into one 64-byte record; tracefs "
                  "keeps them apart and adds a stack-trace entry per interrupt, the "
                  "only way it has to give the interrupted pc.  Its readers drain "
                  "trace_pipe_raw every 0.2 s, and each read returns a whole page, "
                  "full or not.")
    if args.flavour != "stock":
        title = "Recording cost"
    elif args.stock_package:
        title = f"Stock kernel {args.stock_package}: recording cost"
    else:
        title = "Stock kernel: fallback overhead"
    print_section(title, intro, rows)


if __name__ == "__main__":
    main()
