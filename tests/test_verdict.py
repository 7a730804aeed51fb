"""Verdicts on counts of boots: each of the three verdicts where the data
carry it, in its own wording, and intervals that carry the dispersion's
own uncertainty."""

import math

import numpy as np


from analysis import verdict

M = 1e6


def test_a_clear_difference_differs():
    a = [(52, M), (47, M), (55, M), (46, M)]
    b = [(11, M), (9, M), (12, M), (8, M)]
    v = verdict.compare(a, b)
    assert v.kind == "differs" and not v.within_margin
    assert v.ci95[0] > 1 and v.ratio == 200 / 40
    assert v.text.startswith("differs (a/b 5, 95% CI ")
    assert v.df == 6 and "in 4 and 4 boots; dispersion" in v.text
    assert "on 6 df, t intervals" in v.text


def test_a_difference_smaller_than_the_margin_says_so():
    a = [(10310, M), (10290, M), (10350, M), (10250, M)]
    b = [(10010, M), (9990, M), (10050, M), (9950, M)]
    v = verdict.compare(a, b, margin=0.10)
    assert v.kind == "differs" and v.within_margin, v.text
    assert v.text.startswith("differs, by less than the margin +-10% (ratio 0.91-1.10): 90% CI ")


def test_equal_rates_with_many_failures_are_equivalent():
    a = [(400, M), (385, M), (421, M), (396, M), (410, M), (388, M)]
    b = [(404, M), (417, M), (391, M), (399, M), (380, M), (412, M)]
    v = verdict.compare(a, b)
    assert v.kind == "equivalent", v.text
    assert 1 / 1.25 <= v.ci90[0] and v.ci90[1] <= 1.25
    assert v.text.startswith("equivalent within +-25% (ratio 0.80-1.25): 90% CI ")
    # The same data cannot show equivalence within a margin it cannot resolve.
    tight = verdict.compare(a, b, margin=0.01)
    assert tight.kind == "undecided" and tight.more > 0


def test_a_thin_case_is_undecided_with_the_boots_it_needs():
    a = [(3, M), (5, M), (4, M)]
    b = [(2, M), (4, M), (3, M)]
    v = verdict.compare(a, b, names=("patched", "unpatched"))
    assert v.kind == "undecided"
    assert v.ci95[0] < 1 < v.ci95[1]
    assert v.text.startswith(f"undecided: {v.more} more boots a condition "
                             f"({v.more + 3} in all) give 80% power to decide")


def test_the_boots_it_needs_decide_four_times_in_five():
    """The figure "undecided" gives is a power claim: experiments of that
    many boots, drawn at the observed rates, decide about 80% of the time
    (the planning uses z where the verdict uses t: at least 70% here)."""
    a = [(30, M), (36, M), (27, M)]
    b = [(25, M), (29, M), (31, M)]
    v = verdict.compare(a, b, margin=0.25)
    assert v.kind == "undecided", v.text
    n = v.more + 3
    rng = np.random.default_rng(5)
    decided = 0
    for _ in range(300):
        sa = [(int(k), M) for k in rng.poisson(31, n)]
        sb = [(int(k), M) for k in rng.poisson(85 / 3, n)]
        decided += verdict.compare(sa, sb, margin=0.25).kind != "undecided"
    assert decided / 300 >= 0.70, (n, decided)


def test_failures_against_none_differ_with_an_infinite_ratio():
    v = verdict.compare([(20, M), (25, M), (22, M)], [(0, M)] * 3, names=("gcc49", "off"))
    assert v.kind == "differs", v.text
    assert v.ratio == math.inf and v.ci95[1] == math.inf and v.ci95[0] > 1
    # Two boots leave one degree of freedom: t on it is too wide to decide.
    two = verdict.compare([(20, M), (25, M)], [(0, 3 * M)])
    assert two.kind == "undecided" and two.df == 1


def test_no_failures_at_all_is_undecided():
    v = verdict.compare([(0, M)], [(0, M)])
    assert v.kind == "undecided" and v.ratio is None


def test_one_boot_a_condition_says_poisson_is_assumed():
    v = verdict.compare([(15, M)], [(3, M)])
    assert v.df == 0 and v.phi == 1.0
    assert "one of the boots a condition: spread not estimable, Poisson assumed" in v.text


def test_few_boots_widen_the_interval_by_t():
    boots = [(20, M), (28, M), (24, M)]
    f = verdict.fit(boots)
    assert f.df == 2 and 0 < f.phi
    known = verdict.Fit(f.phi, f.chi2, 10_000)
    few, many = verdict.rate(boots, spread=f), verdict.rate(boots, spread=known)
    assert few.lo < many.lo and few.hi > many.hi
    assert f.level(0.95) > 0.99 and abs(known.level(0.95) - 0.95) < 1e-3


def test_spread_between_boots_widens_the_interval():
    boots = [(25, M), (8, M), (30, M)]
    assert verdict.fit(boots).phi > 3
    wide = verdict.rate(boots)
    narrow = verdict.rate(boots, spread=verdict.POISSON)
    assert wide.lo < narrow.lo and wide.hi > narrow.hi
    assert abs(wide.rate - 21e-6) < 1e-12


def test_boots_that_repeat_each_other_are_not_clamped_to_poisson():
    boots = [(400, M), (402, M), (399, M), (401, M)]
    f = verdict.fit(boots)
    assert f.phi < 0.1 and f.scale() == verdict.PHI_FLOOR
    phi, lo, hi, df = verdict.dispersion_ci(boots)
    assert df == 3 and hi < 1


def test_overdispersion_can_turn_a_difference_undecided():
    a = [(40, M), (5, M), (45, M)]
    b = [(20, M), (22, M), (18, M)]
    assert verdict.compare(a, b).kind == "undecided"
    # The same totals from boots that agree: a difference.
    assert verdict.compare([(31, M), (29, M), (30, M)],
                           [(19, M), (21, M), (20, M)]).kind == "differs"


def test_the_plan_figure_matches_the_power_calculation():
    """aa_failures: at 2,862 failures a flavour (+-10%, 95% power) the
    log ratio's standard error fits the margin (1.645 + 1.960) times."""
    k = verdict.aa_failures(0.10, 0.95)
    assert k == 2862
    assert abs(math.sqrt(2 / k) * (1.644854 + 1.959964) - math.log1p(0.10)) < 1e-3


def test_precision_of_a_rate():
    r = verdict.rate([(45, M)])
    assert 0.25 < r.half_width() < 0.35
    assert verdict.rate([(0, M)]).half_width() == math.inf
