#!/usr/bin/python3
"""What each BPF program costs per event and per checksum call, by mode.

One boot per record mode (`-R counts`, `failures`, `all`) on instruction
time, and one of the floor (every program attached, returning at once):
the unpatched lab kernel (window off unless --window gcc49), the
phase-seeded inode loop under `chkwin --prog-stats`.  The kernel's BPF
statistics give each program's runs and run time in guest nanoseconds,
which on the icount clock are instructions times 2^shift.  Per program:
runs, instructions a run; per mode: the programs' instructions per
checksum call (their sum over the calls the run counted).  A floor run
is what timing an empty program costs (the statistics' own clock reads
included).  What the statistics leave out (the trampoline or kprobe that
calls a program, the reader in user space) is in the peers' slowdowns.
"""

import argparse
import pathlib
import tempfile

from bench import progstats
from bench.section import print_section

MODES = ("floor", "counts", "failures", "all")


def boot(out, mode, args):
    """The closing record of one boot in mode (floor: -R counts --floor)."""
    return progstats.boot(out, mode, flavour=args.flavour, window=args.window,
                          shift=args.shift, seconds=args.seconds,
                          loader="-R,counts,--floor" if mode == "floor" else f"-R,{mode}")


def program_rows(mode, result, shift):
    """Rows per program that ran, and the mode's instructions per call
    (the floor counts no calls: its rows are per run only)."""
    what = "floor" if mode == "floor" else f"-R {mode}"
    rows, total = [], 0.0
    for name, p in sorted(result["programs"].items()):
        if not p["runs"]:
            rows.append((f"{what}: {name}", "attached, never ran"))
            continue
        insns = p["ns"] / 2 ** shift
        total += insns
        rows.append((f"{what}: {name}",
                     f"{p['runs']:,} runs, {insns / p['runs']:,.0f} instructions a run"))
    calls = result.get("checksum_calls")
    if calls:
        rows.append((f"{what}: programs' instructions per checksum call",
                     f"{total / calls:,.0f} ({len(result['programs'])} programs attached, "
                     f"{calls:,} calls)"))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flavour", default="unpatched", choices=["unpatched", "patched"])
    ap.add_argument("--window", default="off", choices=["off", "gcc49"])
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--shift", type=int, default=4)
    ap.add_argument("--modes", default=",".join(MODES),
                    help="the record modes to boot, comma-separated")
    args = ap.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    if args.seconds < 1 or not modes or not set(modes) <= set(MODES):
        ap.error(f"--seconds must be at least 1, --modes among {','.join(MODES)}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="event-cost-") as tmp:
        for mode in modes:
            rows += program_rows(mode, boot(pathlib.Path(tmp) / mode, mode, args), args.shift)
    print_section("event-cost",
                  "What each BPF program costs, from the kernel's BPF statistics "
                  f"(`chkwin --prog-stats`) on the icount clock (shift {args.shift}: "
                  f"{2 ** args.shift} guest ns an instruction); one {args.seconds} s boot "
                  f"per record mode, `{args.flavour}` (window {args.window}), the "
                  "phase-seeded inode loop, the lab's windows watched.", rows)


if __name__ == "__main__":
    main()
