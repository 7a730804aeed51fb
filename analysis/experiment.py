"""The statistics of a lab experiment (guest/lab_demo.py's experiment.json,
read as analysis/documents.py's ExperimentDoc), each computed once for a
record by Results.

Counting boots give each condition's failure rate per million checksum
calls, pooled over its boots with the boot-to-boot spread in the interval
(verdict.py).  From them: does the window cause failures (gcc49 against
off), does the barrier flavour change the rate (patched against
unpatched, within an equivalence margin), and, with a width sweep, the
dose-response slope.  Recorded boots decompose a flavour's rate into
timing (calls with a window arrival per million calls) and mechanism
(failures per such call), and say how many failures follow a window
interrupt.  The gcc49-exact controls test the block-boundary mechanism:
no window arrival without one-instruction blocks, failures with them.

On the icount clock (the default) every boot also carries its interrupt
counts, so each condition's failures are set against the model's
prediction (analysis/model.py); the positive control (loop of width 1
against gcc49-exact) must differ by the predicted ratio, and the flavour
comparison runs as the A/A test it is here.

analysis/decisions.py words the verdicts, tables.py, figures.py and
prose.py the rest of the report, all from a Results.
"""

import dataclasses
import math
from functools import cached_property

import numpy as np
from scipy import stats

from analysis import chkwinlog
from analysis import documents
from analysis import guarantee
from analysis import model
from analysis import verdict
from analysis.poisson import binom_ci, poisson_ci, t_quantile

PER = 1e6
GCC49_FUNC = 1      # enum chkwin_func: CHKWIN_FUNC_GCC49
# Condition kinds whose boots are replicates: their spread is the dispersion
# (the pilot's boots only plan the A/A comparison).
REPLICATED = ("counting", "dose", "control", "aa")
# Measured against predicted: "agrees" when the 90% interval of measured /
# predicted lies inside 1/(1+M)..1+M, as the A/A comparison's equivalence.
MODEL_MARGIN = 0.10
# The two doses: what each point's x is and how the report names it.
DOSES = {
    "width": {"label": "window width (translation blocks, ext4.chksum_window_width)",
              "unit": "block", "what": "the window width"},
    "rate": {"label": "interrupt arrivals per second under the loader (irqs + sampler)",
             "unit": "1000 arrivals/s", "what": "the interrupt rate"},
}



def agreement(ci95, ci90, df, margin=MODEL_MARGIN):
    """(kind, inside): measured against predicted (a ratio of the two, its
    intervals) decided as verdict.compare decides equivalence.  inside:
    the 90% interval lies inside 1/(1+margin)..1+margin and the spread was
    estimated (never on 0 df).  kind: "differs" when the 95% interval
    excludes 1 (with inside, by less than the margin: a difference the
    model is within +-margin of, not a miss); "agrees" within +-margin
    when inside; else "undecided".  An interval that merely holds the
    prediction agrees with nothing."""
    inside = bool(df) and 1 / (1 + margin) <= ci90[0] and ci90[1] <= 1 + margin
    return ("differs" if ci95[0] > 1 or ci95[1] < 1 else
            "agrees" if inside else "undecided"), inside


def against_model(v, want):
    """A comparison's Verdict v against the model's ratio want: {ratio,
    ci95, ci90, kind, within_margin} of measured / predicted, decided by
    agreement().  Where v flagged an aberrant boot, the check is made
    without it too and stands only where both reach it (as
    verdict.with_and_without decides the verdict itself): "without" holds
    that check, the kind is "undecided" where they part."""
    def check(w):
        ci95, ci90 = (tuple(x / want for x in ci) for ci in (w.ci95, w.ci90))
        kind, inside = agreement(ci95, ci90, w.df)
        return {"ratio": w.ratio / want, "ci95": ci95, "ci90": ci90, "kind": kind,
                "within_margin": inside}
    out = check(v)
    if v.without is not None:
        alone = check(v.without)
        out["without"] = alone
        if alone["kind"] != out["kind"]:
            out["kind"] = "undecided"
        out["within_margin"] = out["within_margin"] and alone["within_margin"]
    return out


def is_control(c):
    """The block-boundary controls: gcc49-exact on the host clock, where
    only -singlestep lets an interrupt land in its window."""
    return c.window == "gcc49-exact" and c.clock == "host"


def homogeneity(fits):
    """Bartlett's test that the conditions' dispersions are one: each
    Pearson chi-square over its df estimates phi with phi x chi-square(df)
    / df, which is what Bartlett's statistic assumes.  (statistic, df,
    p-value), or None with fewer than two conditions."""
    fits = [f for f in fits if f.df]
    if len(fits) < 2:
        return None
    dfs = np.array([f.df for f in fits], float)
    s2 = np.maximum(np.array([f.chi2 for f in fits]) / dfs, 1e-9)
    total = dfs.sum()
    pooled = float(np.sum(dfs * s2) / total)
    stat = total * math.log(pooled) - float(np.sum(dfs * np.log(s2)))
    stat /= 1 + (np.sum(1 / dfs) - 1 / total) / (3 * (len(fits) - 1))
    df = len(fits) - 1
    return float(stat), df, float(stats.chi2.sf(stat, df))


def dispersion_from(run_dir):
    """(phi, df, what): the spread of a previous run's replicated boots, for
    a new run to plan on (analysis/planning.py); ValueError, one line, when
    the run cannot give one."""
    try:
        doc = documents.load(run_dir)
    except documents.ExperimentError as e:
        raise ValueError(str(e)) from None
    path = run_dir / "experiment.json"
    if doc.settings.clock != "icount":
        raise ValueError(f"{path}: not an icount run; its spread says nothing of icount boots")
    fit = Results(doc).spread
    if not fit.df:
        raise ValueError(f"{path}: no condition has two boots, so no spread to plan on")
    return fit.phi, fit.df, f"the spread of run {run_dir.resolve().name}"


def fit_line(points):
    """Weighted least squares y = intercept + slope * x over points (x, y,
    var, k, n, ci, phi), weights from each point's variance (its own
    dispersion's: ci is its 95% interval, phi that dispersion).  With more than two
    points the residual scatter, where it exceeds what the variances
    allow, widens the intervals, and t on n - 2 degrees of freedom carries
    its uncertainty; the trend test is whether the slope's 95% interval
    excludes 0."""
    points = sorted(points)
    x = np.array([p[0] for p in points], float)
    y = np.array([p[1] for p in points], float)
    w = 1 / np.array([p[2] for p in points], float)
    sw, sx, sy = np.sum(w), np.sum(w * x), np.sum(w * y)
    sxx, sxy = np.sum(w * x * x), np.sum(w * x * y)
    det = float(sw * sxx - sx * sx)
    slope = float(sw * sxy - sx * sy) / det
    intercept = float(sy * sxx - sx * sxy) / det
    resid = y - intercept - slope * x
    chi2 = float(np.sum(w * resid ** 2))
    df = len(x) - 2
    scale = max(1.0, chi2 / df) if df > 0 else 1.0
    q = t_quantile(0.975, df) if df > 0 else verdict.Z95
    se_slope, se_icpt = math.sqrt(scale * sw / det), math.sqrt(scale * sxx / det)
    ybar = sy / sw
    r2 = 1 - chi2 / float(np.sum(w * (y - ybar) ** 2)) if np.any(y != ybar) else math.nan
    return {"points": [{"x": float(p[0]), "per_million": p[1], "failures": p[3],
                        "calls": p[4], "ci": p[5], "phi": p[6], "residual": float(r)}
                       for p, r in zip(points, resid)],
            "slope": slope, "slope_ci": (slope - q * se_slope, slope + q * se_slope),
            "intercept": intercept,
            "intercept_ci": (intercept - q * se_icpt, intercept + q * se_icpt),
            "r2": r2, "scale": scale, "df": df}


def group_spread(group):
    """The dispersion of a W group's boots about the prediction scaled to
    the group's measured total, the conditions' boots of one block (phase
    seed) summed first: a seed's effect shared by the conditions is spread
    the group's total carries.  A Fit (no df: one block)."""
    totals = {}
    for r in group:
        for label, k, pred in r["boots"]:
            got = totals.setdefault(label, [0, 0.0])
            got[0] += k
            got[1] += pred
    k = sum(t[0] for t in totals.values())
    pred = sum(t[1] for t in totals.values())
    df = len(totals) - 1
    if not df or not k:
        return verdict.Fit(None, 0.0, 0)
    chi2 = sum((t[0] - t[1] * k / pred) ** 2 / (t[1] * k / pred) for t in totals.values())
    return verdict.Fit(chi2 / df, chi2, df)


def model_fit(rows):
    """The model checked as a model over the windowed conditions, grouped
    by W (conditions of one W measure one prediction; their boots of one
    phase seed are summed, so a seed's shared effect counts once): for
    each group measured / predicted with the interval of its own spread
    (floored at Poisson, t on its df) and the prediction's own error,
    tested two-sidedly against 1 within MODEL_MARGIN; and Pearson's
    goodness of fit over the groups with no parameter fitted (the
    predictions come before the boots), each residual taken as t on its
    spread's df and mapped to the normal before squaring.  None without a
    windowed condition."""
    rows = [r for r in rows if r["window"] != "off" and r["predicted"] > 0]
    if not rows:
        return None
    chi2 = 0.0
    by_w = []
    for w in sorted({r["W"] for r in rows}):
        group = [r for r in rows if r["W"] == w]
        k = sum(r["measured"] for r in group)
        pred = sum(r["predicted"] for r in group)
        fit = group_spread(group)
        phi = fit.scale()
        rel = sum(r["predicted"] ** 2 / max(r["timer"], 1) for r in group) / pred ** 2
        ratio, ci95 = model.ratio_to_model(k, pred, phi, fit.level(0.95), rel)
        _, ci90 = model.ratio_to_model(k, pred, phi, fit.level(0.90), rel)
        kind, inside = agreement(ci95, ci90, fit.df)
        t = (k - pred) / math.sqrt(phi * pred + pred ** 2 * rel)
        z = float(stats.norm.isf(stats.t.sf(t, fit.df))) if fit.df else t
        chi2 += min(z * z, 1e6)
        by_w.append({"W": w, "conditions": [r["condition"] for r in group],
                     "measured": k, "predicted": pred, "ratio": ratio, "ci95": ci95,
                     "ci90": ci90, "kind": kind, "within_margin": inside, "phi": phi,
                     "df": fit.df})
    return {"chi2": chi2, "df": len(by_w), "p": float(stats.chi2.sf(chi2, len(by_w))),
            "by_w": by_w}



class Results:
    """The statistics of one record, each computed on first use and kept:
    doc an ExperimentDoc, runs {boot directory: (log, correlation)} of its
    recorded boots whose logs were read, walked [(boot directory, walk)]
    of its boots walked by replay (analysis/walks.py)."""

    def __init__(self, doc, runs=None, walked=()):
        self.doc, self.runs, self.walked = doc, runs or {}, list(walked)

    @cached_property
    def calibrated(self):
        """What the calibration measured of the verdicts' guarantee
        (analysis/guarantee.py), None where it was never run."""
        return guarantee.load()

    @cached_property
    def paired(self):
        """Whether every replicated boot has a phase seed (icount runs)."""
        kind = {c.name: c.kind for c in self.doc.conditions}
        return all(b.phase_seed is not None for b in self.doc.boots
                   if kind[b.condition] in REPLICATED)

    @property
    def within(self):
        """The design's blocks, as the verdicts name them."""
        return "phase-seed pairs" if self.paired else "rounds"

    def boots(self, name, drop=frozenset()):
        """A condition's boots in the order they ran, less those in drop
        (boot directories)."""
        return [b for b in self.doc.boots_of(name) if b.dir not in drop]

    def counts(self, name, drop=frozenset()):
        """[(failures, calls)] of a condition's boots less those in drop."""
        return [(b.failures_total, b.calls) for b in self.boots(name, drop)]

    def blocks(self, name, drop=frozenset()):
        """The block of each of a condition's boots (less those in drop):
        boots that share a phase seed are paired (the n-th boot of every
        condition), else a round is a block (rounds interleave the
        conditions, so whatever drifts over a run's time, host load among
        it, is shared within one)."""
        return [("seed", b.phase_seed) if self.paired else ("round", b.round)
                for b in self.boots(name, drop)]

    def blocked(self, conds):
        """Whether conds' spread is taken within the design's blocks: where
        two conditions with failures share them (one alone would spend a
        degree of freedom a block on nothing)."""
        return sum(1 for c in conds if sum(k for k, _ in self.doc.counts(c.name))) >= 2

    def fit(self, conds, drop=frozenset()):
        """The dispersion of the boots of conds (less those in drop) about
        their own rates, within the design's blocks where blocked()."""
        counts = [self.counts(c.name, drop) for c in conds]
        if not self.blocked(conds):
            return verdict.fit(*counts)
        return verdict.fit_blocked(counts, [self.blocks(c.name, drop) for c in conds])

    def aberrant(self, conds):
        """The boots of conds that verdict.aberrant flags, as the fit of
        their comparison has them (within blocks where blocked()):
        Verdict.flagged's dicts."""
        blocks = [self.blocks(c.name) if self.blocked(conds) else [0] * len(self.boots(c.name))
                  for c in conds]
        found = verdict.aberrant([self.counts(c.name) for c in conds], blocks)
        out = []
        for a in found:
            b = self.boots(conds[a.condition].name)[a.boot]
            out.append({"boot": b.dir, "condition": b.condition, "phase_seed": b.phase_seed,
                        "failures": a.failures, "expected": a.expected,
                        "residual": a.residual, "threshold": a.threshold})
        return out

    @cached_property
    def spread(self):
        """The experiment's pooled boot-to-boot dispersion (verdict.Fit): the
        spread of boots about their condition's rate over every replicated
        condition, with the design's blocks as terms.  A comparison uses its
        own conditions' spread (comparison_spread); this one serves where
        those have no degree of freedom, and plans the next run."""
        return self.fit([c for c in self.doc.conditions if c.kind in REPLICATED])

    def comparison_spread(self, conds, drop=frozenset()):
        """The spread a comparison of conds uses: their own boots' (less
        those in drop), within blocks; the pooled one, said so, where
        theirs has no degree of freedom (one boot a condition, or no
        failure on one side)."""
        own = self.fit(conds, drop)
        if own.df:
            return dataclasses.replace(own, source=f"(its own boots, within {self.within})")
        return dataclasses.replace(
            self.spread, source=f"(pooled over every replicated condition, within "
                                f"{self.within}: its own boots give no degree of freedom)")

    @cached_property
    def condition_spreads(self):
        """{condition: Fit} of every replicated condition with two boots and
        a failure: its boots about its own rate, no blocks (a phase seed's
        effect stays in; it is what moves a condition's level from run to
        run)."""
        out = {}
        for c in self.doc.conditions:
            if c.kind in REPLICATED:
                f = verdict.fit(self.doc.counts(c.name))
                if f.df:
                    out[c.name] = f
        return out

    @cached_property
    def homogeneity(self):
        """Bartlett's test that the conditions' own dispersions are one."""
        return homogeneity(self.condition_spreads.values())

    @cached_property
    def condition_rows(self):
        """One row per condition in the experiment's order; intervals with
        the condition's own dispersion, the pooled one where it has none."""
        rows = []
        pooled, own = self.spread, self.condition_spreads
        for c in self.doc.conditions:
            boots = self.doc.boots_of(c.name)
            r = verdict.rate(self.doc.counts(c.name), spread=own.get(c.name, pooled))
            kinds = {}
            for b in boots:
                for k, n in b.failures.items():
                    if n:
                        kinds[k] = kinds.get(k, 0) + n
            minutes = sum(b.guest_seconds for b in boots) / 60
            rows.append({"condition": c.name, "kind": c.kind, "boots": len(boots),
                         "failures": r.failures, "by_kind": kinds, "calls": r.exposure,
                         "per_million": r.rate * PER if boots else None,
                         "ci": (r.lo * PER, r.hi * PER), "phi": r.phi,
                         "per_minute": r.failures / minutes if minutes else None,
                         "per_boot": [b.failures_total for b in boots]})
        return rows

    @cached_property
    def model_rows(self):
        """Predicted against measured failures of every icount condition
        whose boots carry interrupt counts (analysis/model.py).  Each row's
        interval carries the condition's own spread about its rate (no
        blocks: a phase seed's effect on the level is part of what a run can
        read) and the prediction's own error, allowed for as if the ticks
        were a Poisson count (they are periodic on icount, so this
        overstates it; it is 0.6% of a 30 s boot's prediction: the spread
        of the failures dominates)."""
        doc = self.doc
        shift = doc.settings.shift
        loop = doc.settings.loop_instructions or model.LOOP_INSNS
        own = self.condition_spreads
        pooled = verdict.fit(*[doc.counts(c.name) for c in doc.conditions
                               if c.kind in REPLICATED])
        rows = []
        for c in doc.conditions:
            boots = [b for b in doc.boots_of(c.name)
                     if b.interrupts and (b.clock or {}).get("kind") == "icount"]
            if not boots or c.kind in ("recorded", "rate", "pilot"):
                continue
            shift_c = boots[0].clock["shift"] if shift is None else shift
            each = [b.calls * model.per_call(c.window, c.width, b.interrupts, shift_c, loop)
                    for b in boots]
            predicted = sum(each)
            measured = sum(b.failures_total for b in boots)
            block = self.blocks(c.name)
            task = [(b.interrupts["task_seconds"], model.rates(b.interrupts)) for b in boots]
            seconds = sum(t for t, _ in task)
            timer = sum(b.interrupts["timer"] for b in boots)
            fit = own.get(c.name) or pooled
            ratio, ci = model.ratio_to_model(measured, predicted, fit.scale(),
                                             fit.level(0.95), 1 / timer if timer else 0.0)
            rows.append({"condition": c.name, "window": c.window, "width": c.width,
                         "W": model.fatal_boundaries(c.window, c.width, loop),
                         "shift": shift_c,
                         "timer_per_s": sum(t * r[0] for t, r in task) / seconds,
                         "device_per_s": sum(t * r[1] for t, r in task) / seconds,
                         "calls": sum(b.calls for b in boots), "timer": timer,
                         "predicted": predicted, "measured": measured,
                         "ratio": ratio, "ratio_ci": ci,
                         "boots": [(block[i], b.failures_total, each[i])
                                   for i, b in enumerate(boots)]})
        return rows

    @cached_property
    def model_check(self):
        """model_fit of the model rows; None without a windowed condition."""
        return model_fit(self.model_rows)

    @cached_property
    def hardware(self):
        """(failures a flavour needs, model.hardware_rows): the model
        extrapolated to a Cortex-A72 (model.HARDWARE), with the failures a
        flavour that this experiment's A/A plan would need."""
        s = self.doc.settings
        need = verdict.aa_failures(s.margin, s.power)
        return need, model.hardware_rows(need)

    @cached_property
    def comparisons(self):
        """The experiment's comparisons, each with its own spread
        (comparison_spread): [{key, label, verdict, expect, asks, boots}],
        expect the model's ratio where the model predicts one (the positive
        control; then expect_ci, its own 95% interval from the counted
        ticks, and model, the control's ratio against it), asks the verdict
        the comparison is there for ("differs" or "equivalent"), boots each
        side's."""
        doc = self.doc
        margin = doc.settings.margin
        window = doc.settings.window
        out = []

        def pooled_over(conds, drop=frozenset()):
            return [x for c in conds for x in self.counts(c.name, drop)]

        def compare(a, b, names, cap=None):
            def on(drop):
                return verdict.compare(pooled_over(a, drop), pooled_over(b, drop), margin,
                                       names=names, spread=self.comparison_spread(a + b, drop),
                                       paired=self.paired, cap=cap)
            v = on(frozenset())
            # A decision one boot turns is no decision: where a boot is
            # aberrant, the verdict must hold without it as well.
            flagged = self.aberrant(a + b)
            if flagged:
                v = verdict.with_and_without(v, on(frozenset(f["boot"] for f in flagged)),
                                             flagged)
            why = guarantee.outside(v, self.calibrated)
            return dataclasses.replace(v, outside=why, text=f"{v.text}; {why}") if why else v

        primary = doc.select(kind="counting", window=window, singlestep=False)
        off = doc.select(kind="counting", window="off")
        if pooled_over(primary) and pooled_over(off):
            out.append({"key": "window", "label": f"{window}/off", "asks": "differs",
                        "boots": (len(pooled_over(primary)), len(pooled_over(off))),
                        "verdict": compare(primary, off, (window, "off")), "expect": None})
        predicted = {r["condition"]: r for r in self.model_rows}
        for c in doc.select(kind="control"):
            ref = next((p for p in primary if p.flavour == c.flavour), None)
            if not (ref and pooled_over([c]) and pooled_over([ref])):
                continue
            pa, pb = predicted.get(c.name), predicted.get(ref.name)
            want = (pa["predicted"] / pa["calls"]) / (pb["predicted"] / pb["calls"]) \
                if pa and pb and pb["predicted"] > 0 else None
            v = compare([c], [ref], (f"width {c.width}", window))
            # The control against the model's ratio, as the model check
            # tests the model (the prediction's own error, from counted
            # ticks, is a fraction of a per cent and left out).
            model_vs = want_ci = None
            if want:
                # A ratio of two Poisson tick counts' rates, on the log scale.
                s = math.sqrt(1 / pa["timer"] + 1 / pb["timer"])
                want_ci = (want * math.exp(-verdict.Z95 * s), want * math.exp(verdict.Z95 * s))
                model_vs = against_model(v, want)
            out.append({"key": "control", "label": f"width {c.width}/{window}",
                        "asks": "differs", "boots": (len(doc.boots_of(c.name)),
                                                     len(doc.boots_of(ref.name))),
                        "verdict": v, "expect": want, "expect_ci": want_ci,
                        "model": model_vs})
        aa = doc.select(kind="aa")
        flav = aa if len(aa) == 2 else primary
        if len(flav) == 2:
            first, second = flav
            if pooled_over([second]) and pooled_over([first]):
                names = (second.flavour, first.flavour)
                out.append({"key": "flavour", "label": "/".join(names) +
                            (f" at width {first.width}" if aa else ""), "aa": bool(aa),
                            "asks": "equivalent", "boots": (len(doc.boots_of(second.name)),
                                                            len(doc.boots_of(first.name))),
                            "width": first.width,
                            "verdict": compare([second], [first], names,
                                               cap=doc.settings.max_aa_boots if aa else None),
                            "expect": None})
        return out

    def _point(self, name, x):
        """(x, failures per 1M calls, its variance, failures, calls, its 95%
        interval, dispersion) of a condition's pooled boots, with the
        condition's own dispersion (the pooled one where its boots give
        none), as the conditions table has it: points whose boots spread
        more weigh less and show wider bars."""
        row = next(r for r in self.condition_rows if r["condition"] == name)
        k, n = verdict.pooled(self.doc.counts(name))
        return (x, k / n * PER, row["phi"] * max(k, 1) / n ** 2 * PER ** 2, k, n, row["ci"],
                row["phi"])

    def dose(self, which):
        """Failures per million calls against a dose (DOSES) on the sweep's
        flavour, a weighted line with an intercept (fit_line: a fit forced
        through 0 would put whatever does not scale with the dose into the
        slope): "width" the window width of the untraced counting and dose
        boots, "rate" the measured interrupt rate of the rate boots (in
        thousands per second).  None without two points."""
        doc = self.doc
        if which == "width":
            sweep = doc.select(kind="dose")
            if not sweep:
                return None
            flavour = sweep[0].flavour
            points = [self._point(c.name, c.width)
                      for c in doc.select(flavour=flavour, window="gcc49", singlestep=False)
                      if c.kind in ("counting", "dose", "control")
                      and doc.boots_of(c.name)]
        else:
            sweep = [c for c in doc.select(kind="rate") if doc.boots_of(c.name)]
            if not sweep:
                return None
            flavour = sweep[0].flavour
            points = []
            for c in sweep:
                boots = doc.boots_of(c.name)
                seconds = sum(b.guest_seconds for b in boots)
                x = sum(b.arrivals_per_s * b.guest_seconds for b in boots) / seconds
                points.append(self._point(c.name, x / 1000))
        if len(points) < 2:
            return None
        fit = fit_line(points)
        fit.update(flavour=flavour, dose=which)
        return fit

    @cached_property
    def doses(self):
        """The dose fits there are, in DOSES's order."""
        return [d for d in map(self.dose, DOSES) if d]

    @cached_property
    def decomposition(self):
        """Rows of the recorded boots whose logs were read (runs)."""
        rows = []
        for c in self.doc.select(kind="recorded"):
            for b in self.doc.boots_of(c.name):
                if b.dir not in self.runs:
                    continue
                log, corr = self.runs[b.dir]
                calls = b.calls
                hit_calls, arrivals = corr.window_totals()
                if hit_calls is None:
                    # A cut flight log: only its trailer counted every window
                    # arrival, so this boot cannot say how many there were.
                    continue
                fails = b.failures_total
                logged = len(corr.failures)
                timing = poisson_ci(hit_calls)
                mech = binom_ci(min(fails, hit_calls), hit_calls) if hit_calls else None
                a = corr.arrivals
                emulated = a.func == GCC49_FUNC
                rows.append({"boot": b.dir, "condition": c.name,
                             "window": c.window, "singlestep": c.singlestep,
                             "control": is_control(c),
                             "calls": calls,
                             "window_calls": hit_calls, "window_arrivals": arrivals,
                             "timing": hit_calls / calls * PER if calls else math.nan,
                             "timing_ci": (timing[0] / calls * PER, timing[1] / calls * PER)
                             if calls else (math.nan, math.nan),
                             "failures": fails, "logged_failures": logged,
                             # The converse of attribution: what became of each
                             # window-hit call's result, by what it checksummed.
                             "window_outcomes": corr.outcomes_by_caller(),
                             # A flight log has the window calls of snapshots only.
                             "record": log.header.get("record", "all"),
                             "logged_by_kind": corr.by_kind(),
                             # Instructions of the emulated code that arrivals
                             # landed before: only block starts, unless -singlestep.
                             "gcc49_offsets": sorted({int(o) for o in a.offset[emulated]}),
                             "failures_by_kind": {k: n for k, n in b.failures.items() if n},
                             "attributed": corr.attributed(),
                             "mechanism": fails / hit_calls if hit_calls else None,
                             "mechanism_ci": mech,
                             "lost": sum(n for n in log.lost().values()
                                         if n != chkwinlog.NOT_ATTACHED)})
        return rows

    @cached_property
    def walk_totals(self):
        """(failures walked, explained, by an interrupt in a window) over the
        boots walked by replay."""
        return (sum(d["walked"] for _, d in self.walked),
                sum(d["explained"] for _, d in self.walked),
                sum(d["in_window"] for _, d in self.walked))
