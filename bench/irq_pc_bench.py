#!/usr/bin/python3
"""What each way to the interrupted pc costs per interrupt on a Debian kernel.

Boots on instruction time (one vCPU, so no IPIs), the leaf-loop workload
(dd from /dev/zero) under `chkwin -R counts -F HZ`: the sampler's hrtimer
makes the interrupts, and a boot with `--no-irq` (the sampler alone) is
the baseline.  A method's cost per interrupt is the guest time a round of
the workload gains over the baseline, spread over the interrupts of a
round; on the icount clock that is instructions.  A second boot per
method under `--prog-stats` (whose own clock reads would inflate the
first) gives the BPF programs' share; the rest is what calls them (for
the kprobe: a breakpoint exception, the single-step of the probed
instruction, the kretprobe's trampoline).
"""

import argparse
import pathlib
import re
import sys
import tempfile

from analysis.documents import BootStatus
from bench import runs
from bench.section import print_section

# method: (chkwin options, the programs that serve the interrupt)
METHODS = {
    "none": ("--no-irq", ()),
    "stack": ("--irq-pc,stack", ("irq_entry_stack", "irq_exit")),
    "kprobe": ("--irq-pc,kprobe", ("irq_regs_kprobe", "irq_regs_kretprobe",
                                   "irq_entry_saved", "irq_exit")),
    "irq_regs": ("--irq-pc,irq_regs", ("irq_entry_regs", "irq_exit")),
}
ROUNDS_RE = re.compile(r"^leaf-rounds: (\d+) ([\d.]+)\s*$", re.M)


def boot(out, method, args, stats=False):
    """(rounds a guest second, the closing record) of one boot."""
    options, _ = METHODS[method]
    if stats:
        options += ",--prog-stats"
    which = ["--stock-package", args.stock_package] if args.stock_package else []
    runs.boot(["--flavour", "stock", *which, "--scenario", "record", "--clock", "icount",
               "--shift", str(args.shift), "--duration", str(args.seconds), "--out", str(out),
               "--append", "chkwin.workload=leaf-loop chkwin.log=none "
               f"chkwin.loader=-q,-R,counts,-F,{args.hz},{options}"],
              f"the {method} boot failed")
    console = (out / "console.log").read_text(errors="replace")
    found = ROUNDS_RE.search(console)
    result = BootStatus.read(out / "status.json").chkwin
    if not found or not result or (stats and not result.get("programs")):
        sys.exit(f"irq_pc_bench: error: the {method} boot printed no rounds or closing record")
    return int(found.group(1)) / float(found.group(2)), result


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stock-package", help="guest/run.py's --stock-package (default: 6.1)")
    ap.add_argument("--methods", default="stack,kprobe",
                    help=f"comma-separated, among {','.join(m for m in METHODS if m != 'none')}")
    ap.add_argument("--seconds", type=int, default=30, help="guest seconds of workload a boot")
    ap.add_argument("--hz", type=int, default=5000, help="the sampler's rate")
    ap.add_argument("--shift", type=int, default=4)
    args = ap.parse_args()
    methods = [m for m in args.methods.split(",") if m]
    if not methods or not set(methods) <= set(METHODS) - {"none"} or args.seconds < 2:
        ap.error("--methods among stack,kprobe,irq_regs; --seconds at least 2")
    ns = 2 ** args.shift
    with tempfile.TemporaryDirectory(prefix="irq-pc-") as tmp:
        base_rate, _ = boot(pathlib.Path(tmp) / "none", "none", args)
        rows = [("baseline (sampler only, --no-irq): rounds a guest second",
                 f"{base_rate:.2f}")]
        for method in methods:
            rate, result = boot(pathlib.Path(tmp) / method, method, args)
            _, counted = boot(pathlib.Path(tmp) / f"{method}-stats", method, args, stats=True)
            irqs = result["irq_arrivals"] / result["seconds"]
            added_ns = (1 / rate - 1 / base_rate) * 1e9     # per round
            per_irq = added_ns / (irqs / rate) / ns
            progs = counted["programs"]
            bpf = sum(progs[p]["ns"] for p in METHODS[method][1] if p in progs) \
                / max(counted["irq_arrivals"], 1) / ns
            rows.append((f"{method} (`{METHODS[method][0].replace(',', ' ')}`): rounds a guest second, interrupts a guest second",
                         f"{rate:.2f}, {irqs:,.0f}"))
            rows.append((f"{method}: instructions an interrupt in all, of them in BPF programs",
                         f"{per_irq:,.0f}, {bpf:,.0f} (the rest: what calls them)"))
    series = args.stock_package or "6.1"
    print_section(f"irq-pc {series}", "The interrupted pc's cost per interrupt on Debian's "
                  f"{series}, on instruction time (shift {args.shift}: {ns} guest ns an "
                  f"instruction, one vCPU): {args.seconds} s of the leaf-loop workload "
                  f"under `chkwin -R counts -F {args.hz}` per method, against a boot "
                  "with `--no-irq` (the sampler alone).  All: the guest time a round "
                  "gains, spread over its interrupts (one boot each: rounds are whole, "
                  "so a figure is good to a few percent); BPF: the kernel's statistics "
                  "(`--prog-stats`, a boot of its own) of the programs that serve the "
                  "interrupt, irq_exit included.", rows)


if __name__ == "__main__":
    main()
