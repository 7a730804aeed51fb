#!/usr/bin/python3
"""What classifying an interrupt against N watched windows costs.

One boot per N on instruction time (the unpatched lab kernel, inode-loop,
`-R counts`, `--prog-stats`): no window watched (run.py
--no-lab-windows), then windows files of 1, 100 and 4,000 windows, each the first
instruction of a distinct kernel function spread over the whole text.
The kernel's BPF statistics give each program's runs and run time in
guest nanoseconds, which on the icount clock are instructions times
2^shift: the irq_handler_entry program (where the window search runs)
and irq_handler_exit, per run, in ns and in guest instructions.  The
search halves the sorted table, so its cost should grow with log2(N),
at most 13 lookups.
"""

import argparse
import math
import pathlib
import tempfile

from analysis import windows
from bench import progstats
from bench.progstats import instructions
from bench.section import print_section
from common.cache import quietly
from guest.host import kbuild

SIZES = (1, 100, 4000)


def spread_windows(sysmap, n):
    """A windows file's text: n windows, the first instruction of n kernel
    functions whose names are unique, evenly spread by address."""
    syms = windows.symbols_from(sysmap)
    # One name an address: aliases would make overlapping windows.
    by_addr = {}
    for (module, name), spans in syms.items():
        if module is None and len(spans) == 1 and windows.location(name):
            by_addr.setdefault(spans[0][0], name)
    names = sorted(by_addr.items())
    step = len(names) / n
    picked = [names[int(i * step)][1] for i in range(n)]
    return "chkwin-windows 1\n" + "".join(f"w{i} {name} {name}\n"
                                          for i, name in enumerate(picked))


def boot(out, wfile, args):
    """The closing record of one boot, watching wfile (None: no window)."""
    return progstats.boot(
        out, out.name, flavour="unpatched", window="gcc49", shift=args.shift,
        seconds=args.seconds,
        loader="-R,counts" + (f",--windows,/tmp/host/{wfile.name}" if wfile else ""),
        run_args=["--guest-file", str(wfile)] if wfile else ["--no-lab-windows"])


def per_run(result, prog, shift):
    insns = instructions(result, prog, shift)
    if insns is None:
        return "not run"
    return (f"{insns * 2 ** shift:,.0f} ns = {insns:,.0f} instructions "
            f"({result['programs'][prog]['runs']:,} runs)")


def steps(n):
    """Lookups the halving search makes at most over n windows."""
    return math.ceil(math.log2(n)) + 1 if n > 1 else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--shift", type=int, default=4)
    args = ap.parse_args()
    with quietly():
        kdir = kbuild.kernel_dir("unpatched")
    rows, entry = [], {}
    with tempfile.TemporaryDirectory(prefix="windows-bench-") as tmp:
        tmp = pathlib.Path(tmp)
        for n in (None,) + SIZES:
            wfile = None
            if n:
                wfile = tmp / f"spread{n}.windows"
                wfile.write_text(spread_windows(kdir / "System.map", n))
            result = boot(tmp / f"boot{n or 0}", wfile, args)
            what = "no window watched" if n is None else \
                f"{n:,} window{'s' if n > 1 else ''} (search: {steps(n)} " \
                f"lookup{'s' if steps(n) > 1 else ''} at most)"
            prog = next((p for p in ("irq_entry_regs", "irq_entry_saved", "irq_entry_stack")
                         if p in result["programs"]), "irq_entry_regs")
            entry[n] = instructions(result, prog, args.shift)
            rows.append((f"{what}: {prog} a run", per_run(result, prog, args.shift)))
            rows.append((f"{what}: irq_exit a run", per_run(result, "irq_exit", args.shift)))
            if n:
                hit = sum((result.get("watched_arrivals") or {}).values())
                rows.append((f"{what}: arrivals in a window", f"{hit:,} of "
                             f"{result['irq_arrivals']:,}"))
    if all(entry.get(n) for n in (SIZES[0], SIZES[-1])):
        slope = (entry[SIZES[-1]] - entry[SIZES[0]]) / (steps(SIZES[-1]) - steps(SIZES[0]))
        rows.append(("instructions a halving step (from 1 to 4,000 windows)",
                     f"{slope:,.0f}: the search's cost grows with log2(N), "
                     f"{entry[SIZES[-1]] - entry[SIZES[0]]:,.0f} instructions more at "
                     f"{SIZES[-1]:,} windows than at 1"))
    print_section("windows",
                  "The cost per interrupt of classifying against N watched windows "
                  f"(`chkwin --windows`), from the kernel's BPF statistics on the icount "
                  f"clock (shift {args.shift}: {2 ** args.shift} guest ns an instruction); "
                  f"one {args.seconds} s boot each, the unpatched lab kernel, inode-loop, "
                  "`-R counts`.", rows)


if __name__ == "__main__":
    main()
