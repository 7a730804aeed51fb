"""An experiment's comparisons, each decided by analysis/verdict.py with
its own spread: the emulated window against none, the positive control
(a known difference, also held to the model's ratio), and the barrier
flavours (A/A where the design has it).  A flagged aberrant boot must not
turn a decision (verdict.with_and_without), and a run the calibration
does not vouch for says so (analysis/guarantee.py)."""

import dataclasses
import math

from analysis import guarantee
from analysis import verdict
from analysis.verdict import agreement


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


def of(res):
    """The comparisons of res (experiment.Results), each with its own
    spread (res.comparison_spread): [{key, label, verdict, expect, asks, boots}],
    expect the model's ratio where the model predicts one (the positive
    control; then expect_ci, its own 95% interval from the counted
    ticks, and model, the control's ratio against it), asks the verdict
    the comparison is there for ("differs" or "equivalent"), boots each
    side's."""
    doc = res.doc
    margin = doc.settings.margin
    window = doc.settings.window
    out = []

    def pooled_over(conds, drop=frozenset()):
        return [x for c in conds for x in res.counts(c.name, drop)]

    def compare(a, b, names, cap=None):
        def on(drop):
            return verdict.compare(pooled_over(a, drop), pooled_over(b, drop), margin,
                                   names=names, spread=res.comparison_spread(a + b, drop),
                                   paired=res.paired, cap=cap)
        v = on(frozenset())
        # A decision one boot turns is no decision: where a boot is
        # aberrant, the verdict must hold without it as well.
        flagged = res.aberrant(a + b)
        if flagged:
            v = verdict.with_and_without(v, on(frozenset(f["boot"] for f in flagged)),
                                         flagged)
        why = guarantee.outside(v, res.calibrated)
        return dataclasses.replace(v, outside=why, text=f"{v.text}; {why}") if why else v

    primary = doc.select(kind="counting", window=window, singlestep=False)
    off = doc.select(kind="counting", window="off")
    if pooled_over(primary) and pooled_over(off):
        out.append({"key": "window", "label": f"{window}/off", "asks": "differs",
                    "boots": (len(pooled_over(primary)), len(pooled_over(off))),
                    "verdict": compare(primary, off, (window, "off")), "expect": None})
    predicted = {r["condition"]: r for r in res.model_rows}
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
