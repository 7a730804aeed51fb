"""Record/replay without a guest: the replay command line made from a
recording's, the console comparison, and the one-line refusals of bad
arguments (guest/replay.py, guest/run.py --record-replay)."""

import json
import subprocess

from common import PY, REPO

from guest.host import recordreplay
from guest.host.replay import first_difference


def test_replay_argv_replays_and_writes_only_into_its_own_directory(tmp_path):
    run = tmp_path / "run"
    argv = ["qemu-system-aarch64", "-chardev", f"file,id=console,path={run}/console.log",
            "-chardev", f"file,id=results,path={run}/results.bin",
            "-chardev", f"file,id=log,path={run}/log.bin",
            "-chardev", "file,id=elsewhere,path=/var/tmp/x.log",
            *recordreplay.drive(run / "guest-files.tar", "hostfiles", True, record=True),
            "-icount", recordreplay.icount_option(4, True, run / "replay.bin")]
    out = tmp_path / "out"
    # The recording moved: the replay reads the log where it lies now.
    moved = tmp_path / "moved"
    replayed = recordreplay.replay_argv({"argv": argv, "out": str(run)}, moved, out)
    assert replayed[-1] == f"shift=4,sleep=on,rr=replay,rrfile={moved}/replay.bin"
    assert f"file,id=console,path={out}/console.log" in replayed
    assert f"file,id=results,path={out}/results.bin" in replayed
    assert f"file,id=log,path={out}/log.bin" in replayed
    # Files outside the recording's directory, and inputs, stay as they were.
    assert "file,id=elsewhere,path=/var/tmp/x.log" in replayed
    assert f"file={run}/guest-files.tar,if=none,id=hostfiles-direct,format=raw," \
           "snapshot=on" in replayed
    assert len(replayed) == len(argv)


def test_drives_of_a_recorded_boot_are_snapshots_behind_blkreplay():
    plain = recordreplay.drive("/d.img", "testdisk", True)
    assert plain == ["-drive", "file=/d.img,if=none,id=testdisk,format=raw,readonly=on"]
    recorded = recordreplay.drive("/d.img", "testdisk", True, record=True)
    assert recorded == [
        "-drive", "file=/d.img,if=none,id=testdisk-direct,format=raw,snapshot=on",
        "-drive", "driver=blkreplay,if=none,image=testdisk-direct,id=testdisk,readonly=on"]


def test_first_difference_names_byte_line_and_both_lines():
    assert first_difference(b"a\nb\n", b"a\nb\n") is None
    assert first_difference(b"a\nbc\nd\n", b"a\nbx\nd\n") == (3, 2, "bc", "bx")
    # A replay cut short differs where it ends.
    assert first_difference(b"a\nb\n", b"a\n") == (2, 2, "b", "")


def replay(*args):
    return subprocess.run([PY, str(REPO / "guest/replay.py"), *map(str, args)],
                          capture_output=True, text=True)


def test_bad_arguments_get_one_line(tmp_path):
    for args, message in [
            ((tmp_path / "nothing",), "no such run directory"),
            ((tmp_path,), "no replay.json: not a recorded boot"),
            ((tmp_path, "--failure", "0"), "failures are numbered from 1"),
            ((tmp_path, "--failure", "x"), "a number from 1, or all")]:
        proc = replay(*args)
        assert proc.returncode != 0, args
        # argparse prints its usage first; the error itself is one line.
        last = proc.stderr.strip().splitlines()[-1]
        assert last.startswith("replay.py: error: ") and message in last, proc.stderr


def test_a_damaged_description_gets_one_line(tmp_path):
    (tmp_path / "replay.json").write_text("{not json")
    proc = replay(tmp_path)
    assert proc.returncode == 1
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "not a readable replay description" in proc.stderr
    (tmp_path / "replay.json").write_text(json.dumps({"log": {"name": "replay.bin",
                                                                "bytes": 5}, "inputs": {},
                                                       "argv": []}))
    proc = replay(tmp_path)
    assert proc.returncode == 1 and "the replay log is missing" in proc.stderr


def test_record_replay_needs_instruction_time(tmp_path):
    proc = subprocess.run([PY, str(REPO / "guest/run.py"), "--scenario", "inode-loop",
                           "--record-replay", "--out", str(tmp_path / "o")],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr.strip() == ("run.py: error: --record-replay needs --clock icount: "
                                   "QEMU records and replays only instruction time")
    assert not (tmp_path / "o").exists()
