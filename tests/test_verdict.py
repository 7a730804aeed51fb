"""Verdicts on counts of boots: each of the three verdicts where the data
carry it, in its own wording, and intervals that carry the dispersion's
own uncertainty."""

import math

import numpy as np


from analysis import calibration
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


def _decided(rates, n, sims, seed):
    """The share of sims experiments of n Poisson boots a condition at the
    given rates a boot that verdict.compare decides (+-25%)."""
    rng = np.random.default_rng(seed)
    got = 0
    for _ in range(sims):
        a, b = ([(int(k), M) for k in rng.poisson(r, n)] for r in rates)
        got += verdict.compare(a, b, margin=0.25).kind != "undecided"
    return got / sims


def test_the_boots_it_needs_decide_four_times_in_five():
    """The figure "undecided" gives is a power claim at the observed rates:
    experiments of that many boots decide (either way) 80% of the time, to
    within three Monte Carlo SE of 400 experiments (2 points each)."""
    a = [(30, M), (36, M), (27, M)]
    b = [(25, M), (29, M), (31, M)]
    v = verdict.compare(a, b, margin=0.25)
    assert v.kind == "undecided", v.text
    n = v.more + 3
    assert abs(_decided((31, 85 / 3), n, 400, seed=5) - 0.80) <= 3 * 0.02, n


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
    assert "no degree of freedom for the spread (one of the boots a condition): Poisson " \
        "assumed" in v.text


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


def test_boots_that_repeat_each_other_keep_poissons_interval():
    """A spread below Poisson is a diagnostic, not precision: the estimate
    is kept and flagged, the interval is no narrower than Poisson's."""
    boots = [(400, M), (402, M), (399, M), (401, M)]
    f = verdict.fit(boots)
    assert f.phi < 0.1 and f.scale() == 1.0 and f.below_poisson()
    phi, lo, hi, df = verdict.dispersion_ci(boots)
    assert df == 3 and hi < 1
    locked = verdict.rate(boots, spread=f)
    poisson = verdict.rate(boots, spread=verdict.Fit(1.0, 3.0, 3))
    assert (locked.lo, locked.hi) == (poisson.lo, poisson.hi)
    v = verdict.compare(boots, [(405, M), (398, M), (403, M), (400, M)])
    assert "below Poisson: boots repeat one trajectory; intervals use 1" in v.text
    assert v.phi == 1.0 and v.estimate < 0.1


def test_five_failures_against_none_are_undecided():
    """The exact interval of 5 against 0 at equal exposure includes 1
    (conditional binomial: 5 of 5 has a lower bound of 0.55 at 95%), and
    under-dispersed slices cannot narrow it."""
    a = [(1, M)] * 5
    b = [(0, M)] * 5
    v = verdict.compare(a, b)
    assert v.kind == "undecided" and v.ci95[0] < 1, v.text


def test_no_equivalence_on_assumed_poisson():
    """One boot a condition cannot show the boots spread no wider than
    Poisson: inside the margin, still undecided, and said why."""
    v = verdict.compare([(5000, M)], [(5010, M)], margin=0.10)
    assert 1 / 1.1 < v.ci90[0] and v.ci90[1] < 1.1
    assert v.kind == "undecided" and not v.within_margin, v.text
    assert "equivalence needs a spread estimated from replicated boots" in v.text


def test_overdispersion_can_turn_a_difference_undecided():
    a = [(40, M), (5, M), (45, M)]
    b = [(20, M), (22, M), (18, M)]
    assert verdict.compare(a, b).kind == "undecided"
    # The same ratio from boots that agree, and more of them: a difference.
    assert verdict.compare([(62, M), (58, M), (60, M)],
                           [(38, M), (42, M), (40, M)]).kind == "differs"


def test_the_plan_figure_puts_the_interval_inside_the_margin():
    """aa_failures' claim: with that many failures a flavour, at a true ratio
    of 1, the 90% interval of the ratio lies inside +-10% 95% of the time
    (the normal approximation: 200 Poisson boots a flavour, t near the
    normal; 1,000 experiments, Monte Carlo SE 0.7 points); with a quarter
    fewer failures it does not."""
    k = verdict.aa_failures(0.10, 0.95)
    rng = np.random.default_rng(11)

    def inside(total):
        got = 0
        for _ in range(1000):
            a, b = ([(int(x), M) for x in rng.poisson(total / 200, 200)] for _ in range(2))
            lo, hi = verdict.compare(a, b, margin=0.10).ci90
            got += 1 / 1.1 <= lo and hi <= 1.1
        return got / 1000
    assert abs(inside(k) - 0.95) <= 3 * 0.007
    assert inside(0.75 * k) < 0.95 - 3 * 0.007


def test_precision_of_a_rate():
    r = verdict.rate([(45, M)])
    assert 0.25 < r.half_width() < 0.35
    assert verdict.rate([(0, M)]).half_width() == math.inf


def test_an_aberrant_boot_is_flagged_in_whichever_condition_holds_it():
    """Twenty phase-seed pairs at dispersion 3 and 500 failures a boot, one
    boot at four times its mean: the boot itself is named (not its pair's
    partner, whose residual within the pair mirrors it), with what the
    other boots predict for it."""
    rng = np.random.default_rng(4)
    blocks = [list(range(20))] * 2
    for side in (0, 1):
        boots = [[(int(k), M) for k in calibration.draw(rng, 500, 3, 20)] for _ in range(2)]
        boots[side][7] = (4 * boots[side][7][0], M)
        found = verdict.aberrant(boots, blocks)
        assert [(a.condition, a.boot) for a in found] == [(side, 7)], found
        assert 300 < found[0].expected < 700 and found[0].residual > found[0].threshold


def test_every_aberrant_boot_of_an_unblocked_comparison_is_named():
    """Without pairs (one block of every boot, as an unblocked comparison
    has it) no two residuals mirror each other: two aberrant boots, one in
    each condition, are both named."""
    rng = np.random.default_rng(5)
    boots = [[(int(k), M) for k in calibration.draw(rng, 500, 3, 20)] for _ in range(2)]
    boots[0][3] = (4 * boots[0][3][0], M)
    boots[1][11] = (4 * boots[1][11][0], M)
    found = verdict.aberrant(boots, [[0] * 20] * 2)
    assert sorted((a.condition, a.boot) for a in found) == [(0, 3), (1, 11)], found


def test_boots_that_follow_the_model_are_seldom_flagged():
    """The flag's family-wise rate over a comparison's boots: at most 5%
    (plus three Monte Carlo SE of 400 comparisons), for many boots at
    dispersion 3 and for the window comparison's four low-count pairs."""
    rng = np.random.default_rng(6)
    for mean, phi, n in ((500, 3, 20), (16, 1.5, 4)):
        flagged = sum(bool(verdict.aberrant(
            [[(int(k), M) for k in calibration.draw(rng, mean, phi, n)] for _ in range(2)],
            [list(range(n))] * 2)) for _ in range(400))
        assert flagged / 400 <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 400), (mean, flagged)


def test_undecided_asks_for_paired_boots_and_says_when_they_pass_the_cap():
    """Paired boots estimate the spread on n - 1 df, not 2n - 2: fewer df,
    more boots asked; boots beyond the run's cap are said to be."""
    a = [(52, M), (47, M), (56, M)]
    b = [(50, M), (45, M), (60, M)]
    spread = verdict.fit_blocked([a, b], [list(range(3))] * 2)
    unpaired = verdict.compare(a, b, 0.10, spread=spread)
    paired = verdict.compare(a, b, 0.10, spread=spread, paired=True)
    assert unpaired.kind == paired.kind == "undecided"
    assert paired.more > unpaired.more
    capped = verdict.compare(a, b, 0.10, spread=spread, paired=True, cap=20)
    assert f"({3 + capped.more} in all, above the run's cap of 20, so not within one " \
        "run)" in capped.text, capped.text
    assert "above the run's cap" not in verdict.compare(a, b, 0.10, spread=spread,
                                                          paired=True, cap=500).text
