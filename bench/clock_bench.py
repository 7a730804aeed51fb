#!/usr/bin/python3
"""The two clocks side by side: rates per checksum call and their spread on
the host clock and on icount, alone and beside a CPU-bound load on every
core; the A/A flavour comparison on icount at shifts 4, 5 and 6; failures
per wall minute.

Every boot is an untraced boot of the unpatched or patched lab kernel run
by guest/run.py, with the lab's workload for its clock: inode-load on the
host clock, inode-loop (the walker alone, which the model covers) on
icount.  The clock comparison uses the loop (gcc49) at --width, a window
both clocks can fail in (the listing's own window fails only on icount),
wide enough that a series gives the thousands of failures an
equivalence test within +-10% needs; icount boots get phase seeds 1,
2, ...  "Beside a load" means one busy process per core at the boots'
own priority for the whole series.  The A/A comparison runs the
two flavours at loop width --aa-width with paired seeds, interleaved, its
boots planned from a pilot pair for 90% power to say "equivalent" within +-10%
(guest/lab_demo.py's plan).
"""

import argparse
import os
import pathlib
import tempfile
import time

from bench.section import print_section

from analysis import calibration
from analysis import planning
from guest.host import bootrunner
from guest.host import lab_demo
from guest.host.hostload import busy_cores
from analysis import model
from analysis import verdict


def flags(flavour, window, width, clock, shift=4, seed=None, seconds=30):
    """guest/run.py's flags of one of the bench's boots."""
    scenario = "inode-loop" if clock == "icount" else "inode-load"
    out = ["--flavour", flavour, "--scenario", scenario, "--duration", str(seconds),
           "--append", f"ext4.chksum_window={window} ext4.chksum_window_width={width}"]
    if clock == "icount":
        out += ["--clock", "icount", "--shift", str(shift), "--phase-seed", str(seed)]
    return out


def series(tmp, name, specs, jobs):
    """Boots of specs [(flavour, window, width, clock, shift, seed)], jobs at
    once, through the lab's boot runner; their BootStatus records in order."""
    return bootrunner.statuses([bootrunner.Boot(tmp / f"{name}-{i}", flags(*spec))
                                for i, spec in enumerate(specs)], jobs)


def counts(statuses):
    return [(s.checksum_failures_total, s.checksum_calls) for s in statuses]


def describe(statuses):
    r = verdict.rate(counts(statuses), spread=verdict.POISSON)
    phi, lo, hi, _ = verdict.dispersion_ci(counts(statuses))
    per = " ".join(str(s.checksum_failures_total) for s in statuses)
    wall = sum(s.wall_seconds for s in statuses) / len(statuses)
    return (f"{r.rate * 1e6:.3g} per 1M calls (Poisson 95% CI {r.lo * 1e6:.3g}-"
            f"{r.hi * 1e6:.3g}); dispersion {phi:.2f} ({lo:.2f}-{hi:.2f}); "
            f"failures {per}; {wall:.0f} s wall a boot")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boots", type=int, default=4, help="boots per load on the host clock")
    ap.add_argument("--seeds", type=int, default=10,
                    help="boots per load on icount, phase seeds 1..N: enough degrees "
                         "of freedom for the dispersion of seeds of one kernel")
    ap.add_argument("--width", type=int, default=16,
                    help="loop width of the clock comparison")
    ap.add_argument("--aa-width", type=int, default=16)
    ap.add_argument("--shifts", default="4,5,6", help="shifts of the A/A comparison")
    ap.add_argument("--max-aa-boots", type=int, default=30)
    args = ap.parse_args()
    if min(args.boots, args.seeds) < 2 or args.width < 1 or args.aa_width < 1:
        ap.error("--boots and --seeds need at least 2 (a spread), widths at least 1")
    jobs = os.cpu_count() or 1
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        seen = {}
        for clock in ("host", "icount"):
            for loaded in (False, True):
                name = f"{clock}-{'loaded' if loaded else 'alone'}"
                n = args.boots if clock == "host" else args.seeds
                specs = [("unpatched", "gcc49", args.width, clock, 4, i + 1) for i in range(n)]
                with busy_cores(loaded):
                    start = time.monotonic()
                    # Host-clock guests run two vCPU threads: one at a time.
                    got = series(tmp, name, specs, 1 if clock == "host" else jobs)
                    wall = time.monotonic() - start
                seen[name] = got
                rows.append((f"{clock} clock, {'beside a load on every core' if loaded else 'alone'}: "
                             "rate per call; dispersion (95% CI); failures a boot",
                             describe(got)))
                fails = sum(s.checksum_failures_total for s in got)
                rows.append((f"{clock} clock, {'loaded' if loaded else 'alone'}: failures per "
                             "wall minute (the series)", f"{fails / wall * 60:.1f}"))
            v = verdict.compare(counts(seen[f"{clock}-loaded"]), counts(seen[f"{clock}-alone"]),
                                margin=0.10, names=("loaded", "alone"))
            rows.append((f"{clock} clock: loaded / alone, rate per call", v.text))
        icount = seen["icount-alone"]
        loop = lab_demo.loop_instructions(lab_demo.Artifacts(["unpatched"]).kernel_dirs["unpatched"])
        pred = sum(s.checksum_calls * model.per_call("gcc49", args.width, s.interrupts, 4,
                                                        loop) for s in icount)
        meas = sum(s.checksum_failures_total for s in icount)
        ratio, (lo, hi) = model.ratio_to_model(meas, pred)
        fatal = model.fatal_boundaries("gcc49", args.width, loop)
        rows.append((f"icount alone: measured / predicted (W = {fatal}, lambda per task second)",
                     f"{meas} / {pred:.1f} = {ratio:.2f} ({lo:.2f}-{hi:.2f})"))
        for shift in (int(s) for s in args.shifts.split(",") if s):
            pilot = series(tmp, f"aa{shift}-pilot",
                           [(f, "gcc49", args.aa_width, "icount", shift, 1)
                            for f in ("unpatched", "patched")], jobs)
            per_boot = sum(s.checksum_failures_total for s in pilot) / 2
            n = planning.aa_boots(per_boot, 1.0, 0.10, calibration.PLAN_POWER, args.max_aa_boots)
            specs = [(f, "gcc49", args.aa_width, "icount", shift, seed)
                     for seed in range(2, n + 1) for f in ("unpatched", "patched")]
            start = time.monotonic()
            got = pilot + series(tmp, f"aa{shift}", specs, jobs)
            wall = time.monotonic() - start
            u = [s for s in got if s.flavour == "unpatched"]
            p = [s for s in got if s.flavour == "patched"]
            v = verdict.compare(counts(p), counts(u), margin=0.10,
                                names=("patched", "unpatched"))
            phi = verdict.dispersion_ci(counts(u), counts(p))
            rows.append((f"A/A at shift {shift}, width {args.aa_width}: {n} boots a flavour, "
                         f"paired seeds", f"{v.text}; unclamped dispersion {phi[0]:.2f} "
                         f"({phi[1]:.2f}-{phi[2]:.2f}); {wall / 60:.1f} min wall"))
    print_section("The clocks: host against icount, alone and loaded; the A/A test",
                  __doc__.split("\n\n", 1)[1].strip().replace("\n", " "), rows)


if __name__ == "__main__":
    main()
