"""Progress lines: a step that takes minutes says how far it is at least
every progress.PERIOD seconds (here shortened), and a kernel build says
how many objects it has compiled; a command that calls a builder keeps
the builder's lines off its stderr, and its failures one line."""

import subprocess
import sys
import time

import pytest

from common import progress
from common.cache import quietly
from guest.host import kbuild


def test_a_long_step_prints_a_line_every_period(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(progress, "PERIOD", 0.2)
    log = tmp_path / "step.log"
    proc = progress.run_logged(["sh", "-c", "echo first; sleep 1.1; echo second"], log,
                               "step", progress.last_line)
    assert proc.returncode == 0
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) >= 3, lines
    assert all(ln.startswith("step: still running") and ln.endswith(" min)") for ln in lines)
    assert "last: first" in lines[0]
    assert log.read_text() == "first\nsecond\n"


def test_the_heartbeat_stops_with_its_step(capsys):
    with progress.heartbeat("quick", lambda: "never", period=60):
        pass
    assert capsys.readouterr().err == ""


def test_kernel_build_status_counts_objects(tmp_path):
    log = tmp_path / "build.log"
    log.write_text("  SYNC    include/config/auto.conf\n  CC      init/main.o\n"
                   "  AS      arch/arm64/kernel/entry.o\n  CC [M]  fs/ext4/inode.o\n"
                   "  LD      vmlinux.o\n")
    assert kbuild.build_status(log) == "3 objects compiled so far, last fs/ext4/inode.o"
    log.write_text("  SYNC    include/config/auto.conf\n")
    assert kbuild.build_status(log) == "configured, compiling"


def test_quiet_holds_back_progress_and_tool_output(capsys):
    with progress.quiet():
        progress.log("step", "hidden")
        with progress.heartbeat("step", lambda: "hidden too", period=0.05):
            time.sleep(0.2)
        assert progress.tool_output() is subprocess.DEVNULL
    progress.log("step", "shown")
    assert capsys.readouterr().err == "step: shown\n"
    assert progress.tool_output() is sys.stderr


def test_a_builder_failure_under_quietly_is_one_line(capsys):
    with pytest.raises(SystemExit) as exit, quietly():
        open("/nonexistent/chkwin-cache")
    assert exit.value.code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ": error: [Errno 2] No such file or directory" in err
