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

from analysis import comparisons
from analysis import documents
from analysis import doses
from analysis import guarantee
from analysis import model
from analysis import recorded
from analysis import verdict
from analysis.design import PER, REPLICATED
from analysis.verdict import agreement


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
        """The experiment's comparisons (analysis/comparisons.py)."""
        return comparisons.of(self)


    def dose(self, which):
        """The dose fit of which (doses.DOSES), None without two points."""
        return doses.fit(self, which)

    @cached_property
    def doses(self):
        """The dose fits there are, in doses.DOSES's order."""
        return [d for d in map(self.dose, doses.DOSES) if d]

    @cached_property
    def decomposition(self):
        """Rows of the recorded boots whose logs were read (recorded.rows)."""
        return recorded.rows(self)

    @cached_property
    def walk_totals(self):
        """(failures walked, explained, by an interrupt in a window) over the
        boots walked by replay."""
        return (sum(d["walked"] for _, d in self.walked),
                sum(d["explained"] for _, d in self.walked),
                sum(d["in_window"] for _, d in self.walked))
