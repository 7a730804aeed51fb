"""Verdicts on counts: a wide interval is undecided, never "no effect"."""

import math
import sys

from kernels import REPO

sys.path.insert(0, str(REPO / "analysis"))
import verdict  # noqa: E402

M = 1e6


def test_a_wide_interval_is_undecided_and_says_what_it_needs():
    # The fresh demo's cells: 5 failures against 0 would have read as
    # "does not change"; 3 against 2 is no evidence either way.
    v = verdict.compare([(3, 4 * M)], [(2, 4 * M)], names=("patched", "unpatched"))
    assert v.kind == "undecided"
    assert v.ci95[0] < 1 < v.ci95[1]
    assert v.more > 50
    assert v.text.startswith(f"undecided: about {v.more} more failures")
    assert "does not change" not in v.text and "no effect" not in v.text


def test_equal_rates_with_many_failures_are_equivalent():
    a = [(400, M)] * 10
    b = [(410, M)] * 10
    v = verdict.compare(a, b)
    assert v.kind == "equivalent", v.text
    assert 1 / 1.25 <= v.ci90[0] and v.ci90[1] <= 1.25
    assert v.text.startswith("equivalent within +-25%")


def test_the_margin_is_settable():
    a, b = [(400, M)] * 10, [(410, M)] * 10
    assert verdict.compare(a, b, margin=0.01).kind == "undecided"


def test_a_clear_difference_differs():
    v = verdict.compare([(50, M)] * 4, [(10, M)] * 4)
    assert v.kind == "differs"
    assert v.ci95[0] > 1
    assert abs(v.ratio - 5) < 1e-9


def test_failures_against_none_differ_with_an_infinite_ratio():
    v = verdict.compare([(20, M), (25, M)], [(0, 3 * M)], names=("gcc49", "off"))
    assert v.kind == "differs"
    assert v.ratio == math.inf and v.ci95[1] == math.inf and v.ci95[0] > 1


def test_no_failures_at_all_is_undecided():
    v = verdict.compare([(0, M)], [(0, M)])
    assert v.kind == "undecided" and v.ratio is None


def test_spread_between_boots_widens_the_interval():
    boots = [(25, M), (8, M), (30, M)]
    assert verdict.dispersion(boots) > 3
    wide = verdict.rate(boots)
    narrow = verdict.rate(boots, phi=1.0)
    assert wide.lo < narrow.lo and wide.hi > narrow.hi
    assert abs(wide.rate - 21e-6) < 1e-12
    # Boots that agree better than Poisson are not narrowed below it.
    assert verdict.dispersion([(20, M), (20, M), (20, M)]) == 1.0


def test_overdispersion_can_turn_a_difference_undecided():
    a = [(40, M), (5, M), (45, M)]
    b = [(20, M), (22, M), (18, M)]
    assert verdict.compare(a, b).kind == "undecided"
    # The same totals from boots that agree: a clear difference.
    assert verdict.compare([(30, M)] * 3, [(20, M)] * 3).kind != "equivalent"


def test_the_more_failures_estimate_is_enough_to_decide():
    a, b = [(20, M)], [(20, M)]
    v = verdict.compare(a, b)
    assert v.kind == "undecided"
    s = 1.2 * (1 + v.more / 40)
    bigger = verdict.compare([(round(20 * s), s * M)], [(round(20 * s), s * M)])
    assert bigger.kind == "equivalent", bigger.text


def test_the_estimate_uses_rates_not_counts():
    # The fresh demo's flavour comparison: 87 failures in 9.5 M calls
    # against 146 in 23.4 M, rate ratio 1.46.
    a, b = [(87, 9.5 * M)], [(146, 23.4 * M)]
    v = verdict.compare(a, b, phi=2.5)
    assert v.kind == "undecided" and v.ratio > 1.4
    assert 30 < v.more < 200
    s = 1.2 * (1 + v.more / 233)
    bigger = verdict.compare([(round(87 * s), 9.5 * M * s)],
                             [(round(146 * s), 23.4 * M * s)], phi=2.5)
    assert bigger.kind == "differs", bigger.text


def test_precision_of_a_rate():
    r = verdict.rate([(45, M)])
    assert 0.25 < r.half_width() < 0.35
    assert verdict.rate([(0, M)]).half_width() == math.inf
