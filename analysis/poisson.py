"""Exact intervals for rare counts: Garwood's Poisson interval and the
conditional (Clopper-Pearson) interval of a ratio of two Poisson rates.

scipy is not available on the lab host, so the regularized incomplete gamma
and beta functions are computed here (series and continued fractions as in
Numerical Recipes) and inverted by bisection; both are monotone in x, so
bisection always converges.
"""

import math

_EPS = 1e-15
_TINY = 1e-300


def gammainc(a, x):
    """Regularized lower incomplete gamma P(a, x), a > 0."""
    if x <= 0:
        return 0.0
    lead = math.exp(-x + a * math.log(x) - math.lgamma(a))
    if x < a + 1:
        term = total = 1.0 / a
        n = a
        while abs(term) > abs(total) * _EPS:
            n += 1
            term *= x / n
            total += term
        return total * lead
    # Continued fraction for Q(a, x) (modified Lentz).
    b = x + 1 - a
    c, d = 1 / _TINY, 1 / b
    h = d
    for i in range(1, 10000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = _TINY if abs(d) < _TINY else d
        c = b + an / c
        c = _TINY if abs(c) < _TINY else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < _EPS:
            break
    return 1.0 - lead * h


def _betacf(a, b, x):
    qab, qap, qam = a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / (_TINY if abs(d) < _TINY else d)
    h = d
    for m in range(1, 10000):
        m2 = 2 * m
        for an in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                   -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1 + an * d
            d = 1 / (_TINY if abs(d) < _TINY else d)
            c = 1 + an / c
            c = _TINY if abs(c) < _TINY else c
            h *= d * c
        if abs(d * c - 1) < _EPS:
            break
    return h


def betainc(a, b, x):
    """Regularized incomplete beta I_x(a, b), a, b > 0."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    lead = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                    + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return lead * _betacf(a, b, x) / a
    return 1 - lead * _betacf(b, a, 1 - x) / b


def _invert(cdf, target, lo, hi):
    """x with cdf(x) == target for an increasing cdf, lo <= x <= hi."""
    while cdf(hi) < target:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if cdf(mid) < target:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * max(1.0, hi):
            break
    return (lo + hi) / 2


def poisson_ci(k, conf=0.95):
    """Garwood's exact interval for the mean of a Poisson count k:
    chi2(alpha/2, 2k)/2 .. chi2(1-alpha/2, 2k+2)/2, i.e. gamma quantiles."""
    alpha = 1 - conf
    lower = 0.0 if k == 0 else _invert(lambda m: gammainc(k, m), alpha / 2,
                                       0.0, k + 10.0)
    upper = _invert(lambda m: gammainc(k + 1, m), 1 - alpha / 2, 0.0,
                    2 * k + 10.0)
    return lower, upper


def chi2_quantile(q, df):
    """x with P(chi-square with df degrees of freedom <= x) = q."""
    return 2 * _invert(lambda x: gammainc(df / 2, x), q, 0.0, df + 10.0)


def binom_ci(k, n, conf=0.95):
    """Clopper-Pearson exact interval for a binomial proportion k/n."""
    alpha = 1 - conf
    lower = 0.0 if k == 0 else _invert(lambda p: betainc(k, n - k + 1, p),
                                       alpha / 2, 0.0, 1.0)
    upper = 1.0 if k == n else _invert(lambda p: betainc(k + 1, n - k, p),
                                       1 - alpha / 2, 0.0, 1.0)
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
