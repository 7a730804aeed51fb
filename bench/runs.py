"""The lab's commands as a benchmark runs them (a boot is guest/run.py),
output captured: a command that fails stops the benchmark with one line,
"NAME: error: what failed: the command's own last line"."""

import pathlib
import subprocess
import sys

from common import PY, REPO


def fail(what, why):
    """Exit with the benchmark's one-line error (NAME: bench/NAME.py, run
    as python3 -m bench.NAME)."""
    sys.exit(f"{pathlib.Path(sys.argv[0]).stem}: error: {what}: {why}")


def last_line(proc, default):
    """The last line of a finished command's stderr (where a command of
    the lab says why it failed), or default."""
    return (proc.stderr.strip().splitlines() or [default])[-1]


def run(cmd, what, default="no message"):
    """cmd's CompletedProcess; fail(what, ...) unless it exits 0."""
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        fail(what, last_line(proc, default))
    return proc


def boot(flags, what, default="no message"):
    """run() of one boot: guest/run.py with flags."""
    return run([PY, str(REPO / "guest/run.py"), *flags], what, default)
