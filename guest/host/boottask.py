#!/usr/bin/python3
"""One boot as a task: guest/run.py into a directory of its own, published
by a rename only when run.py has finished.

The boot runs into OUT's sibling .OUT.part-TAG; when run.py exits, its
exit status, the last line of its stderr and where it ran go into
task.json there, and the directory is renamed to OUT.  A task killed
half-way (scancel, a time limit, a lost node) never renames, so a reader
that sees OUT sees a finished boot; the part directory stays for a look.
A boot whose QEMU was killed from outside (not by run.py's watchdog) is
not a result either: the task exits 1 without publishing, so the runner
retries it.

  boottask.py --out OUT [--tag TAG] -- RUN.PY-FLAGS...
  boottask.py --table TASKS.json --index I [--tag TAG]   (a Slurm array task)
  boottask.py --check [--qemu Q] [--file PATH ...]        (a node's probe)

Exit status 0 when OUT was published (the boot's own status is in
task.json), 1 otherwise, with one line on stderr.
"""

import argparse
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import time

from guest.host.cachedir import die, write_json

REPO = pathlib.Path(__file__).resolve().parents[2]
PY = "/usr/bin/python3"
RESULT = "task.json"
# Lines of run.py's stderr a result keeps.
STDERR_LINES = 40


def part_dir(out, tag):
    return out.parent / f".{out.name}.part-{tag}"


def killed_from_outside(part):
    """Whether QEMU exited on a signal run.py did not send (the OOM
    killer, a node going down): status.json says it exited, not hung."""
    try:
        status = json.loads((part / "status.json").read_text())
    except (OSError, ValueError):
        return False
    code = status.get("qemu_exit")
    return status.get("ending") == "exited" and code is not None and code < 0


def run_boot(out, flags, tag):
    out = pathlib.Path(out)
    part = part_dir(out, tag)
    if published(out):
        return
    if part.exists():
        die(f"{part} exists: a task with tag {tag} already ran here")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        die(f"{out} exists and is not empty: nothing recorded there is overwritten")
    start = time.monotonic()
    proc = subprocess.run([PY, str(REPO / "guest/run.py"), *flags, "--out", str(part)],
                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    lines = proc.stderr.strip().splitlines()
    if proc.returncode < 0:
        die(f"run.py was killed by signal {-proc.returncode}")
    if killed_from_outside(part):
        die("QEMU was killed from outside the boot (signal "
            f"{-json.loads((part / 'status.json').read_text())['qemu_exit']})")
    part.mkdir(parents=True, exist_ok=True)
    write_json(part / RESULT, {
        "returncode": proc.returncode,
        "reason": lines[-1] if proc.returncode and lines else "",
        "stderr": lines[-STDERR_LINES:], "host": socket.gethostname(), "tag": tag,
        "wall_seconds": round(time.monotonic() - start, 1)})
    try:
        os.replace(part, out)
    except OSError as e:
        if not (out / RESULT).is_file():
            die(f"cannot publish {part} as {out}: {e.strerror}")
        # Another attempt published first (one the runner thought lost):
        # that result stands; this one stays aside.
        print(f"boottask: {out} was published by another attempt; this one is "
              f"in {part}", file=sys.stderr)


def published(out):
    """Whether out holds a boot's published result already; said on
    stderr, as a task that finds one has nothing to do."""
    if (out / RESULT).is_file():
        print(f"boottask: {out} holds a published result already", file=sys.stderr)
        return True
    return False


def check_node(qemu, files):
    """A node's probe before anything is submitted: QEMU runs, Python and
    the task's tree are here, every file the boots name is readable."""
    if shutil.which(qemu) is None:
        die(f"{socket.gethostname()}: {qemu} not found (install qemu-system-arm)")
    proc = subprocess.run([qemu, "--version"], capture_output=True, text=True)
    if proc.returncode != 0:
        die(f"{socket.gethostname()}: {qemu} --version exited {proc.returncode}")
    for path in files:
        if not os.access(path, os.R_OK):
            die(f"{socket.gethostname()}: cannot read {path} (is the cache on a "
                "filesystem every node mounts?)")
    print(f"{socket.gethostname()}: ok: {proc.stdout.splitlines()[0]}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=pathlib.Path, help="the boot's result directory")
    ap.add_argument("--table", type=pathlib.Path,
                    help="a JSON list of {out, flags}: the array's tasks")
    ap.add_argument("--index", type=int, help="which of --table's tasks")
    ap.add_argument("--tag", default=str(os.getpid()),
                    help="names this attempt's part directory (default: the pid)")
    ap.add_argument("--check", action="store_true", help="probe this node and exit")
    ap.add_argument("--qemu", default="qemu-system-aarch64")
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
        run_boot(task["out"], task["flags"], args.tag)
    elif args.out is not None:
        run_boot(args.out, args.flags, args.tag)
    else:
        ap.error("give --out and run.py's flags, --table and --index, or --check")
    return 0


if __name__ == "__main__":
    sys.exit(main())
