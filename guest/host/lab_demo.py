#!/usr/bin/python3
"""The lab experiment: does the emulated window cause the failures, and does
the barrier flavour change their rate?

Conditions are run as many short boots (replicates), interleaved in
rounds whose order is shuffled with a recorded seed, --jobs at a time on
this machine or as Slurm job arrays (--engine slurm: guest/host/
bootrunner.py, docs/slurm.md); rounds are handed out in batches that end
where the plan can change (after the pilot, at the A/A's look).
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
             once more halfway, on the spread within pairs (not the ratio).
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

On icount the first boot of each exact-window condition (gcc49-exact) is
recorded with QEMU's record/replay (guest/run.py --record-replay; --rr-exact
N records the first N, 0 none, all every one), and --rr-boots N records the
first N boots of each counting condition as well; after the last round
every failure of theirs is walked to its cause by replay (guest/replay.py
--failure all).  The report opens
with one walked failure on the instruction count and shows every walk,
whose boots ran no tracer, beside the tracer's tables.

Every boot's directory and experiment.json (the plan, the seed, every boot
so far) are written as the run goes, so a killed run keeps what it did;
`analysis/chkwin-analyze report results/<timestamp>` rebuilds the report.
"""

import concurrent.futures
import os
import pathlib
import random
import sys
import time

from common.cache import one_line, quietly
from common.errors import die
from common.jsonfile import write_json
from common.progress import heartbeat
from analysis import chkwinlog
from analysis import correlate
from analysis import design
from analysis import documents
from analysis import model
from analysis import planning
from analysis import windows
from guest.host import bootrunner
from guest.host import demo_options
from guest.host import initramfs
from guest.host import kbuild
from guest.host import kernelwindows
from guest.host import testdisk
from guest.host import walk
from guest.host.demo_plan import TRACED, Plan, Specs, tried
from guest.host.resultsdir import new_run_dir
from guest.host.slurmengine import SlurmEngine

# Wall seconds a boot costs beyond its guest seconds, until one is measured
# (-singlestep boots take about four times their guest seconds as well).
OVERHEAD = 15
# Condition kinds whose boots are the walker alone (the workload's boots).
WALKER = ("pilot", "counting", "control", "aa", "dose")


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
        write_json(self.top / "experiment.json", self.doc.to_json(), indent=1)

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
        with rng): the whole pilot; else rounds until the A/A's
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
        fixed = self.settings.plan_comparisons is not None
        self.plan.from_pilot()
        if not fixed and self.settings.plan_comparisons is not None:
            self.plan.budget(self.aa_admitted())
        self.plan.reestimate()
        self.save()

    def record(self, c, rnd, slot, outcome):
        """A finished boot's record in experiment.json."""
        out, status = outcome.boot.out, outcome.status
        if status.checksum_calls is None:
            die(f"boot {out.name}: the kernel has no ext4.chksum_calls counter "
                f"(not a chkwin kernel with the window patch?)")
        b = documents.Boot(
            condition=c.name, round=rnd, slot=slot, dir=out.name,
            guest_seconds=self.specs.seconds(c), wall_seconds=outcome.wall_seconds,
            calls=status.checksum_calls, kernel=status.kernel,
            failures=status.checksum_failures,
            failures_total=status.checksum_failures_total,
            clock=status.clock, phase_seed=status.phase_seed,
            interrupts=status.interrupts,
            record_replay=bool(status.clock.get("record_replay")),
            host=outcome.host, attempts=outcome.attempts)
        if c.kind == "rate":
            result = status.chkwin
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

    def aa_admitted(self):
        """A/A boots a flavour the budget admits once the plan is fixed: the
        seconds left at the jobs the engine runs, less every other planned
        boot still to run, over an A/A round, each boot at the wall time
        estimate() projects (planning.budget_boots)."""
        aa = [c for c in self.conds if c.kind == "aa"]
        if not aa:
            return None
        other = sum(self.estimate(c) * max(0, self.plan.planned(c) - tried(self.doc, c))
                    for c in self.conds if c.kind not in ("aa", "pilot"))
        return planning.budget_boots(self.args.budget * 60 - self.elapsed(),
                                     self.settings.jobs or 1, other,
                                     sum(self.estimate(c) for c in aa))


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
        with one_line():
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
                min(exp.settings.jobs, boots)
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
    walk_recorded(top, exp.boots, exp.settings.jobs)
    return top, exp.doc


def walk_recorded(top, boots, jobs):
    """Every failure of the boots recorded for replay, walked to its cause
    (RUN/walk-1/walk.json, which the report reads), jobs walks at a time (a
    walk's QEMU replays one vCPU).  A walk that fails is said in one line;
    the boots stay."""
    recorded = [b for b in boots if b.record_replay and b.failures_total]
    if recorded:
        print(f"demo: walking the {sum(b.failures_total for b in recorded)} failures of "
              f"{len(recorded)} recorded boots by replay", flush=True)
    with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
        for b, summary in zip(recorded, pool.map(lambda b: walk.walk_recording(top / b.dir),
                                                 recorded)):
            if summary.path is None:
                print(f"demo: {b.dir}: the walk failed: {summary.error}", flush=True)
            else:
                print(f"demo: {b.dir}: {summary.line()}"
                      + (f"; {summary.error}" if summary.error else ""), flush=True)


def point_latest(results, top):
    tmp = results / ".latest.tmp"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(top.name)
    os.replace(tmp, results / "latest")


def main(argv=None):
    args = demo_options.parse_args(__doc__.splitlines()[0], argv)
    top, doc = run(args)
    # The report `chkwin-analyze report` would write, from the record in hand.
    # Imported here: the report draws (matplotlib), which --help and a
    # flag error need not load.
    from analysis import report
    try:
        verdicts = report.write_experiment(top, doc)
    except (correlate.LoadError, chkwinlog.LogError, OSError, ValueError) as e:
        die(f"the report failed: {e}; runs are in {top}")
    point_latest(args.results, top)
    print()
    print("\n".join(f"verdict: {v.text}" for v in verdicts))
    print(f"report: {top / 'report.html'}")
    print(f"latest: {args.results / 'latest'} -> {top.name}")


if __name__ == "__main__":
    main()
