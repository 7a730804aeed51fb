"""What the lab experiment boots: the plan (how many boots each condition
gets, fixed from the pilot before the first counting boot) and each
boot's run.py flags."""

import random

from common.errors import die
from analysis import calibration
from analysis import experiment
from analysis import planning
from analysis import verdict
from guest.host import bootrunner
from guest.host import run as run_py

# Condition kinds whose boots run chkwin, which watches the lab kernel's
# windows (the others run no tracer and boot without them).
TRACED = ("recorded", "rate")


def tried(doc, c):
    """Boots of c run so far, the ones lost on every attempt included."""
    return len(doc.boots_of(c.name)) + sum(m.condition == c.name for m in doc.missing)


class Plan:
    """How many boots each condition gets: fixed before the first counting
    boot (from the pilot where there is one, analysis/planning.py), the
    A/A's re-estimated once, on the spread within pairs; kept in the record's settings (plan,
    aa_boots, plan_*)."""

    def __init__(self, args, doc, top):
        self.args, self.doc, self.top = args, doc, top
        self.settings = doc.settings
        self.pilot_fit = None       # the pilot's spread (planning.plan_aa)
        self.settings.plan = self.boots()

    def set_aa(self, boots):
        """The A/A boots a flavour, as planned or re-estimated."""
        self.settings.aa_boots = boots
        self.settings.plan = self.boots()

    def from_pilot(self):
        """Fix the plan once the pilot has run (analysis/planning.py): the
        A/A boots from the failures and the spread of the pilot's boots,
        about a rate per flavour (a real difference between the flavours is
        not read as spread), on the dispersion's
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
        aa, self.pilot_fit = planning.plan_aa(
            [self.doc.counts(c.name) for c in pilot_conds], prior, a.margin, a.power,
            a.max_aa_boots)
        phi, measured = aa["phi"], aa["per_boot"]
        self.settings.plan_dispersion = {
            "phi": phi, "df": aa["df"], "estimate": aa["estimate"], "conf": aa["conf"],
            "source": "the pilot's boots, a rate per flavour" +
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

    def budget(self, admitted):
        """Where the budget admits fewer A/A boots a flavour than planned
        (admitted: planning.budget_boots at the times the boots so far
        took), the A/A's power at what it admits, kept beside the plan's
        (plan_comparisons' "budget")."""
        for p in self.settings.plan_comparisons or []:
            if p["verdict"] == "equivalent" and admitted is not None and \
                    admitted < p["boots"]:
                power = calibration.power(*p["per_boot"], admitted, p["phi"], self.args.margin,
                                          self.args.seed)[1] if admitted >= 2 else 0.0
                p["budget"] = {"boots": admitted, "power": power}

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
        boots re-estimated (planning.look)."""
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
        print(f"demo: the A/A boots re-estimated at {done} a flavour: dispersion "
              f"{phi:.2f} (a rate per flavour, within phase-seed pairs, {df} df; the "
              f"ratio not read), "
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
                         + f". Re-estimated once (the spread within pairs) when both flavours have "
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
            if c.kind == "counting" and (n <= self.args.rr_boots or (
                    c.window == "gcc49-exact" and n <= self.args.rr_exact)):
                flags.append("--record-replay")
        limit = run_py.watchdog_seconds(self.seconds(c), c.singlestep, c.clock,
                                        self.args.shift)
        return bootrunner.Boot(out, flags, self.args.mem, limit, tuple(files))
