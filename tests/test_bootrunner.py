"""The boot runner on the local engine: a boot whose task is killed
mid-boot is run again with the same flags, and its result directory is
published only whole; a boot that runs and fails is a result, not a loss.

Two boots of the walker on the same phase seed, ended after 5 passes
(about 7 guest seconds), with no window: the same seed then makes the
same calls, so the retried boot's calls must equal its twin's.  (With a
window, a failed directory inode hides its subtree from that pass, and
failures follow the disk's interrupts, which arrive by the host's
clock.)"""

import os
import signal
import subprocess
import threading
import time

import pytest

from tests.boots import icount_args

from guest.host import bootrunner
from guest.host.boottask import RESULT

pytestmark = pytest.mark.guest

SEED = 7


def walker(out):
    return bootrunner.Boot(out, ["--flavour", "unpatched", "--scenario", "inode-loop",
                                 *icount_args(SEED, duration=20), "--passes", "5",
                                 "--append", "ext4.chksum_window=off"])


def boottasks(out):
    """pids of boottask.py processes running the boot into out."""
    ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [int(line.split()[0]) for line in ps.splitlines()
            if "boottask.py" in line and f"--out {out} " in line]


def test_a_killed_task_runs_again_and_only_whole_results_are_read(tmp_path):
    killed, twin = walker(tmp_path / "killed"), walker(tmp_path / "twin")
    done = []

    def kill_first_attempt():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            pids = boottasks(killed.out)
            # Once run.py has made its part directory: QEMU is booting,
            # nothing is published yet.
            if pids and list(tmp_path.glob(".killed.part-*")):
                time.sleep(1)
                assert not killed.out.exists()
                os.killpg(pids[0], signal.SIGKILL)
                done.append(pids[0])
                return
            time.sleep(0.1)

    killer = threading.Thread(target=kill_first_attempt)
    killer.start()
    said = []
    engine = bootrunner.LocalEngine(2)
    try:
        outcomes = bootrunner.run(engine, [killed, twin], retries=1, say=said.append)
    finally:
        engine.close()
    killer.join()
    assert done, "the first attempt was never seen running"
    first, second = outcomes
    assert said == ["boot killed lost (the task was killed by signal 9); run again "
                    "with the same flags, attempt 2 of 2"]
    assert (first.attempts, second.attempts) == (2, 1)
    assert first.returncode == second.returncode == 0
    assert first.status["checksum_calls"] == second.status["checksum_calls"] > 0
    assert (killed.out / RESULT).is_file()
    # The killed attempt's directory stays aside, never read as a result.
    [part] = tmp_path.glob(".killed.part-*")
    assert (part / "console.log").exists() and not (part / RESULT).exists()


def test_a_failed_boot_is_a_result_and_a_lost_one_is_reported(tmp_path):
    """run.py refusing its flags is the boot's own failure (no retry); a
    task that can never publish (its result directory holds something
    else) is reported lost after its attempts, and what was there stays."""
    bad = bootrunner.Boot(tmp_path / "bad", ["--flavour", "unpatched",
                                             "--scenario", "inode-loop", "--smp", "0"])
    engine = bootrunner.LocalEngine(1)
    said = []
    try:
        [out] = bootrunner.run(engine, [bad], retries=2, say=said.append)
    finally:
        engine.close()
    assert out.returncode == 2 and out.attempts == 1 and said == []
    assert "--smp" in out.reason
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "something").write_text("recorded earlier\n")
    taken = bootrunner.Boot(tmp_path / "taken", bad.flags)
    engine = bootrunner.LocalEngine(1)
    try:
        [out] = bootrunner.run(engine, [taken], retries=1, say=said.append)
    finally:
        engine.close()
    assert out.lost and out.attempts == 2 and len(said) == 1
    assert "exists and is not empty" in out.reason
    assert (tmp_path / "taken" / "something").read_text() == "recorded earlier\n"
