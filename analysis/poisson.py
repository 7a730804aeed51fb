"""Exact intervals for rare counts: Garwood's Poisson interval and the
conditional (Clopper-Pearson) interval of a ratio of two Poisson rates,
on scipy's quantile functions (Debian's python3-scipy).  Counts may be
fractional: a count divided by a dispersion is how an overdispersed
count is given its interval (verdict.py).
"""

import functools
import math

from scipy import stats


def poisson_ci(k, conf=0.95):
    """Garwood's exact interval for the mean of a Poisson count k:
    chi2(alpha/2, 2k)/2 .. chi2(1-alpha/2, 2k+2)/2, i.e. gamma quantiles."""
    alpha = 1 - conf
    lower = 0.0 if k <= 0 else float(stats.gamma.ppf(alpha / 2, k))
    return lower, float(stats.gamma.ppf(1 - alpha / 2, k + 1))


# These three are cached: the planners and the calibration ask the same
# few quantiles thousands of times, and a scipy call costs a tenth of a ms.
@functools.cache
def chi2_quantile(q, df):
    """x with P(chi-square with df degrees of freedom <= x) = q."""
    return float(stats.chi2.ppf(q, df))


@functools.cache
def t_quantile(q, df):
    """x with P(Student's t with df degrees of freedom <= x) = q."""
    return float(stats.t.ppf(q, df))


@functools.cache
def normal_quantile(q):
    """z with Phi(z) = q."""
    return float(stats.norm.ppf(q))


def binom_ci(k, n, conf=0.95):
    """Clopper-Pearson exact interval for a binomial proportion k/n."""
    alpha = 1 - conf
    lower = 0.0 if k <= 0 else float(stats.beta.ppf(alpha / 2, k, n - k + 1))
    upper = 1.0 if k >= n else float(stats.beta.ppf(1 - alpha / 2, k + 1, n - k))
    return lower, upper


def rate_ratio(k1, n1, k2, n2, conf=0.95):
    """(ratio, lower, upper) of rate k1/n1 over k2/n2.  Given k1 + k2
    events, k1 is binomial with p = r n1 / (r n1 + n2): the exact interval
    for p maps to one for r.  None for the ratio when there is no event."""
    total = k1 + k2
    if total == 0 or n1 <= 0 or n2 <= 0:
        return None, 0.0, math.inf
    lo, hi = binom_ci(k1, total, conf)
    scale = n2 / n1

    def to_ratio(p):
        return math.inf if p >= 1 else p / (1 - p) * scale
    ratio = math.inf if k2 == 0 else (k1 / n1) / (k2 / n2)
    return ratio, to_ratio(lo), to_ratio(hi)
