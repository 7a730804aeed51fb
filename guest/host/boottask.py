#!/usr/bin/python3
"""One boot as a task: guest/run.py into its result directory, and a
result file published only when run.py has finished.

The boot runs into OUT; when run.py exits, its exit status, the last line
of its stderr and where it ran are written aside and renamed to
OUT/task.json.  A reader takes OUT as a boot's result only once task.json
is there, so a task killed half-way (scancel, a time limit, a lost node)
is never read as one.  A later attempt moves such an unfinished directory
aside (.OUT.unfinished-N, kept for a look) and starts afresh.  A boot
whose QEMU was killed from outside (not by run.py's watchdog) is not a
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

from common import PY, REPO
from common.errors import die
from common.progress import log
from guest.host.resultsdir import write_json
from guest.host.run import QEMU

RESULT = "task.json"
# Lines of run.py's stderr a result keeps.
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


def killed_from_outside(out):
    """Whether QEMU ended on a signal that comes from outside (the OOM
    killer, a node going down), not one run.py's watchdog sent (status.json
    then says hung) nor QEMU's own crash (SIGABRT, SIGSEGV: the same seed
    would crash again, so that is the boot's failure)."""
    try:
        status = json.loads((out / "status.json").read_text())
    except (OSError, ValueError):
        return False
    code = status.get("qemu_exit")
    return status.get("ending") == "exited" and code is not None and -code in OUTSIDE


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
    proc = subprocess.run([PY, str(REPO / "guest/run.py"), *flags, "--out", str(out)],
                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    lines = proc.stderr.strip().splitlines()
    if proc.returncode < 0:
        die(f"run.py was killed by signal {-proc.returncode}")
    if killed_from_outside(out):
        die("QEMU was killed from outside the boot (signal "
            f"{-json.loads((out / 'status.json').read_text())['qemu_exit']})")
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / RESULT, {
        "returncode": proc.returncode,
        "reason": lines[-1] if proc.returncode and lines else "",
        "stderr": lines[-STDERR_LINES:], "host": socket.gethostname(),
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
