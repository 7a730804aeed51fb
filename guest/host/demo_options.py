"""guest/lab_demo.py's command line: the flags in --help's groups, the
defaults that depend on the clock, the checks of flags that do not go
together, and the dispersion the plan starts from."""

import argparse
import math
import pathlib
import random

from common import REPO
from analysis import calibration
from analysis import experiment
from guest.host import bootrunner
from guest.host import run as run_py

FLAVOURS = ("unpatched", "patched")
WORKLOADS = ("inode-loop", "inode-load", "rk-loop")


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


def boots_or_all(text):
    """A number of boots, 0 or more, or "all" (infinite)."""
    if text == "all":
        return math.inf
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: a number of boots (0 or more) or 'all'")
    return int(text)


def flavour_list(text):
    names = [v.strip() for v in text.split(",") if v.strip()]
    bad = [n for n in names if n not in FLAVOURS]
    if bad or not names or len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(
            f"{text!r}: a list of distinct flavours from {', '.join(FLAVOURS)}")
    return names


def parse_args(description, argv=None):
    """The flags, completed (what depends on the clock, the dispersion to
    plan on, the seed) and checked: ap.error on those that do not go
    together."""
    ap = argparse.ArgumentParser(description=description)
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
    ap.add_argument("--rr-exact", type=boots_or_all, metavar="N|all",
                    help="icount: record the first N boots of each exact-window "
                         "condition (gcc49-exact) with QEMU's record/replay and walk "
                         "every failure of theirs, so that the report opens with one "
                         "walked to its cause (default 1 with --clock icount: a walk "
                         "costs about 9 s of wall a failure, some 15 a boot; 0 on the "
                         "host clock, which cannot record)")
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
    if args.rr_exact is None:
        args.rr_exact = 1 if args.clock == "icount" else 0


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
    if (args.rr_boots or args.rr_exact) and args.clock != "icount":
        ap.error("--rr-boots and --rr-exact need --clock icount: QEMU records only "
                 "instruction time")
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
