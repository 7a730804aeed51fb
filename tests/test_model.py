"""The failure model, the interrupt counts it reads, the A/A plan and the
unclamped dispersion (host only)."""

import math
import random

import pytest


from analysis import calibration
from guest.host import console_lines
from guest.host import interrupts
from analysis import model
from analysis import planning
from analysis import verdict


def test_loop_instructions_are_counted_from_the_labels(tmp_path):
    smap = tmp_path / "System.map"
    smap.write_text("ffffffc008290000 T ext4_chksum_gcc49\n"
                    "ffffffc008290048 t ext4_chksum_gcc49_window_start\n"
                    "ffffffc008290050 t ext4_chksum_gcc49_window_end\n"
                    "ffffffc008290068 t ext4_chksum_gcc49_exact_window\n")
    assert model.loop_instructions(smap) == 2
    smap.write_text("ffffffc008290000 T ext4_chksum_gcc49\n")
    assert model.loop_instructions(smap) is None


def test_fatal_boundaries():
    assert model.fatal_boundaries("off", 1) == 0
    # The load alone.
    assert model.fatal_boundaries("gcc49-exact", 1) == 1
    # subs and b.ne each pass, then the load.
    assert model.fatal_boundaries("gcc49", 1) == 3
    assert model.fatal_boundaries("gcc49", 8) == 17
    assert model.fatal_boundaries("gcc49", 8, loop_insns=3) == 25


def test_per_call_is_w_lambda_tau():
    irqs = {"seconds": 30.0, "idle_seconds": 0.0, "task_seconds": 30.0, "cpus": 1,
            "timer": 30_000, "device": 3_000}
    # 1,000 timer interrupts a second, 16 ns an instruction.
    assert model.per_call("gcc49-exact", 1, irqs, 4) == pytest.approx(1.6e-5)
    # Device interrupts land where a timer interrupt has: no term of their own.
    assert model.per_call("gcc49", 1, irqs, 4) == pytest.approx(3 * 1000 * 16e-9)
    assert model.per_call("gcc49-exact", 1, irqs, 6) == pytest.approx(6.4e-5)
    assert model.per_call("off", 1, irqs, 4) == 0
    # A tenth of the time idle (its ticks land on no task code), a tenth in
    # handlers: 27,000 ticks on 24 s of task code.
    irqs.update(idle_seconds=3.0, task_seconds=24.0)
    assert model.per_call("gcc49-exact", 1, irqs, 4) == pytest.approx(27_000 / 24 * 16e-9)


def test_ratio_to_model_interval():
    ratio, (lo, hi) = model.ratio_to_model(50, 50.0)
    assert ratio == 1 and lo < 0.8 and 1.25 < hi < 1.4
    _, (lo2, hi2) = model.ratio_to_model(50, 50.0, phi=2)
    assert lo2 < lo and hi2 > hi
    # The prediction's own relative variance widens the interval, less than
    # adding the two half-widths would (they add in quadrature).
    _, (lo3, hi3) = model.ratio_to_model(10_000, 10_000.0)
    _, (lo4, hi4) = model.ratio_to_model(10_000, 10_000.0, predicted_rel_var=0.01)
    assert lo4 < lo3 and hi4 > hi3
    assert math.log(hi4) < math.log(hi3) + 1.96 * 0.1
    assert math.log(hi4) > 1.96 * 0.1
    assert model.ratio_to_model(0, 5.0, predicted_rel_var=0.01)[1][0] == 0


def test_aa_failures_is_the_normal_approximations_figure():
    """Equivalence within +-10% at 95% power (the 90% interval inside the
    margin) and dispersion 1: 2 x (1.645 + 1.960)^2 / ln(1.1)^2 = 2,861.1
    failures a flavour by the normal approximation, the issue's 5,700 in
    all."""
    assert verdict.aa_failures(0.10, 0.95) == 2862


def test_the_aa_plan_reaches_its_power_in_simulation():
    """The plan's boots (the normal approximation of "equivalent" itself,
    averaged over the dispersion estimate's distribution and floored as the
    intervals floor it) reach the plan's 90% in experiments simulated and
    analysed as the run is (1,000 of them: Monte Carlo SE 1 point), at
    dispersion 1 and 3; two thirds of them fall well short; the cap holds."""
    for phi in (1.0, 3.0):
        n = planning.aa_boots(200.0, phi, 0.10, 0.90, 100)
        assert calibration.power(200.0, 200.0, n, phi, 0.10, seed=1)[1] >= 0.90 - 3 * 0.0095
        assert calibration.power(200.0, 200.0, n * 2 // 3, phi, 0.10, seed=2)[1] < 0.80
    assert planning.aa_boots(200.0, 1.0, 0.10, 0.90, 5) == 5


def test_equivalence_cannot_be_planned_above_its_ceiling():
    """At a true ratio of 1 "equivalent" excludes "differs", which comes
    about 5% of the time once the spread is above Poisson's (on Poisson
    boots the floor at 1 and t make it rarer): 96% is then out of reach,
    and a plan for it hits the cap."""
    assert planning.aa_boots(200.0, 1.5, 0.10, 0.96, 500) == 500
    assert planning.aa_boots(200.0, 1.5, 0.10, 0.90, 500) < 500


def test_the_plan_bounds_the_pilots_dispersion_from_above():
    """A pilot of two boots a flavour plans on its dispersion's median
    bound about a rate per flavour (2 df: X / chi-square's median on 2 df,
    1.386), wider than the estimate; a wide one on many more boots; a true
    difference between the flavours is not read as spread; the look plans
    on the point estimate within pairs about a rate per flavour, never
    below the plan: more when the spread turns out wider, and not for a
    true difference between the flavours."""
    steady = [[(500, 1), (540, 1)], [(525, 1), (500, 1)]]
    plan, fit = planning.plan_aa(steady, None, 0.10, 0.90, 40)
    assert fit.df == 2 and plan["conf"] == 0.50
    assert plan["phi"] == pytest.approx(fit.chi2 / 1.386, rel=1e-3) and plan["phi"] > fit.phi
    assert plan["boots"] > planning.aa_boots(516.25, fit.phi, 0.10, 0.90, 40)
    wide = [[(500, 1), (620, 1)], [(560, 1), (400, 1)]]
    assert planning.plan_aa(wide, None, 0.10, 0.90, 40)[0]["boots"] > plan["boots"]
    # The patched pilot a quarter higher: its spread scales with it (at
    # most 1.25 times), where lumped the four boots read dispersion 9.
    shifted = [steady[0], [(round(k * 1.25), n) for k, n in steady[1]]]
    _, fit_shifted = planning.plan_aa(shifted, None, 0.10, 0.90, 40)
    assert fit_shifted.phi <= 1.25 * fit.phi + 1e-9
    assert verdict.fit(shifted[0] + shifted[1]).phi > 5
    half = (plan["boots"] + 1) // 2
    a = [(500 + (i % 3) * 10, 1) for i in range(half)]
    b = [(505 + (i % 2) * 10, 1) for i in range(half)]
    labels = [("seed", i) for i in range(half)]
    assert planning.look(a[:-1], b, labels[:-1], labels, 0.10, 0.90, 40,
                         plan["boots"]) is None
    again = planning.look(a, b, labels, labels, 0.10, 0.90, 40, plan["boots"])
    assert again["at"] == half and again["boots"] == plan["boots"]
    wider = [(500 + (i % 2) * 140, 1) for i in range(half)]
    again = planning.look(wider, b, labels, labels, 0.10, 0.90, 40, plan["boots"])
    assert again["boots"] > plan["boots"] and again["phi"] > 2
    # A quarter more failures in one flavour, boot for boot: no spread.
    higher = [(round(k * 1.25), n) for k, n in b]
    again = planning.look(a, higher, labels, labels, 0.10, 0.90, 40, plan["boots"])
    assert again["phi"] == 1 and again["boots"] == plan["boots"]


def test_unclamped_dispersion_tells_phase_lock_from_poisson():
    # Three boots of two kernels at shift 6 with a fixed phase: 19, 20, 19
    # and 26, 27, 29 in about the same calls.
    locked = verdict.dispersion_ci([(19, 1), (20, 1), (19, 1)], [(26, 1), (27, 1), (29, 1)])
    assert locked[2] < 1
    rng = random.Random(5)
    boots = [(sum(rng.random() < 0.02 for _ in range(1000)), 1000) for _ in range(12)]
    phi, lo, hi, df = verdict.dispersion_ci(boots)
    assert df == 11 and lo <= 1 <= hi
    assert verdict.dispersion_ci([(5, 1)])[0] is None


BEGIN, END = console_lines.TAGS["PROC_BEGIN"], console_lines.TAGS["PROC_END"]
CONSOLE = f"""\
{BEGIN} before
1.52 1.02
           CPU0       
 11:        510     GIC-0  27 Level     arch_timer
 13:          7     GIC-0  33 Level     uart-pl011
 40:        120     GIC-0  35 Level     virtio0
IPI0:          0       Rescheduling interrupts
IPI1:          0       Function call interrupts
Err:          0
cpu  10 0 30 102 0 0 1 0 0 0
{END} before
workers: 1
{BEGIN} after
31.52 3.02
           CPU0       
 11:      30530     GIC-0  27 Level     arch_timer
 13:          9     GIC-0  33 Level     uart-pl011
 40:       3120     GIC-0  35 Level     virtio0
IPI0:          4       Rescheduling interrupts
IPI1:          0       Function call interrupts
Err:          0
cpu  900 0 2100 302 0 0 50 0 0 0
{END} after
"""


def test_interrupt_counts_around_the_scenario():
    got = interrupts.around_scenario(CONSOLE)
    assert got == {"seconds": 30.0, "idle_seconds": 2.0, "irq_seconds": 0.49,
                   "task_seconds": 27.51,
                   "timer": 30_020, "device": 3_002, "ipi": 4, "cpus": 1}


@pytest.mark.parametrize("cut", [f"{END} after", f"{BEGIN} after", "cpu  900"])
def test_interrupt_counts_of_a_cut_console_are_none(cut):
    assert interrupts.around_scenario(CONSOLE[:CONSOLE.index(cut)]) is None


def test_the_hardware_extrapolation():
    """MTBF = 1 / (calls/s x lambda x instruction time) at W = 1; the time
    to decide is the A/A plan's failures at that rate."""
    rows = model.hardware_rows(2862)
    what, lam, mtbf, decide = rows[0]
    assert lam == 250 and mtbf == pytest.approx(1 / (50 * 250 * 0.5e-9))
    assert decide == pytest.approx(2862 * mtbf)
    assert model.duration(mtbf) == "1.85 days" and model.duration(30) == "30 s"


def test_the_budget_states_the_power_of_the_run_it_admits():
    """Ten minutes left on two jobs, 300 s of other boots still to run and
    an A/A round of 60 s: (1,200 - 300) / 60 = 15 boots a flavour; nothing
    left, none.  A plan whose A/A the budget cuts says what it admits and
    the power there beside the power planned."""
    assert planning.budget_boots(600, 2, 300, 60) == 15
    assert planning.budget_boots(100, 2, 300, 60) == 0
    line = planning.describe({"what": "unpatched/patched at width 16", "boots": 21,
                              "per_boot": [530.0, 530.0], "ratio": 1.0,
                              "source": "the pilot's, measured", "verdict": "equivalent",
                              "power": 0.91, "budget": {"boots": 12, "power": 0.62}})
    assert line.endswith("91.0% power to find it \"equivalent\"; the budget admits about 12 "
                         "a condition: 62% power there"), line
