"""How far the verdicts can be trusted: experiments simulated from the
model the verdicts assume, analysed by verdict.compare, and the error
rates counted.

The design is the demo's A/A comparison: two conditions of n boots each,
paired (the n-th boots share a phase seed, a block of the analysis), equal
exposure, a mean of per_boot failures a boot in the reference,
margin +-M, n planned as the demo plans it (lab_demo.aa_boots: 95% power
at a true ratio of 1 and Poisson boots).  Failures of a boot are negative
binomial with variance phi x mean (phi > 1: extra spread between boots),
Poisson at phi = 1, and binomial below 1 (boots that repeat each other
more than Poisson allows, as phase-locked ones do).  For each dispersion
and true ratio: the coverage of the 95% interval of the ratio, and how
often each verdict comes out.  At a true ratio of 1 "differs" is a false
difference; at exactly 1 + M, "equivalent" is a false equivalence (both
nominally at most 5%).
"""

import math
from dataclasses import dataclass

import numpy as np

import verdict

# The grid both the test and the bench run: under-dispersed, Poisson and
# overdispersed boots; no difference, a difference of exactly the margin,
# and a clear one.
DISPERSIONS = (0.5, 1, 2, 5, 10)
MARGIN = 0.10
RATIOS = (1.0, 1 + MARGIN, 2.0)
# The demo's A/A boots at width 16 make about 500 failures each.
PER_BOOT = 500
SIMS = 2000


def draw(rng, mean, phi, size):
    """Failures of size boots with the given mean and variance phi x mean."""
    if phi == 1:
        return rng.poisson(mean, size)
    if phi > 1:
        r = mean / (phi - 1)
        return rng.negative_binomial(r, r / (r + mean), size)
    p = 1 - phi
    return rng.binomial(int(round(mean / p)), p, size)


@dataclass
class Point:
    phi: float
    ratio: float
    boots: int
    sims: int
    covered: int
    differs: int
    equivalent: int

    def share(self, what):
        return getattr(self, what) / self.sims

    def mc_se(self, p=0.05):
        """The Monte Carlo standard error of a rate p over these sims."""
        return math.sqrt(p * (1 - p) / self.sims)


def simulate(phi, ratio, boots, per_boot, margin, sims, seed=0):
    """Point: sims experiments of boots a condition (a at ratio x b)."""
    rng = np.random.default_rng(seed)
    exposure = 1e6
    covered = differs = equivalent = 0
    for _ in range(sims):
        a = draw(rng, per_boot * ratio, phi, boots)
        b = draw(rng, per_boot, phi, boots)
        both = ([(int(k), exposure) for k in a], [(int(k), exposure) for k in b])
        # Analysed as the demo analyses it: boots paired by phase seed.
        pairs = verdict.fit_blocked(both, [range(boots), range(boots)])
        v = verdict.compare(*both, margin, spread=pairs)
        covered += v.ci95[0] <= ratio <= v.ci95[1]
        differs += v.kind == "differs"
        equivalent += v.kind == "equivalent"
    return Point(phi, ratio, boots, sims, covered, differs, equivalent)


def grid(boots, sims=SIMS):
    """Every point of the grid, each from its own seed."""
    return [simulate(phi, ratio, boots, PER_BOOT, MARGIN, sims, seed=i)
            for i, (phi, ratio) in enumerate((phi, ratio) for phi in DISPERSIONS
                                             for ratio in RATIOS)]


def table(points):
    """Rows for bench/RESULTS.md and the test's messages."""
    out = [["dispersion", "true ratio", "boots a condition", "simulations",
            "95% coverage", "differs", "equivalent"]]
    for p in points:
        out.append([f"{p.phi:g}", f"{p.ratio:g}", str(p.boots), str(p.sims),
                    f"{p.share('covered') * 100:.1f}%", f"{p.share('differs') * 100:.1f}%",
                    f"{p.share('equivalent') * 100:.1f}%"])
    return out
