"""A boot's status.json read through its record (analysis/documents.py's
BootStatus): the current layout both ways, and the older, version-less
ones that results already recorded still hold."""

import json

import pytest

from analysis.documents import BOOT_VERSION, BootStatus, BootStatusError

# status.json as guest/run.py wrote it before versions, before the root,
# the clock and the failures by kind were recorded.
OLDEST = {"flavour": "unpatched", "scenario": "lab-check", "duration": 10,
          "append": "", "ending": "exited", "qemu_exit": 0, "scenario_status": 0,
          "wall_seconds": 41.5, "guest_uptime": 12.3, "checksum_invalid": 3}


def test_an_old_status_without_a_version_reads_with_defaults(tmp_path):
    path = tmp_path / "status.json"
    path.write_text(json.dumps(OLDEST))
    status = BootStatus.read(path)
    assert status.version == 1
    assert (status.flavour, status.scenario, status.scenario_status) == \
        ("unpatched", "lab-check", 0)
    # What a boot had before these fields were recorded.
    assert status.root == "initramfs" and status.clock == {"kind": "host"}
    assert status.lab_windows is False and status.singlestep is False
    assert status.checksum_failures == {"inode": 3} and status.checksum_failures_total == 3
    assert status.checksum_calls is None and status.chkwin is None
    assert status.reason is None and status.replay_of is None


def test_an_old_replay_status_gets_no_boot_defaults(tmp_path):
    path = tmp_path / "status.json"
    old = {k: v for k, v in OLDEST.items()
           if k not in ("flavour", "scenario", "duration", "append")}
    path.write_text(json.dumps({"replay_of": "/some/run", **old}))
    status = BootStatus.read(path)
    assert status.replay_of == "/some/run"
    assert status.root is None and status.clock is None


def test_the_current_status_reads_back_as_written(tmp_path):
    status = BootStatus(flavour="patched", scenario="record", ending="hang",
                        checksum_failures={"inode": 0, "metadata": 2},
                        checksum_failures_total=2, reason="guest hung: no poweroff")
    status.write(tmp_path / "status.json")
    written = json.loads((tmp_path / "status.json").read_text())
    assert written["version"] == BOOT_VERSION and "replay_of" not in written
    assert BootStatus.read(tmp_path / "status.json") == status


def test_a_newer_or_damaged_status_is_one_line(tmp_path):
    path = tmp_path / "status.json"
    path.write_text(json.dumps({**OLDEST, "version": BOOT_VERSION + 1}))
    with pytest.raises(BootStatusError, match=f"version {BOOT_VERSION + 1}"):
        BootStatus.read(path)
    path.write_text("{")
    with pytest.raises(BootStatusError, match="not a boot's status"):
        BootStatus.read(path)
    with pytest.raises(BootStatusError, match="No such file"):
        BootStatus.read(tmp_path / "missing.json")
