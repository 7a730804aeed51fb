"""The emulated GCC 4.9.4 window corrupts checksums when on, more the wider
it is, and never when off.  Untraced inode-load boots: failures are the
kernel's own console lines (every checksum kind, guest/kmsg.py), calls
ext4.chksum_calls.

Sizing: untraced width-1 boots gave 14 to 57 failures in 30 s, so a 60 s
boot without one is p < 1e-6.  The width sweep compares widths 1 and 16
of one flavour with the experiment's own verdict: width 16 must fail
more often per call, decided at 95%.  Widths 1 and 8 would not do: boots
of one width differ up to 4-fold (56 and 193 in 30 s at width 8, 14 and
57 at width 1), while width 16 gave 166 and 173.
"""

import sys

import pytest

from guest import boot
from kernels import REPO

sys.path.insert(0, str(REPO / "analysis"))
import verdict  # noqa: E402

DURATION = "60"


def counting_boot(tmp_path_factory, flavour, window, width=1):
    out = tmp_path_factory.mktemp(f"{flavour}-{window}-w{width}")
    append = f"ext4.chksum_window={window} ext4.chksum_window_width={width}"
    run = boot(out, flavour, "inode-load", "--duration", DURATION, "--append", append)
    assert run.proc.returncode == 0, run.proc.stderr
    assert run.status["checksum_calls"] > 0
    return run


@pytest.fixture(scope="module")
def unpatched_width_1(tmp_path_factory):
    return counting_boot(tmp_path_factory, "unpatched", "gcc49", 1)


@pytest.mark.parametrize("flavour", ("unpatched", "patched"))
def test_gcc49_window_produces_checksum_failures(flavour, tmp_path_factory,
                                                 unpatched_width_1):
    run = unpatched_width_1 if flavour == "unpatched" else \
        counting_boot(tmp_path_factory, flavour, "gcc49")
    assert run.status["checksum_failures_total"] >= 1, run.console[-3000:]
    assert run.status["checksum_invalid"] == run.console.count("iget: checksum invalid")
    assert run.status["checksum_invalid"] == run.status["checksum_failures"]["inode"]


@pytest.mark.parametrize("flavour", ("unpatched", "patched"))
def test_window_off_produces_none(flavour, tmp_path_factory):
    run = counting_boot(tmp_path_factory, flavour, "off")
    assert int(run.fields("passes")[0]) >= 1
    assert run.status["checksum_failures_total"] == 0
    assert run.fields("checksum-invalid") == ["0"]


def test_a_wider_window_fails_more_often(tmp_path_factory, unpatched_width_1):
    wide = counting_boot(tmp_path_factory, "unpatched", "gcc49", 16)
    w1, w16 = ([(r.status["checksum_failures_total"], r.status["checksum_calls"])]
               for r in (unpatched_width_1, wide))
    v = verdict.compare(w16, w1, names=("width 16", "width 1"))
    assert v.kind == "differs" and v.ratio > 1, v.text
