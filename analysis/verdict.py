"""Rates from replicated boots, and comparisons that end in a decision.

The boot is the unit.  A condition is a list of boots, each (failures,
exposure); exposure is checksum calls (or guest seconds).  The model is a
quasi-Poisson one with a rate per condition and the exposure as offset:
each condition's rate is its pooled failures over its pooled exposure, and
the dispersion phi is Pearson's chi-square of every boot about its
condition's rate over the residual degrees of freedom (boots less
conditions; a condition without a failure carries no spread).  Where the
design has blocks (boots paired by phase seed, or rounds), fit_blocked
adds a term per block, and the spread is what is left within blocks.

Intervals are never narrower than Poisson's: rare failures over a fixed
number of timer ticks cannot spread much less than Poisson allows (about
1 - p a call), so an estimate below 1 says the boots repeat one
trajectory, a diagnostic (Fit.below_poisson), not extra precision; the
interval uses phi floored at 1.  The estimate's own uncertainty is carried
by Student's t on its degrees of freedom: an interval is the exact one
(Garwood, or the conditional binomial of a ratio) on counts divided by
phi, at the normal level whose quantile is the t quantile, so a handful of
boots widens it and many boots converge to the plain exact interval.
With no residual degree of freedom (one boot a condition) the spread
cannot be estimated: Poisson is assumed, the verdict says so, and it
cannot be "equivalent" (nothing shows the boots are not wider than that).

A comparison of two conditions ends in exactly one of three verdicts:
  differs      the 95% interval of the rate ratio excludes 1 (and, when
               the 90% interval also lies inside the margin, "by less than
               the margin");
  equivalent   the 90% interval lies inside the margin, 1/(1+M)..(1+M)
               (two one-sided tests at 5%, symmetric for either order);
  undecided    neither, with how many more boots a condition would give
               80% power to decide, at the observed rates and ratio.
An interval that contains 1 never reads as "no effect" by itself.
"""

import dataclasses
import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from analysis.poisson import chi2_quantile, normal_quantile, poisson_ci, rate_ratio, t_quantile

Z95 = normal_quantile(0.975)
# The dispersion intervals use: never below Poisson's (module docstring).
PHI_FLOOR = 1.0
# The power "undecided" quotes boots for.
POWER = 0.80


def aa_failures(margin, power, phi=1.0, alpha=0.05):
    """Failures a condition needs so that, at a true ratio of 1 and
    dispersion phi, the 90% interval of the ratio of two such conditions
    lies inside 1/(1+margin)..(1+margin) with probability power (two
    one-sided tests at alpha; the log ratio's variance is phi (1/k + 1/k))."""
    z = normal_quantile(1 - alpha) + normal_quantile(1 - (1 - power) / 2)
    return math.ceil(2 * phi * (z / math.log1p(margin)) ** 2)


def pooled(boots):
    """(failures, exposure) summed over the boots."""
    return sum(k for k, _ in boots), sum(n for _, n in boots)


@dataclass
class Fit:
    """The dispersion of a set of conditions: phi (None when df is 0),
    Pearson's chi-square, its residual degrees of freedom, and where it
    comes from when that is not the compared conditions' own boots."""
    phi: float
    chi2: float
    df: int
    source: str = ""

    def scale(self):
        """phi as intervals use it: floored at Poisson's 1, and 1 when it
        cannot be estimated."""
        return 1.0 if self.phi is None else max(self.phi, PHI_FLOOR)

    def below_poisson(self, conf=0.95):
        """Whether the whole interval of phi lies below 1: boots that
        repeat one trajectory more than independent draws can."""
        return bool(self.df) and self.ci(conf)[1] < 1

    def describe(self):
        """The spread as a verdict states it."""
        if not self.df:
            return ""
        est = (f"dispersion {self.scale():.2g} (estimate {self.phi:.3g}, below Poisson"
               f"{': boots repeat one trajectory' if self.below_poisson() else ''}; "
               f"intervals use 1)" if self.phi < PHI_FLOOR else
               f"dispersion {self.phi:.2g}")
        return f"{est} on {self.df} df{f' {self.source}' if self.source else ''}, t intervals"

    def level(self, conf):
        """The normal confidence level whose quantile is t's on df."""
        if not self.df:
            return conf
        z = normal_quantile((1 + conf) / 2)
        t = t_quantile((1 + conf) / 2, self.df)
        return conf if t <= z else 2 * float(stats.norm.cdf(t)) - 1

    def ci(self, conf=0.95):
        """(lo, hi) of phi from Pearson's chi-square on df degrees of
        freedom (X / phi ~ chi-square(df)); (0, inf) without one."""
        if not self.df:
            return 0.0, math.inf
        alpha = 1 - conf
        return (self.chi2 / chi2_quantile(1 - alpha / 2, self.df),
                self.chi2 / chi2_quantile(alpha / 2, self.df))


def fit(*conditions):
    """The pooled quasi-Poisson dispersion of the conditions' boots, with
    no blocks: each boot about its condition's pooled rate."""
    return fit_blocked(conditions, [[0] * len(boots) for boots in conditions])


POISSON = Fit(None, 0.0, 0)


def _rows(conditions, blocks):
    """The boots a blocked fit uses, as (condition, boot, block, failures,
    exposure): conditions without a failure, and blocks without one among
    the rest, carry no spread and are left out."""
    rows = [(ci, bi, b, k, n) for ci, (boots, labels) in enumerate(zip(conditions, blocks))
            if sum(k for k, _ in boots) > 0
            for bi, ((k, n), b) in enumerate(zip(boots, labels)) if n > 0]
    totals = {}
    for _, _, b, k, _ in rows:
        totals[b] = totals.get(b, 0) + k
    return [r for r in rows if totals[r[2]] > 0]


def _poisson_glm(rows):
    """(failures, fitted means, design matrix) of the Poisson log-linear
    model over rows (_rows) with a rate per condition, a factor per block
    and log exposure as offset, fitted by iteratively reweighted least
    squares."""
    conds = sorted({r[0] for r in rows})
    labels = sorted({r[2] for r in rows}, key=str)
    x = np.zeros((len(rows), len(conds) + len(labels) - 1))
    for i, (ci, _, b, _, _) in enumerate(rows):
        x[i, conds.index(ci)] = 1
        j = labels.index(b)
        if j:
            x[i, len(conds) + j - 1] = 1
    k = np.array([r[3] for r in rows], float)
    offset = np.log(np.array([r[4] for r in rows], float))
    mu = np.maximum(k, 0.5)
    for _ in range(50):
        eta = np.log(mu)
        z = eta - offset + (k - mu) / mu
        beta, *_ = np.linalg.lstsq(x * np.sqrt(mu)[:, None], z * np.sqrt(mu), rcond=None)
        new = np.exp(x @ beta + offset)
        if np.max(np.abs(new - mu) / mu) < 1e-10:
            mu = new
            break
        mu = new
    return k, mu, x


def fit_blocked(conditions, blocks):
    """The dispersion of a Poisson log-linear model with a rate per
    condition, a factor per block and log exposure as offset: Pearson's
    chi-square about the fitted means over the residual degrees of
    freedom.  conditions: lists of boots; blocks: for each condition, a
    block label per boot.  Conditions without a failure, and blocks without
    one among the rest, carry no spread and are left out."""
    rows = _rows(conditions, blocks)
    if not rows:
        return Fit(None, 0.0, 0)
    k, mu, x = _poisson_glm(rows)
    df = len(rows) - int(np.linalg.matrix_rank(x))
    chi2 = float(np.sum((k - mu) ** 2 / mu))
    return Fit(chi2 / df if df else None, chi2, df)


# The family-wise rate at which aberrant() flags a boot of a comparison whose
# boots all follow the model (Bonferroni over its boots).
ABERRANT_ALPHA = 0.05


@dataclass
class Aberrant:
    """A boot aberrant() flags: its condition and boot (indices into the
    lists it was given), its failures, the mean the other boots predict
    for it, its deleted studentised residual and the threshold it passed."""
    condition: int
    boot: int
    failures: int
    expected: float
    residual: float
    threshold: float


def _deleted(rows):
    """(deleted studentised residual of each row, or nan where the row
    carries none; fitted means; Pearson residuals; leverages; df) of the
    _poisson_glm fit of rows, by the deletion formulas of its weighted
    least-squares step (exact for a linear model, a one-step approximation
    for this one): a row of leverage h and Pearson residual e leaves the
    chi-square X - e^2 / (1 - h) on df - 1, and t = e / sqrt(phi_(i)
    (1 - h)), phi_(i) floored at Poisson's 1."""
    k, mu, x = _poisson_glm(rows)
    df = len(rows) - int(np.linalg.matrix_rank(x))
    # Leverages of the weighted design: the squared rows of its left
    # singular vectors over the non-null singular values.
    u, sv, _ = np.linalg.svd(x * np.sqrt(mu)[:, None], full_matrices=False)
    h = np.sum(u[:, sv > sv[0] * 1e-10] ** 2, axis=1)
    e = (k - mu) / np.sqrt(mu)
    t = np.full(len(rows), math.nan)
    if df >= 2:
        chi2 = float(np.sum(e ** 2))
        ok = h < 1 - 1e-9
        phi = np.maximum((chi2 - e[ok] ** 2 / (1 - h[ok])) / (df - 1), PHI_FLOOR)
        t[ok] = e[ok] / np.sqrt(phi * (1 - h[ok]))
    return t, mu, e, h, df


def aberrant(conditions, blocks, alpha=ABERRANT_ALPHA):
    """The boots whose failures the rest of the comparison cannot account
    for: each boot's deleted studentised residual (_deleted) about the fit
    of the other boots, conditions' rates and blocks as fit_blocked has
    them (within phase-seed pairs: the boot against its pair and the other
    pairs), over the dispersion the other boots show.  Leaving the boot out
    of its own dispersion keeps one aberrant boot from hiding itself by
    widening the spread it is measured against.  A boot is flagged where
    |t| passes Student's t on df - 1 at alpha / 2 shared over the boots
    tested (Bonferroni), so a comparison whose boots all follow the model
    flags one at most about alpha of the time.  Within a pair the two
    boots' residuals mirror each other; the one named is the one further
    from its own condition's other boots (the same residual without
    blocks); where a block is no pair (an unblocked comparison's one block
    of every boot) each flagged boot is named.  Boots that carry no
    residual (a pair's lone boot, a condition's only boot) are not tested.
    [Aberrant], largest residual first."""
    rows = _rows(conditions, blocks)
    if not rows:
        return []
    t, mu, e, h, df = _deleted(rows)
    tested = int(np.sum(~np.isnan(t)))
    if not tested:
        return []
    threshold = t_quantile(1 - alpha / (2 * tested), df - 1)
    flagged = [i for i in range(len(rows)) if abs(t[i]) > threshold]
    if not flagged:
        return []
    own = np.abs(_deleted([(ci, bi, 0, k, n) for ci, bi, _, k, n in rows])[0])
    # Only a pair's residuals mirror each other: a block with one boot of
    # each condition.  A block that holds a condition twice (an unblocked
    # comparison's one block of every boot) is no pair, and each of its
    # flagged boots is named.
    held = {}
    for ci, _, b, _, _ in rows:
        held.setdefault(b, []).append(ci)
    pair = {b: len(set(cs)) == len(cs) for b, cs in held.items()}
    named = {}
    for i in flagged:
        key = rows[i][2] if pair[rows[i][2]] else ("boot", i)
        if key not in named or np.nan_to_num(own[i]) > np.nan_to_num(own[named[key]]):
            named[key] = i
    # What the other boots predict for it: its fitted mean with its own
    # residual taken out (the deletion step, on the mean).
    out = [Aberrant(rows[i][0], rows[i][1], int(rows[i][3]),
                    float(mu[i] - math.sqrt(mu[i]) * e[i] * h[i] / (1 - h[i])),
                    float(t[i]), threshold) for i in named.values()]
    return sorted(out, key=lambda a: -abs(a.residual))


def dispersion_ci(*conditions, conf=0.95):
    """(phi, lo, hi, df): the dispersion pooled over the conditions, with
    its interval (Fit.ci).  An interval covering 1 is what independent
    Poisson boots look like; phi well below 1 means boots repeat each
    other (phase-locked), well above means extra spread.  None for phi
    without two boots in a condition."""
    f = fit(*conditions)
    return (f.phi, *f.ci(conf), f.df)


@dataclass
class Rate:
    failures: int
    exposure: float
    boots: int
    phi: float
    rate: float
    lo: float
    hi: float

    def half_width(self):
        """The larger relative distance from the rate to an interval end."""
        if not self.failures:
            return math.inf
        return max(1 - self.lo / self.rate, self.hi / self.rate - 1)


def rate(boots, conf=0.95, spread=None):
    """The pooled rate of a condition with its interval; spread: the Fit
    to use (by default the condition's own)."""
    k, n = pooled(boots)
    spread = fit(boots) if spread is None else spread
    phi = spread.scale()
    if n <= 0:
        return Rate(k, n, len(boots), phi, math.nan, 0.0, math.inf)
    lo, hi = poisson_ci(k / phi, spread.level(conf))
    return Rate(k, n, len(boots), phi, k / n, lo * phi / n, hi * phi / n)


@dataclass
class Verdict:
    kind: str           # "differs", "equivalent" or "undecided"
    ratio: float        # rate a / rate b (inf: b has none; None: neither has any)
    ci95: tuple
    ci90: tuple
    phi: float          # the dispersion used (at least 1)
    df: int             # its degrees of freedom (0: Poisson assumed)
    estimate: float     # phi as estimated, not floored (None with 0 df)
    margin: float
    within_margin: bool  # the 90% interval lies inside the margin
    more: int           # undecided: more boots a condition for POWER (None: none will)
    text: str
    # Boots aberrant() flagged ({boot, condition, phase_seed, failures,
    # expected, residual, threshold}) and the verdict without them.
    flagged: tuple = ()
    without: "Verdict" = None
    # Why the calibration does not vouch for this verdict (analysis/guarantee.py).
    outside: str = None


def _fmt(x):
    return "inf" if x == math.inf else f"{x:.3g}"


def interval(lo, hi):
    """An interval as the verdicts and the report's tables write it."""
    return f"{_fmt(lo)}-{_fmt(hi)}"


@functools.cache
def _chi2_points(df):
    """Chi-square's quantiles at 64 equal-probability points on df degrees
    of freedom (cached: the power search asks each df many times)."""
    points = stats.chi2.ppf((np.arange(64) + 0.5) / 64, df)
    points.flags.writeable = False
    return points


def boots_for_power(per_boot_a, per_boot_b, phi, log_ratio, margin, power=POWER,
                    alpha=0.05, paired=False, want=None):
    """(boots a condition, decision): the fewest boots per condition with
    which, at a true log ratio of log_ratio, failures per boot as given and
    dispersion phi, the verdict is want ("differs" or "equivalent") with
    probability power, or with want None either of them (the likelier is
    the decision returned); None when that takes over a million boots.
    The two are the verdict's own, disjoint: "equivalent" is the 90%
    interval inside the margin while the 95% interval holds 1, so at a
    true ratio of 1 its power approaches 1 - alpha as the df grow once
    the spread is above Poisson's (the floor at 1 and t on few df make
    "differs" rarer, and it higher, on Poisson boots).  The log ratio is
    taken as normal and the dispersion as estimated on the comparison's
    residual degrees of freedom (n - 1 when the boots are paired blocks,
    else 2n - 2), phi x chi-square(df) / df and floored at 1 as the
    intervals floor it, with the t quantile on them: the power is averaged
    over that estimate's distribution."""
    s1 = math.sqrt(phi * (1 / max(per_boot_a, 0.5) + 1 / max(per_boot_b, 0.5)))
    d, band = abs(log_ratio), math.log1p(margin)

    def chances(n):
        se, df = s1 / math.sqrt(n), n - 1 if paired else 2 * n - 2
        # The phi the interval will use relative to the true one, at 64
        # equal-probability points of the estimate: floored as scale() floors it.
        u = np.sqrt(np.maximum(phi * _chi2_points(df) / df, PHI_FLOOR) / phi)
        t2, t1 = t_quantile(1 - alpha / 2, df), t_quantile(1 - alpha, df)
        differs = float(np.mean(special.ndtr(d / se - t2 * u) + special.ndtr(-d / se - t2 * u)))
        # Equivalent: the estimate within band - t1 s of 0 (90% interval
        # inside the margin) and within t2 s (95% interval holds 1).
        m = np.maximum(np.minimum(band / se - t1 * u, t2 * u), 0)
        equivalent = float(np.mean(np.clip(special.ndtr(m - d / se)
                                           - special.ndtr(-m - d / se), 0, 1)))
        return differs, equivalent

    def reached(n):
        differs, equivalent = chances(n)
        got = {"differs": differs, "equivalent": equivalent,
               None: differs + equivalent}[want]
        return got >= power

    lo, hi = 2, 2
    while not reached(hi):
        lo, hi = hi, hi * 2
        if hi > 1_000_000:
            return None
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if reached(mid) else (mid + 1, hi)
    differs, equivalent = chances(lo)
    return lo, want or ("differs" if differs >= equivalent else "equivalent")


def compare(a, b, margin=0.25, names=("a", "b"), spread=None, unit="boots", paired=False,
            cap=None):
    """The verdict on rate(a) / rate(b); a and b are lists of boots.
    spread: the Fit to use; by default the one of a and b (an experiment
    passes the one of their conditions, blocked as its design is).  unit:
    what a and b's items are, for the text.  paired: the boots are pairs
    (phase seeds), so the boots "undecided" asks for have the paired df;
    cap: the most boots a condition the run may have, said where the boots
    asked for pass it."""
    (k1, n1), (k2, n2) = pooled(a), pooled(b)
    spread = fit(a, b) if spread is None else spread
    phi = spread.scale()
    what = f"{names[0]}/{names[1]}"
    band = f"+-{margin * 100:.0f}% (ratio {1 / (1 + margin):.2f}-{1 + margin:.2f})"
    if spread.df:
        how = spread.describe()
    else:
        why = (f"one of the {unit} a condition" if max(len(a), len(b)) < 2
               else "its blocks leave none")
        how = f"no degree of freedom for the spread ({why}): Poisson assumed"
    if k1 + k2 == 0:
        return Verdict("undecided", None, (0.0, math.inf), (0.0, math.inf), phi, spread.df,
                       spread.phi, margin, False, None, f"undecided: no failures in "
                       f"{names[0]} or {names[1]}, so no ratio; run more")
    # The point ratio from the counts themselves: phi scales both alike.
    ratio = rate_ratio(k1, n1, k2, n2)[0]
    _, lo95, hi95 = rate_ratio(k1 / phi, n1, k2 / phi, n2, spread.level(0.95))
    _, lo90, hi90 = rate_ratio(k1 / phi, n1, k2 / phi, n2, spread.level(0.90))
    evidence = (f"{what} {_fmt(ratio)}, 95% CI {interval(lo95, hi95)}; "
                f"{k1} and {k2} failures in {len(a)} and {len(b)} {unit}; {how}")
    # Inside the margin is a claim about the spread too: not on assumed Poisson.
    inside = bool(spread.df) and 1 / (1 + margin) <= lo90 and hi90 <= 1 + margin
    more = None
    if lo95 > 1 or hi95 < 1:
        kind = "differs"
        text = (f"differs, by less than the margin {band}: 90% CI "
                f"{interval(lo90, hi90)} ({evidence})" if inside else f"differs ({evidence})")
    elif inside:
        kind = "equivalent"
        text = (f"equivalent within {band}: 90% CI {interval(lo90, hi90)} "
                f"({evidence})")
    else:
        kind = "undecided"
        log_ratio = math.log(max(k1, 0.5) / n1) - math.log(max(k2, 0.5) / n2)
        need = boots_for_power(k1 / len(a), k2 / len(b), phi, log_ratio, margin,
                               paired=paired)
        now = max(len(a), len(b))
        unestimated = ("; inside the margin, but equivalence needs a spread estimated "
                       "from replicated boots" if not spread.df and
                       1 / (1 + margin) <= lo90 and hi90 <= 1 + margin else "")
        evidence += unestimated
        if need is None:
            text = f"undecided ({evidence})"
        elif need[0] <= now and min(k1, k2) < 10:
            # The normal approximation thinks these already decide; at such
            # counts the exact interval is wider than it: it cannot size a rerun.
            text = (f"undecided: more {unit} needed, too few failures for the power "
                    f"approximation to say how many ({evidence})")
        else:
            more = max(1, need[0] - now)
            over = (f", above the run's cap of {cap}, so not within one run"
                    if cap is not None and now + more > cap else "")
            text = (f"undecided: {more} more {unit} a condition ({now + more} in all{over}) give "
                    f"{POWER * 100:.0f}% power to decide ({need[1]} at the observed "
                    f"ratio; margin {band}) ({evidence})")
    return Verdict(kind, ratio, (lo95, hi95), (lo90, hi90), phi, spread.df, spread.phi,
                   margin, inside, more, text)


def describe_aberrant(flagged, unit="boots"):
    """The flagged boots (Verdict.flagged) as a verdict names them."""
    return "; ".join(
        f"{f['boot']} ({f['condition']}"
        + (f", phase seed {f['phase_seed']}" if f.get("phase_seed") is not None else "")
        + f"): {f['failures']} failures where the other {unit} predict "
        f"{f['expected']:.0f}, residual {f['residual']:.1f} beyond +-{f['threshold']:.1f}"
        for f in flagged)


# The model's margin.  Measured against predicted: "agrees" when the 90% interval of measured /
# predicted lies inside 1/(1+M)..1+M, as the A/A comparison's equivalence.
MODEL_MARGIN = 0.10


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


def with_and_without(v, without, flagged, unit="boots"):
    """One verdict from v, on every boot, and without, on the boots less
    the ones aberrant() flagged (flagged: Verdict.flagged's dicts): a
    decision ("differs", "equivalent") stands only where both reach it,
    else the comparison is undecided, and the text says which held."""
    one = len(flagged) == 1
    it, them = ("it", f"this {unit[:-1]}") if one else ("them", f"these {unit}")
    named = (f"{'an aberrant' if one else 'aberrant'} {unit[:-1] if one else unit} "
             f"flagged: {describe_aberrant(flagged, unit)}")
    # The calibration (bench/RESULTS.md) covers the intervals without the
    # flagged boots; those with them are what a wild boot made of them.
    other = (f"without {it}: {without.kind}, 90% CI {interval(*without.ci90)}, "
             f"95% CI {interval(*without.ci95)}; the intervals with {them} are outside "
             f"the verdict's guarantee")
    if v.kind == without.kind:
        kind = v.kind
        text = (f"{v.text}; {named}; {other}: the verdict holds with and without {it}"
                if kind != "undecided" else f"{v.text}; {named}; {other}")
    elif v.kind == "undecided":
        kind = "undecided"
        text = (f"{v.text}; {named}; {other}, but a verdict must hold with {them} too")
    else:
        kind = "undecided"
        text = (f"undecided: {v.kind} with {them} but not without {it}, and a verdict "
                f"must hold both ways ({v.text}); {named}; {other}")
    return dataclasses.replace(
        v, kind=kind, within_margin=v.within_margin and without.within_margin,
        more=v.more if v.kind == "undecided" else without.more, text=text,
        flagged=tuple(flagged), without=without)
