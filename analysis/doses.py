"""Dose-response: failures per million calls against the window width or
the interrupt rate, a weighted line through each condition's pooled
point (experiment.Results.dose)."""

import math

import numpy as np

from analysis import verdict
from analysis.design import PER
from analysis.poisson import t_quantile

# The two doses: what each point's x is and how the report names it.
DOSES = {
    "width": {"label": "window width (translation blocks, ext4.chksum_window_width)",
              "unit": "block", "what": "the window width"},
    "rate": {"label": "interrupt arrivals per second under the loader (irqs + sampler)",
             "unit": "1000 arrivals/s", "what": "the interrupt rate"},
}


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


def point(res, name, x):
    """(x, failures per 1M calls, its variance, failures, calls, its 95%
    interval, dispersion) of a condition's pooled boots, with the
    condition's own dispersion (the pooled one where its boots give
    none), as the conditions table has it: points whose boots spread
    more weigh less and show wider bars."""
    row = next(r for r in res.condition_rows if r["condition"] == name)
    k, n = verdict.pooled(res.doc.counts(name))
    return (x, k / n * PER, row["phi"] * max(k, 1) / n ** 2 * PER ** 2, k, n, row["ci"],
            row["phi"])


def fit(res, which):
    """Failures per million calls against a dose (DOSES) on the sweep's
    flavour, a weighted line with an intercept (fit_line: a fit forced
    through 0 would put whatever does not scale with the dose into the
    slope): "width" the window width of the untraced counting and dose
    boots, "rate" the measured interrupt rate of the rate boots (in
    thousands per second).  None without two points."""
    doc = res.doc
    if which == "width":
        sweep = doc.select(kind="dose")
        if not sweep:
            return None
        flavour = sweep[0].flavour
        points = [point(res, c.name, c.width)
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
            points.append(point(res, c.name, x / 1000))
    if len(points) < 2:
        return None
    line = fit_line(points)
    line.update(flavour=flavour, dose=which)
    return line
