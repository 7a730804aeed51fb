"""The emulated GCC 4.9.4 window really corrupts checksums, and only when on.

The issue asks for one failure within 120 s of guest time.  inode-load
(one inode worker per CPU, loadgen -g 1 beside them) gave 24 genuine
failures in 120 s (patched flavour; 11 in 60 s in an earlier unpatched
run), so a 120 s run misses with p < 1e-5.  The off runs must show none.
"""

import pytest

from guest import boot

DURATION = "120"


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
