#!/usr/bin/python3
"""make test's phases, timed: each a command, run in order until one
fails; at the end (or at the failure) the wall time of every phase that
ran, so a slow make test says where its time went.

    tests/phases.py NAME CMD [ARG...] [-- NAME CMD [ARG...]]...
"""

import subprocess
import sys
import time


def phases(argv):
    """[(name, argv)] from NAME CMD ARGS -- NAME CMD ARGS ..."""
    out, cur = [], []
    for a in argv + ["--"]:
        if a == "--":
            if len(cur) < 2:
                sys.exit("phases.py: error: each phase needs a name and a command")
            out.append((cur[0], cur[1:]))
            cur = []
        else:
            cur.append(a)
    return out


def minutes(seconds):
    return f"{int(seconds // 60)} min {seconds % 60:.0f} s"


def main():
    done, rc = [], 0
    start = time.monotonic()
    for name, cmd in phases(sys.argv[1:]):
        t = time.monotonic()
        try:
            rc = subprocess.run(cmd).returncode
        except FileNotFoundError:
            print(f"phases.py: error: {cmd[0]} not found", file=sys.stderr)
            rc = 127
        done.append((name, time.monotonic() - t, rc))
        if rc:
            break
    print("\nwall time per phase:")
    for name, seconds, code in done:
        print(f"  {name:<26} {minutes(seconds):>14}" + (f"  (failed, exit {code})" if code else ""))
    print(f"  {'all':<26} {minutes(time.monotonic() - start):>14}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
