"""The lab's guests boot, are what they claim, and fail loudly."""

import hashlib
import pathlib
import subprocess

import pytest

from guest import boot
from kernels import PY, REPO, kernel_dir

FLAVOURS = ("unpatched", "patched")


def testdisk():
    return pathlib.Path(subprocess.run(
        [PY, str(REPO / "guest/testdisk.py"), "--print-path"],
        capture_output=True, text=True, check=True).stdout.strip())


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_lab_check(flavour, tmp_path):
    run = boot(tmp_path, flavour, "lab-check", "--duration", "1")
    assert run.proc.returncode == 0, run.proc.stderr + run.console[-2000:]
    assert run.fields("uname")[0].endswith(f"-chkwin-{flavour}")
    assert run.fields("chksum_window") == ["off"]
    assert sorted(run.fields("tracepoint")) == [
        "ext4_chksum_begin", "ext4_chksum_end", "ext4_inode_csum_verify"]
    system_map = (kernel_dir(flavour) / "System.map").read_text().splitlines()
    for line in run.fields("kallsyms"):
        addr, kind, name = line.split()
        assert f"{addr} {kind.lower()} {name}" in system_map or \
            f"{addr} {kind} {name}" in system_map
    assert len(run.fields("kallsyms")) == 2
    assert run.status["ending"] == "exited"


def test_window_parameter_reaches_the_kernel(tmp_path):
    run = boot(tmp_path, "unpatched", "lab-check", "--duration", "1",
               "--append", "ext4.chksum_window=gcc49")
    assert run.proc.returncode == 0, run.proc.stderr
    assert run.fields("chksum_window") == ["gcc49"]


def test_hung_guest_is_killed_and_console_kept(tmp_path):
    run = boot(tmp_path, "unpatched", "hang", "--duration", "1",
               "--timeout", "40")
    assert run.proc.returncode == 124
    assert run.proc.stderr.startswith("run: error: guest hung")
    assert run.proc.stderr.count("\n") == 1
    assert "Linux version" in run.console
    assert run.status["ending"] == "hang"


def test_panicking_guest_is_reported(tmp_path):
    run = boot(tmp_path, "unpatched", "panic", "--timeout", "120")
    assert run.proc.returncode == 125
    assert "run: error: guest panicked: " in run.proc.stderr
    assert "Attempted to kill init" in run.proc.stderr
    assert "Kernel panic" in run.console


def test_unknown_scenario_is_127(tmp_path):
    run = boot(tmp_path, "unpatched", "no-such-scenario")
    assert run.proc.returncode == 127
    assert "unknown scenario 'no-such-scenario'" in run.console


def test_bad_flag_is_rejected(tmp_path):
    run = boot(tmp_path, "unpatched", "lab-check", "--smp", "two")
    assert run.proc.returncode == 2
    assert "invalid int value" in run.proc.stderr


def test_runs_never_change_the_test_disk(tmp_path):
    disk = testdisk()
    before = hashlib.sha256(disk.read_bytes()).hexdigest()
    run = boot(tmp_path, "patched", "rk-loop", "--duration", "5")
    assert run.proc.returncode == 0, run.proc.stderr
    assert int(run.fields("passes")[0]) >= 1
    assert hashlib.sha256(disk.read_bytes()).hexdigest() == before
    assert disk.stat().st_mode & 0o222 == 0
