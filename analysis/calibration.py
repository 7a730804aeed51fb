"""How far the verdicts can be trusted: experiments simulated from the
model the verdicts assume, analysed by verdict.compare, and the error
rates counted.

The design is the demo's A/A comparison: two conditions of n boots each,
paired (the n-th boots share a phase seed, a block of the analysis), equal
exposure, a mean of per_boot failures a boot in the reference,
margin +-M, n planned as the demo plans it (boots_for: the fewest boots
whose simulated experiments reach 95% power at a true ratio of 1 and
Poisson boots; the demo's plan searches the same way, and power() gives
the power of its other comparisons).  Failures of a boot are negative
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

from analysis import verdict

# The grid both the test and the bench run: under-dispersed, Poisson and
# overdispersed boots; no difference, a difference of exactly the margin,
# and a clear one.
DISPERSIONS = (0.5, 1, 2, 5, 10)
MARGIN = 0.10
RATIOS = (1.0, 1 + MARGIN, 2.0)
# The demo's A/A boots at width 16 make about 500 failures each.
PER_BOOT = 500
SIMS = 2000
# Simulated experiments behind a plan's power figure (Monte Carlo standard
# error 0.7% at 95%), and the power and cap the demo plans its A/A boots for.
PLAN_SIMS = 1000
PLAN_POWER = 0.95
MAX_BOOTS = 40


def draw(rng, mean, phi, size):
    """Failures of size boots with the given mean and variance phi x mean."""
    if mean == 0:
        return np.zeros(size, dtype=int)
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


def simulate(phi, mean_a, mean_b, boots, margin, sims, seed=0):
    """Point: sims experiments of boots a condition, a boot of a making
    mean_a failures on average and one of b mean_b (0: none ever)."""
    rng = np.random.default_rng(seed)
    exposure = 1e6
    ratio = mean_a / mean_b if mean_b else math.inf
    covered = differs = equivalent = 0
    for _ in range(sims):
        a = draw(rng, mean_a, phi, boots)
        b = draw(rng, mean_b, phi, boots)
        both = ([(int(k), exposure) for k in a], [(int(k), exposure) for k in b])
        # Analysed as the demo analyses it: boots paired by phase seed.
        pairs = verdict.fit_blocked(both, [range(boots), range(boots)])
        v = verdict.compare(*both, margin, spread=pairs)
        covered += v.ci95[0] <= ratio <= v.ci95[1]
        differs += v.kind == "differs"
        equivalent += v.kind == "equivalent"
    return Point(phi, ratio, boots, sims, covered, differs, equivalent)


def power(mean_a, mean_b, boots, phi, margin, seed):
    """(share "differs", share "equivalent") of simulated experiments of
    boots a condition, paired as the run pairs them, at dispersion phi but
    never below Poisson's (a plan on under-dispersion would promise power
    the run may lack)."""
    p = simulate(max(phi, 1.0), mean_a, mean_b, boots, margin, PLAN_SIMS, seed)
    return p.share("differs"), p.share("equivalent")


def boots_for(per_boot, phi, margin, want, cap, seed):
    """(boots a flavour, power): the fewest boots whose simulated A/A
    experiments (true ratio 1) come out "equivalent" at least want of the
    time, searched up from the normal approximation's figure; cap when even
    that many fall short."""
    start = verdict.boots_for_power(per_boot, per_boot, max(phi, 1.0), 0.0, margin, want,
                                    paired=True)
    n = min(cap, start[0] if start else cap)
    while True:
        got = power(per_boot, per_boot, n, phi, margin, seed)[1]
        if got >= want or n >= cap:
            return n, got
        n += 1


def design_boots():
    """The demo's A/A boots a condition at PER_BOOT failures a boot and
    Poisson boots, as its plan would fix them: the design the grid runs."""
    return boots_for(PER_BOOT, 1.0, MARGIN, PLAN_POWER, MAX_BOOTS, seed=0)[0]


def grid(boots, sims=SIMS):
    """Every point of the grid, each from its own seed."""
    return [simulate(phi, PER_BOOT * ratio, PER_BOOT, boots, MARGIN, sims, seed=i)
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
