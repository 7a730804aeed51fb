"""The lab on instruction time (run.py --clock icount): the listing's own
one-instruction window fails without -singlestep, off never does, a phase
seed repeats its calls, and failures follow the model's prediction.

Untraced inode-loop boots (the walker alone) at -icount shift=4, 30 guest
seconds, a phase seed each.  Sizing, from boots measured when this was
written: gcc49-exact made 12 to 17 failures a boot (6 boots), so four
boots without any is p < 1e-20; loop width 2 (W = 5) made 75 in one
boot, width 16 (W = 33) 519 and 521.  The model is checked at those two
doses, 6.6x apart, with 99% intervals (a 95% one would fail one run in
twenty by design): two width-2 boots give about 160 failures, +-22% at
99%; one width-16 boot about 520, +-11%.  Measured/predicted was 0.90 to
1.08 in every condition then.
"""

import subprocess

import pytest

from tests.boots import boot_many, icount_args
from common import PY, REPO

from analysis import model

pytestmark = pytest.mark.guest

SHIFT = 4
EXACT_BOOTS = 4
DOSES = {"w2": (2, 2), "w16": (16, 1)}      # name: (loop width, boots)


def counting(tmp_path_factory, name, window, seeds, width=1, shift=SHIFT,
             flavours=("unpatched",), passes=None):
    specs = []
    for flavour, seed in ((f, s) for s in seeds for f in flavours):
        out = tmp_path_factory.mktemp(f"{name}-{flavour}-{seed}")
        limit = ["--passes", str(passes), "--duration", "120"] if passes else []
        specs.append((out, flavour, "inode-loop", *icount_args(seed, shift), *limit,
                      "--append", f"ext4.chksum_window={window} "
                                  f"ext4.chksum_window_width={width}"))
    runs = boot_many(specs)
    for run in runs:
        assert run.proc.returncode == 0, run.proc.stderr + run.console[-2000:]
        assert run.status.clock["kind"] == "icount" and not run.status.singlestep
        assert run.status.checksum_calls > 0 and run.status.interrupts
    return runs


@pytest.fixture(scope="module")
def exact(tmp_path_factory):
    return counting(tmp_path_factory, "exact", "gcc49-exact", range(1, EXACT_BOOTS + 1))


@pytest.fixture(scope="module")
def doses(tmp_path_factory):
    return {name: counting(tmp_path_factory, name, "gcc49", range(1, boots + 1), width=width)
            for name, (width, boots) in DOSES.items()}


def test_the_listings_window_fails_without_singlestep(exact):
    assert "-singlestep" not in (exact[0].out / "cmdline.txt").read_text()
    assert sum(r.status.checksum_failures_total for r in exact) >= 1


def test_window_off_never_fails(tmp_path_factory):
    runs = counting(tmp_path_factory, "off", "off", (1,), flavours=("unpatched", "patched"))
    for run in runs:
        assert run.status.checksum_failures_total == 0
        assert run.fields("checksum-invalid") == ["0"]
        assert int(run.fields("passes")[0]) >= 1


def test_a_phase_seed_repeats_its_calls(tmp_path_factory):
    """The same kernel, settings, seed and passes: the same checksum calls
    within 0.5%.  Bounded by time instead, boots of one seed can differ by
    a pass (about 5%): the guest time spent idle waiting for block I/O
    follows the host's clock."""
    runs = counting(tmp_path_factory, "again", "gcc49-exact", (1, 1), passes=6)
    first, second = (r.status.checksum_calls for r in runs)
    assert abs(second - first) <= 0.005 * first, (first, second)
    assert [r.status.passes for r in runs] == [6, 6]
    assert all(r.fields("passes") == ["6"] for r in runs)


@pytest.mark.parametrize("dose", DOSES)
def test_failures_follow_the_model(dose, doses):
    """Measured / predicted: its 99% interval covers 1 and is within +-30%."""
    width = DOSES[dose][0]
    runs = doses[dose]
    predicted = sum(r.status.checksum_calls * model.per_call(
        "gcc49", width, r.status.interrupts, SHIFT) for r in runs)
    measured = sum(r.status.checksum_failures_total for r in runs)
    ratio, (lo, hi) = model.ratio_to_model(measured, predicted, conf=0.99)
    what = f"{measured} failures against {predicted:.1f} predicted: {ratio:.2f} ({lo:.2f}-{hi:.2f})"
    assert lo <= 1 <= hi, what
    assert hi / ratio - 1 <= 0.30 and 1 - lo / ratio <= 0.30, what


@pytest.mark.parametrize("bad, why", [
    (["--clock", "icount", "--smp", "2"], "needs --smp 1"),
    (["--clock", "icount", "--phase-seed", "-1"], "from 0 to 2^32-1"),
])
def test_bad_clock_settings_are_one_line(tmp_path, bad, why):
    """QEMU 7.2's icount runs every vCPU on one thread and can starve one,
    and the walker's seeds are 32-bit: run.py says so in one line and boots
    nothing."""
    proc = subprocess.run([PY, str(REPO / "guest/run.py"), "--scenario", "lab-check",
                           *bad, "--out", str(tmp_path / "o")],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert why in proc.stderr
    assert not (tmp_path / "o").exists()
