"""Progress on stderr, through one logger: "what: message" lines, so that
stdout stays for what a command prints (a builder's --print-* path).  A
step that takes minutes (a kernel build is seven to ten of them on two
cores) and prints nothing that long looks hung: it says how far it is at
least every PERIOD seconds.  quiet() holds all of it back for a block."""

import contextlib
import logging
import subprocess
import sys
import threading
import time

PERIOD = 30
LOGGER = logging.getLogger("chkwin")


class _Stderr(logging.Handler):
    """Each line on sys.stderr as it is when the line is written (a test's
    capture, a redirect), flushed at once."""

    def emit(self, record):
        try:
            print(self.format(record), file=sys.stderr, flush=True)
        except Exception:
            self.handleError(record)


LOGGER.addHandler(_Stderr())
LOGGER.setLevel(logging.INFO)
# Whatever configures the root logger does not print our lines twice.
LOGGER.propagate = False


def log(what, msg):
    """One progress line, "what: msg"."""
    LOGGER.info("%s: %s", what, msg)


@contextlib.contextmanager
def quiet():
    """No progress lines in the block, nor the output of tools that goes
    where tool_output() says."""
    level = LOGGER.level
    LOGGER.setLevel(logging.WARNING)
    try:
        yield
    finally:
        LOGGER.setLevel(level)


def tool_output():
    """Where a tool's own output goes when it is progress (apt-get, make):
    stderr, or nowhere while quiet."""
    return sys.stderr if LOGGER.isEnabledFor(logging.INFO) else subprocess.DEVNULL


@contextlib.contextmanager
def heartbeat(what, status, period=None, stream=None):
    """While the block runs, the line "what: status() (M min)" every period
    seconds (PERIOD by default), logged, or printed on stream if given."""
    period = period or PERIOD
    stop = threading.Event()
    start = time.monotonic()

    def beat():
        while not stop.wait(period):
            line = f"{status()} ({(time.monotonic() - start) / 60:.1f} min)"
            if stream:
                print(f"{what}: {line}", file=stream, flush=True)
            else:
                log(what, line)

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


def final_line(path):
    """The last line a file holds, stripped; "" for an empty or missing file."""
    lines = tail(path).strip().splitlines()
    return lines[-1].strip() if lines else ""


def last_line(logfile):
    """A status: the last line the step wrote."""
    line = final_line(logfile)
    return f"still running; last: {line[:120]}" if line else "still running"
