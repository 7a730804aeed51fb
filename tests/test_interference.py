"""The diagnosis's ranking and kinds (analysis/interference.py) on
identity sets and failures built by hand: the guest test
(tests/test_interference_guest.py) shows them on real boots; these pin
the rules a boot may not happen to exercise."""

from analysis import chkwinlog, correlate, flight, interference, synthlog
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
    assert out[0].p < 1e-6 < out[1].p


def test_ties_rank_innermost_first():
    """Without good computations to tell them apart, the functions come
    before the irq handler, softirq vector or switch that ran them."""
    failing = [{SWITCH, SOFTIRQ, IRQ, TIMER, FLIP}] * 3
    out = interference.rank(failing, [], NAMES)
    assert [s.name for s in out] == [NAMES[FLIP], NAMES[TIMER], NAMES[IRQ], NAMES[SOFTIRQ],
                                     NAMES[SWITCH]]
    assert all(s.good_share is None for s in out)


def test_what_runs_as_often_in_good_computations_is_not_first():
    """The tick inside every failing and every good computation ranks
    after a writer inside 9 of 10 failing and no good one; and only the
    writer's p accuses it."""
    failing = [{TICK, FLIP}] * 9 + [{TICK}]
    out = interference.rank(failing, [{TICK}] * 40, NAMES)
    assert [s.name for s in out] == [NAMES[FLIP], NAMES[TICK]]
    assert out[0].p < interference.ALPHA and out[1].p == 1.0


def test_among_equals_inside_every_failure_first():
    failing = [{TIMER, IRQ}, {IRQ}, {IRQ, TIMER}, {IRQ}]
    out = interference.rank(failing, [{IRQ}] * 4 + [{IRQ, TIMER}] + [set()] * 3, NAMES)
    assert out[0].failing_share - out[0].good_share == out[1].failing_share - out[1].good_share
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
    failing = [{FLIP, IRQ}] * 6
    suspects = interference.rank(failing, [{IRQ}] * 30, NAMES)
    d = interference.diagnose(failure([NAMES[IRQ], NAMES[FLIP]]), suspects, 30)
    assert isinstance(d, Diagnosis) and d.kind == "interference"
    assert [s.name for s in d.suspects] == [NAMES[FLIP], NAMES[IRQ]]
    assert interference.diagnose(failure([NAMES[FLIP]], attributed=True), suspects,
                                 30).kind == "window"
    # What ran inside it ran inside every good computation too: not accused.
    same = interference.diagnose(failure([NAMES[IRQ]]), suspects, 30)
    assert same.kind == "undecided" and [s.name for s in same.suspects] == [NAMES[IRQ]]
    # One failure and no good computation prove nothing either.
    alone = interference.rank([{FLIP}], [], NAMES)
    assert interference.diagnose(failure([NAMES[FLIP]]), alone, 0).kind == "undecided"
    nothing = interference.diagnose(failure([]), [], 30)
    assert nothing.kind == "nothing" and "no block completion" in nothing.remains


def test_a_computation_the_log_does_not_hold_whole_is_not_covered():
    """Nothing seen is not nothing, and something seen is not an
    accusation, where the history does not reach the first call."""
    suspects = interference.rank([{FLIP}] * 6, [set()] * 30, NAMES)
    for inside in ([], [NAMES[FLIP]]):
        d = interference.diagnose(failure(inside), suspects, 30, whole=False)
        assert d.kind == "not covered" and d.remains is None


def test_coverage_of_a_span_on_every_cpu():
    spans = {0: [(100, 300)], 1: [(150, 300)]}
    assert interference.covered(spans, [0], 100, 200)
    assert not interference.covered(spans, [0, 1], 100, 200)
    assert not interference.covered(spans, [2], 100, 200)
    assert interference.covered(None, [0, 1, 2], 0, 1)


def test_a_flight_log_short_of_the_history_never_says_nothing(tmp_path):
    """A synthetic run cut to rings of 1, 3 and 64 records (flight.cut):
    where the rings lost the task's calls since its previous verdict, the
    failing group shrinks to what is left and would look whole; the
    diagnosis says "not covered" there (or "window", which an arrival in
    a window proves whatever else is missing), and with rings long enough
    says what the full log says."""
    s = synthlog.generate(seed=7)
    path = tmp_path / "log.bin"
    synthlog.write(path, s.header, s.records,
                   synthlog.trailer_for(s.header, s.records, 3_000_000_000))
    log = chkwinlog.read(path)
    full = [f.diagnosis.kind for f in correlate.Correlation(log).failures]
    assert "nothing" in full and "window" in full
    for history in (1, 3, 64):
        failures = correlate.Correlation(flight.cut(log, history)).failures
        for f in failures:
            if f.history_covered is False:
                assert f.diagnosis.kind in ("not covered", "window"), (history, f)
        if all(f.history_covered for f in failures):
            assert [f.diagnosis.kind for f in failures] == full
    assert any(f.history_covered is False for f in
               correlate.Correlation(flight.cut(log, 1)).failures)


def test_a_migrated_task_is_searched_on_each_cpu_while_it_was_there():
    """Calls on CPU 0 at 100 and 200, on CPU 1 at 300, the verdict on CPU 1
    at 400: CPU 0 from 100 until the task shows up on CPU 1, CPU 1 from
    then to the verdict."""
    assert interference.where([100, 200, 300], [0, 0, 1], 400, 1) == \
        [(0, 100, 300), (1, 300, 400)]
    assert interference.where([100, 200], [0, 0], 400, 0) == [(0, 100, 400)]
    assert interference.where([], [], 400, 2) == [(2, 400, 400)]


def test_a_kernel_thread_is_one_identity_on_every_cpu():
    assert {interference.task_family(c) for c in ("kworker/0:1H", "kworker/1:0H",
                                                   "kworker/u4:2")} == {"kworker"}
    assert interference.task_family("inode-loop") == "inode-loop"
