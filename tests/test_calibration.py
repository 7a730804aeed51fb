"""The demo's answers, calibrated: whole demos simulated as experiment.json
documents, planned by the demo's plan and analysed by its own functions
(analysis/calibration.py), 400 a scenario and true A/A ratio, fixed
seeds.  Goals, each with three Monte Carlo standard errors of allowance:
the 95% interval covers the true ratio in at least 93% of demos; a true
ratio of 1 is called "differs" at most 5% of the time; a true ratio of
exactly 1 + the margin is claimed inside the margin (either verdict that
says so) at most 5% of the time; a true model is said not to fit at most
5% of the time.  And the plan keeps its power promise on Poisson boots.
"""

import functools

import pytest

from analysis import calibration

SIMS = 400
POINTS = [(s, r) for s in calibration.SCENARIOS for r in calibration.RATIOS]


@functools.cache
def _tally(scenario, ratio):
    return calibration.run(scenario, ratio, sims=SIMS, seed=1)


@pytest.fixture(params=POINTS, ids=lambda p: f"{p[0]}-{p[1]:g}")
def tally(request):
    return _tally(*request.param)


def _rows(t):
    return "\n".join(" | ".join(r) for r in calibration.table([t]))


def test_every_goal_holds(tally):
    for key, p, _ in calibration.goals(tally):
        n = tally.n(key)
        if key.endswith("covered"):
            assert p >= 0.93 - 3 * calibration.mc_se(0.93, n), _rows(tally)
        elif key.endswith(("false differs", "false equivalence", "false misfit")):
            assert p <= 0.05 + 3 * calibration.mc_se(0.05, n), _rows(tally)


def test_every_comparison_is_counted(tally):
    """Each demo gives the window, control and A/A verdicts and, where the
    model is true, its check by W: none silently missing."""
    keys = {k for k, _, _ in calibration.goals(tally)}
    for want in ("window power", "control covered", "control power", "flavour covered",
                 "exact flavours covered", "exact flavours false differs"):
        assert want in keys and tally.n(want) == SIMS, _rows(tally)
    if tally.aa_ratio == 1:
        assert {"flavour false differs", "model false misfit",
                "model W=33 false differs"} <= keys
    else:
        assert tally.n("flavour false equivalence") == SIMS


def test_coverage_pooled_over_the_scenarios():
    """Each scenario's demos show coverage to within about 4 points; pooled
    over the twelve scenario-ratio pairs the A/A's interval (the one whose
    spread is estimated at 500 failures a boot, where the floor at Poisson
    seldom acts) must cover 93% to within 3 SE (1.2 points)."""
    tallies = [_tally(*point) for point in POINTS]
    hits = sum(t.counts["flavour covered"][0] for t in tallies)
    n = sum(t.counts["flavour covered"][1] for t in tallies)
    assert hits / n >= 0.93 - 3 * calibration.mc_se(0.93, n), (hits, n)


def test_the_plan_keeps_its_power_promise():
    """At a true ratio of 1 and dispersion 3, "equivalent" at least as often
    as the plan's 90%, less three Monte Carlo SE (on Poisson boots the
    pilot's bound oversizes the plan, so only a wider spread tests it)."""
    t = _tally("nb-3", 1.0)
    p = t.share("flavour power")
    assert p >= calibration.PLAN_POWER - 3 * calibration.mc_se(calibration.PLAN_POWER, SIMS), \
        _rows(t)
