"""The emulated GCC 4.9.4 window really corrupts checksums, and only when on.

This machine gave 1 to 2 genuine failures per 60 s of guest time with the
window on (FACTS.md: 3).  The issue asks for one within 120 s; at 2 per
minute a 120 s run still misses with p = 1.8%, too flaky for CI, so the
runs last 180 s (mean 6, p = 0.25%).  The off runs must show none at all.
"""

import pytest

from guest import boot

DURATION = "180"


@pytest.mark.parametrize("flavour", ("unpatched", "patched"))
def test_gcc49_window_produces_checksum_failures(flavour, tmp_path):
    run = boot(tmp_path, flavour, "inode-load", "--duration", DURATION,
               "--append", "ext4.chksum_window=gcc49")
    assert run.proc.returncode == 0, run.proc.stderr
    assert run.status["checksum_invalid"] >= 1, run.console[-3000:]
    assert "iget: checksum invalid" in run.console


@pytest.mark.parametrize("flavour", ("unpatched", "patched"))
def test_window_off_produces_none(flavour, tmp_path):
    run = boot(tmp_path, flavour, "inode-load", "--duration", DURATION)
    assert run.proc.returncode == 0, run.proc.stderr
    assert int(run.fields("passes")[0]) >= 1
    assert run.status["checksum_invalid"] == 0
    assert run.fields("checksum-invalid") == ["0"]
