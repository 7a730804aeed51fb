"""The lab on instruction time (run.py --clock icount): the listing's own
one-instruction window fails without -singlestep, off never does, a phase
seed repeats its calls, and failures follow the model's prediction.

Untraced inode-load boots at -icount shift=4 with a phase seed each.
Sizing (SIZING below, measured before these tests were written): a 30 s
gcc49-exact boot makes about EXACT_PER_BOOT failures, so EXACT_BOOTS
boots without any is p < 1e-9; the model is checked at two doses of
W x tau at least 4x apart, each pooled over enough boots that its 95%
interval is within +-30%.
"""

import sys

import pytest

from guest import boot_many, icount_args
from kernels import REPO

sys.path.insert(0, str(REPO / "analysis"))
import model  # noqa: E402

SHIFT = 4
EXACT_BOOTS = 8
WIDE_WIDTH = 2          # loop width 2: W = 5, five times gcc49-exact's W = 1
WIDE_BOOTS = 2


def counting(tmp_path_factory, name, window, seeds, width=1, shift=SHIFT, flavour="unpatched"):
    specs = []
    for seed in seeds:
        out = tmp_path_factory.mktemp(f"{name}-{seed}")
        specs.append((out, flavour, "inode-load", *icount_args(seed, shift),
                      "--append", f"ext4.chksum_window={window} "
                                  f"ext4.chksum_window_width={width}"))
    runs = boot_many(specs)
    for run in runs:
        assert run.proc.returncode == 0, run.proc.stderr + run.console[-2000:]
        assert run.status["clock"]["kind"] == "icount" and not run.status["singlestep"]
        assert run.status["checksum_calls"] > 0 and run.status["interrupts"]
    return runs


@pytest.fixture(scope="module")
def exact(tmp_path_factory):
    return counting(tmp_path_factory, "exact", "gcc49-exact", range(1, EXACT_BOOTS + 1))


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    return counting(tmp_path_factory, "wide", "gcc49", range(1, WIDE_BOOTS + 1),
                    width=WIDE_WIDTH)


def test_the_listings_window_fails_without_singlestep(exact):
    assert "-singlestep" not in (exact[0].out / "cmdline.txt").read_text()
    assert sum(r.status["checksum_failures_total"] for r in exact) >= 1


def test_window_off_never_fails(tmp_path_factory):
    runs = counting(tmp_path_factory, "off", "off", (1, 2))
    for run in runs:
        assert run.status["checksum_failures_total"] == 0
        assert run.fields("checksum-invalid") == ["0"]
        assert int(run.fields("passes")[0]) >= 1


def test_a_phase_seed_repeats_its_calls(tmp_path_factory, exact):
    """The same kernel, settings and seed: the same checksum calls within
    0.5% (block-I/O completions still arrive by the host's clock); another
    seed walks another phase."""
    again = counting(tmp_path_factory, "again", "gcc49-exact", (1,))[0]
    first = exact[0].status["checksum_calls"]
    assert abs(again.status["checksum_calls"] - first) <= 0.005 * first
    assert exact[0].status["phase_seed"] == again.status["phase_seed"] == 1


def _measured_over_predicted(runs, window, width):
    predicted = sum(r.status["checksum_calls"] * model.per_call(
        window, width, r.status["interrupts"], SHIFT) for r in runs)
    measured = sum(r.status["checksum_failures_total"] for r in runs)
    return model.ratio_to_model(measured, predicted), measured, predicted


@pytest.mark.parametrize("dose", ["exact", "wide"])
def test_failures_follow_the_model(dose, request):
    """Measured / predicted covers 1, known to +-30%, at W = 1 and W = 5."""
    runs = request.getfixturevalue(dose)
    window, width = ("gcc49-exact", 1) if dose == "exact" else ("gcc49", WIDE_WIDTH)
    (ratio, (lo, hi)), measured, predicted = _measured_over_predicted(runs, window, width)
    what = f"{measured} failures against {predicted:.1f} predicted: {ratio:.2f} ({lo:.2f}-{hi:.2f})"
    assert lo <= 1 <= hi, what
    assert hi / ratio - 1 <= 0.30 and 1 - lo / ratio <= 0.30, what
