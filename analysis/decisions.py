"""An experiment's verdicts, worded: one Verdict a line, most important
first, from the statistics of its record (analysis/experiment.py's
Results).  `chkwin-analyze report` prints them and the report leads with
them; the demo (guest/lab_demo.py) prints them at its end."""

import math
from typing import NamedTuple

from analysis import correlate
from analysis.doses import DOSES
from analysis.verdict import MODEL_MARGIN
from analysis.verdict import interval


class Verdict(NamedTuple):
    """key says what a line decides: window, control, flavour, model,
    dispersion, attribution, exact-singlestep, exact-tcg, dose, rate-dose."""
    key: str
    text: str


def verdicts(res):
    """The Verdicts of a Results."""
    window = res.doc.settings.window
    out = []
    for c in res.comparisons:
        v = c["verdict"]
        if c["key"] == "window":
            out.append(Verdict("window", f"the emulated window and the failures: {v.text}"))
        elif c["key"] == "control":
            expect = ""
            if c["model"]:
                m = c["model"]
                expect = (f"; the model predicts {c['expect']:.2f}: measured/predicted "
                          f"{m['ratio']:.3g} (90% CI {interval(*m['ci90'])}, 95% CI "
                          f"{interval(*m['ci95'])}): {model_words(m)}")
                if m.get("without"):
                    w = m["without"]
                    expect += (f" (without the flagged boot {w['ratio']:.3g}, 90% CI "
                               f"{interval(*w['ci90'])}: {model_words(w)}; the check must "
                               f"hold both ways)")
            out.append(Verdict("control", f"positive control (a known difference: the loop of "
                                          f"{c['label'].split('/')[0]} against the listing's "
                                          f"window): {v.text}{expect}"))
        else:
            where = (f" (A/A here, at loop width {c['width']}: QEMU translates "
                     f"both barriers alike, so \"equivalent\" is the expected "
                     f"answer)" if c["aa"] else "")
            out.append(Verdict("flavour", f"the barrier flavour and the failure rate{where}: "
                                          f"{v.text}"))
    if res.model_check:
        out.append(Verdict("model", model_line(res.model_check)))
    if res.spread.phi is not None:
        out.append(Verdict("dispersion", dispersion_line(res)))
    rec = res.decomposition
    win = [r for r in rec if not r["control"]]
    if win:
        att = sum(r["attributed"] for r in win)
        logged = sum(r["logged_failures"] for r in win)
        share = f" ({100 * att / logged:.0f}%)" if logged else ""
        kinds = {}
        for r in win:
            for k, (n, _) in r["logged_by_kind"].items():
                kinds[k] = kinds.get(k, 0) + n
        what = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
        fates = {o: sum(c[o] for r in win for c in r["window_outcomes"].values())
                 for o in correlate.OUTCOMES}
        out.append(Verdict("attribution",
                           f"{att} of {logged} checksum failures"
                           f"{f' ({what})' if what else ''} in the recorded "
                           f"{window} boots follow an interrupt in the window{share}; "
                           f"of the calls with a window arrival {fates['failed']} "
                           f"failed, {fates['matched']} still matched and "
                           f"{fates['not verified']} were never verified"))
    for r in (r for r in rec if r["control"]):
        how = "-singlestep (one instruction a block)" if r["singlestep"] else \
            "multi-threaded TCG"
        expect = ("every instruction can be interrupted, as on hardware"
                  if r["singlestep"] else "no block starts in its window")
        # Both halves of the mechanism: arrivals in the window, and the
        # failures they cause (under the emulation every one clobbers).
        ok = ((r["window_arrivals"] > 0 and r["failures"] > 0) if r["singlestep"]
              else (r["window_arrivals"] == 0 and r["failures"] == 0))
        out.append(Verdict(f"exact-{'singlestep' if r['singlestep'] else 'tcg'}",
                           f"gcc49-exact under {how}: {r['window_arrivals']} window arrivals "
                           f"({r['window_calls']} calls with one) and {r['failures']} failures "
                           f"in {r['calls']:,} calls; arrivals before "
                           f"{len(r['gcc49_offsets'])} distinct instructions of the emulated "
                           f"code ({expect}{'' if ok else ': NOT what the mechanism predicts'})"))
    for fit in res.doses:
        out.append(Verdict("dose" if fit["dose"] == "width" else "rate-dose", dose_line(fit)))
    return out


# How a check against the model (verdict.agreement) reads.
MODEL_WORDS = {"differs": "disagrees with the model",
               "agrees": f"agrees within +-{MODEL_MARGIN * 100:.0f}%",
               "undecided": f"undecided within +-{MODEL_MARGIN * 100:.0f}%"}


def model_words(check):
    """How one check against the model reads (a model_fit group or the
    control's), "disagrees" said to be by less than the margin where its
    90% interval lies inside it, as verdict.compare says "differs"."""
    words = MODEL_WORDS[check["kind"]]
    if check["kind"] == "differs" and check.get("within_margin"):
        words += f", by less than +-{MODEL_MARGIN * 100:.0f}%"
    return words


def model_line(check):
    """How the model did over every windowed condition (experiment.model_fit):
    its goodness of fit, and measured / predicted by W against 1 within
    MODEL_MARGIN."""
    per_w = "; ".join(
        f"W = {g['W']} ({', '.join(g['conditions'])}): {g['measured']} against "
        f"{g['predicted']:.1f}, measured/predicted {g['ratio']:.3g} (95% CI "
        f"{interval(*g['ci95'])}, 90% {interval(*g['ci90'])}; dispersion {g['phi']:.2g} on "
        f"{g['df']} df): {model_words(g)}"
        for g in check["by_w"])
    fit = "fits" if check["p"] >= 0.05 else "does NOT fit"
    return (f"the model (W x lambda x 2^N ns a call, predicted before the boots) {fit}: "
            f"chi-square {check['chi2']:.1f} on {check['df']} df (one a W), p = "
            f"{check['p']:.2g}, each with its own spread and the prediction's error; {per_w}")


def dispersion_line(res):
    """The dispersion, not floored: pooled within blocks with its interval
    (near 1 when boots are independent Poisson draws, below 1 when they
    repeat one trajectory), each condition's own, and whether they are one."""
    fit = res.spread
    phi, (lo, hi), df = fit.phi, fit.ci(), fit.df
    what = ("boots look independent (Poisson)" if lo <= 1 <= hi else
            "boots repeat one trajectory more than independent draws can (a diagnostic: "
            "intervals still use Poisson's spread)" if hi < 1 else
            "boots spread wider than Poisson")
    text = (f"boot-to-boot dispersion {phi:.2f} (95% CI {lo:.2f}-{hi:.2f}, "
            f"{df} degrees of freedom, not floored; within {res.within}): {what}")
    own = res.condition_spreads
    if own:
        text += ("; each condition about its own rate: "
                 + ", ".join(f"{name} {f.phi:.2g} ({f.df} df)" for name, f in own.items()))
        if res.homogeneity:
            stat, tdf, pval = res.homogeneity
            text += (f"; one dispersion for all? Bartlett chi-square {stat:.1f} on {tdf} df, "
                     f"p = {pval:.2g}: " + ("they differ, so each comparison uses its own"
                                            if pval < 0.05 else "no evidence they differ"))
    return text


def dose_line(d):
    """The verdict line of one dose-response fit: a trend only where the
    slope's 95% interval excludes 0."""
    how = DOSES[d["dose"]]
    lo, hi = d["slope_ci"]
    sign = "rises with" if lo > 0 else ("falls with" if hi < 0 else
                                        "shows no decided trend against")
    ilo, ihi = d["intercept_ci"]
    return (f"failures per 1M calls {sign} {how['what']}: slope {d['slope']:.3g} per "
            f"{how['unit']} (95% CI {interval(lo, hi)}), intercept {d['intercept']:.3g} "
            f"({interval(ilo, ihi)}), R^2 {d['r2']:.2f}, {len(d['points'])} points, "
            f"{'t on ' + str(d['df']) + ' df' if d['df'] > 0 else 'two points: no scatter to see'}")


def _number(x):
    """A float for JSON: null where it is unbounded or undefined."""
    return x if x is not None and math.isfinite(x) else None


def _verdict_json(v):
    return {"kind": v.kind, "ratio": _number(v.ratio),
            "ci95": [_number(x) for x in v.ci95], "ci90": [_number(x) for x in v.ci90],
            "dispersion": v.phi, "df": v.df, "within_margin": v.within_margin,
            "more_boots": v.more}


def as_json(res):
    """The comparisons' verdicts as verdicts.json has them (null: unbounded):
    each with its key, label, kind, ratio and intervals, the text the
    report prints, the boots flagged as aberrant and, where there are any,
    the verdict without them (the kind is a decision only where both
    reach it: verdict.with_and_without), and why the calibration does not
    vouch for it (analysis/guarantee.py; null where it does)."""
    out = []
    for c in res.comparisons:
        v = c["verdict"]
        out.append({"key": c["key"], "label": c["label"], **_verdict_json(v),
                    "text": v.text,
                    "flagged": [dict(f, expected=round(f["expected"], 3),
                                     residual=round(f["residual"], 3),
                                     threshold=round(f["threshold"], 3)) for f in v.flagged],
                    "without_flagged": _verdict_json(v.without) if v.without else None,
                    "outside_guarantee": v.outside})
    return {"margin": res.doc.settings.margin, "comparisons": out}
