"""How far the demo's answers can be trusted: whole demos simulated as
experiment.json documents, planned by the demo's own plan (planning.py:
pilot, the dispersion's median bound, the look at the midpoint) and
analysed by the demo's own statistics (experiment.Results: comparisons
with their aberrant boots, model_rows, model_check), their error rates
counted.

A simulated demo has the icount demo's conditions (design.conditions):
the listing's window and off for two flavours and the loop of width 1 at
--boots each, a pilot and the A/A pair at width 16.  A boot's mean is
the failure model's prediction (model.per_call) at its calls, which vary
as a real run's do, and its interrupt counts; the patched A/A flavour's
is multiplied by the scenario's true ratio (RATIOS: 1, inside the margin,
the margin's edge, well outside).  Failures are then drawn by a SCENARIO:
Poisson; negative binomial of dispersion 3 or 5; a dispersion that grows
with the mean; a phase seed's effect shared by every boot of that seed (a
pair's two flavours alike) or one of each boot's own; and dispersion 1,
3 or 5 with one A/A boot at four times its condition's mean (ABERRANT), in a
flavour and at a boot drawn when the plan is fixed (so the look may see
it), its measures tallied by the flavour that holds it.  The run meets
the demo's limits: the budget admits 30 A/A boots a flavour
(BUDGET_BOOTS; the cap is 40, MAX_BOOTS), and a boot is lost on every
attempt with chance 2% (LOST).  Low counts come with the design (the window and control
comparisons' 4 boots of 16-50 failures).  Beside the demo's comparisons,
the listing's window in the two flavours is compared too: a null
comparison at about 16 failures a boot and 4 boots, the design of the
host-clock demo's flavour verdict.

For every comparison: coverage of the true ratio by its 95% and its 90%
interval, false "differs" (at a true ratio of 1), false equivalence (at a
true ratio of 1 + margin or beyond: every verdict that claims the 90%
interval inside the margin, "equivalent" or "differs, by less than the
margin"), and power; with an aberrant boot, whether the verdict named it
and the coverage of the interval without it (the interval of every boot,
the aberrant one among them, is outside the verdict's guarantee); for the
model: how often a true model is said to differ from itself, by W and by
the goodness of fit.  Goals (goal): coverage at least its level, false
verdicts at most 5%, each within three Monte Carlo standard errors at the
simulated n.
"""

import math
from dataclasses import dataclass, field

import numpy as np

from analysis import design
from analysis import documents
from analysis import experiment
from analysis import model
from analysis import planning
from analysis import verdict
from analysis.poisson import binom_ci

MARGIN = 0.10
# Simulated experiments behind a plan's power figure (Monte Carlo standard
# error 0.95% at 90%), and the power and cap the demo plans its A/A boots
# for: 90%, since "equivalent" at a true ratio of 1 approaches 95% only as
# the df grow (planning.py).
PLAN_SIMS = 1000
PLAN_POWER = 0.90
MAX_BOOTS = 40
SIMS = 1000

# The demo's defaults: icount shift 4, 30 s boots of about 950,000 calls,
# a 1,000 Hz tick with a few per cent idle; A/A at loop width 16.
SHIFT, LOOP_INSNS, AA_WIDTH, BOOTS = 4, 2, 16, 4
CALLS = 950_000
INTERRUPTS = {"timer": 30_000, "device": 600, "idle_seconds": 1.0, "seconds": 30.0,
              "cpus": 1, "task_seconds": 27.0}
FLAVOURS = ("unpatched", "patched")
# A phase seed's effect: a gamma factor of mean 1 and this coefficient of
# variation (5%: at 500 failures a boot, as much spread again as Poisson's).
SEED_CV = 0.05


def _nb(rng, mean, phi):
    """Negative binomial failures of the given mean and variance phi x mean."""
    if mean <= 0:
        return 0
    if phi <= 1:
        return int(rng.poisson(mean))
    r = mean / (phi - 1)
    return int(rng.negative_binomial(r, r / (r + mean)))


def _gamma(rng, cv):
    return float(rng.gamma(1 / cv ** 2, cv ** 2))


# An aberrant boot's mean, in multiples of its condition's.
ABERRANT = 4.0

# name: (what it is, draw(rng, mean, seed_factor) -> failures, whether one
# A/A boot of every demo is aberrant).  seed_factor is the boot's phase
# seed's shared factor (1 outside "seed-shared").
SCENARIOS = {
    "poisson": ("Poisson boots", lambda rng, m, g: _nb(rng, m, 1), False),
    "nb-3": ("negative binomial, dispersion 3 at every mean",
             lambda rng, m, g: _nb(rng, m, 3), False),
    "nb-5": ("negative binomial, dispersion 5 at every mean",
             lambda rng, m, g: _nb(rng, m, 5), False),
    "growing": ("dispersion growing with the mean, 1 + mean/100 (1.2 at 16, 6 at 500)",
                lambda rng, m, g: _nb(rng, m, 1 + m / 100), False),
    "seed-shared": (f"a phase seed's factor (CV {SEED_CV * 100:.0f}%) shared by every boot "
                    "of the seed", lambda rng, m, g: _nb(rng, m * g, 1), False),
    "seed-own": (f"a factor of each boot's own (CV {SEED_CV * 100:.0f}%)",
                 lambda rng, m, g: _nb(rng, m * _gamma(rng, SEED_CV), 1), False),
    "aberrant-1": (f"Poisson, one A/A boot at {ABERRANT:g} times its condition's mean",
                   lambda rng, m, g: _nb(rng, m, 1), True),
    "aberrant-3": (f"dispersion 3, one A/A boot at {ABERRANT:g} times its condition's mean",
                   lambda rng, m, g: _nb(rng, m, 3), True),
    "aberrant-5": (f"dispersion 5, one A/A boot at {ABERRANT:g} times its condition's mean",
                   lambda rng, m, g: _nb(rng, m, 5), True),
}

# The one dispersion a scenario draws at, where it has one: the verdicts'
# guarantee (analysis/guarantee.py) is stated by dispersion.
DISPERSION = {"poisson": 1, "nb-3": 3, "nb-5": 5, "aberrant-1": 1, "aberrant-3": 3,
              "aberrant-5": 5}


def draw(rng, mean, phi, size):
    """Failures of size boots with the given mean and variance phi x mean
    (phi at least 1)."""
    if mean == 0:
        return np.zeros(size, dtype=int)
    if phi == 1:
        return rng.poisson(mean, size)
    r = mean / (phi - 1)
    return rng.negative_binomial(r, r / (r + mean), size)


@dataclass
class Point:
    phi: float
    ratio: float
    boots: int
    sims: int
    covered: int
    differs: int
    equivalent: int

    def share(self, what):
        return getattr(self, what) / self.sims


def simulate(phi, mean_a, mean_b, boots, margin, sims, seed=0):
    """Point: sims A/A-design experiments of boots a condition, paired, a
    boot of a making mean_a failures on average and one of b mean_b."""
    rng = np.random.default_rng(seed)
    exposure = 1e6
    ratio = mean_a / mean_b if mean_b else math.inf
    covered = differs = equivalent = 0
    for _ in range(sims):
        a = draw(rng, mean_a, phi, boots)
        b = draw(rng, mean_b, phi, boots)
        both = ([(int(k), exposure) for k in a], [(int(k), exposure) for k in b])
        # As experiment.Results.fit fits it: within pairs where both
        # sides fail, else each side's boots about its own rate.
        pairs = verdict.fit_blocked(both, [range(boots), range(boots)]) \
            if a.sum() and b.sum() else verdict.fit(*both)
        v = verdict.compare(*both, margin, spread=pairs)
        covered += v.ci95[0] <= ratio <= v.ci95[1]
        differs += v.kind == "differs"
        equivalent += v.kind == "equivalent"
    return Point(phi, ratio, boots, sims, covered, differs, equivalent)


def power(mean_a, mean_b, boots, phi, margin, seed):
    """(share "differs", share "equivalent") of simulated experiments of
    boots a condition, paired as the run pairs them, at dispersion phi but
    never below Poisson's (a plan on under-dispersion would promise power
    the run may lack)."""
    p = simulate(max(phi, 1.0), mean_a, mean_b, boots, margin, PLAN_SIMS, seed)
    return p.share("differs"), p.share("equivalent")


class Demo:
    """One simulated demo, built boot by boot as the demo builds its record.
    budget: the A/A boots a flavour the run's budget admits (None: no cut),
    as the demo's budget cuts whole rounds; lost: the chance that a boot is
    lost on every attempt (kept in the record's missing, as the demo keeps
    it); bias: every boot's mean over the model's prediction (a model off
    by that much, for the power of its check)."""

    def __init__(self, scenario, aa_ratio, rng, margin=MARGIN, budget=None, lost=0.0,
                 bias=1.0):
        self.draw = SCENARIOS[scenario][1]
        self.scenario = scenario
        self.aberrant = None    # (condition, n) of the aberrant boot
        self.rng, self.aa_ratio, self.margin = rng, aa_ratio, margin
        self.budget, self.lost, self.bias = budget, lost, bias
        self.conds = design.conditions(FLAVOURS, "icount", AA_WIDTH, recorded=False,
                                       controls=False)
        self.seeds = {}
        self.doc = documents.ExperimentDoc(
            seed=0, conditions=self.conds, boots=[],
            settings=documents.Settings(
                clock="icount", shift=SHIFT, margin=margin, smp=1,
                window=design.primary_window("icount"), loop_instructions=LOOP_INSNS,
                boots=BOOTS, boot_seconds=30, record_seconds=0, sample_hz=0,
                workload="inode-loop", max_aa_boots=MAX_BOOTS))

    @property
    def aberrant_dir(self):
        """The directory of the aberrant boot (as boot() names it), or None."""
        return self.aberrant and f"{self.aberrant[0]}-{self.aberrant[1]}"

    def seed_factor(self, label, n):
        """The shared factor of the n-th seed of label (drawn once)."""
        if (label, n) not in self.seeds:
            self.seeds[label, n] = _gamma(self.rng, SEED_CV)
        return self.seeds[label, n]

    def boot(self, c, n):
        calls = int(CALLS * self.rng.uniform(0.92, 1.0))
        mean = self.bias * calls * model.per_call(c.window, c.width, INTERRUPTS, SHIFT,
                                                  LOOP_INSNS)
        # The pilot is the A/A's settings, so a true difference shows in it
        # as well, where the plan must not read it as spread.
        if c.kind in ("pilot", "aa") and c.flavour == FLAVOURS[1]:
            mean *= self.aa_ratio
        if (c.name, n) == self.aberrant:
            mean *= ABERRANT
        label = "pilot" if c.kind == "pilot" else "phase"
        k = self.draw(self.rng, mean, self.seed_factor(label, n))
        seed = n + (10_000 if label == "pilot" else 0)
        if self.lost and self.rng.random() < self.lost:
            self.doc.missing.append(documents.Missing(
                condition=c.name, dir=f"{c.name}-{n}", round=n, slot=1, phase_seed=seed,
                attempts=3, reason="lost (simulated)"))
            return
        # No wall time: nothing here reads it.
        self.doc.boots.append(documents.Boot(
            condition=c.name, round=n, slot=1, dir=f"{c.name}-{n}", calls=calls,
            failures_total=k, failures={"inode": k}, phase_seed=seed,
            clock={"kind": "icount", "shift": SHIFT}, interrupts=INTERRUPTS,
            guest_seconds=30, wall_seconds=0.0))

    def of(self, kind):
        return self.doc.select(kind=kind)

    def run(self, power=PLAN_POWER, cap=MAX_BOOTS, aberrant=None):
        """The demo's order: pilot, plan, counting boots, A/A to the
        midpoint, the look (with the boots there are once the
        midpoint's have run, some perhaps lost), the rest, as far as the
        budget admits.  aberrant: (flavour index, boot number) of the
        scenario's aberrant A/A boot; drawn when the scenario has one and
        this is None.  Returns the A/A plan: planned, final, run (boots a
        flavour the run reached) and the aberrant boot's flavour with
        whether it is in the record (it may be lost, or cut by the budget)."""
        for c in self.of("pilot"):
            for n in range(1, planning.PILOT_BOOTS + 1):
                self.boot(c, n)
        plan = planning.plan_aa([self.doc.counts(c.name) for c in self.of("pilot")], None,
                                self.margin, power, cap)[0]
        aa = self.of("aa")
        if aberrant is None and SCENARIOS[self.scenario][2]:
            aberrant = (int(self.rng.integers(2)), int(self.rng.integers(1, plan["boots"] + 1)))
        if aberrant:
            self.aberrant = (aa[aberrant[0]].name, aberrant[1])
        for c in self.of("counting") + self.of("control"):
            for n in range(1, BOOTS + 1):
                self.boot(c, n)
        planned, again = plan["boots"], None
        limit = cap if self.budget is None else min(cap, self.budget)
        n = 0
        while n < min(planned, limit):
            n += 1
            for c in aa:
                self.boot(c, n)
            if again is None:
                counts = [self.doc.counts(c.name) for c in aa]
                res = experiment.Results(self.doc)
                blocks = [res.blocks(c.name) for c in aa]
                again = planning.look(*counts, *blocks, self.margin, power, cap, planned,
                                      now=n >= planning.midpoint(planned))
                if again:
                    planned = again["boots"]
        ran = self.aberrant and any(b.dir == self.aberrant_dir for b in self.doc.boots)
        return {"planned": plan["boots"], "final": planned, "run": n,
                "aberrant": self.aberrant and (aberrant[0], ran)}


@dataclass
class Tally:
    """Counts over simulated demos of one scenario and true A/A ratio, and
    the A/A boots a flavour each demo planned, ran and needed."""
    scenario: str
    aa_ratio: float
    sims: int = 0
    counts: dict = field(default_factory=dict)
    aa_boots: list = field(default_factory=list)    # (planned, final, run)
    needed: int = None      # planning.needed at the true mean and dispersion
    capped: int = 0         # demos whose plan reached the cap

    def add(self, key, hit):
        got = self.counts.setdefault(key, [0, 0])
        got[0] += bool(hit)
        got[1] += 1

    def share(self, key):
        hits, n = self.counts.get(key, (0, 0))
        return hits / n if n else math.nan

    def n(self, key):
        return self.counts.get(key, (0, 0))[1]


# How the tally keys name the A/A measures of a demo with an aberrant boot.
ABERRANT_IN, WITHOUT = "aberrant boot in", "without it,"


def _covers(tally, key, v, truth):
    """Coverage of truth by v's 95% and 90% intervals."""
    tally.add(f"{key} covered 95%", v.ci95[0] <= truth <= v.ci95[1])
    tally.add(f"{key} covered 90%", v.ci90[0] <= truth <= v.ci90[1])


def analyse(doc, aa_ratio, tally, aberrant=None):
    """The demo's own analysis of one simulated record, tallied; aberrant:
    (the flavour index, the boot directory) of the A/A boot made aberrant,
    when it ran (its A/A measures are tallied apart, by that flavour, and
    whether the verdict named that very boot)."""
    control = model.fatal_boundaries("gcc49", 1, LOOP_INSNS) / \
        model.fatal_boundaries("gcc49-exact", 1)
    margin = doc.settings.margin
    res = experiment.Results(doc)
    found = list(res.comparisons)
    # The listing's window in both flavours: a null comparison at 16
    # failures a boot and 4 boots, as the host-clock demo's flavour verdict
    # is (and the low-count case), through the same functions.
    exact = doc.select(kind="counting", window="gcc49-exact")
    found.append({"key": "exact flavours", "verdict": verdict.compare(
        doc.counts(exact[1].name), doc.counts(exact[0].name), margin,
        spread=res.comparison_spread(exact), paired=res.paired)})
    for c in found:
        v, key = c["verdict"], c["key"]
        truth = {"window": math.inf, "control": control, "flavour": aa_ratio,
                 "exact flavours": 1.0}[key]
        if key == "flavour" and aberrant is not None:
            key = f"flavour, {ABERRANT_IN} {FLAVOURS[aberrant[0]]}"
            tally.add(f"{key}: named", any(f["boot"] == aberrant[1] for f in v.flagged))
            # The interval a reader gets without the boot the verdict named.
            _covers(tally, f"{key}: {WITHOUT}", v.without or v, truth)
        if math.isfinite(truth):
            _covers(tally, key, v, truth)
        if c.get("model"):
            tally.add("control against the model false differs", c["model"]["kind"] == "differs")
        if truth == 1:
            tally.add(f"{key} false differs", v.kind == "differs")
        if not math.isfinite(truth) or truth >= 1 + margin + 0.1:
            tally.add(f"{key} power", v.kind == "differs")
        elif truth < 1 + margin - 1e-9:
            if key.startswith("flavour"):
                tally.add(f"{key} power", v.kind == "equivalent")
        if math.isfinite(truth) and truth >= 1 + margin - 1e-9:
            tally.add(f"{key} false equivalence", v.within_margin)
    if aa_ratio != 1:
        return      # the patched A/A is not what the model predicts: no false misfit
    check = res.model_check
    tally.add("model false misfit", check["p"] < 0.05)
    for g in check["by_w"]:
        tally.add(f"model W={g['W']} false differs", g["kind"] == "differs")
        tally.add(f"model W={g['W']} covered 95%", g["ci95"][0] <= 1 <= g["ci95"][1])


# The true A/A ratios each scenario runs at: none, inside the margin,
# exactly the margin, and well outside it.
RATIOS = (1.0, 1.05, 1 + MARGIN, 1.25)
# A run as the demo meets it (--budget, boots lost on every attempt): the
# A/A boots a flavour its budget admits, and the chance a boot is lost.
BUDGET_BOOTS = 30
LOST = 0.02


def run(scenario, aa_ratio, sims=SIMS, seed=0, budget=BUDGET_BOOTS, lost=LOST):
    """Tally of sims simulated demos."""
    rng = np.random.default_rng([seed, list(SCENARIOS).index(scenario), int(aa_ratio * 100)])
    tally = Tally(scenario, aa_ratio)
    for _ in range(sims):
        demo = Demo(scenario, aa_ratio, rng, budget=budget, lost=lost)
        plan = demo.run()
        tally.aa_boots.append((plan["planned"], plan["final"], plan["run"]))
        tally.capped += plan["final"] >= MAX_BOOTS
        where = plan["aberrant"]
        analyse(demo.doc, aa_ratio, tally,
                (where[0], demo.aberrant_dir) if where and where[1] else None)
        tally.sims += 1
    phi = DISPERSION.get(scenario)
    if phi:
        per_boot = CALLS * 0.96 * model.per_call("gcc49", AA_WIDTH, INTERRUPTS, SHIFT,
                                                 LOOP_INSNS)
        tally.needed = planning.needed(per_boot, phi, MARGIN, PLAN_POWER)
    return tally


def model_power(scenario, bias, sims=SIMS, seed=0):
    """The power of the model check against a model off by bias (every
    boot's mean that many times the prediction) over sims demos at a true
    A/A ratio of 1: {measure: (hits, n)}, the goodness of fit's p below 5%
    and each W group's "differs"."""
    rng = np.random.default_rng([seed, list(SCENARIOS).index(scenario), int(bias * 1000)])
    tally = Tally(scenario, 1.0)
    for _ in range(sims):
        demo = Demo(scenario, 1.0, rng, budget=BUDGET_BOOTS, lost=LOST, bias=bias)
        demo.run()
        check = experiment.Results(demo.doc).model_check
        tally.add("goodness of fit p < 0.05", check["p"] < 0.05)
        for g in check["by_w"]:
            tally.add(f"W={g['W']} disagrees", g["kind"] == "differs")
    return tally.counts


def mc_se(p, n):
    """The Monte Carlo standard error of a rate p over n draws."""
    return math.sqrt(p * (1 - p) / n) if n else math.nan


def goal(key, n):
    """(nominal, bound) of a measure: coverage at least its nominal level
    less three of its Monte Carlo standard errors at n, a false verdict at
    most 5% plus three; (None, None) for what has no goal (power)."""
    for level in (95, 90):
        if key.endswith(f"covered {level}%") and ABERRANT_IN in key and WITHOUT not in key:
            # The interval of every boot, the aberrant one among them: outside
            # the verdict's guarantee, which rests on the boots without it.
            return level / 100, None
        if key.endswith(f"covered {level}%"):
            p = level / 100
            return p, p - 3 * mc_se(p, n)
    if key.endswith(("false differs", "false equivalence", "false misfit")):
        return 0.05, 0.05 + 3 * mc_se(0.05, n)
    return None, None


# Below this many draws a goal is not tested: three standard errors of 5%
# at 100 are 6.5 points, wider than the difference the goal is about (an
# aberrant boot's flavour or a rare verdict can leave a measure a few dozen).
MIN_TESTED = 100


def goals(tally):
    """[(measure, share, met)] of the tally's measures against their goals
    (met None: no goal, outside the guarantee, or too few to test)."""
    out = []
    for key in sorted(tally.counts):
        p, n = tally.share(key), tally.n(key)
        nominal, bound = goal(key, n)
        met = None if bound is None or n < MIN_TESTED else \
            (p >= bound if "covered" in key else p <= bound)
        out.append((key, p, met))
    return out


def by_scenario(tallies):
    """The tallies pooled over their true A/A ratios, a Tally a scenario
    (aa_ratio None): a scenario's coverage on a few hundred demos a ratio
    can pass each ratio's bound and still fall short of its level over all
    of them."""
    out = {}
    for t in tallies:
        got = out.setdefault(t.scenario, Tally(t.scenario, None))
        got.sims += t.sims
        for key, (hits, n) in t.counts.items():
            both = got.counts.setdefault(key, [0, 0])
            both[0] += hits
            both[1] += n
    return list(out.values())


def outside(tallies):
    """The scenarios whose intervals, pooled over the ratios, cover less
    than their goal: outside the verdict's guarantee, named as such."""
    return [t.scenario for t in by_scenario(tallies)
            if any(met is False for key, _, met in goals(t) if "covered" in key)]


def guarantee_scenarios(tallies):
    """The scenarios as analysis/guarantee.py records them, pooled over
    the ratios: each one's dispersion, whether it holds an aberrant boot,
    the lowest coverage among the intervals with a goal, by level, and
    whether it is outside the guarantee."""
    out = []
    named = set(outside(tallies))
    for t in by_scenario(tallies):
        covered = {}
        for level in (90, 95):
            shares = [t.share(k) for k, _, _ in goals(t)
                      if k.endswith(f"covered {level}%") and goal(k, t.n(k))[1] is not None]
            covered[str(level)] = round(min(shares), 4) if shares else None
        out.append({"scenario": t.scenario, "what": SCENARIOS[t.scenario][0],
                    "dispersion": DISPERSION.get(t.scenario),
                    "aberrant": SCENARIOS[t.scenario][2], "covered": covered,
                    "outside": t.scenario in named})
    return out


def median_boots(tally):
    """(planned, final, run): the median A/A boots a flavour of the
    tally's demos, as planned, after the look, and as run (the budget and
    lost boots)."""
    return tuple(int(np.median([b[i] for b in tally.aa_boots])) for i in range(3))


def share_ci(hits, n):
    """A share and its exact 95% interval, as the tables write it."""
    lo, hi = binom_ci(hits, n)
    return f"{hits / n * 100:.1f}% ({lo * 100:.1f}-{hi * 100:.1f}) of {n}"


def table(tallies):
    """Rows for bench/RESULTS.md and the tests' messages."""
    out = [["scenario", "true A/A ratio", "measure", "share (95% CI)", "goal"]]
    for t in tallies:
        for key, _, met in goals(t):
            hits, n = t.counts[key]
            nominal, bound = goal(key, n)
            want = "-" if nominal is None else \
                "outside the guarantee (the aberrant boot in)" if bound is None else \
                f"too few to test (under {MIN_TESTED})" if n < MIN_TESTED else \
                (f"{'>=' if 'covered' in key else '<='} {bound * 100:.1f}%: "
                 + ("met" if met else "NOT MET"))
            ratio = "all" if t.aa_ratio is None else f"{t.aa_ratio:g}"
            out.append([t.scenario, ratio, key, share_ci(hits, n), want])
    return out


def plan_rows(tallies):
    """Rows of the A/A plans: boots a flavour planned, after the look and
    run (medians), planning.needed at the true dispersion, and the share
    of demos whose plan reached the cap."""
    out = [["scenario", "true A/A ratio", "A/A boots a flavour: planned, after the look, run "
            "(medians)", "planning.needed at the true dispersion", f"plans at the cap of "
            f"{MAX_BOOTS}"]]
    for t in tallies:
        out.append([t.scenario, f"{t.aa_ratio:g}", ", ".join(map(str, median_boots(t))),
                    "-" if t.needed is None else str(t.needed), share_ci(t.capped, t.sims)])
    return out
