"""The boot runner on the local engine: a boot whose task is killed
mid-boot is run again with the same flags, and a result is read only once
its task.json is published; a boot that runs and fails is a result, not a
loss; a boot whose QEMU is killed from outside on every attempt is
reported lost, and nothing in its way is deleted.

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
            # Once run.py has made the directory: QEMU is booting, nothing
            # is published yet.
            if pids and (killed.out / "console.log").exists():
                time.sleep(1)
                done.append("published too early" if (killed.out / RESULT).exists()
                            else "killed")
                os.killpg(pids[0], signal.SIGKILL)
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
    assert done == ["killed"], done or "the first attempt was never seen running"
    first, second = outcomes
    assert said == ["boot killed lost (the task was killed by signal 9); run again "
                    "with the same flags, attempt 2 of 2"]
    assert (first.attempts, second.attempts) == (2, 1)
    assert first.returncode == second.returncode == 0
    assert first.status.checksum_calls == second.status.checksum_calls > 0
    assert (killed.out / RESULT).is_file()
    # The killed attempt's directory, moved aside by the next, is kept.
    [aside] = tmp_path.glob(".killed.unfinished-*")
    assert (aside / "console.log").exists() and not (aside / RESULT).exists()


def test_a_failed_boot_is_a_result_and_a_lost_one_is_reported(tmp_path):
    """run.py refusing its flags is the boot's own failure (no retry); a
    QEMU that is killed from outside every time (here a stand-in that
    kills itself) makes the boot lost after its attempts, with the reason;
    what stood in its directory is moved aside, not deleted."""
    bad = bootrunner.Boot(tmp_path / "bad", ["--flavour", "unpatched",
                                             "--scenario", "inode-loop", "--smp", "0"])
    said = []
    engine = bootrunner.LocalEngine(1)
    try:
        [out] = bootrunner.run(engine, [bad], retries=2, say=said.append)
    finally:
        engine.close()
    assert out.returncode == 2 and out.attempts == 1 and said == []
    assert "--smp" in out.reason
    qemu = tmp_path / "qemu-killed"
    qemu.write_text("#!/bin/sh\nkill -9 $$\n")
    qemu.chmod(0o755)
    (tmp_path / "doomed").mkdir()
    (tmp_path / "doomed" / "something").write_text("recorded earlier\n")
    doomed = bootrunner.Boot(tmp_path / "doomed", [
        "--flavour", "unpatched", "--scenario", "inode-loop", "--qemu", str(qemu),
        *icount_args(SEED, duration=5)])
    engine = bootrunner.LocalEngine(1)
    try:
        [out] = bootrunner.run(engine, [doomed], retries=1, say=said.append)
    finally:
        engine.close()
    why = "boottask.py: error: QEMU was killed from outside the boot (signal 9)"
    assert out.lost and out.attempts == 2 and out.reason == why
    assert said == [f"boot doomed lost ({why}); run again with the same flags, "
                    "attempt 2 of 2"]
    assert (tmp_path / ".doomed.unfinished-1" / "something").read_text() == \
        "recorded earlier\n"
    assert (tmp_path / ".doomed.unfinished-2" / "status.json").is_file()
    assert not (tmp_path / "doomed" / RESULT).exists()


def test_stop_lets_no_queued_boot_start(tmp_path):
    """on_outcome's STOP: boots queued behind a failed one never start;
    they come back lost with 0 attempts, not passed to on_outcome.  (The
    one the pool took up as the first ended may run: it is reported.)"""
    bad = ["--flavour", "unpatched", "--scenario", "inode-loop", "--smp", "0"]
    boots = [bootrunner.Boot(tmp_path / f"b{i}", bad) for i in range(6)]
    seen = []

    def stop_at_first(outcome):
        seen.append(outcome.boot.out.name)
        return bootrunner.STOP

    engine = bootrunner.LocalEngine(1)
    try:
        outcomes = bootrunner.run(engine, boots, retries=2, on_outcome=stop_at_first)
    finally:
        engine.close()
    ran = [o for o in outcomes if o.attempts]
    assert [o.boot.out.name for o in ran] == seen and seen[0] == "b0" and len(seen) <= 2
    assert all(o.returncode == 2 for o in ran)
    dropped = outcomes[len(ran):]
    assert [(o.returncode, o.attempts, o.reason) for o in dropped] == \
        [(None, 0, "not run: the run stopped")] * len(dropped)
    assert not any(o.boot.out.exists() for o in dropped)
