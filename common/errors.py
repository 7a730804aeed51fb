"""The project's error convention: one line on stderr that names the
command, exit status 1."""

import pathlib
import subprocess
import sys


class OneLineError(Exception):
    """A failure its message says all of (a damaged declaration, a cache
    entry no builder wrote): a command prints it as die() does."""


def die(msg):
    """One line on stderr, exit status 1."""
    print(f"{pathlib.Path(sys.argv[0]).name}: error: {msg}", file=sys.stderr)
    sys.exit(1)


def run_or_die(cmd, what, **kw):
    """Run cmd in text mode; if it cannot start or fails, die naming what
    failed and its last line of output.  stdout is captured unless the
    caller redirects it; the CompletedProcess is returned."""
    kw.setdefault("stdout", subprocess.PIPE)
    try:
        proc = subprocess.run(cmd, stderr=subprocess.PIPE, text=True, **kw)
    except FileNotFoundError:
        die(f"{what}: {cmd[0]} not found")
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout or "").strip().splitlines()
        # A compiler's first error says more than make's closing line.
        errors = [ln for ln in lines if "error" in ln and not ln.startswith("make")]
        die(f"{what} failed (exit {proc.returncode}): "
            f"{(errors or lines)[0 if errors else -1] if lines else 'no message'}")
    return proc
