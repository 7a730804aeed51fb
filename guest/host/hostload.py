"""A CPU-bound load on every core of the host, for the benches and tests
that show a result does not follow the host's load."""

import contextlib
import os
import subprocess

from common import PY


@contextlib.contextmanager
def busy_cores(on=True):
    """One busy process per core, at the caller's priority, while the
    block runs (none when on is false)."""
    procs = [subprocess.Popen([PY, "-c", "while True: pass"])
             for _ in range(os.cpu_count() or 1)] if on else []
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()
