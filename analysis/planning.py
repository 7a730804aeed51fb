"""The plan of an icount experiment, fixed before its first counting boot:
what each comparison should show, and with what power at the boots it gets.

A pilot of PILOT_BOOTS boots a flavour (the A/A settings, phase seeds of
its own, left out of the verdicts) gives failures a boot at the A/A width
and a first spread: about a rate per flavour (lumping the flavours read a
real difference between them as spread and planned more boots for it),
on 2 degrees of freedom (plan_aa says why not within pairs).  The A/A
boots are planned on a bound of that
dispersion (PLAN_CONF, its median bound: a pilot of four boots cannot
tell 1 from 5, and a high bound oversizes every plan; pooled with a
previous run's spread where --plan-from names one; never below Poisson).
Once both flavours have half their planned boots, the boots are
re-estimated once, on the spread about a rate per flavour within
phase-seed pairs (within_pairs: the verdict's own, with a real difference
between the flavours not read as spread; only the dispersion is read, not
the ratio), and the A/A runs to the new figure where it is more (never
fewer than planned, never above the cap).  The
A/A's power is that of "equivalent" itself, which excludes "differs":
at a true ratio of 1 it approaches 95% as the df grow once the spread is
above Poisson's (the 95% interval excludes 1 one time in twenty), so 95%
can take unbounded boots; the plan aims at 90% (calibration.PLAN_POWER).
The model (model.py) predicts every other condition's failures a boot
from the pilot's calls and interrupts.

Boots come from the normal approximation averaged over the dispersion
estimate's own distribution (verdict.boots_for_power); the power a plan
prints is simulated with the verdict's intervals and decision on paired
boots (calibration.power), but not with its rule that a decision hold
without a flagged boot as well: verdict.aberrant flags one of a run's
clean boots about 5% of the time, and then "equivalent" must hold twice,
so the power printed can be a few points above the run's.  It is shown
at the planned dispersion and over DISPERSIONS, so a reader sees what a
wider spread would leave of it; and, where the run's budget admits fewer
boots than planned, at the boots it admits (budget_boots).
"""

import math

from scipy import stats

from analysis import model
from analysis import verdict

PILOT_BOOTS = 2
# The one-sided confidence of the dispersion bound the A/A is planned on:
# the estimate's median bound.  A pilot's one or few df make any higher
# bound several times the estimate, which oversizes every plan, while a
# plan that reads the spread low is made up at the look, which only adds
# boots (what this gives: bench/RESULTS.md, "Calibration of the verdicts",
# its plan rows).
PLAN_CONF = 0.50
# Dispersions the plan's power is shown at.
DISPERSIONS = (1, 2, 5, 7, 10)


def dispersion_text(phi, df, source, estimate=None, conf=None):
    """The dispersion a plan is made at, and where it comes from."""
    if conf is not None and estimate is None:
        return f"1 ({source} gave no spread to bound: no failures, or one boot; Poisson assumed)"
    if conf is not None:
        return (f"{phi:.2f}, the {conf * 100:.0f}% upper bound of {estimate:.2f} on {df} df "
                f"({source}; never below 1)")
    if source is None:
        return "1, assumed (Poisson boots; --plan-from names a previous run to plan on its spread)"
    if phi < 1:
        return f"1, at least Poisson ({source} {phi:.2f} on {df} df)"
    return f"{phi:.2f} ({source}, on {df} df)"


def combine(*fits):
    """One Fit from several independent ones: chi-squares and df summed."""
    fits = [f for f in fits if f is not None and f.df]
    chi2, df = sum(f.chi2 for f in fits), sum(f.df for f in fits)
    return verdict.Fit(chi2 / df if df else None, chi2, df)


def upper_dispersion(fit, conf=PLAN_CONF):
    """The one-sided conf upper bound of phi (X / phi ~ chi-square(df)),
    floored at 1; 1 when nothing estimates it."""
    if not fit.df:
        return 1.0
    return max(1.0, fit.chi2 / float(stats.chi2.ppf(1 - conf, fit.df)))


def aa_boots(per_boot, phi, margin, power, cap):
    """The A/A boots a flavour at failures per_boot a boot and dispersion
    phi, paired: the fewest with power to say "equivalent" at a true ratio
    of 1, capped."""
    need = needed(per_boot, max(phi, 1.0), margin, power)
    return cap if need is None else min(cap, need)


def needed(per_boot, phi, margin, power):
    """Boots a flavour the A/A would need at dispersion phi, uncapped;
    None beyond a million."""
    need = verdict.boots_for_power(per_boot, per_boot, phi, 0.0, margin, power, paired=True,
                                   want="equivalent")
    return need[0] if need else None


def within_pairs(a, b, blocks_a, blocks_b):
    """The spread of the A/A boots so far about a rate per flavour, within
    phase-seed pairs: the spread the verdict will use, with a real
    difference between the flavours taken out rather than read as spread
    (lumping the flavours into one rate did that, and sent a run at a true
    ratio of 1.25 to the cap every time).  Only the dispersion is read: in
    the log-linear model the residual spread is orthogonal to the ratio,
    so sizing on it (an internal pilot, Wittes and Brittain's) tells the
    look nothing of the ratio the verdict will test."""
    return verdict.fit_blocked([a, b], [blocks_a, blocks_b])


def reestimate(per_boot, fit, margin, power, cap, planned):
    """The A/A boots a flavour after the look: at the point estimate of the
    look's own dispersion (within phase-seed pairs, as the verdict will
    estimate it; the pilot's, without pairs, is another quantity), no
    fewer than planned (a look that could shorten the run would stop it
    when its spread happened to read low, and the final intervals, which
    still hold those boots, would be too narrow: simulated, 7.6% false
    "differs" where 5% is the goal), no more than cap."""
    phi = fit.scale()
    return max(planned, aa_boots(per_boot, phi, margin, power, cap)), phi


def plan_aa(pilots, prior, margin, power, cap):
    """(plan, pilot's Fit): the A/A boots a flavour from the pilot's boots,
    pilots a list [(failures, calls)] a flavour, and prior (a previous
    run's Fit, or None).  The spread is about a rate per flavour, so a real
    difference between the flavours is not read as spread (lumped, it was,
    and planned boots for it).  Not within the pilot's phase-seed pairs as
    the look takes it: two pairs a flavour would spend half the four boots'
    degrees of freedom on the seeds, and a bound on the one left sent more
    than a quarter of the plans at dispersion 3 to the cap (simulated); a
    seed's shared effect read as spread only makes the plan longer, never
    the verdict's intervals narrower.  plan holds the boots, the dispersion
    bound they are planned on and its estimate."""
    fit = verdict.fit(*pilots)
    both = combine(fit, prior)
    phi = upper_dispersion(both)
    every = [x for p in pilots for x in p]
    per_boot = sum(k for k, _ in every) / len(every)
    return {"boots": aa_boots(per_boot, phi, margin, power, cap), "phi": phi,
            "df": both.df, "estimate": both.phi, "conf": PLAN_CONF,
            "per_boot": per_boot}, fit


def budget_boots(seconds_left, jobs, other_seconds, round_seconds):
    """A/A boots a flavour a budget admits: its seconds left, jobs at once,
    less the wall seconds the rest of the plan takes, over a round of the
    A/A (a boot of each flavour); never below 0."""
    if round_seconds <= 0:
        return None
    return max(0, int((seconds_left * jobs - other_seconds) // round_seconds))


def midpoint(planned):
    """A/A boots a flavour at which the look comes."""
    return math.ceil(planned / 2)


def look(a, b, blocks_a, blocks_b, margin, power, cap, planned, now=False):
    """The look, once both flavours' A/A boots a and b (with their blocks)
    reach midpoint(planned), or with now at what they have (the midpoint's
    boots were run, some lost): {at, phi, df, per_boot, before, boots,
    aberrant}; None before then, or with fewer than two boots a flavour.
    Boots verdict.aberrant flags are left out (aberrant: how many): the
    verdict is decided without them as well, and one wild boot read as
    spread sent the plan to the cap."""
    done = min(len(a), len(b))
    if done < midpoint(planned) and not (now and done >= 2):
        return None
    a, b, blocks_a, blocks_b = a[:done], b[:done], blocks_a[:done], blocks_b[:done]
    flagged = {(x.condition, x.boot) for x in verdict.aberrant([a, b], [blocks_a, blocks_b])}

    def kept(side, items):
        return [x for i, x in enumerate(items) if (side, i) not in flagged]
    fit = within_pairs(kept(0, a), kept(1, b), kept(0, blocks_a), kept(1, blocks_b))
    lumped = kept(0, a) + kept(1, b)
    per_boot = sum(k for k, _ in lumped) / len(lumped)
    boots, phi = reestimate(per_boot, fit, margin, power, cap, planned)
    return {"at": done, "phi": phi, "df": fit.df, "per_boot": per_boot, "before": planned,
            "boots": boots, "aberrant": len(flagged)}


def predicted_per_boot(cond, pilot_boots, shift, loop_insns):
    """Failures a boot of cond, by the model, from the pilot's calls and
    interrupt counts (averaged over its boots)."""
    return sum(b.calls * model.per_call(cond.window, cond.width, b.interrupts,
                                        shift, loop_insns)
               for b in pilot_boots) / len(pilot_boots)


def describe(comparison):
    """One comparison of the plan as the demo prints it."""
    c = comparison
    means = " against ".join(f"{m:.3g}" for m in c["per_boot"])
    ratio = f", ratio {c['ratio']:.3g}" if c["ratio"] is not None and \
        math.isfinite(c["ratio"]) else ""
    budget = c.get("budget")
    short = (f"; the budget admits about {budget['boots']} a condition: "
             f"{budget['power'] * 100:.0f}% power there" if budget else "")
    return (f"{c['what']}: {c['boots']} boots a condition, {means} failures a boot "
            f"({c['source']}{ratio}), {c['power'] * 100:.1f}% power to find it "
            f"\"{c['verdict']}\"{short}")


def describe_range(rows, boots, cap):
    """The A/A plan's power over DISPERSIONS, and what a wider spread needs."""
    parts = []
    for r in rows:
        need = "over a million" if r["needed"] is None else str(r["needed"])
        parts.append(f"dispersion {r['phi']:g}: {r['power'] * 100:.0f}% power at {boots}, "
                     f"{need} boots a flavour needed")
    wide = [r for r in rows if r["needed"] is None or r["needed"] > cap]
    tail = (f"; beyond {cap} (--max-aa-boots) the run stops at the cap and its A/A verdict "
            f"says how many more boots it would need" if wide else "")
    return "; ".join(parts) + tail
