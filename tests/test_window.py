"""The emulated GCC 4.9.4 window really corrupts checksums, and only when on.

FACTS.md measured about 3 genuine failures per 60 s of this workload with
the window on; 120 s makes a run without one improbable (Poisson, mean
about 6: p < 0.3%), while the off runs must show none at all.
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
