"""Progress lines for steps that take minutes: a kernel build is seven to
ten of them on two cores, and a step that prints nothing that long looks
hung.  A line at least every PERIOD seconds."""

import contextlib
import subprocess
import sys
import threading
import time

PERIOD = 30


@contextlib.contextmanager
def heartbeat(what, status, period=None, stream=None):
    """While the block runs, print "what: status() (M min)" every period
    seconds (PERIOD by default; to stream, stderr by default)."""
    stream = stream or sys.stderr
    period = period or PERIOD
    stop = threading.Event()
    start = time.monotonic()

    def beat():
        while not stop.wait(period):
            print(f"{what}: {status()} ({(time.monotonic() - start) / 60:.1f} min)",
                  file=stream, flush=True)

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def tail(path, size=65536):
    """The text of the last size bytes of a file that is being written."""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - size))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def run_logged(cmd, logfile, what, status, **kw):
    """subprocess.run(cmd) with stdout and stderr in logfile, and a progress
    line from status(logfile) every PERIOD seconds; the CompletedProcess."""
    with open(logfile, "w") as out, heartbeat(what, lambda: status(logfile)):
        return subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, **kw)


def last_line(logfile):
    """A status: the last line the step wrote."""
    lines = tail(logfile).strip().splitlines()
    return f"still running; last: {lines[-1].strip()[:120]}" if lines else "still running"
