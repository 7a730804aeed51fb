#!/usr/bin/python3
"""Peers: bpftrace and perf record against chkwin, in one boot of the
Debian root filesystem.

One boot of the loader-bench scenario under `guest/run.py --root debian`:
rounds of the inode loop with nothing, the floor (chkwin's programs
attached and returning at once), bpftrace, chkwin's flight recorder
(`-R failures`), chkwin recording everything and perf record in turn,
each asked the same question (where in the checksum code do
interrupts land, how many checksum calls, how many failures).  A
slowdown is the untraced piece's pass rate over the traced one's in the
same round.  Prints a Markdown section: the figures, then what each peer
could answer.

With --clock icount the boot runs on instruction time (one vCPU): guest
seconds are instructions, so a piece's guest time per inode pass gives
what each tracer adds per checksum call, in instructions, against the
untraced piece of the same round.
"""

import argparse
import collections
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

from bench.loader_bench import boot, parse_pieces, slowdown, spread, untraced_row
from bench.section import print_section
from common.cache import quietly
from guest.host import kbuild

NAMES = {"floor": "floor (chkwin's programs return at once)", "bpftrace": "bpftrace (maps)",
         "failures": "chkwin -R failures (flight recorder)",
         "chkwin": "chkwin -R all (every record)", "perf": "perf record -a -g"}
# The goals, as ratios of pass rates in the same round.
ALL_GOAL = 2.0
# What each tracer can and cannot answer, for the section's introduction.
ABILITIES = {
    "bpftrace": "**bpftrace** (0.17) answers it in maps: the interrupted pc from "
                "`__irq_regs` (through `__per_cpu_offset`, since bpftrace has no "
                "this-CPU pointer), offsets within function sizes the host reads from "
                "`vmlinux`, failures from the verify tracepoint and a kretprobe.  It "
                "cannot tie a failure to the interrupt or block completion behind it: "
                "that needs per-event records, which it would stream through printf.",
    "perf": "**perf record** keeps every event with its call chain; the "
            "interrupted pc is only the frame after `el1h_64_irq`, found by "
            "post-processing `perf script` in the guest (not timed).  Its file "
            "grows with the call chains.",
    "chkwin": "**chkwin -R all** classifies each interrupt in the kernel and keeps one "
              "64-byte record per event, so failures can be attributed offline.",
    "failures": "**chkwin -R failures** counts as `-R all` does, keeps the last 256 "
                "calls and arrivals per CPU in BPF maps, and sends them only when a "
                "checksum fails: the attribution, at the cost of counting.",
    "floor": "**the floor**: the same attach points with programs that return at once, "
             "what attaching alone costs under TCG.",
}
FUNCS = ["ext4_chksum", "ext4_chksum_gcc49"]
# Wall seconds the watchdog allows a piece beyond its measured part:
# bpftrace compiles its script each round, and perf's untimed perf script
# pass over the call chains takes minutes in the guest.
SLACK = {"floor": 240, "bpftrace": 240, "failures": 240, "perf": 600, "chkwin": 240}
ANSWER_RE = re.compile(r"^bench-answer: (\w+) (\d+) (\S+) (.*)$", re.M)


def function_sizes(flavour):
    """FUNCTION:SIZE for FUNCS, from the flavour's vmlinux symbol table."""
    with quietly():
        vmlinux = kbuild.kernel_dir(flavour) / "vmlinux"
    nm = subprocess.run(["aarch64-linux-gnu-nm", "-S", str(vmlinux)],
                        capture_output=True, text=True)
    sizes = {}
    for line in nm.stdout.splitlines():
        fields = line.split()
        if len(fields) == 4 and fields[3] in FUNCS and fields[2] in "tT":
            sizes[fields[3]] = int(fields[1], 16)
    if nm.returncode != 0 or set(sizes) != set(FUNCS):
        sys.exit(f"peers: error: {vmlinux} lacks the sizes of {', '.join(FUNCS)}")
    return ",".join(f"{name}:{sizes[name]}" for name in FUNCS)


def answers(console):
    """{mode: {key: [values over rounds]}} from the bench-answer lines."""
    found = collections.defaultdict(lambda: collections.defaultdict(list))
    for mode, _, key, value in ANSWER_RE.findall(console):
        found[mode][key].append(value)
    return found


def arrivals(found):
    """{FUNCTION+OFFSET: count over all rounds} from arrival answers."""
    total = collections.Counter()
    for value in found.get("arrival", []):
        where, count = value.split()
        total[where] += int(count)
    return total


def describe(total):
    if not total:
        return "none seen"
    top = sorted(total.items(), key=lambda kv: -kv[1])[:4]
    return ", ".join(f"{where} {n}" for where, n in top) + (
        f" (+{len(total) - 4} more offsets)" if len(total) > 4 else "")


def normalise_offsets(total):
    """bpftrace gives decimal offsets, perf hex ones: make both hex."""
    out = collections.Counter()
    for where, n in total.items():
        func, _, off = where.partition("+")
        out[f"{func}+{int(off, 0):#x}"] += n
    return out


def ratios(pieces, rounds, slower, faster):
    """Per round, faster's pass rate over slower's: how many times slower."""
    return [pieces[faster, r]["rate"] / pieces[slower, r]["rate"] for r in rounds]


def calls_per_pass(pieces, rounds, modes):
    """Checksum calls an inode pass makes (the workload's, whoever counts
    them): the median over the pieces of tracers that count every call."""
    counted = [pieces[m, r]["calls"] / pieces[m, r]["passes"] for m in modes
               if m in ("failures", "chkwin", "bpftrace") for r in rounds]
    return statistics.median(counted) if counted else None


def instruction_rows(pieces, rounds, modes, shift):
    """On instruction time: guest instructions each tracer adds per checksum
    call over the untraced piece of the same round."""
    per_pass = calls_per_pass(pieces, rounds, modes)
    if not per_pass:
        return []
    rows = [("checksum calls an inode pass makes (median of the counting tracers)",
             f"{per_pass:,.0f}")]
    for mode in modes:
        added = [(pieces[mode, r]["seconds"] / pieces[mode, r]["passes"]
                  - pieces["off", r]["seconds"] / pieces["off", r]["passes"])
                 * 1e9 / 2 ** shift / per_pass for r in rounds]
        rows.append((f"{NAMES[mode]}: guest instructions added per checksum call, "
                     "min / median / max", spread(added, "{:,.0f}")))
    return rows


def goal_rows(pieces, rounds, modes):
    """Each tracer above the floor, and the issue's two goals, met or not."""
    rows = []
    if "floor" in modes:
        for mode in modes:
            if mode != "floor":
                rows.append((f"{NAMES[mode]}: slowdown above the floor, min / median / max",
                             spread(ratios(pieces, rounds, mode, "floor"), "{:.2f}x")))
    if {"failures", "bpftrace"} <= set(modes):
        r = ratios(pieces, rounds, "failures", "bpftrace")
        rows.append(("goal: chkwin -R failures no slower than bpftrace (bpftrace's pass "
                     "rate over its, per round)",
                     f"{spread(r, '{:.2f}')}: met in {sum(x <= 1 for x in r)} of {len(r)} rounds"))
    if "chkwin" in modes:
        r = ratios(pieces, rounds, "chkwin", "off")
        med = statistics.median(r)
        rows.append((f"goal: chkwin -R all at most {ALL_GOAL:.1f}x (median slowdown)",
                     f"{med:.2f}x: {'met' if med <= ALL_GOAL else 'not met'}"))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flavour", default="unpatched", choices=["unpatched", "patched"])
    ap.add_argument("--window", default="off", choices=["off", "gcc49"],
                    help="ext4.chksum_window for the boot")
    # 5 s, not loader_bench's 15: perf writes about 40 MB a second into the
    # guest's tmpfs, and its untimed perf script pass takes minutes a round.
    ap.add_argument("--seconds", type=int, default=5,
                    help="guest seconds of each measured piece")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--modes", default="floor,bpftrace,failures,chkwin,perf",
                    help="tracers to compare with nothing (comma-separated)")
    ap.add_argument("--clock", choices=["host", "icount"], default="host",
                    help="guest time from the host's clock (2 vCPUs) or from "
                         "instructions (-icount, 1 vCPU)")
    ap.add_argument("--shift", type=int, default=4,
                    help="with --clock icount: each instruction takes 2^N ns")
    args = ap.parse_args()
    args.modes = [m for m in args.modes.split(",") if m]
    args.rates = ""
    if args.seconds <= 0 or args.rounds <= 0 or not args.modes \
            or not set(args.modes) <= set(NAMES):
        ap.error(f"--seconds and --rounds must be positive, --modes among {','.join(NAMES)}")
    funcs = function_sizes(args.flavour)
    with tempfile.TemporaryDirectory() as tmp:
        console = boot(args, pathlib.Path(tmp) / "run", root="debian",
                       extra=f"chkwin.bench_funcs={funcs}",
                       slack=300 + args.rounds * sum(SLACK[m] for m in args.modes))
    pieces, rounds = parse_pieces(console, args, "peers")
    found = answers(console)
    rows = [("userland", "Debian bookworm root (guest/rootfs.py), tools disk"),
            untraced_row(pieces, rounds)]
    for mode in args.modes:
        name = NAMES[mode]
        mine, row = slowdown(name, pieces, mode, rounds)
        rows.append(row)
        events, lost = sum(p["events"] for p in mine), sum(p["lost"] for p in mine)
        nbytes = sum(p["bytes"] for p in mine)
        what = "probe hits, kept in maps" if mode == "bpftrace" else "events recorded"
        rows.append((f"{name}: {what}, lost",
                     f"{events}, {lost if mode != 'bpftrace' else 'none can be'}"))
        if nbytes and events:
            rows.append((f"{name}: bytes per event", f"{nbytes / events:.1f} B"))
        rows.append((f"{name}: checksum calls counted",
                     str(sum(p["calls"] for p in mine))))
    if "bpftrace" in args.modes:
        bt = found["bpftrace"]
        rows.append(("bpftrace: arrivals by offset (all rounds), top",
                     describe(normalise_offsets(arrivals(bt)))))
        rows.append(("bpftrace: failures from the verify tracepoint / __ext4_iget",
                     f"{sum(map(int, bt.get('verify_failures', [])))} / "
                     f"{sum(map(int, bt.get('iget_failures', [])))}"))
    if "perf" in args.modes:
        rows.append(("perf: arrivals from call chains (frame after el1h_64_irq), top",
                     describe(normalise_offsets(arrivals(found["perf"])))))
    if "chkwin" in args.modes:
        hits = sum(pieces["chkwin", r]["window_hits"] for r in rounds)
        rows.append(("chkwin: window hits (all rounds)", str(hits)))
    if args.clock == "icount":
        rows += instruction_rows(pieces, rounds, args.modes, args.shift)
    rows += goal_rows(pieces, rounds, args.modes)
    clock = (f"on instruction time (icount shift {args.shift}, one vCPU)"
             if args.clock == "icount" else "on the host's clock (2 vCPUs)")
    intro = (f"One boot of `{args.flavour}` (window {args.window}) on the Debian root "
             f"{clock}, "
             f"{args.seconds} s pieces of the inode loop, the tracers in turn in every "
             "round.  Each is asked chkwin's question: where in `ext4_chksum()` "
             "(and the emulated gcc49 code) interrupts land, by offset; how many "
             "checksum calls; how many inode checksum failures.\n\n"
             + "\n".join(f"- {ABILITIES[mode]}" for mode in args.modes))
    title = "Peers: bpftrace and perf against chkwin"
    print_section(title + (", instruction time" if args.clock == "icount" else ""),
                  intro, rows)


if __name__ == "__main__":
    main()
