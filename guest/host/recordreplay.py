"""QEMU record/replay of a lab boot: what a recording keeps, and how a
replay is checked against it.

A recorded boot (guest/run.py --record-replay) runs on instruction time
with -icount rr=record: QEMU writes every non-deterministic input (block
completions, clock reads, chardev input) to replay.bin, and a replay with
rr=replay and the same machine, kernel and disks runs the very same
instructions again.  Beside the log the boot's directory keeps
replay.json: QEMU's exact command line, QEMU's version, and the size and
SHA-256 of the log and of every input file (kernel, initramfs, disks,
the guest-files archive).  A replay checks all of them before QEMU
starts, so a log from another kernel, command line or disk, or a log cut
short, is refused in one line instead of diverging later.

Every block device of a recorded boot sits behind a blkreplay filter
over a snapshot=on drive: QEMU records the order of block completions,
and the backing file is never written (the test disk stays unchanged).
"""

import json
import pathlib
import subprocess

from common.digest import file_sha256
from common.errors import OneLineError
from common.jsonfile import write_json

LOG_NAME = "replay.bin"
META_NAME = "replay.json"


def drive(path, drive_id, readonly, record=False, snapshot=False):
    """-drive options of one block device whose guest device attaches to
    drive_id, its writes to a throwaway overlay with snapshot; recording,
    the file sits under snapshot=on (nothing reaches it) with a blkreplay
    filter on top, whose completions QEMU logs."""
    ro = ",readonly=on" if readonly else ""
    if not record:
        over = ",snapshot=on" if snapshot else ""
        return ["-drive", f"file={path},if=none,id={drive_id},format=raw{ro}{over}"]
    direct = f"{drive_id}-direct"
    return ["-drive", f"file={path},if=none,id={direct},format=raw,snapshot=on",
            "-drive", f"driver=blkreplay,if=none,image={direct},id={drive_id}{ro}"]


def icount_option(shift, sleep, rr_log=None):
    """The -icount value; with rr_log, recording into it."""
    value = f"shift={shift},sleep={'on' if sleep else 'off'}"
    if rr_log is not None:
        value += f",rr=record,rrfile={rr_log}"
    return value


class RecordingError(OneLineError):
    """A recording that cannot be replayed, or QEMU that cannot record."""


def qemu_version():
    """QEMU's version line: a replay log is only read by the QEMU that
    wrote it."""
    try:
        out = subprocess.run(["qemu-system-aarch64", "--version"], capture_output=True,
                             text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        raise RecordingError("qemu-system-aarch64 --version failed: install "
                             "qemu-system-arm (make deps)")
    return out.splitlines()[0].strip()


def describe(path):
    path = pathlib.Path(path)
    return {"path": str(path.resolve()), "bytes": path.stat().st_size,
            "sha256": file_sha256(path)}


def save(out, argv, inputs, kernel_entry, guest_seconds, wall_seconds, timeout):
    """replay.json for the recording in out; inputs is {role: path}.
    Written aside and renamed, so a half-written one never reads."""
    log = out / LOG_NAME
    meta = {"qemu": qemu_version(), "argv": argv, "out": str(out.resolve()),
            "kernel_entry": kernel_entry,
            "log": {"name": LOG_NAME, **describe(log)},
            "inputs": {role: describe(p) for role, p in inputs.items()},
            "guest_seconds": guest_seconds, "wall_seconds": wall_seconds,
            "timeout": timeout,
            "log_bytes_per_guest_second": round(log.stat().st_size / guest_seconds)
            if guest_seconds else None}
    write_json(out / META_NAME, meta)
    return meta


def load(run):
    """The recording's replay.json, checked against the files it names:
    refused where the log, an input or QEMU is not the one
    recorded (RecordingError, one line)."""
    run = pathlib.Path(run)
    meta_path = run / META_NAME
    if not meta_path.is_file():
        raise RecordingError(f"{run}: no {META_NAME}: not a recorded boot (guest/run.py "
                             "--record-replay), or its recording did not finish")
    try:
        meta = json.loads(meta_path.read_text())
        log = meta["log"]
        inputs = meta["inputs"]
        argv = meta["argv"]
    except (ValueError, KeyError, TypeError) as e:
        raise RecordingError(f"{meta_path}: not a readable replay description ({e})")
    log_path = run / log["name"]
    if not log_path.is_file():
        raise RecordingError(f"{log_path}: the replay log is missing")
    size = log_path.stat().st_size
    if size != log["bytes"]:
        raise RecordingError(f"{log_path}: not this recording's replay log: {size} bytes "
                             f"where {log['bytes']} were recorded (cut short, damaged "
                             "or another boot's)")
    if file_sha256(log_path) != log["sha256"]:
        raise RecordingError(f"{log_path}: not this recording's replay log: its SHA-256 "
                             f"is not the one in {META_NAME} (damaged or another boot's)")
    for role, want in inputs.items():
        path = pathlib.Path(want["path"])
        if not path.is_file():
            raise RecordingError(f"the recording's {role} {path} no longer exists")
        if path.stat().st_size != want["bytes"] or file_sha256(path) != want["sha256"]:
            raise RecordingError(f"the recording's {role} {path} has changed since it was "
                                 f"recorded: the replay log belongs to another {role}")
    version = qemu_version()
    if version != meta["qemu"]:
        raise RecordingError(f"the recording was made by {meta['qemu']!r}, this is {version!r}: "
                             "QEMU reads only its own replay logs")
    if not any(a.startswith("shift=") and ",rr=record," in a for a in argv):
        raise RecordingError(f"{meta_path}: its command line records no replay log")
    return meta


def replay_argv(meta, run, out):
    """The recorded command line, replaying: rr=replay from run's own
    log (wherever the recording now lies), and every chardev file the
    boot wrote in its directory written into out instead."""
    recorded = pathlib.Path(meta["out"])
    argv = []
    for arg in meta["argv"]:
        if arg.startswith("shift=") and ",rr=record," in arg:
            head = arg.split(",rr=record,")[0]
            arg = f"{head},rr=replay,rrfile={pathlib.Path(run).resolve() / LOG_NAME}"
        elif arg.startswith("file,id=") and ",path=" in arg:
            head, _, path = arg.partition(",path=")
            if pathlib.Path(path).parent == recorded:
                arg = f"{head},path={pathlib.Path(out) / pathlib.Path(path).name}"
        argv.append(arg)
    return argv


def kernel_dir(meta):
    """The cache directory of the recorded kernel (Image, vmlinux,
    System.map)."""
    return pathlib.Path(meta["inputs"]["kernel"]["path"]).parent
