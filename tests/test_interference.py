"""The diagnosis's ranking and kinds (analysis/interference.py) on
identity sets and failures built by hand: the guest test
(tests/test_interference_guest.py) shows them on real boots; these pin
the rules a boot may not happen to exercise."""

from analysis import interference
from analysis.documents import Computation, Diagnosis, Failure, Ran

NAMES = ["hrtimer ext4_chksum_buffer_flip", "hrtimer tick_nohz_handler",
         "irq arch_timer_handler_virt", "softirq TIMER", "timer process_timeout",
         "switch to kworker/0:1"]
FLIP, TICK, IRQ, SOFTIRQ, TIMER, SWITCH = range(len(NAMES))


def test_inside_every_failure_and_rarely_in_good_ones_leads():
    """A callback inside all failing computations and 2% of good ones
    ranks before the tick inside all failing and half of good ones."""
    failing = [{FLIP, TICK, IRQ}] * 5
    good = [{TICK, IRQ}] * 49 + [{TICK, IRQ, FLIP}] + [set()] * 50
    out = interference.rank(failing, good, NAMES)
    assert [s.name for s in out] == [NAMES[FLIP], NAMES[TICK], NAMES[IRQ]]
    assert out[0].failing_share == 1.0 and out[0].good_share == 0.01


def test_ties_rank_innermost_first():
    """Without good computations to tell them apart, the functions come
    before the irq handler, softirq vector or switch that ran them."""
    failing = [{SWITCH, SOFTIRQ, IRQ, TIMER, FLIP}] * 3
    out = interference.rank(failing, [], NAMES)
    assert [s.name for s in out] == [NAMES[FLIP], NAMES[TIMER], NAMES[IRQ], NAMES[SOFTIRQ],
                                     NAMES[SWITCH]]
    assert all(s.good_share is None for s in out)


def test_in_some_failures_ranks_after_in_every_one():
    failing = [{TIMER, IRQ}, {IRQ}, {IRQ}]
    out = interference.rank(failing, [{IRQ}] * 10, NAMES)
    assert [s.name for s in out] == [NAMES[IRQ], NAMES[TIMER]]


def failure(inside, attributed=False):
    ran = [Ran(ts=150, cpu=0, what=n.split()[0], name=n, detail="") for n in inside]
    return Failure(kind="inode", ino=12, dev=0, ts=200, meta_block=None, cpu=0, tid=7,
                   source="verify", stored=1, computed=2, group_calls=8,
                   attributed=attributed, history_covered=None, call=None,
                   window_arrivals=[], block_sector=None, block=None,
                   computation=Computation(begin=100, end=200, cpus=[0], calls=8,
                                           inside=ran),
                   diagnosis=None)


def test_each_kind_of_diagnosis():
    suspects = interference.rank([{FLIP, IRQ}], [{IRQ}], NAMES)
    d = interference.diagnose(failure([NAMES[IRQ], NAMES[FLIP]]), suspects, 1)
    assert isinstance(d, Diagnosis) and d.kind == "interference"
    assert [s.name for s in d.suspects] == [NAMES[FLIP], NAMES[IRQ]]
    assert interference.diagnose(failure([NAMES[FLIP]], attributed=True), suspects,
                                 1).kind == "window"
    nothing = interference.diagnose(failure([]), [], 1)
    assert nothing.kind == "nothing" and "no block completion" in nothing.remains


def test_nothing_seen_where_the_history_does_not_reach_is_not_nothing():
    d = interference.diagnose(failure([]), [], 0, history_covered=False)
    assert d.kind == "not covered" and d.remains is None and not d.suspects


def test_coverage_of_a_span_on_every_cpu():
    spans = {0: [(100, 300)], 1: [(150, 300)]}
    assert interference.covered(spans, [0], 100, 200)
    assert not interference.covered(spans, [0, 1], 100, 200)
    assert not interference.covered(spans, [2], 100, 200)
    assert interference.covered(None, [0, 1, 2], 0, 1)
