"""Rates from replicated boots, and comparisons that end in a decision.

A condition is a list of boots, each (failures, exposure); exposure is
checksum calls (or guest seconds).  Failure counts vary between boots far
more than Poisson (25, 8 and 30 on one kernel: host load, where the
workers' passes fall), so the rate's interval is widened by the dispersion
phi, Pearson's chi-square of the boots about their pooled rate over its
degrees of freedom (quasi-Poisson; phi = 1 when the boots agree, or when
there is only one boot a condition and the spread cannot be seen).
Counts divided by phi are what the exact Poisson intervals are computed
on: phi boots' worth of spread costs what phi times fewer failures would.

A comparison of two conditions ends in exactly one of three verdicts:
  differs      the 95% interval of the rate ratio excludes 1;
  equivalent   the 90% interval lies inside the margin, 1/(1+M)..(1+M)
               (two one-sided tests at 5%, symmetric for either order);
  undecided    neither, with how many more failures, at the observed
               ratio, would decide it.
An interval that contains 1 never reads as "no effect" by itself.
"""

import math
from dataclasses import dataclass

from poisson import chi2_quantile, poisson_ci, rate_ratio

Z95, Z90 = 1.959964, 1.644854


def normal_quantile(q):
    """z with Phi(z) = q, 0 < q < 1 (bisection on erf)."""
    lo, hi = -40.0, 40.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if 0.5 * (1 + math.erf(mid / math.sqrt(2))) < q:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


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


def chi_square(boots):
    """(Pearson chi-square about the pooled rate, degrees of freedom)."""
    k, n = pooled(boots)
    if k == 0 or n <= 0 or len(boots) < 2:
        return 0.0, 0
    rate = k / n
    return sum((ki - rate * ni) ** 2 / (rate * ni) for ki, ni in boots
               if ni > 0), len(boots) - 1


def _pooled_chi_square(conditions):
    """(chi-square, degrees of freedom) of each condition's boots, summed."""
    chi2 = df = 0
    for boots in conditions:
        c, d = chi_square(boots)
        chi2, df = chi2 + c, df + d
    return chi2, df


def dispersion(*conditions):
    """phi >= 1 from the spread of boots within each condition, pooled."""
    chi2, df = _pooled_chi_square(conditions)
    return max(1.0, chi2 / df) if df else 1.0


def dispersion_ci(*conditions, conf=0.95):
    """(phi, lo, hi, df): the dispersion pooled over the conditions, not
    clamped at 1, with its interval from Pearson's chi-square X on df
    degrees of freedom (X / phi ~ chi-square(df) for quasi-Poisson boots).  An
    interval covering 1 is what independent Poisson boots look like; phi
    well below 1 means boots repeat each other (phase-locked), well above
    means extra spread.  None for phi without two boots in a condition."""
    chi2, df = _pooled_chi_square(conditions)
    if not df:
        return None, 0.0, math.inf, 0
    alpha = 1 - conf
    return (chi2 / df, chi2 / chi2_quantile(1 - alpha / 2, df),
            chi2 / chi2_quantile(alpha / 2, df), df)


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


def rate(boots, conf=0.95, phi=None):
    """The pooled rate of a condition with its overdispersed interval."""
    k, n = pooled(boots)
    phi = dispersion(boots) if phi is None else phi
    if n <= 0:
        return Rate(k, n, len(boots), phi, math.nan, 0.0, math.inf)
    lo, hi = poisson_ci(k / phi, conf)
    return Rate(k, n, len(boots), phi, k / n, lo * phi / n, hi * phi / n)


@dataclass
class Verdict:
    kind: str           # "differs", "equivalent" or "undecided"
    ratio: float        # rate a / rate b (inf: b has none; None: neither has any)
    ci95: tuple
    ci90: tuple
    phi: float
    margin: float
    more: int           # undecided: about this many more failures would decide
    text: str


def _fmt(x):
    return "inf" if x == math.inf else f"{x:.3g}"


def _more_failures(k1, n1, k2, n2, phi, margin):
    """Failures still needed, at the observed rates and split, before the
    interval is narrow enough for one of the two decisions.  Exposure
    scaled by s divides the variance of the log ratio by s."""
    a, b = max(k1, 0.5), max(k2, 0.5)
    var = phi * (1 / a + 1 / b)
    dist = abs(math.log((a / n1) / (b / n2)))
    room = math.log1p(margin) - dist
    scales = []
    if dist > 0:
        scales.append(var * Z95 ** 2 / dist ** 2)
    if room > 0:
        scales.append(var * Z90 ** 2 / room ** 2)
    s = min(scales)
    return max(1, math.ceil((s - 1) * (k1 + k2)))


def compare(a, b, margin=0.25, names=("a", "b"), phi=None):
    """The verdict on rate(a) / rate(b); a and b are lists of boots.  phi
    defaults to the dispersion within a and b; an experiment passes the
    one it estimated from all its conditions (more boots, steadier)."""
    (k1, n1), (k2, n2) = pooled(a), pooled(b)
    phi = dispersion(a, b) if phi is None else phi
    what = f"{names[0]}/{names[1]}"
    band = f"+-{margin * 100:.0f}% (ratio {1 / (1 + margin):.2f}-{1 + margin:.2f})"
    if k1 + k2 == 0:
        return Verdict("undecided", None, (0.0, math.inf), (0.0, math.inf), phi,
                       margin, None, f"undecided: no failures in {names[0]} or "
                       f"{names[1]}, so no ratio; run more")
    ratio, lo95, hi95 = rate_ratio(k1 / phi, n1, k2 / phi, n2, 0.95)
    _, lo90, hi90 = rate_ratio(k1 / phi, n1, k2 / phi, n2, 0.90)
    spread = f", boot-to-boot dispersion {phi:.2g}" if phi > 1 else ""
    evidence = (f"{what} {_fmt(ratio)}, 95% CI {_fmt(lo95)}-{_fmt(hi95)}; "
                f"{k1} and {k2} failures{spread}")
    if lo95 > 1 or hi95 < 1:
        kind, more, text = "differs", 0, f"differs ({evidence})"
    elif 1 / (1 + margin) <= lo90 and hi90 <= 1 + margin:
        kind, more = "equivalent", 0
        text = (f"equivalent within {band}: 90% CI {_fmt(lo90)}-{_fmt(hi90)} "
                f"({evidence})")
    else:
        kind, more = "undecided", _more_failures(k1, n1, k2, n2, phi, margin)
        text = (f"undecided: about {more} more failures needed to decide "
                f"between a difference and equivalence within {band} ({evidence})")
    return Verdict(kind, ratio, (lo95, hi95), (lo90, hi90), phi, margin, more, text)
