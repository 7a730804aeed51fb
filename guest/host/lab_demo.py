#!/usr/bin/python3
"""The lab experiment: does the emulated window cause the failures, and does
the barrier flavour change their rate?

Conditions are run as many short boots (replicates), interleaved in
rounds whose order is shuffled with a recorded seed, --jobs at a time on
this machine or as Slurm job arrays (--engine slurm: guest/host/
bootrunner.py, docs/slurm.md); rounds are handed out in batches that end
where the plan can change (after the pilot, at the A/A's blinded look).
How many boots each condition gets is fixed before the first counting
boot and written to experiment.json (settings.plan): --boots for counting
and control conditions, the A/A comparison's from a power calculation on
a pilot of two boots a flavour, whose boots serve the plan only
(analysis/planning.py: the power of every comparison, predicted by the
failure model from the pilot and simulated as the run will be analysed).  No condition stops early
on what its boots showed; only --budget, or boots lost on every attempt
(their tasks killed: --retries), can leave the plan short, and the report
says so.

The clock (--clock): on icount (the default) guest time is instructions,
-icount shift=N, one vCPU, and each boot gets a phase seed (the n-th boot
of every condition the same one, so conditions are paired) that makes the
walker redraw its phase against the timer many times a boot
(guest/run.py).  Rates per call then follow the failure model
(analysis/model.py), not the host's load.  On the host clock (--clock
host) boots run multi-threaded TCG with --smp CPUs, as before.

  counting   untraced boots of the workload (inode-loop on icount,
             inode-load on the host clock); the kernel's own console lines
             count failures of every checksum kind (guest/host/kmsg.py) and
             ext4.chksum_calls the calls.  The
             window is the listing's own one-instruction window
             (gcc49-exact) on icount, the loop of width 1 (gcc49) on the
             host clock, where TCG can interrupt only block starts.
             --boots each, window and off alike.
  control    (icount) the positive control of the verdicts: the loop of
             width 1 (3 fatal boundaries, device interrupts too) against
             gcc49-exact (1): a difference the model predicts.
  aa         (icount, two flavours) the flavour comparison at loop width
             --aa-width, where failures are cheap.  QEMU translates both
             barriers alike, so it is an A/A test, the negative control;
             its boots are planned for --power at a true ratio of 1 within
             --margin, from the failures and spread of the pilot, then
             once more, blind, halfway.
  pilot      (icount) two boots of each flavour: the aa settings with
             phase seeds of their own; the verdicts leave them out.
  recorded   boots under the chkwin loader (sampler at --sample-hz): which
             interrupt broke which checksum, window arrivals per call and
             failures per window arrival.
  controls   gcc49-exact, the listing with no inserted branch, recorded on
             the host clock: under multi-threaded TCG no window arrival can
             happen; under -singlestep (one instruction per block, as on
             hardware) they do, and fail.  The singlestep boot has no
             sampler: its handler outlasts the 50 us period there, and
             arrivals pile up at one pc.
  dose       with --widths, counting boots of the first flavour at each
             window width (ext4.chksum_window_width).
  rate       with --rates, boots of the first flavour under the loader
             (no log kept) at each sampler rate: the interrupt rate as a
             dose; the loader counts the arrivals per guest second.

With --rr-boots N the first N boots of each counting condition are recorded
with QEMU's record/replay (guest/run.py --record-replay), and after the
last round every failure of theirs is walked to its cause by replay
(guest/replay.py --failure all); the report shows those walks, whose
boots ran no tracer, beside the tracer's tables.

Every boot's directory and experiment.json (the plan, the seed, every boot
so far) are written as the run goes, so a killed run keeps what it did;
`analysis/chkwin-analyze report results/<timestamp>` rebuilds the report.
"""

import argparse
import json
import os
import pathlib
import random
import subprocess
import sys
import time

from common.errors import die
from analysis import calibration
from analysis import chkwinlog
from analysis import correlate
from analysis import design
from analysis import documents
from analysis import experiment
from analysis import model
from analysis import planning
from analysis import report
from analysis import verdict
from analysis import windows
from common.progress import heartbeat
from guest.host import kernelwindows
from guest.host.resultsdir import new_run_dir
from guest.host import bootrunner
from guest.host import run as run_py
from common import PY, REPO
from common.cache import quietly
from guest.host import initramfs
from guest.host import kbuild
from guest.host import testdisk
from guest.host.slurmengine import SlurmEngine

FLAVOURS = ("unpatched", "patched")
WORKLOADS = ("inode-loop", "inode-load", "rk-loop")
# Condition kinds whose boots run chkwin, which watches the lab kernel's
# windows (the others run no tracer and boot without them).
TRACED = ("recorded", "rate")
# Condition kinds whose boots are the walker alone (the workload's boots).
WALKER = ("pilot", "counting", "control", "aa", "dose")
# Wall seconds a boot costs beyond its guest seconds, until one is measured
# (-singlestep boots take about four times their guest seconds as well).
OVERHEAD = 15


def conditions(args):
    """The conditions, in a fixed order (the report's order)."""
    return design.conditions(args.flavours, args.clock, args.aa_width,
                             bool(args.record_seconds), args.controls, args.widths, args.rates)


def settings(args, engine):
    """The record's settings as the run starts: the flags, and the plan's
    dispersion as --plan-from gave it (the plan fills in the rest)."""
    a = args
    return documents.Settings(
        engine=engine.name, engine_detail=engine.describe(), retries=a.retries,
        clock=a.clock, shift=a.shift if a.clock == "icount" else None,
        window=design.primary_window(a.clock), jobs=engine.slots, boots=a.boots,
        aa_width=a.aa_width, power=a.power, max_aa_boots=a.max_aa_boots,
        plan_dispersion={"phi": a.dispersion[0], "df": a.dispersion[1],
                         "source": a.dispersion[2]},
        loop_instructions=model.LOOP_INSNS, boot_seconds=a.boot_seconds, passes=a.passes,
        singlestep_seconds=a.singlestep_seconds, record_seconds=a.record_seconds,
        record=a.record, margin=a.margin, budget_minutes=a.budget, dose_boots=a.dose_boots,
        rates=a.rates, smp=a.smp, mem=a.mem, sample_hz=a.sample_hz, workload=a.workload)


def positive_list(text):
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: not a list of whole numbers")
    if any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: values must be positive")
    return values


def rate_list(text):
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: not a list of whole numbers")
    if any(v < 0 for v in values) or len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(f"{text!r}: distinct rates, 0 or more (Hz)")
    return values


def flavour_list(text):
    names = [v.strip() for v in text.split(",") if v.strip()]
    bad = [n for n in names if n not in FLAVOURS]
    if bad or not names or len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(
            f"{text!r}: a list of distinct flavours from {', '.join(FLAVOURS)}")
    return names


def parse_args(argv=None):
    """The flags, completed (what depends on the clock, the dispersion to
    plan on, the seed) and checked: ap.error on those that do not go
    together."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for add in (boot_options, engine_options, plan_options, condition_options,
                guest_options):
        add(ap)
    args = ap.parse_args(argv)
    clock_defaults(args)
    check(ap, args)
    args.dispersion = plan_dispersion(ap, args)
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(2 ** 32)
    return args


def boot_options(ap):
    """Options of the boots: their length and clock."""
    ap.add_argument("--boot-seconds", type=int, default=30,
                    help="guest seconds of one counting boot (default 30)")
    ap.add_argument("--passes", type=int, metavar="N",
                    help="icount: walker boots (pilot, counting, control, A/A) end "
                         "after N passes of the walker, or --boot-seconds, whichever "
                         "comes first: then the same phase seed makes the same calls "
                         "on any engine and host (default: by guest seconds alone)")
    ap.add_argument("--record-seconds", type=int, default=45,
                    help="guest seconds of one recorded boot, 0 = none (default 45)")
    ap.add_argument("--singlestep-seconds", type=int, default=20,
                    help="guest seconds of the -singlestep control (default 20; "
                         "it costs about four times that in wall time)")
    ap.add_argument("--clock", choices=["icount", "host"], default="icount",
                    help="guest time from instructions (-icount, one vCPU; default) "
                         "or from the host's clock (multi-threaded TCG)")
    ap.add_argument("--shift", type=int, choices=range(0, 11), metavar="N", default=4,
                    help="icount: each instruction takes 2^N ns (default 4)")


def engine_options(ap):
    """Where and how the boots run."""
    ap.add_argument("--engine", choices=["local", "slurm"], default="local",
                    help="where boots run: this machine (default), or a Slurm job "
                         "array (sbatch/squeue of the cluster SLURM_CONF names; the "
                         "results directory and the cache on a filesystem every "
                         "node mounts: docs/slurm.md)")
    ap.add_argument("--jobs", type=int,
                    help="boots at once (default: local, one per core, as an icount "
                         "boot uses one host thread; slurm, the partition's CPUs)")
    ap.add_argument("--partition", help="slurm: the partition (default: the cluster's)")
    ap.add_argument("--account", help="slurm: the account to charge")
    ap.add_argument("--time-limit", type=int, metavar="MIN",
                    help="slurm: minutes a task may run (default: the boot's "
                         "watchdog plus 5)")
    ap.add_argument("--retries", type=int, default=bootrunner.RETRIES,
                    help="times a lost boot (its task killed: scancel, a time limit, "
                         f"a lost node) runs again, same seed (default {bootrunner.RETRIES})")
    ap.add_argument("--qemu", default=run_py.QEMU, metavar="PATH",
                    help="the QEMU binary where boots run (default: on PATH)")


def plan_options(ap):
    """The plan: boots, power, margin, budget and seed."""
    ap.add_argument("--boots", type=int, default=4,
                    help="boots of each counting and control condition (default 4)")
    ap.add_argument("--aa-width", type=int, default=16,
                    help="icount: loop width of the flavour (A/A) comparison (default 16)")
    ap.add_argument("--power", type=float, default=calibration.PLAN_POWER,
                    help="icount: power of the A/A plan at a true ratio of 1 "
                         f"(default {calibration.PLAN_POWER})")
    ap.add_argument("--max-aa-boots", type=int, default=calibration.MAX_BOOTS,
                    help="icount: cap on the A/A plan's boots per flavour "
                         f"(default {calibration.MAX_BOOTS})")
    ap.add_argument("--plan-from", type=pathlib.Path, metavar="RUN",
                    help="icount: plan on a previous run's spread (results/<timestamp>) "
                         "pooled with the pilot's")
    ap.add_argument("--budget", type=float, default=20,
                    help="wall minutes: no round starts that would end after "
                         "them (default 20: a plan on a wide pilot can reach "
                         "--max-aa-boots)")
    ap.add_argument("--margin", type=float, default=0.10,
                    help="equivalence margin of the flavour verdict (default 0.10)")
    ap.add_argument("--seed", type=int,
                    help="seed of the round order (default: drawn and recorded)")


def condition_options(ap):
    """Which conditions the experiment has."""
    ap.add_argument("--flavours", type=flavour_list, default=list(FLAVOURS),
                    help="comma-separated (default unpatched,patched)")
    ap.add_argument("--widths", type=positive_list, default=[],
                    help="window widths for the dose sweep, e.g. 1,2,4,8,16")
    ap.add_argument("--rates", type=rate_list, default=[],
                    help="sampler rates (Hz) for the interrupt-rate sweep under "
                         "the loader, e.g. 0,5000,10000,20000,40000")
    ap.add_argument("--dose-boots", type=int, default=2,
                    help="boots per width or rate of a sweep (default 2)")
    ap.add_argument("--no-controls", dest="controls", action="store_false",
                    help="skip the gcc49-exact controls")


def guest_options(ap):
    """The guest, the recorder and where results go."""
    ap.add_argument("--smp", type=int,
                    help="vCPUs on the host clock (default 2); icount needs 1")
    ap.add_argument("--mem", type=int, default=1024, help="MiB")
    ap.add_argument("--sample-hz", type=int,
                    help="the loader's cpu-clock sampler in recorded boots, 0 = none "
                         "(default 20000 on the host clock; 0 on icount, where a "
                         "period is instructions and the handler would fill it)")
    ap.add_argument("--record", choices=["failures", "all"], default="failures",
                    help="what recorded boots keep: the flight recorder's snapshots "
                         "(default: a quarter of the cost, more failures a minute) "
                         "or every record")
    ap.add_argument("--workload", choices=WORKLOADS,
                    help="the scenario of counting boots and under the recorder "
                         "(default: inode-loop on icount, the walker alone, whose "
                         "failures the model predicts; inode-load, loadgen beside it, "
                         "on the host clock)")
    ap.add_argument("--rr-boots", type=int, default=0, metavar="N",
                    help="icount: record the first N boots of each counting "
                         "condition with QEMU's record/replay, then walk every "
                         "failure of theirs to its cause by replay (guest/replay.py; "
                         "default 0)")
    ap.add_argument("--results", type=pathlib.Path, default=REPO / "results",
                    help="where results/<timestamp>/ and latest go")


def clock_defaults(args):
    """The defaults that depend on the clock."""
    if args.workload is None:
        args.workload = "inode-loop" if args.clock == "icount" else "inode-load"
    if args.sample_hz is None:
        args.sample_hz = 0 if args.clock == "icount" else 20000
    if args.smp is None:
        args.smp = 1 if args.clock == "icount" else 2


def check(ap, args):
    """ap.error on the first flag out of range or with one it does not go with."""
    if args.clock == "icount" and args.smp != 1:
        ap.error("--clock icount needs --smp 1 (QEMU 7.2's icount can starve "
                 "a second vCPU)")
    if min(args.boot_seconds, args.singlestep_seconds, args.smp, args.mem,
           args.dose_boots, *(v for v in (args.jobs, args.time_limit, args.passes)
                              if v is not None), args.boots, args.aa_width,
           args.max_aa_boots) <= 0 or args.record_seconds < 0 or args.sample_hz < 0 \
            or args.rr_boots < 0 or args.retries < 0:
        ap.error("seconds, --smp, --mem, --jobs, --time-limit, widths and boot counts "
                 "must be positive, --retries 0 or more")
    if args.engine == "local" and (args.partition or args.account or args.time_limit):
        ap.error("--partition, --account and --time-limit go with --engine slurm")
    if args.passes and (args.clock != "icount" or args.workload != "inode-loop"):
        ap.error("--passes bounds the walker's boots on icount (--workload inode-loop)")
    if args.rr_boots and args.clock != "icount":
        ap.error("--rr-boots needs --clock icount: QEMU records only instruction time")
    if not 0 < args.power < 0.95:
        ap.error("--power must lie in (0, 0.95): \"equivalent\" at a true ratio of 1 "
                 "approaches 95% only as the boots grow without bound")
    if not 0 < args.margin < 1 or args.budget <= 0:
        ap.error("--margin must lie in (0, 1), --budget above 0")


def plan_dispersion(ap, args):
    """(phi, df, where from) the plan starts from: a previous run's spread
    (--plan-from), else Poisson's, assumed."""
    if args.plan_from is None:
        return 1.0, None, None
    if args.clock != "icount":
        ap.error("--plan-from plans the icount comparisons; the host clock has none")
    try:
        return experiment.dispersion_from(args.plan_from)
    except ValueError as e:
        ap.error(str(e))


def tried(doc, c):
    """Boots of c run so far, the ones lost on every attempt included."""
    return len(doc.boots_of(c.name)) + sum(m.condition == c.name for m in doc.missing)


class Plan:
    """How many boots each condition gets: fixed before the first counting
    boot (from the pilot where there is one, analysis/planning.py), the
    A/A's re-estimated once, blind; kept in the record's settings (plan,
    aa_boots, plan_*)."""

    def __init__(self, args, doc, top):
        self.args, self.doc, self.top = args, doc, top
        self.settings = doc.settings
        self.pilot_fit = None       # the pilot's spread, flavours lumped
        self.settings.plan = self.boots()

    def set_aa(self, boots):
        """The A/A boots a flavour, as planned or re-estimated."""
        self.settings.aa_boots = boots
        self.settings.plan = self.boots()

    def from_pilot(self):
        """Fix the plan once the pilot has run (analysis/planning.py): the
        A/A boots from the failures and the spread of the pilot's boots,
        the flavours lumped (blind to their ratio), on the dispersion's
        upper bound; every comparison's failures a boot, as the model
        predicts them from the pilot, and its simulated power."""
        pilot_conds = [c for c in self.doc.conditions if c.kind == "pilot"]
        if self.settings.plan_comparisons is not None or not pilot_conds or \
                any(tried(self.doc, c) < planning.PILOT_BOOTS for c in pilot_conds):
            return
        a = self.args
        pilot = [b for c in pilot_conds for b in self.doc.boots_of(c.name)]
        if not pilot:
            die(f"every pilot boot was lost, so there is nothing to plan on; "
                f"what was recorded is in {self.top}")
        phi, df, source = a.dispersion
        prior = verdict.Fit(phi, phi * df, df) if df else None
        aa, self.pilot_fit = planning.plan_aa([(b.failures_total, b.calls) for b in pilot],
                                              prior, a.margin, a.power, a.max_aa_boots)
        phi, measured = aa["phi"], aa["per_boot"]
        self.settings.plan_dispersion = {
            "phi": phi, "df": aa["df"], "estimate": aa["estimate"], "conf": aa["conf"],
            "source": "the pilot's boots, flavours lumped" +
                      (f", and {source}" if prior else "")}
        by_kind = {(c.kind, c.window): c for c in self.doc.conditions
                   if c.flavour == a.flavours[0]}

        def predict(kind, window):
            return planning.predicted_per_boot(by_kind[kind, window], pilot, a.shift,
                                               self.settings.loop_instructions)

        window, off = predict("counting", "gcc49-exact"), 0.0
        control = predict("control", "gcc49")
        names = [by_kind[k].name for k in (("counting", "gcc49-exact"),
                                              ("counting", "off"), ("control", "gcc49"))]
        # (what, its conditions, failures a boot in a and b, boots, verdict, source)
        cases = [("gcc49-exact/off", names[:2], window, off, a.boots, "differs", "the model"),
                 ("width 1/gcc49-exact", [names[2], names[0]], control, window, a.boots,
                  "differs", "the model")]
        if len(a.flavours) == 2:
            self.set_aa(aa["boots"])
            cases.append((f"{a.flavours[0]}/{a.flavours[1]} at width {a.aa_width}",
                          [c.name for c in self.doc.conditions if c.kind == "aa"],
                          measured, measured, self.settings.aa_boots, "equivalent",
                          "the pilot's, measured"))
            self.settings.plan_power_range = [
                {"phi": d, "needed": planning.needed(measured, d, a.margin, a.power),
                 "power": calibration.power(measured, measured, self.settings.aa_boots, d, a.margin,
                                            a.seed)[1]}
                for d in planning.DISPERSIONS]
        # The A/A's power at the bound it is planned on; the differences' at
        # the pilot's own estimate (floored at 1): a bound from 500 failures
        # a boot says little of spread at 16 to 50.
        point = planning.combine(self.pilot_fit, prior).scale()
        self.settings.plan_comparisons = []
        for what, conds, mean_a, mean_b, boots, want, source in cases:
            spread = phi if want == "equivalent" else point
            got = calibration.power(mean_a, mean_b, boots, spread, a.margin, a.seed)
            self.settings.plan_comparisons.append({
                "what": what, "conditions": conds, "boots": boots, "per_boot": [mean_a, mean_b],
                "ratio": mean_a / mean_b if mean_b else None, "source": source,
                "verdict": want, "phi": spread, "power": got[0] if want == "differs" else got[1]})

    def power_got(self):
        """Where a comparison got fewer boots than planned (boots lost on
        every attempt, or the budget): its power, as the plan computed it,
        at the boots it has; on icount, at the phase-seed pairs its
        conditions share (a pair needs two for a spread)."""
        for p in self.settings.plan_comparisons or []:
            conds = [c for c in self.doc.conditions if c.name in p["conditions"]]
            planned = min(self.planned(c) for c in conds)
            have = [self.doc.boots_of(c.name) for c in conds]
            if all(b.phase_seed is not None for boots in have for b in boots):
                got = len(set.intersection(*({b.phase_seed for b in boots}
                                             for boots in have)))
            else:
                got = min(map(len, have))
            if got >= planned:
                continue
            power = calibration.power(*p["per_boot"], got, p["phi"], self.args.margin,
                                      self.args.seed) if got >= 2 else (0.0, 0.0)
            p["got"] = {"boots": got, "planned": planned,
                        "power": power[0] if p["verdict"] == "differs" else power[1]}

    def reestimate(self):
        """Once, when both A/A flavours have half their planned boots: the
        boots re-estimated blind (planning.reestimate)."""
        aa = [c for c in self.doc.conditions if c.kind == "aa"]
        s = self.settings
        if s.plan_reestimated is not None or len(aa) != 2 or s.aa_boots is None:
            return
        a = self.args
        counts = [self.doc.counts(c.name) for c in aa]
        res = experiment.Results(self.doc)
        blocks = [res.blocks(c.name) for c in aa]
        # Boots lost at the midpoint: look with what there is.
        reached = all(tried(self.doc, c) >= planning.midpoint(s.aa_boots) for c in aa)
        again = planning.look(*counts, *blocks, a.margin, a.power, a.max_aa_boots,
                              s.aa_boots, now=reached)
        if again is None:
            return
        s.plan_reestimated = again
        self.set_aa(again["boots"])
        done, phi, df, before = again["at"], again["phi"], again["df"], again["before"]
        print(f"demo: the A/A boots re-estimated blind at {done} a flavour: dispersion "
              f"{phi:.2f} (the flavours lumped, within phase-seed pairs, {df} df), "
              f"{before} -> {s.aa_boots} boots a flavour", flush=True)

    def planned(self, c):
        """Boots condition c gets; None while the pilot has yet to say."""
        if c.kind == "pilot":
            return planning.PILOT_BOOTS
        if c.kind == "recorded" or c.singlestep:
            return 1
        if c.kind in ("dose", "rate"):
            return self.args.dose_boots
        if c.kind == "aa":
            return self.settings.aa_boots
        return self.args.boots

    def fixed(self):
        """Whether the plan is whole: every condition's boots known, and
        the pilot's predictions made where there is a pilot."""
        pilot = any(c.kind == "pilot" for c in self.doc.conditions)
        return all(self.planned(c) is not None for c in self.doc.conditions) and \
            (self.settings.plan_comparisons is not None or not pilot)

    def boots(self):
        """{condition: boots} as fixed so far."""
        return {c.name: self.planned(c) for c in self.doc.conditions}

    def text(self):
        """The plan as the demo prints it before the first counting boot."""
        plan = self.boots()
        by = {}
        for c in self.doc.conditions:
            if c.kind != "pilot":
                by.setdefault(plan[c.name], []).append(c.name)
        text = "; ".join(f"{n} boot{'s' if n != 1 else ''}: {', '.join(names)}"
                         for n, names in sorted(by.items()))
        s = self.settings
        if s.plan_comparisons is not None:
            a = self.args
            text += (f". Predicted from a pilot of {planning.PILOT_BOOTS} boots a flavour, "
                     f"at dispersion {planning.dispersion_text(**s.plan_dispersion)}, "
                     f"margin +-{a.margin * 100:.0f}%: "
                     + "; ".join(planning.describe(c) for c in s.plan_comparisons))
            if s.aa_boots == a.max_aa_boots:
                text += f" (A/A capped at --max-aa-boots {a.max_aa_boots})"
            if s.plan_power_range:
                text += (". The A/A's power if the spread is wider: "
                         + planning.describe_range(s.plan_power_range, s.aa_boots,
                                                   a.max_aa_boots)
                         + f". Re-estimated once, blind, when both flavours have "
                         f"{planning.midpoint(s.aa_boots)} boots")
        return text


class Specs:
    """Each boot as run.py's flags, self-contained (the kernel, disk and
    files it reads, its settings and phase seed, so a batch node builds
    nothing), its results in a directory of its own."""

    def __init__(self, top, args, artifacts):
        self.top, self.args, self.artifacts = top, args, artifacts
        self.windows = {}       # flavour: a copy of the windows file its boots watch

    def seconds(self, c):
        """Guest seconds of a boot of c."""
        if c.singlestep:
            return self.args.singlestep_seconds
        if c.kind == "recorded":
            return self.args.record_seconds
        return self.args.boot_seconds

    def phase_seed(self, c, n):
        """The phase seed of the n-th boot of every condition: paired
        across conditions, drawn from the experiment's seed; the pilot's
        are its own (a pilot boot repeats no boot the verdicts use)."""
        label = "pilot" if c.kind == "pilot" else "phase"
        return random.Random(f"{self.args.seed}-{label}-{n}").randrange(2 ** 32)

    def append(self, c):
        """The kernel command line's additions of a boot of c."""
        words = [f"ext4.chksum_window={c.window}"]
        if c.width != 1:
            words.append(f"ext4.chksum_window_width={c.width}")
        if c.kind == "recorded":
            words.append(f"chkwin.workload={self.args.workload}")
            opts = [f"-R,{self.args.record}"]
            if self.args.sample_hz and not c.singlestep:
                opts.append(f"-F,{self.args.sample_hz}")
            words.append("chkwin.loader=" + ",".join(opts))
        if c.kind == "rate":
            words += [f"chkwin.workload={self.args.workload}", "chkwin.log=none"]
            if c.sample_hz:
                words.append(f"chkwin.loader=-F,{c.sample_hz}")
        return " ".join(words)

    def boot(self, c, n):
        """The n-th boot of c: run.py's flags, self-contained (the kernel,
        disk and files the boot reads, its settings and phase seed, so a
        batch node builds nothing), its results in a directory of its own."""
        out = self.top / f"{c.name}-{n}"
        scenario = "record" if c.kind in TRACED else self.args.workload
        smp = 1 if c.clock == "icount" else (2 if self.args.clock == "icount"
                                                 else self.args.smp)
        art = self.artifacts
        kernel = art.kernel(c.flavour)
        flags = ["--flavour", c.flavour, "--kernel", str(kernel),
                 "--initramfs", str(art.initramfs), "--disk", str(art.disk),
                 "--qemu", self.args.qemu,
                 "--scenario", scenario, "--duration", str(self.seconds(c)),
                 "--smp", str(smp), "--mem", str(self.args.mem),
                 "--append", self.append(c)]
        files = [kernel, kernel.parent / "config", art.initramfs, art.disk]
        if c.singlestep:
            flags.append("--singlestep")
        # Counting boots run no tracer: no windows disk, the guest's
        # devices as they were when the plan's figures were measured.
        if c.kind in TRACED:
            flags += ["--lab-windows", str(self.windows[c.flavour])]
            files.append(self.windows[c.flavour])
        else:
            flags.append("--no-lab-windows")
        if c.clock == "icount":
            flags += ["--clock", "icount", "--shift", str(self.args.shift),
                      "--phase-seed", str(self.phase_seed(c, n))]
            if self.args.passes and scenario == "inode-loop":
                flags += ["--passes", str(self.args.passes)]
            if c.kind == "counting" and n <= self.args.rr_boots:
                flags.append("--record-replay")
        limit = run_py.watchdog_seconds(self.seconds(c), c.singlestep, c.clock,
                                        self.args.shift)
        return bootrunner.Boot(out, flags, self.args.mem, limit, tuple(files))


class Experiment:
    """The run: its record (analysis/documents.py), made once, updated as
    the plan is fixed and as each boot finishes, and saved each time; its
    Plan; its boots (Specs), handed to the engine in batches."""

    def __init__(self, top, args, engine, artifacts):
        self.top, self.args, self.engine = top, args, engine
        self.doc = documents.ExperimentDoc(seed=args.seed, conditions=conditions(args),
                                           boots=[], settings=settings(args, engine))
        self.conds, self.boots = self.doc.conditions, self.doc.boots
        self.missing = self.doc.missing     # boots lost on every attempt
        self.settings = self.doc.settings
        self.plan = Plan(args, self.doc, top)
        self.specs = Specs(top, args, artifacts)
        self.counted = False        # a counting round has been handed out
        self.started = time.monotonic()

    def watch(self, flavour, path):
        """The boots of flavour watch the windows file at path."""
        self.specs.windows[flavour] = path
        self.settings.windows[flavour] = [w.name for w in windows.read(path)]

    def engine_checked(self):
        """The engine's slots as its check found them."""
        self.settings.jobs = self.engine.slots
        self.settings.engine_detail = self.engine.describe()

    def save(self):
        tmp = self.top / ".experiment.json.tmp"
        tmp.write_text(json.dumps(self.doc.to_json(), indent=1) + "\n")
        os.replace(tmp, self.top / "experiment.json")

    def estimate(self, c):
        """Wall seconds the next boot of c will take: as its last one did;
        before it has one, as the last walker boot on its clock did (a
        boot ended by --passes takes its passes' time, not its seconds'),
        else its guest seconds and OVERHEAD."""
        done = self.doc.boots_of(c.name)
        if done:
            return done[-1].wall_seconds
        kinds = {x.name: x for x in self.conds}
        if c.kind in WALKER and not c.singlestep:
            like = [b for b in self.boots if kinds[b.condition].kind in WALKER
                    and kinds[b.condition].clock == c.clock
                    and not kinds[b.condition].singlestep]
            if like:
                return like[-1].wall_seconds
        return self.specs.seconds(c) * (4 if c.singlestep else 1) + OVERHEAD

    def batch(self, rng):
        """The boots to run before the plan can change again, as rounds
        (one boot of every condition still short, in an order shuffled
        with rng): the whole pilot; else rounds until the A/A's blinded
        look (both flavours at its midpoint) or the plan's end, as many as
        the budget's projection admits (the first counting round always
        runs; a batch the projection stopped is followed by another, planned
        on the times its boots took): [[(condition, n)]], empty when the plan
        is done or the budget admits no further round."""
        pilot = [(c, planning.PILOT_BOOTS - tried(self.doc, c)) for c in self.conds
                 if c.kind == "pilot"]
        if any(left > 0 for _, left in pilot):
            due = [c for c, left in pilot for _ in range(left)]
            rng.shuffle(due)
            return [number(due, {c.name: tried(self.doc, c) for c in self.conds})]
        have = {c.name: tried(self.doc, c) for c in self.conds}
        aa = [c for c in self.conds if c.kind == "aa"]
        s = self.settings
        look = planning.midpoint(s.aa_boots) if aa and s.aa_boots and \
            s.plan_reestimated is None else None
        rounds, seconds = [], 0.0
        while True:
            due = [c for c in self.conds if have[c.name] < self.plan.planned(c)]
            if not due:
                return rounds
            cost = sum(self.estimate(c) for c in due)
            ahead = (seconds + cost) / min(s.jobs, sum(map(len, rounds)) + len(due))
            if (rounds or self.counted) and self.elapsed() + ahead > self.args.budget * 60:
                if not rounds:
                    print(f"demo: another round would pass the {self.args.budget:g}-minute "
                          f"budget, which cuts the plan short: "
                          f"{', '.join(c.name for c in due)} wanted more", flush=True)
                # Else asked again after these, with the times they took.
                return rounds
            seconds += cost
            rng.shuffle(due)
            rounds.append(number(due, have))
            self.counted = True
            if look and all(have[c.name] >= look for c in aa):
                return rounds

    def run_batch(self, rounds, first):
        """The rounds' boots, handed to the engine in round order; each is
        recorded (and experiment.json saved) as it finishes.  first is the
        first round's number."""
        boots, where = [], {}
        for rnd, due in enumerate(rounds, first):
            for slot, (c, n) in enumerate(due, 1):
                boot = self.specs.boot(c, n)
                boots.append(boot)
                where[id(boot)] = (c, n, rnd, slot)
        finished, failed = [], []

        def record(outcome):
            c, n, rnd, slot = where[id(outcome.boot)]
            finished.append(outcome)
            if outcome.lost:
                self.missing.append(documents.Missing(
                    condition=c.name, dir=outcome.boot.out.name, round=rnd, slot=slot,
                    phase_seed=self.specs.phase_seed(c, n) if c.clock == "icount" else None,
                    attempts=outcome.attempts, reason=outcome.reason))
                self.save()
                print(f"demo: [{rnd}.{slot}] {outcome.boot.out.name}: MISSING after "
                      f"{outcome.attempts} attempts: {outcome.reason}", flush=True)
                return
            if outcome.returncode != 0:
                # The boots running finish and are recorded; no more start.
                failed.append(f"boot {outcome.boot.out.name} failed: "
                              f"{outcome.reason or f'run.py exited {outcome.returncode}'}")
                print(f"demo: [{rnd}.{slot}] {failed[-1]}; no more boots start", flush=True)
                return bootrunner.STOP
            b = self.record(c, rnd, slot, outcome)
            self.boots.append(b)
            self.boots.sort(key=lambda x: (x.round, x.slot))
            self.save()
            print(f"demo: [{rnd}.{slot}] {b.dir}: {b.failures_total} checksum "
                  f"failures in {b.calls} calls, {b.wall_seconds:.0f} s wall"
                  + (f" (attempt {outcome.attempts})" if outcome.attempts > 1 else ""),
                  flush=True)

        def status():
            return f"{len(finished)} of {len(boots)} boots done"
        with heartbeat("demo", status, stream=sys.stdout):
            bootrunner.run(self.engine, boots, self.args.retries, record,
                           say=lambda line: print(f"demo: {line}", flush=True))
        self.save()
        if failed:
            die(f"{failed[0]}; everything recorded so far is in {self.top}")
        self.plan.from_pilot()
        self.plan.reestimate()
        self.save()

    def record(self, c, rnd, slot, outcome):
        """A finished boot's record in experiment.json."""
        out, status = outcome.boot.out, outcome.status
        if status["checksum_calls"] is None:
            die(f"boot {out.name}: the kernel has no ext4.chksum_calls counter "
                f"(not a chkwin kernel with the window patch?)")
        b = documents.Boot(
            condition=c.name, round=rnd, slot=slot, dir=out.name,
            guest_seconds=self.specs.seconds(c), wall_seconds=outcome.wall_seconds,
            calls=status["checksum_calls"], kernel=status["kernel"],
            failures=status["checksum_failures"],
            failures_total=status["checksum_failures_total"],
            clock=status["clock"], phase_seed=status["phase_seed"],
            interrupts=status["interrupts"],
            record_replay=bool(status["clock"].get("record_replay")),
            host=outcome.host, attempts=outcome.attempts)
        if c.kind == "rate":
            result = status.get("chkwin")
            if not result:
                die(f"boot {out.name}: chkwin printed no closing record "
                    f"(console: {out / 'console.log'})")
            # The dose: interrupt arrivals (device irqs and sampler ticks,
            # null where not attached) per second of recording, all CPUs.
            b.arrivals_per_s = sum(result[k] or 0 for k in ("irq_arrivals", "sampler_ticks")) \
                / result["seconds"]
        return b

    def elapsed(self):
        return time.monotonic() - self.started


def number(due, have):
    """[(condition, n)]: each boot of due numbered in order, from the
    boots its condition has (have, counted on)."""
    out = []
    for c in due:
        have[c.name] += 1
        out.append((c, have[c.name]))
    return out


class Artifacts:
    """What every boot reads, built (or found in the cache) once, here,
    before any boot runs: the flavours' kernels, the initramfs and the test
    disk.  Boots name them, so a batch node only reads the cache."""

    def __init__(self, flavours):
        with quietly():
            self.kernel_dirs = {f: kbuild.kernel_dir(f) for f in flavours}
            self.initramfs = initramfs.build()
            self.disk = testdisk.build()

    def kernel(self, flavour):
        return self.kernel_dirs[flavour] / "Image"


def loop_instructions(kernel_dir):
    """Instructions of one pass of the window loop of a lab kernel,
    counted from its System.map."""
    loop = model.loop_instructions(pathlib.Path(kernel_dir) / "System.map")
    if loop is None:
        die("the kernel's System.map has no ext4_chksum_gcc49_window labels "
            "(not a chkwin kernel with the window patch?)")
    return loop


def make_engine(args, top):
    """The engine the boots run on (run() checks it before any boot)."""
    if args.engine == "slurm":
        return SlurmEngine(top / "slurm", args.partition, args.account, args.time_limit,
                           args.jobs, args.qemu)
    return bootrunner.LocalEngine(args.jobs or os.cpu_count() or 1, args.qemu)


def run(args):
    """The experiment's boots: (its directory, its record)."""
    top = new_run_dir(args.results)
    engine = make_engine(args, top)
    # The scheduler before anything is built; the nodes once the boots are known.
    if args.engine == "slurm":
        engine.check_scheduler()
    flavours = sorted({c.flavour for c in conditions(args)})
    artifacts = Artifacts(flavours)
    exp = Experiment(top, args, engine, artifacts)
    exp.settings.loop_instructions = loop_instructions(artifacts.kernel_dirs[args.flavours[0]])
    # Every boot's chkwin watches what stackscan finds in its own kernel;
    # the report names those windows.
    for flavour in sorted({c.flavour for c in exp.conds if c.kind in TRACED}):
        exp.watch(flavour, kernelwindows.copy_to(
            artifacts.kernel_dirs[flavour] / "vmlinux", top, f"{flavour}.windows"))
    exp.save()
    # Every kernel, disk and file a boot reads, checked where it will run.
    engine.check([exp.specs.boot(c, 1) for c in exp.conds])
    exp.engine_checked()
    exp.save()
    rng = random.Random(args.seed)
    print(f"demo: {len(exp.conds)} conditions, seed {args.seed}, results in {top}; "
          f"boots on {engine.describe()}", flush=True)
    rnd = 0
    planned = False
    try:
        while True:
            if not planned and exp.plan.fixed():
                planned = True
                exp.save()
                print(f"demo: the plan, fixed before the first counting boot: "
                      f"{exp.plan.text()}", flush=True)
            rounds = exp.batch(rng)
            if not rounds:
                break
            boots = sum(map(len, rounds))
            pilot = all(c.kind == "pilot" for due in rounds for c, _ in due)
            left = sum(exp.estimate(c) for due in rounds for c, _ in due) / \
                min(exp.slots, boots)
            which = f"round {rnd + 1}" if len(rounds) == 1 else \
                f"rounds {rnd + 1}-{rnd + len(rounds)}"
            print(f"demo: {which}{' (the pilot)' if pilot else ''}: {boots} boots, "
                  f"about {left / 60:.1f} min; {exp.elapsed() / 60:.1f} min so far",
                  flush=True)
            exp.run_batch(rounds, rnd + 1)
            rnd += len(rounds)
    finally:
        engine.close()
    exp.plan.power_got()
    exp.save()
    walk_recorded(top, exp.boots)
    return top, exp.doc


def walk_recorded(top, boots):
    """Every failure of the boots recorded for replay, walked to its cause
    (guest/replay.py --failure all: RUN/walk-1/walk.json, which the report
    reads).  A walk that fails is said in one line; the boots stay."""
    recorded = [b for b in boots if b.record_replay and b.failures_total]
    for b in recorded:
        proc = subprocess.run([PY, str(REPO / "guest/replay.py"), str(top / b.dir),
                               "--failure", "all"], capture_output=True, text=True)
        last = (proc.stdout.strip().splitlines() or [""])[-1]
        if proc.returncode == 0 or last.startswith("walk: "):
            print(f"demo: {b.dir}: {last}", flush=True)
        else:
            why = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
            print(f"demo: {b.dir}: the walk failed: {why}", flush=True)


def point_latest(results, top):
    tmp = results / ".latest.tmp"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(top.name)
    os.replace(tmp, results / "latest")


def main(argv=None):
    args = parse_args(argv)
    top, doc = run(args)
    # The report `chkwin-analyze report` would write, from the record in hand.
    try:
        verdicts = report.write_experiment(top, doc)
    except (correlate.LoadError, chkwinlog.LogError) as e:
        die(f"the report failed: {e}; runs are in {top}")
    point_latest(args.results, top)
    print()
    print("\n".join(f"verdict: {v.text}" for v in verdicts))
    print(f"report: {top / 'report.html'}")
    print(f"latest: {args.results / 'latest'} -> {top.name}")


if __name__ == "__main__":
    main()
