#!/usr/bin/python3
"""One boot as a task: guest/host/run.py's boot() into its result
directory, and a result file published only when the boot has finished.

The boot runs into OUT, in this process; when it ends, the exit status
run.py would give it, its one-line reason and where it ran are written
aside and renamed to OUT/task.json.  A reader takes OUT as a boot's
result only once task.json is there, so a task killed half-way
(scancel, a time limit, a lost node) is never read as one.  A later
attempt moves such an unfinished directory aside (.OUT.unfinished-N,
kept for a look) and starts afresh.  A boot
whose QEMU was killed from outside (not by the boot's watchdog) is not a
result either: the task exits 1 without publishing, so the runner retries
it.  Paths inside OUT (the console, a recording's replay.json) stay true
because the boot never moves.

  boottask.py --out OUT -- RUN.PY-FLAGS...
  boottask.py --table TASKS.json --index I   (a Slurm array task)
  boottask.py --check [--qemu Q] [--file PATH ...]   (a node's probe)

Exit status 0 when OUT/task.json was published (the boot's own status is
in it) or was there already, 1 otherwise, with one line on stderr.
"""

import argparse
import collections
import contextlib
import errno
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import time

from common.errors import OneLineError, die
from common.jsonfile import write_json
from common.progress import log
from guest.host import run
from guest.host.run import QEMU

RESULT = "task.json"
# Lines of the boot's stderr a result keeps.
STDERR_LINES = 40
# run.py's options that name a file the boot reads: one a node cannot
# read loses the boot (another node may), it is not the boot's failure.
READS = ("--kernel", "--initramfs", "--disk", "--lab-windows", "--rootfs", "--tools")
# Signals that end a QEMU from outside the boot.
OUTSIDE = (signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def set_aside(out):
    """Move an unfinished attempt's directory out of the way; its new name."""
    for n in range(1, 1000):
        aside = out.parent / f".{out.name}.unfinished-{n}"
        try:
            os.rename(out, aside)
            return aside
        except FileExistsError:
            continue
        except OSError as e:
            if e.errno in (errno.EEXIST, errno.ENOTEMPTY):
                continue
            die(f"cannot move the unfinished {out} aside: {e.strerror}")
    die(f"cannot move the unfinished {out} aside: 999 are there already")


def killed_from_outside(status):
    """Whether QEMU ended on a signal that comes from outside (the OOM
    killer, a node going down), not one the boot's watchdog sent (the
    status then says hung) nor QEMU's own crash (SIGABRT, SIGSEGV: the same
    seed would crash again, so that is the boot's failure)."""
    code = status.qemu_exit
    return status.ending == "exited" and code is not None and -code in OUTSIDE


class KeptStderr:
    """sys.stderr passed on as it is written, its last lines kept (a
    tool's output, which goes to the file descriptor, is only passed on)."""

    def __init__(self, stream):
        self.stream = stream
        self.lines = collections.deque(maxlen=STDERR_LINES)
        self.partial = ""

    def write(self, text):
        self.stream.write(text)
        *whole, self.partial = (self.partial + text).split("\n")
        self.lines.extend(whole)
        return len(text)

    def flush(self):
        self.stream.flush()

    def fileno(self):
        return self.stream.fileno()


def boot_in_process(flags, out):
    """(exit status, one-line reason or "", stderr's last lines, status or
    None) of a boot of run.py's flags into out, as run.py would end: a
    refused flag or a builder's error is the boot's own failure."""
    kept = KeptStderr(sys.stderr)
    status = None
    with contextlib.redirect_stderr(kept):
        try:
            status = run.boot(run.parse_args([*flags, "--out", str(out)]))
            code, reason = run.exit_status(status), status.reason
            reason = f"run: error: {reason}" if reason else ""
        except OneLineError as e:
            code, reason = 1, f"run.py: error: {e}"
            print(reason, file=sys.stderr)
        except SystemExit as e:
            # argparse and die() have said why on stderr already.
            code = e.code if isinstance(e.code, int) else 1
            reason = kept.lines[-1] if kept.lines else f"exit {code}"
    return code, reason, list(kept.lines), status


def run_boot(out, flags):
    out = pathlib.Path(out)
    if (out / RESULT).is_file():
        log("boottask", f"{out} holds a published result already")
        return
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        aside = set_aside(out)
        log("boottask", f"an unfinished attempt was in {out}; moved to {aside}")
    # A node without QEMU or the files loses the boot (another node may
    # have them); it is not the boot's failure.
    why = unable(flag(flags, "--qemu", QEMU),
                 [path for option in READS if (path := flag(flags, option))])
    if why:
        die(why)
    start = time.monotonic()
    code, reason, lines, status = boot_in_process(flags, out)
    if status is not None and killed_from_outside(status):
        die(f"QEMU was killed from outside the boot (signal {-status.qemu_exit})")
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / RESULT, {
        "returncode": code, "reason": reason,
        "stderr": lines, "host": socket.gethostname(),
        "task": os.environ.get("SLURM_JOB_ID", f"pid {os.getpid()}"),
        "wall_seconds": round(time.monotonic() - start, 1)})


def flag(flags, option, default=None):
    """The value run.py's flags give option, or default."""
    return flags[flags.index(option) + 1] if option in flags[:-1] else default


def unable(qemu, files):
    """Why this node cannot run a boot (no such QEMU, a file it names
    unreadable), or None."""
    if shutil.which(qemu) is None:
        return f"{socket.gethostname()}: {qemu} not found (install qemu-system-arm)"
    for path in files:
        if not os.access(path, os.R_OK):
            return (f"{socket.gethostname()}: cannot read {path} (is the cache on a "
                    "filesystem every node mounts?)")
    return None


def check_node(qemu, files):
    """A node's probe before anything is submitted: QEMU runs, Python and
    the task's tree are here, every file the boots name is readable."""
    why = unable(qemu, files)
    if why:
        die(why)
    proc = subprocess.run([qemu, "--version"], capture_output=True, text=True)
    if proc.returncode != 0:
        die(f"{socket.gethostname()}: {qemu} --version exited {proc.returncode}")
    print(f"{socket.gethostname()}: ok: {(proc.stdout.splitlines() or ['?'])[0]}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=pathlib.Path, help="the boot's result directory")
    ap.add_argument("--table", type=pathlib.Path,
                    help="a JSON list of {out, flags}: the array's tasks")
    ap.add_argument("--index", type=int, help="which of --table's tasks")
    ap.add_argument("--check", action="store_true", help="probe this node and exit")
    ap.add_argument("--qemu", default=QEMU)
    ap.add_argument("--file", type=pathlib.Path, action="append", default=[])
    ap.add_argument("flags", nargs="*", help="guest/run.py's flags, after --")
    args = ap.parse_args(argv)
    if args.check:
        check_node(args.qemu, args.file)
        return 0
    if args.table is not None:
        if args.index is None or args.out is not None or args.flags:
            ap.error("--table goes with --index alone")
        try:
            task = json.loads(args.table.read_text())[args.index]
        except (OSError, ValueError, IndexError, TypeError) as e:
            die(f"{args.table}: no task {args.index} ({e})")
        run_boot(task["out"], task["flags"])
    elif args.out is not None:
        run_boot(args.out, args.flags)
    else:
        ap.error("give --out and run.py's flags, --table and --index, or --check")
    return 0


if __name__ == "__main__":
    sys.exit(main())
