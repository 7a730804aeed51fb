#!/usr/bin/python3
"""Replay a recorded boot (guest/run.py --record-replay): check that it
reproduces the recording, or walk its checksum failures to their cause.

    guest/replay.py RUN                  replay once into RUN/replay-<n>/
    guest/replay.py RUN --failure 2      walk the 2nd failure (RUN/walk/)
    guest/replay.py RUN --failure all    walk every failure

A replay runs QEMU with the recording's own command line (rr=replay),
after replay.json's checks (guest/host/recordreplay.py), into a new
directory: nothing of the recording is written.  It reproduced the
recording when its console is byte for byte the recorded one and the
figures status.json takes from the console (failures, calls, uptime,
scenario status) agree; otherwise it says where it diverged, in one line,
and exits 1.  The walk (guest/host/walk.py) replays under QEMU's gdb stub.
"""

import argparse
import pathlib
import sys

from analysis.documents import BootStatus
from common.errors import die
from common.jsonfile import write_json
from common.progress import final_line
from guest.host import recordreplay
from guest.host import run as runner
from guest.host import walk
from guest.host.resultsdir import empty_out_dir, new_dir

# The figures of console_figures() a faithful replay reproduces exactly:
# all but its cost and QEMU's exit status.
REPRODUCED = ("ending", "scenario_status", "guest_uptime", "checksum_failures",
              "checksum_calls", "interrupts", "chkwin")


def first_difference(recorded, replayed):
    """(byte offset, line number, recorded line, replayed line) of the
    first difference of two consoles, or None when they are identical."""
    if recorded == replayed:
        return None
    at = next((i for i, (a, b) in enumerate(zip(recorded, replayed)) if a != b),
              min(len(recorded), len(replayed)))
    line = recorded.count(b"\n", 0, at) + 1

    def line_of(data):
        start = data.rfind(b"\n", 0, at) + 1
        end = data.find(b"\n", at)
        return data[start:end if end >= 0 else len(data)].decode(errors="replace")

    return at, line, line_of(recorded), line_of(replayed)


def replay(run, meta, out):
    """Replay run (meta: its checked replay.json) into out; (status,
    verdict) where verdict says whether and where it diverged."""
    console = runner.Console(out / "console.log", False)
    # A replay runs slower than its recording (it reads the log).
    ending, qemu_exit, wall = runner.boot_qemu(
        recordreplay.replay_argv(meta, run, out), console, out, 2 * meta["timeout"])
    text = console.text()
    status = BootStatus(replay_of=str(run.resolve()),
                        **runner.console_figures(text, ending, qemu_exit, wall))
    status.write(out / "status.json")
    recorded = BootStatus.read(run / "status.json")
    diff = first_difference((run / "console.log").read_bytes(),
                            (out / "console.log").read_bytes())
    mismatched = [k for k in REPRODUCED if getattr(status, k) != getattr(recorded, k)]
    verdict = {"reproduced": diff is None and not mismatched,
               "console_bytes": (out / "console.log").stat().st_size,
               "mismatched": mismatched, "wall_seconds": wall,
               "recorded_wall_seconds": meta["wall_seconds"],
               "first_difference": None if diff is None else
               dict(zip(("byte", "line", "recorded", "replayed"), diff))}
    write_json(out / "verdict.json", verdict)
    return status, verdict


def summary_line(run, out, status, verdict):
    if verdict["reproduced"]:
        calls = status.checksum_calls
        return (f"replay: {out} reproduced {run}: console identical "
                f"({verdict['console_bytes']} bytes), "
                f"{status.checksum_failures_total} failures in "
                f"{'an uncounted number of' if calls is None else calls} checksum calls, "
                f"{verdict['wall_seconds']} s wall (recorded in "
                f"{verdict['recorded_wall_seconds']} s)")
    diff = verdict["first_difference"]
    where = ("console identical" if diff is None else
             f"console differs from byte {diff['byte']} (line {diff['line']}: "
             f"recorded {diff['recorded'][:60]!r}, replayed {diff['replayed'][:60]!r})")
    qemu_err = final_line(out / "qemu.log")
    tail = f"; QEMU: {qemu_err}" if qemu_err else ""
    return (f"replay: error: {out} diverged from {run}: {where}; "
            f"differing: {', '.join(verdict['mismatched']) or 'none'}{tail}")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=pathlib.Path, help="a recorded boot's directory")
    ap.add_argument("--failure", metavar="N|all",
                    help="walk the N-th checksum failure (from 1), or all of "
                         "them, instead of one plain replay")
    ap.add_argument("--out", type=pathlib.Path,
                    help="where the replay or walk goes (default: a new "
                         "RUN/replay-<n> or RUN/walk-<n>); new or empty")
    args = ap.parse_args(argv)
    if args.failure is not None and args.failure != "all":
        try:
            args.failure = int(args.failure)
        except ValueError:
            ap.error(f"--failure {args.failure!r}: a number from 1, or all")
        if args.failure < 1:
            ap.error(f"--failure {args.failure}: failures are numbered from 1")
    return args


def out_dir(args, prefix):
    return new_dir(args.run, prefix) if args.out is None else empty_out_dir(args.out)


def main(argv=None):
    args = parse_args(argv)
    if not args.run.is_dir():
        die(f"{args.run}: no such run directory")
    meta = recordreplay.load(args.run)
    if args.failure is not None:
        walk.vmlinux_of(meta)
        return walk.main(args.run, meta, args.failure, out_dir(args, "walk"))
    out = out_dir(args, "replay")
    status, verdict = replay(args.run, meta, out)
    line = summary_line(args.run, out, status, verdict)
    print(line, file=sys.stdout if verdict["reproduced"] else sys.stderr)
    return 0 if verdict["reproduced"] else 1
