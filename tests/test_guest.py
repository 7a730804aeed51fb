"""The lab's guests boot, are what they claim, and fail loudly."""

import os
import pathlib
import shutil
import subprocess

import pytest

from tests.boots import boot
from common import PY, REPO
from common.digest import file_sha256
from guest.host import console_lines
from tests.kernels import kernel_dir

# Boots two-vCPU guests on the host clock: the hostclock mark.
pytestmark = [pytest.mark.guest, pytest.mark.hostclock]

FLAVOURS = ("unpatched", "patched")
WINDOW_SYMBOLS = ["ext4_chksum_gcc49_exact_window", "ext4_chksum_gcc49_window_end",
                  "ext4_chksum_gcc49_window_start"]


def helper_path(script, env=None):
    proc = subprocess.run([PY, str(REPO / "guest" / script), "--print-path"],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    return pathlib.Path(proc.stdout.strip())


@pytest.mark.parametrize("window", ("off", "gcc49", "gcc49-exact"))
@pytest.mark.parametrize("flavour", FLAVOURS)
def test_lab_check(flavour, window, tmp_path):
    extra = ["--append", f"ext4.chksum_window={window} ext4.chksum_window_width=4"] \
        if window != "off" else []
    run = boot(tmp_path, flavour, "lab-check", "--duration", "1", *extra)
    assert run.proc.returncode == 0, run.proc.stderr + run.console[-2000:]
    assert run.fields("uname")[0].endswith(f"-chkwin-{flavour}")
    assert run.fields("chksum_window") == [window]
    assert run.fields("chksum_window_width") == ["4" if extra else "1"]
    assert sorted(run.fields("tracepoint")) == [
        "ext4_chksum_begin", "ext4_chksum_end", "ext4_inode_csum_verify"]
    # No KASLR: the guest's addresses are System.map's, so host-side pcs
    # can be resolved with it.
    system_map = {}
    for line in (kernel_dir(flavour) / "System.map").read_text().splitlines():
        addr, _, name = line.split(maxsplit=2)
        system_map[name] = addr
    seen = {}
    for line in run.fields("kallsyms"):
        addr, _, name = line.split()
        seen[name] = addr
    assert sorted(seen) == WINDOW_SYMBOLS
    for name, addr in seen.items():
        assert addr == system_map[name], name
    assert run.status.ending == "exited"
    assert run.status.scenario_status == 0
    assert (tmp_path / "results.bin").read_bytes() == console_lines.status_line(0).encode()


def test_hung_guest_is_killed_and_console_kept(tmp_path):
    run = boot(tmp_path, "unpatched", "hang", "--duration", "1",
               "--timeout", "15")
    assert run.proc.returncode == 124
    assert run.proc.stderr == ("run: error: guest hung: no poweroff within "
                               f"15 s (console: {tmp_path}/console.log)\n")
    assert "Linux version" in run.console
    assert "hang: sleeping forever" in run.console
    assert run.status.ending == "hang"
    assert (tmp_path / "cmdline.txt").read_text().startswith("qemu-system-aarch64 ")


def test_panicking_guest_is_reported(tmp_path):
    run = boot(tmp_path, "unpatched", "panic", "--timeout", "120")
    assert run.proc.returncode == 125
    assert run.proc.stderr.startswith("run: error: guest panicked: ")
    assert "Attempted to kill init" in run.proc.stderr
    assert run.proc.stderr.count("\n") == 1
    assert "Kernel panic" in run.console
    assert run.status.ending == "panic"


def test_unknown_scenario_is_127(tmp_path):
    run = boot(tmp_path, "unpatched", "no-such-scenario")
    assert run.proc.returncode == 127
    assert "unknown scenario 'no-such-scenario'" in run.console
    assert run.status.scenario_status == 127


def test_a_loader_that_will_not_start_says_why(tmp_path):
    """The record scenario with a loader option chkwin refuses: the loader's
    own line and the scenario's, then a non-zero status (run through the
    scenario library's start_chkwin)."""
    run = boot(tmp_path / "run", "unpatched", "record", "--duration", "5",
               "--append", "chkwin.workload=rk-loop chkwin.loader=--no-such-option")
    assert run.proc.returncode == 1, run.proc.stderr
    assert "chkwin: unrecognized option '--no-such-option'" in run.console
    assert "record: error: chkwin did not start recording" in run.console
    assert run.status.scenario_status == 1


def test_bad_flag_is_rejected(tmp_path):
    run = boot(tmp_path, "unpatched", "lab-check", "--smp", "two")
    assert run.proc.returncode == 2
    assert "invalid int value" in run.proc.stderr


def test_earlier_results_are_never_overwritten(tmp_path):
    (tmp_path / "console.log").write_text("an earlier run\n")
    run = boot(tmp_path, "unpatched", "lab-check")
    assert run.proc.returncode == 1
    assert "not an empty directory" in run.proc.stderr
    assert (tmp_path / "console.log").read_text() == "an earlier run\n"


def test_initramfs_is_byte_identical_when_built_twice(tmp_path):
    """A second cache makes the second build a real one, not a cache hit;
    the busybox .deb is copied over so that no download is needed, and the
    kernels and the loader (whose debug info names its build directory)
    are linked in: the cpio writer is what is under test."""
    first = helper_path("initramfs.py")
    cache = first.parent.parent
    shutil.copytree(cache / "debs", tmp_path / "debs")
    for built in ("kernels", "loader"):
        (tmp_path / built).symlink_to(cache / built)
    second = helper_path("initramfs.py",
                         env=dict(os.environ, CHKWIN_CACHE=str(tmp_path)))
    assert second.parent == tmp_path / "initramfs"
    assert second.name == first.name
    assert second.read_bytes() == first.read_bytes()


def test_runs_never_change_the_test_disk(tmp_path):
    disk = helper_path("testdisk.py")
    before = file_sha256(disk)
    run = boot(tmp_path, "patched", "rk-loop", "--duration", "5")
    assert run.proc.returncode == 0, run.proc.stderr
    assert int(run.fields("passes")[0]) >= 1
    assert run.fields("checksum-invalid") == ["0"]
    assert file_sha256(disk) == before
    assert disk.stat().st_mode & 0o222 == 0
