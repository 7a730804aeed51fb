"""The verdicts, calibrated: experiments of the demo's A/A design
simulated from the model the verdicts assume (analysis/calibration.py),
2,000 a point, fixed seeds.  Goals: the 95% interval covers the true ratio
in at least 93% of experiments at every point; at a true ratio of 1,
"differs" comes within three Monte Carlo standard errors of 5%; at a true
ratio of exactly 1 + the margin, "equivalent" comes at most three of them
above 5% (two one-sided tests are conservative where the interval is wide
against the margin, so below is allowed); a twofold ratio is found.
"""


import pytest


from analysis import calibration


@pytest.fixture(scope="module")
def points():
    boots = calibration.design_boots()
    return calibration.grid(boots)


def _where(p):
    return f"dispersion {p.phi}, ratio {p.ratio}: " + " ".join(calibration.table([p])[1])


def test_the_95_percent_interval_covers_the_true_ratio(points):
    for p in points:
        assert p.share("covered") >= 0.93, _where(p)


def test_false_differences_are_near_five_percent(points):
    for p in (p for p in points if p.ratio == 1):
        assert abs(p.share("differs") - 0.05) <= 3 * p.mc_se(), _where(p)


def test_false_equivalence_at_the_margin_is_at_most_five_percent(points):
    for p in (p for p in points if p.ratio == 1 + calibration.MARGIN):
        assert p.share("equivalent") <= 0.05 + 3 * p.mc_se(), _where(p)


def test_a_twofold_ratio_is_found(points):
    for p in (p for p in points if p.ratio == 2):
        assert p.share("differs") >= 0.99, _where(p)


def test_the_plan_keeps_its_power_promise(points):
    """The plan's purpose: at dispersion 1 and a true ratio of 1 the A/A
    test decides "equivalent" as often as the plan promised (its boots were
    searched for on simulations of their own; these are independent)."""
    p = next(p for p in points if p.phi == 1 and p.ratio == 1)
    promise = calibration.PLAN_POWER
    assert p.share("equivalent") >= promise - 3 * p.mc_se(promise), _where(p)
