"""The decisions of a lab experiment (guest/lab_demo.py's experiment.json).

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
"""

import math

import numpy as np
from scipy import stats

from analysis import chkwinlog
from analysis import correlate
from analysis import documents
from analysis import model
from analysis import planning
from analysis import verdict
from analysis.poisson import binom_ci, poisson_ci, t_quantile

PER = 1e6
GCC49_FUNC = 1      # enum chkwin_func: CHKWIN_FUNC_GCC49
LIMITS = (
    "What this lab cannot show: QEMU's TCG on an x86 host is not a weakly "
    "ordered CPU.  QEMU 7.2 translates dmb oshld and dsb ld alike "
    "(translate-a64.c, handle_sync: one tcg_gen_mb, which emits nothing "
    "without parallel TCG and no fence for load-only barriers on x86), so the "
    "two barrier flavours run identical host code: patched against unpatched "
    "is an A/A test here, the negative control of the verdicts, whose expected "
    "answer is \"equivalent\".  Whether the barrier matters on a Cortex-A72 "
    "needs that CPU.  The window is an emulation of the listing; on the host "
    "clock TCG interrupts only at translation-block boundaries, so there its "
    "width counts blocks, not cycles.")


def boot_rates(doc):
    """Lines of every counting gcc49 boot, in the order they ran: round,
    slot, failures per million calls and calls per guest second (how fast
    the host let the guest run), for looking at order and host load."""
    lines = [f"{'boot':<40} {'round.slot':>10} {'failures':>8} {'per 1M calls':>12} "
             f"{'calls/s':>8}"]
    for b in doc.boots:
        c = next(c for c in doc.conditions if c.name == b.condition)
        if c.kind == "counting" and c.window == "gcc49" and not c.singlestep:
            lines.append(f"{b.dir:<40} {b.round:>7}.{b.slot:<2} "
                         f"{b.failures_total:>8} "
                         f"{b.failures_total / b.calls * PER:>12.2f} "
                         f"{b.calls / b.guest_seconds:>8.0f}")
    return lines


def is_control(c):
    """The block-boundary controls: gcc49-exact on the host clock, where
    only -singlestep lets an interrupt land in its window."""
    return c.window == "gcc49-exact" and c.clock == "host"


def _ci(lo, hi):
    return f"{lo:.3g}-{hi:.3g}"


def spread(doc):
    """The experiment's pooled boot-to-boot dispersion (verdict.Fit): the
    spread of boots about their condition's rate over every replicated
    condition, with the design's blocks as terms (blocks()).  A comparison
    uses its own conditions' spread (comparison_spread); this one serves
    where those have no degree of freedom, and plans the next run."""
    return conditions_spread(doc, [c for c in doc.conditions if c.kind in REPLICATED])


def conditions_spread(doc, conds):
    """The dispersion of the boots of conds about their own rates, within
    the design's blocks where two conditions with failures share them
    (one alone would spend a degree of freedom a block on nothing)."""
    failing = [c for c in conds if sum(k for k, _ in doc.counts(c.name))]
    if len(failing) < 2:
        return verdict.fit(*[doc.counts(c.name) for c in conds])
    return verdict.fit_blocked([doc.counts(c.name) for c in conds],
                               [blocks(doc, c.name) for c in conds])


def comparison_spread(doc, conds):
    """The spread a comparison of conds uses: their own boots', within
    blocks; the pooled one, said so, where theirs has no degree of
    freedom (one boot a condition, or no failure on one side)."""
    within = "phase-seed pairs" if _paired(doc) else "rounds"
    own = conditions_spread(doc, conds)
    if own.df:
        own.source = f"(its own boots, within {within})"
        return own
    pooled = spread(doc)
    pooled.source = (f"(pooled over every replicated condition, within {within}: its own "
                     f"boots give no degree of freedom)")
    return pooled


def condition_spreads(doc):
    """{condition: Fit} of every replicated condition with two boots and
    a failure: its boots about its own rate, no blocks (a phase seed's
    effect stays in; it is what moves a condition's level from run to run)."""
    out = {}
    for c in doc.conditions:
        if c.kind in REPLICATED:
            f = verdict.fit(doc.counts(c.name))
            if f.df:
                out[c.name] = f
    return out


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
    fit = spread(doc)
    if not fit.df:
        raise ValueError(f"{path}: no condition has two boots, so no spread to plan on")
    return fit.phi, fit.df, f"the spread of run {run_dir.resolve().name}"


def blocks(doc, name):
    """The block of each of a condition's boots: boots that share a phase
    seed are paired (the n-th boot of every condition), else a round is a
    block (rounds interleave the conditions, so whatever drifts over a
    run's time, host load among it, is shared within one)."""
    paired = _paired(doc)
    return [("seed", b.phase_seed) if paired else ("round", b.round)
            for b in doc.boots_of(name)]


def _paired(doc):
    """Whether every replicated boot has a phase seed (icount runs)."""
    kind = {c.name: c.kind for c in doc.conditions}
    return all(b.phase_seed is not None for b in doc.boots
               if kind[b.condition] in REPLICATED)


# Condition kinds whose boots are replicates: their spread is the dispersion
# (the pilot's boots only plan the A/A comparison).
REPLICATED = ("counting", "dose", "control", "aa")


def plan_line(doc):
    """The plan the run fixed before its first counting boot, and whether
    every condition got the boots it was planned."""
    s = doc.settings
    plan = s.plan
    if not plan:
        return "no plan recorded (a run from before plans were fixed in advance)"
    missing = doc.missing
    lost = {name: sum(m.condition == name for m in missing) for name in plan}
    short = [f"{name} {len(doc.boots_of(name))} of {n}" for name, n in plan.items()
             if n is not None and len(doc.boots_of(name)) + lost[name] < n]
    aa = [n for c in doc.select(kind="aa") if (n := plan.get(c.name))]
    text = (f"the plan, fixed before the first counting boot: {s.boots} boots a "
            f"counting condition" + (f", {aa[0]} a flavour for the A/A comparison"
                                     if aa else ""))
    if s.plan_comparisons:
        text += (f" (predicted from a pilot the verdicts leave out, at "
                 f"dispersion {planning.dispersion_text(**s.plan_dispersion)}: "
                 + "; ".join(planning.describe(c) for c in s.plan_comparisons) + ")")
    again = s.plan_reestimated
    if s.plan_power_range:
        first = again["before"] if again else (aa[0] if aa else 0)
        text += ("; the A/A's power if the spread is wider: "
                 + planning.describe_range(s.plan_power_range, first,
                                           s.max_aa_boots))
    if again:
        text += (f"; re-estimated blind at {again['at']} boots a flavour (the flavours "
                 f"lumped: dispersion {again['phi']:.2f}), {again['before']} -> "
                 f"{again['boots']} boots a flavour")
    if missing:
        text += (f"; {len(missing)} boot{'s' if len(missing) != 1 else ''} lost on every "
                 "attempt, missing from the verdicts: "
                 + ", ".join(f"{m.dir} ({m.attempts} attempts: {m.reason})"
                             for m in missing))
    got = [c for c in s.plan_comparisons or [] if c.get("got")]
    if got:
        text += ("; the power with the boots the run got: "
                 + "; ".join(f"{c['what']} {c['got']['power'] * 100:.0f}% at "
                             f"{c['got']['boots']} of {c['got'].get('planned', c['boots'])} boots a "
                             f"condition (planned {c['power'] * 100:.0f}% at "
                             f"{c['boots']})" for c in got))
    if short:
        return text + "; the budget cut it short: " + ", ".join(short)
    return text + ("" if missing else "; every condition got its boots")


def dispersion_line(doc):
    """The dispersion, not floored: pooled within blocks with its interval
    (near 1 when boots are independent Poisson draws, below 1 when they
    repeat one trajectory), each condition's own, and whether they are one."""
    fit = spread(doc)
    if fit.phi is None:
        return None
    phi, (lo, hi), df = fit.phi, fit.ci(), fit.df
    what = ("boots look independent (Poisson)" if lo <= 1 <= hi else
            "boots repeat one trajectory more than independent draws can (a diagnostic: "
            "intervals still use Poisson's spread)" if hi < 1 else
            "boots spread wider than Poisson")
    within = "phase-seed pairs" if _paired(doc) else "rounds"
    text = (f"boot-to-boot dispersion {phi:.2f} (95% CI {lo:.2f}-{hi:.2f}, "
            f"{df} degrees of freedom, not floored; within {within}): {what}")
    own = condition_spreads(doc)
    if own:
        text += ("; each condition about its own rate: "
                 + ", ".join(f"{name} {f.phi:.2g} ({f.df} df)" for name, f in own.items()))
        test = homogeneity(own.values())
        if test:
            stat, tdf, pval = test
            text += (f"; one dispersion for all? Bartlett chi-square {stat:.1f} on {tdf} df, "
                     f"p = {pval:.2g}: " + ("they differ, so each comparison uses its own"
                                            if pval < 0.05 else "no evidence they differ"))
    return text


# Measured against predicted: "agrees" when the 90% interval of measured /
# predicted lies inside 1/(1+M)..1+M, as the A/A comparison's equivalence.
MODEL_MARGIN = 0.10


def model_rows(doc):
    """Predicted against measured failures of every icount condition whose
    boots carry interrupt counts (analysis/model.py).  Each row's interval
    carries the condition's own spread about its rate (no blocks: a phase
    seed's effect on the level is part of what a run can read) and the
    prediction's own error, allowed for as if the ticks were a Poisson
    count (they are periodic on icount, so this overstates it; it is 0.6%
    of a 30 s boot's prediction: the spread of the failures dominates)."""
    shift = doc.settings.shift
    loop = doc.settings.loop_instructions or model.LOOP_INSNS
    own = condition_spreads(doc)
    pooled = verdict.fit(*[doc.counts(c.name) for c in doc.conditions
                           if c.kind in REPLICATED])
    rows = []
    for c in doc.conditions:
        boots = [b for b in doc.boots_of(c.name)
                 if b.interrupts and (b.clock or {}).get("kind") == "icount"]
        if not boots or c.kind in ("recorded", "rate", "pilot"):
            continue
        shift_c = boots[0].clock["shift"] if shift is None else shift
        each = [b.calls * model.per_call(c.window, c.width, b.interrupts, shift_c,
                                            loop) for b in boots]
        predicted = sum(each)
        measured = sum(b.failures_total for b in boots)
        block = blocks(doc, c.name)
        task = [(b.interrupts["task_seconds"], model.rates(b.interrupts)) for b in boots]
        seconds = sum(t for t, _ in task)
        timer = sum(b.interrupts["timer"] for b in boots)
        fit = own.get(c.name) or pooled
        ratio, ci = model.ratio_to_model(measured, predicted, fit.scale(), fit.level(0.95),
                                         1 / timer if timer else 0.0)
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


def _group_spread(group):
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
        fit = _group_spread(group)
        phi = fit.scale()
        rel = sum(r["predicted"] ** 2 / max(r["timer"], 1) for r in group) / pred ** 2
        ratio, ci95 = model.ratio_to_model(k, pred, phi, fit.level(0.95), rel)
        _, ci90 = model.ratio_to_model(k, pred, phi, fit.level(0.90), rel)
        # As verdicts: agreement is a claim about the spread too, never on 0 df.
        inside = bool(fit.df) and 1 / (1 + MODEL_MARGIN) <= ci90[0] and \
            ci90[1] <= 1 + MODEL_MARGIN
        kind = ("differs" if ci95[0] > 1 or ci95[1] < 1 else
                "agrees" if inside else "undecided")
        t = (k - pred) / math.sqrt(phi * pred + pred ** 2 * rel)
        z = float(stats.norm.isf(stats.t.sf(t, fit.df))) if fit.df else t
        chi2 += min(z * z, 1e6)
        by_w.append({"W": w, "conditions": [r["condition"] for r in group],
                     "measured": k, "predicted": pred, "ratio": ratio, "ci95": ci95,
                     "ci90": ci90, "kind": kind, "phi": phi, "df": fit.df})
    return {"chi2": chi2, "df": len(by_w), "p": float(stats.chi2.sf(chi2, len(by_w))),
            "by_w": by_w}


def model_table(rows):
    out = [["condition", "fatal boundaries W", "shift (ns a insn)",
            "lambda: timer / device irqs per task s", "checksum calls",
            "predicted failures", "measured", "measured / predicted (95% CI)"]]
    for r in rows:
        ratio = "-" if r["window"] == "off" else \
            f"{r['ratio']:.2f} ({_ci(*r['ratio_ci'])})"
        out.append([r["condition"], str(r["W"]),
                    f"{r['shift']} ({2 ** r['shift']})",
                    f"{r['timer_per_s']:.0f} / {r['device_per_s']:.0f}", f"{r['calls']:,}",
                    f"{r['predicted']:.1f}", str(r["measured"]), ratio])
    return out


def hardware_table(doc):
    """The model extrapolated to a Cortex-A72 (model.HARDWARE), with the
    failures a flavour that this experiment's A/A plan would need."""
    s = doc.settings
    need = verdict.aa_failures(s.margin, s.power)
    out = [["load (assumed checksum calls/s)", "interrupts/s", "mean time between failures",
            f"time to {need:,} failures (+-{s.margin * 100:.0f}% at "
            f"{s.power * 100:.0f}% power)"]]
    for what, lam, mtbf, decide in model.hardware_rows(need):
        out.append([what, str(lam), model.duration(mtbf), model.duration(decide)])
    return out


def model_line(rows):
    """How the model did over every windowed condition: its goodness of
    fit, and measured / predicted by W against 1 within MODEL_MARGIN."""
    check = model_fit(rows)
    if check is None:
        return None
    band = f"+-{MODEL_MARGIN * 100:.0f}%"
    words = {"differs": "differs from the model",
             "agrees": f"agrees within {band}", "undecided": f"undecided within {band}"}
    per_w = "; ".join(
        f"W = {g['W']} ({', '.join(g['conditions'])}): {g['measured']} against "
        f"{g['predicted']:.1f}, measured/predicted {g['ratio']:.3g} (95% CI "
        f"{_ci(*g['ci95'])}, 90% {_ci(*g['ci90'])}; dispersion {g['phi']:.2g} on "
        f"{g['df']} df): {words[g['kind']]}"
        for g in check["by_w"])
    fit = "fits" if check["p"] >= 0.05 else "does NOT fit"
    return (f"the model (W x lambda x 2^N ns a call, predicted before the boots) {fit}: "
            f"chi-square {check['chi2']:.1f} on {check['df']} df (one a W), p = "
            f"{check['p']:.2g}, each with its own spread and the prediction's error; {per_w}")


def conditions(doc):
    """One row per condition in the experiment's order; intervals with the
    condition's own dispersion, the pooled one where it has none."""
    rows = []
    pooled, own = spread(doc), condition_spreads(doc)
    for c in doc.conditions:
        boots = doc.boots_of(c.name)
        r = verdict.rate(doc.counts(c.name), spread=own.get(c.name, pooled))
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


def condition_table(rows):
    out = [["condition", "boots", "failures (per boot)", "by kind", "checksum calls",
            "per 1M calls (95% CI)", "per guest minute"]]
    for r in rows:
        if not r["boots"]:
            out.append([r["condition"], "0", "-", "-", "-", "-", "-"])
            continue
        out.append([r["condition"], str(r["boots"]),
                    f"{r['failures']} ({' '.join(map(str, r['per_boot']))})",
                    ", ".join(f"{k} {n}" for k, n in sorted(r["by_kind"].items()))
                    or "-", f"{r['calls']:,}",
                    f"{r['per_million']:.3g} ({_ci(*r['ci'])})",
                    f"{r['per_minute']:.3g}"])
    return out


def recorded(doc, runs):
    """Decomposition rows of the recorded boots: runs maps a boot's
    directory name to its (log, correlation)."""
    rows = []
    for c in doc.select(kind="recorded"):
        for b in doc.boots_of(c.name):
            if b.dir not in runs:
                continue
            log, corr = runs[b.dir]
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


def recorded_table(rows):
    out = [["boot", "checksum calls", "calls with a window arrival per 1M (95% CI)",
            "failures (console)", "failures per window call (95% CI)",
            "window calls by caller: failed / matched / not verified",
            "console failures by kind",
            "log failures by kind: after a window irq / all", "lost records"]]
    for r in rows:
        mech = "-" if r["mechanism"] is None else \
            f"{r['mechanism']:.2f} ({_ci(*r['mechanism_ci'])})"
        out.append([r["boot"], f"{r['calls']:,}",
                    f"{r['timing']:.3g} ({_ci(*r['timing_ci'])}), {r['window_calls']} calls",
                    str(r["failures"]), mech,
                    (", ".join(f"{k} {o['failed']}/{o['matched']}/{o['not verified']}"
                               for k, o in sorted(r["window_outcomes"].items())) or "-")
                    + (" (in snapshots)" if r.get("record") == "failures" else ""),
                    ", ".join(f"{k} {n}" for k, n in sorted(r["failures_by_kind"].items()))
                    or "-",
                    ", ".join(f"{k} {a}/{n}" for k, (n, a) in sorted(r["logged_by_kind"].items()))
                    or "-", str(r["lost"])])
    return out


def _fit_line(points):
    """Weighted least squares y = intercept + slope * x over points (x, y,
    var, k, n), weights from each point's variance.  With more than two
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
                        "calls": p[4], "residual": float(r)}
                       for p, r in zip(points, resid)],
            "slope": slope, "slope_ci": (slope - q * se_slope, slope + q * se_slope),
            "intercept": intercept,
            "intercept_ci": (intercept - q * se_icpt, intercept + q * se_icpt),
            "r2": r2, "scale": scale, "df": df}


def _point(doc, name, x, phi):
    """(x, failures per 1M calls, its variance, failures, calls) of a
    condition's pooled boots."""
    k, n = verdict.pooled(doc.counts(name))
    return (x, k / n * PER, phi * max(k, 1) / n ** 2 * PER ** 2, k, n)


# The two doses: what each point's x is and how the report names it.
DOSES = {
    "width": {"label": "window width (translation blocks, ext4.chksum_window_width)",
              "unit": "block", "what": "the window width"},
    "rate": {"label": "interrupt arrivals per second under the loader (irqs + sampler)",
             "unit": "1000 arrivals/s", "what": "the interrupt rate"},
}


def dose(doc, which="width"):
    """Failures per million calls against a dose on the sweep's flavour,
    a weighted line with an intercept (_fit_line: a fit forced through 0
    would put whatever does not scale with the dose into the slope):
    "width" the window width of the untraced counting and dose boots,
    "rate" the measured interrupt rate of the rate boots (in thousands per
    second).  None without two points."""
    phi = spread(doc).scale()
    if which == "width":
        sweep = doc.select(kind="dose")
        if not sweep:
            return None
        flavour = sweep[0].flavour
        points = [_point(doc, c.name, c.width, phi)
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
            points.append(_point(doc, c.name, x / 1000, phi))
    if len(points) < 2:
        return None
    fit = _fit_line(points)
    fit.update(flavour=flavour, dose=which)
    return fit


def dose_plot(d, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    how = DOSES[d["dose"]]
    fig, (ax, rax) = plt.subplots(2, 1, figsize=(7, 6), dpi=100, sharex=True,
                                  height_ratios=(3, 1), layout="constrained")
    xs = [p["x"] for p in d["points"]]
    ys = [p["per_million"] for p in d["points"]]
    err = []
    for p in d["points"]:
        lo, hi = poisson_ci(p["failures"])
        err.append((p["per_million"] - lo / p["calls"] * PER,
                    hi / p["calls"] * PER - p["per_million"]))
    ax.errorbar(xs, ys, yerr=np.array(err).T, fmt="o", capsize=3,
                label="failures per 1M calls (Poisson 95% CI)")
    grid = np.linspace(0, max(xs) * 1.05, 50)
    ax.plot(grid, d["intercept"] + d["slope"] * grid, "-",
            label=f"weighted fit: slope {d['slope']:.3g} per {how['unit']}, intercept "
                  f"{d['intercept']:.3g}, R^2 {d['r2']:.2f}")
    ax.set_ylabel("failures per 1M checksum calls")
    ax.set_title(f"Dose-response: {how['what']} ({d['flavour']}, gcc49)")
    ax.legend(fontsize=8)
    rax.axhline(0, color="grey", lw=0.8)
    rax.plot(xs, [p["residual"] for p in d["points"]], "o")
    rax.set_xlabel(how["label"] + (" / 1000" if d["dose"] == "rate" else ""))
    rax.set_ylabel("residual")
    fig.savefig(path)
    plt.close(fig)


def dose_line(d):
    """The verdict line of one dose-response fit: a trend only where the
    slope's 95% interval excludes 0."""
    how = DOSES[d["dose"]]
    lo, hi = d["slope_ci"]
    sign = "rises with" if lo > 0 else ("falls with" if hi < 0 else
                                        "shows no decided trend against")
    ilo, ihi = d["intercept_ci"]
    return (f"failures per 1M calls {sign} {how['what']}: slope {d['slope']:.3g} per "
            f"{how['unit']} (95% CI {lo:.3g}-{hi:.3g}), intercept {d['intercept']:.3g} "
            f"({ilo:.3g}-{ihi:.3g}), R^2 {d['r2']:.2f}, {len(d['points'])} points, "
            f"{'t on ' + str(d['df']) + ' df' if d['df'] > 0 else 'two points: no scatter to see'}")


def comparisons(doc, rows):
    """The experiment's comparisons, each with its own spread
    (comparison_spread): [{key, label, verdict, expect}], expect the
    model's ratio where the model predicts one (the positive control),
    from rows, the experiment's model_rows."""
    margin = doc.settings.margin
    window = doc.settings.window
    out = []

    def pooled_over(conds):
        return [x for c in conds for x in doc.counts(c.name)]

    def compare(a, b, names):
        return verdict.compare(pooled_over(a), pooled_over(b), margin, names=names,
                               spread=comparison_spread(doc, a + b))

    primary = doc.select(kind="counting", window=window, singlestep=False)
    off = doc.select(kind="counting", window="off")
    if pooled_over(primary) and pooled_over(off):
        out.append({"key": "window", "label": f"{window}/off",
                    "verdict": compare(primary, off, (window, "off")), "expect": None})
    predicted = {r["condition"]: r for r in rows}
    for c in doc.select(kind="control"):
        ref = next((p for p in primary if p.flavour == c.flavour), None)
        if not (ref and pooled_over([c]) and pooled_over([ref])):
            continue
        pa, pb = predicted.get(c.name), predicted.get(ref.name)
        want = (pa["predicted"] / pa["calls"]) / (pb["predicted"] / pb["calls"]) \
            if pa and pb and pb["predicted"] > 0 else None
        out.append({"key": "control", "label": f"width {c.width}/{window}",
                    "verdict": compare([c], [ref], (f"width {c.width}", window)),
                    "expect": want})
    aa = doc.select(kind="aa")
    flav = aa if len(aa) == 2 else primary
    if len(flav) == 2:
        first, second = flav
        if pooled_over([second]) and pooled_over([first]):
            names = (second.flavour, first.flavour)
            out.append({"key": "flavour", "label": "/".join(names) +
                        (f" at width {first.width}" if aa else ""), "aa": bool(aa),
                        "width": first.width,
                        "verdict": compare([second], [first], names), "expect": None})
    return out


def decisions(doc, rec, doses):
    """The verdict lines, most important first; doses are dose() fits."""
    window = doc.settings.window
    out = []
    rows = model_rows(doc)
    for c in comparisons(doc, rows):
        v = c["verdict"]
        if c["key"] == "window":
            out.append(("window", f"the emulated window and the failures: {v.text}"))
        elif c["key"] == "control":
            expect = ""
            if c["expect"] is not None:
                inside = v.ci95[0] <= c["expect"] <= v.ci95[1]
                expect = (f"; the model predicts {c['expect']:.2f}, "
                          f"{'inside' if inside else 'OUTSIDE'} the 95% interval")
            out.append(("control", f"positive control (a known difference: the loop of "
                                   f"{c['label'].split('/')[0]} against the listing's window): "
                                   f"{v.text}{expect}"))
        else:
            where = (f" (A/A here, at loop width {c['width']}: QEMU translates "
                     f"both barriers alike, so \"equivalent\" is the expected "
                     f"answer)" if c["aa"] else "")
            out.append(("flavour", f"the barrier flavour and the failure rate{where}: "
                                   f"{v.text}"))
    line = model_line(rows)
    if line:
        out.append(("model", line))
    line = dispersion_line(doc)
    if line:
        out.append(("dispersion", line))
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
        out.append(("attribution", f"{att} of {logged} checksum failures"
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
        out.append((f"exact-{'singlestep' if r['singlestep'] else 'tcg'}",
                    f"gcc49-exact under {how}: {r['window_arrivals']} window arrivals "
                    f"({r['window_calls']} calls with one) and {r['failures']} failures "
                    f"in {r['calls']:,} calls; arrivals before "
                    f"{len(r['gcc49_offsets'])} distinct instructions of the emulated "
                    f"code ({expect}{'' if ok else ': NOT what the mechanism predicts'})"))
    for fit in doses:
        out.append(("dose" if fit["dose"] == "width" else "rate-dose", dose_line(fit)))
    return out
