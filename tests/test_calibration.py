"""The demo's answers, calibrated: whole demos simulated as experiment.json
documents, planned by the demo's plan and analysed by its own functions
(analysis/calibration.py), a budget and lost boots as the demo meets them,
fixed seeds.  Each goal is checked against its nominal value less (or,
for an error, plus) three Monte Carlo standard errors at the simulated n,
so a test fails on what a referee would call miscalibrated: both the 95%
and the 90% interval cover the true ratio at their levels; a true ratio
of 1 is called "differs", and a true ratio of 1 + the margin is claimed
inside it, at most 5% of the time; a true model is said not to fit at most
5% of the time.  Pooled over the comparisons the bounds are sharper.  The
A/A plan keeps its power promise where it is not oversized.  A third of
the demos carry an aberrant A/A boot, which the verdict must name.  A
scenario may miss a goal only where the committed calibration
(analysis/guarantee.json) names it outside the guarantee, so that its
verdicts say so.
"""

import functools

import pytest

from analysis import calibration
from analysis import guarantee

SIMS = 300
EDGE = 1 + calibration.MARGIN
# Every other scenario family once, at the margin's edge, on as many demos
# as bench/RESULTS.md's table (its bound 3.8 points under 95%, not 100's
# 6.5).  seed-own's 95% interval covers 93.7% (843 of 900 demos, seeds
# 1-3): within the goal at 900, and a point short of the level, so some
# seeds fail a point's bound at any n; seed 1's first 100 demos read 88%.
# Each family once more inside the margin (1.05) and well outside it
# (1.25), where the verdicts ask other questions (equivalence's power,
# "differs" under the with-and-without rule).
POINTS = [(s, r, SIMS) for s, r in (("nb-3", 1.0), ("nb-3", EDGE), ("aberrant-3", EDGE))] + \
    [(s, EDGE, SIMS) for s in ("poisson", "growing", "seed-shared", "seed-own",
                               "nb-5", "aberrant-1", "aberrant-5")] + \
    [(s, r, SIMS) for s, r in (("poisson", 1.05), ("nb-5", 1.05), ("seed-shared", 1.05),
                               ("aberrant-1", 1.05), ("aberrant-5", 1.05),
                               ("nb-3", 1.25), ("growing", 1.25), ("seed-own", 1.25),
                               ("aberrant-3", 1.25))]


@functools.cache
def _tally(scenario, ratio, sims):
    return calibration.run(scenario, ratio, sims=sims, seed=1)


@pytest.fixture(params=POINTS, ids=lambda p: f"{p[0]}-{p[1]:g}")
def tally(request):
    return _tally(*request.param)


def _rows(t):
    return "\n".join(" | ".join(r) for r in calibration.table([t]) + calibration.plan_rows([t]))


def test_every_goal_holds_or_the_verdicts_say_it_does_not(tally):
    """Every goal met, or the scenario is one the committed calibration
    names outside the guarantee (its verdicts quote it: analysis/guarantee.py)."""
    checked = [key for key, _, met in calibration.goals(tally) if met is not None]
    assert any(k.endswith("covered 90%") for k in checked), _rows(tally)
    named = {s["scenario"] for s in guarantee.load()["scenarios"] if s["outside"]}
    for key, p, met in calibration.goals(tally):
        assert met is not False or tally.scenario in named, \
            f"{key}: {p:.3f}, and {tally.scenario} is not named outside\n{_rows(tally)}"


def test_every_comparison_is_counted(tally):
    """Each demo gives the window, control and A/A verdicts and, where the
    model is true, its check by W: none silently missing."""
    keys = {k for k, _, _ in calibration.goals(tally)}
    for want in ("window power", "control covered 95%", "control covered 90%",
                 "exact flavours covered 90%", "exact flavours false differs"):
        assert want in keys and tally.n(want) == tally.sims, _rows(tally)
    aa = sum(tally.n(k) for k in keys if k.startswith("flavour") and k.endswith("covered 95%")
             and calibration.WITHOUT not in k)
    assert aa == tally.sims, _rows(tally)
    if tally.aa_ratio == 1:
        assert {"flavour false differs", "model false misfit",
                "model W=33 false differs"} <= keys


def _pooled(ending):
    """(hits, n) of every measure ending so over the points' tallies, but
    for the intervals of every boot with an aberrant one among them
    (outside the guarantee: calibration.goal) and the scenarios the
    committed calibration names outside it."""
    named = {s["scenario"] for s in guarantee.load()["scenarios"] if s["outside"]}
    got = [tuple(c) for t in (_tally(*p) for p in POINTS) if t.scenario not in named
           for k, c in t.counts.items()
           if k.endswith(ending) and calibration.goal(k, c[1])[1] is not None]
    return sum(h for h, _ in got), sum(n for _, n in got)


@pytest.mark.parametrize("level", [95, 90])
def test_coverage_pooled_over_the_comparisons(level):
    """Every interval the verdicts rest on, pooled: its level less 3 SE at
    the pooled n (about a point)."""
    hits, n = _pooled(f"covered {level}%")
    nominal = level / 100
    assert hits / n >= nominal - 3 * calibration.mc_se(nominal, n), (hits, n)


def test_false_verdicts_pooled_over_the_comparisons():
    """Every false "differs" and false equivalence, pooled: 5% plus 3 SE at
    the pooled n (under a point)."""
    for ending in ("false differs", "false equivalence"):
        hits, n = _pooled(ending)
        assert hits / n <= 0.05 + 3 * calibration.mc_se(0.05, n), (ending, hits, n)


def test_the_plan_keeps_its_power_promise_without_oversizing():
    """At a true ratio of 1 and dispersion 3, "equivalent" at least as often
    as the plan's 90% less three Monte Carlo SE, with plans that are not
    oversized: the median run within half again of what planning.needed
    says suffices at the true dispersion, and at most a quarter of the
    plans at the cap."""
    t = _tally("nb-3", 1.0, SIMS)
    p = t.share("flavour power")
    assert p >= calibration.PLAN_POWER - 3 * calibration.mc_se(calibration.PLAN_POWER, SIMS), \
        _rows(t)
    planned, final, run = calibration.median_boots(t)
    assert run <= 1.5 * t.needed and t.capped / t.sims <= 0.25, _rows(t)


def test_the_aberrant_boot_is_named():
    """Where the aberrant boot ran (it may be lost, or cut by the budget),
    the A/A verdict names that very boot (not another of its flavour), in
    whichever flavour it fell, at least 90% of the time."""
    t = _tally("aberrant-3", EDGE, SIMS)
    for flavour in calibration.FLAVOURS:
        key = f"flavour, {calibration.ABERRANT_IN} {flavour}: named"
        assert t.n(key) > SIMS / 3 and t.share(key) >= 0.90, _rows(t)
