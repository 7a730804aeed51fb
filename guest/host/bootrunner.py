"""The one way the lab runs many boots: hand them to an engine, retry the
ones that were lost, collect each boot's result.

A boot is guest/run.py's flags and a result directory, which counts as a
result once guest/host/boottask.py has published its task.json (written
aside and renamed when the boot ends).  An engine runs boots and says,
for each, whether it published a result or was lost on the way and why
(its task killed: a lost node, scancel, a time limit).  Lost boots are
run again with the same flags (so the same phase seed) up to `retries`
more times, then reported with their reason; a boot that ran and failed
(a hung or panicked guest) is a result, not a loss: the same seed would
fail the same way.

Engines: LocalEngine here (one boot a core on this machine) and
guest/host/slurmengine.SlurmEngine (a Slurm job array).
"""

import concurrent.futures
import dataclasses
import json
import os
import pathlib
import shutil
import signal
import subprocess
import threading

from analysis.documents import BootStatus
from common import PY, REPO
from common.errors import die
from common.progress import LOGGER
from guest.host.boottask import RESULT
from guest.host.run import QEMU
# Attempts beyond the first for a boot whose task was lost.
RETRIES = 2
# What a boot's QEMU uses beyond the guest's memory (MiB).
QEMU_MEM_MB = 512
# on_outcome's word for: start no more boots.
STOP = "stop"


@dataclasses.dataclass
class Boot:
    """A boot to run: guest/run.py's flags (without --out) and where its
    result goes; mem_mb and wall_limit (seconds, run.py's watchdog) size
    a batch task; files are what the flags name (checked on each node)."""
    out: pathlib.Path
    flags: list
    mem_mb: int = 1024
    wall_limit: float = None
    files: tuple = ()


@dataclasses.dataclass
class Outcome:
    """What became of a boot: run.py's exit status, its one-line reason
    when it failed, its BootStatus, where it ran; returncode None when every
    attempt was lost (reason then says how the last one was)."""
    boot: Boot
    returncode: int
    reason: str
    status: BootStatus
    stderr: list
    host: str
    attempts: int
    wall_seconds: float

    @property
    def lost(self):
        return self.returncode is None


def result(boot, attempts):
    """The Outcome of a boot whose result directory was published."""
    task = json.loads((boot.out / RESULT).read_text())
    status_path = boot.out / "status.json"
    status = BootStatus.read(status_path) if status_path.exists() else None
    return Outcome(boot, task["returncode"], task["reason"], status, task["stderr"],
                   task["host"], attempts, task["wall_seconds"])


def not_run(boot):
    """The Outcome of a boot a stopped run never started."""
    return Outcome(boot, None, "not run: the run stopped", None, [], "", 0, 0.0)


class LocalEngine:
    """Boots on this machine, `jobs` at a time (an icount boot is one
    host thread)."""

    name = "local"

    def __init__(self, jobs, qemu=QEMU):
        self.slots = jobs
        self.qemu = qemu
        self._pool = concurrent.futures.ThreadPoolExecutor(jobs)
        self._running = {}
        self._procs = set()
        self._lock = threading.Lock()
        self._cancelled = False

    def describe(self):
        return f"this machine, {self.slots} boot{'s' if self.slots != 1 else ''} at a time"

    def check(self, boots):
        if shutil.which(self.qemu) is None:
            die(f"{self.qemu} not found: install qemu-system-arm (make deps)")
        for path in {p for b in boots for p in b.files}:
            if not pathlib.Path(path).is_file():
                die(f"{path}: no such file (a boot names it)")

    def _one(self, boot):
        with self._lock:
            if self._cancelled:
                return "cancelled before it started"
            # A session of its own: cancel() ends the task with its QEMU,
            # and a ^C meant for the runner reaches them only through it.
            proc = subprocess.Popen([PY, str(REPO / "guest/boottask.py"), "--out",
                                     str(boot.out), "--", *boot.flags],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True,
                                    start_new_session=True)
            self._procs.add(proc)
        _, err = proc.communicate()
        with self._lock:
            self._procs.discard(proc)
        if (boot.out / RESULT).exists():
            return None
        lines = err.strip().splitlines()
        if lines:
            return lines[-1]
        if proc.returncode < 0:
            return f"the task was killed by signal {-proc.returncode}"
        return f"the task exited {proc.returncode} without a result"

    def submit(self, boots):
        for boot in boots:
            self._running[self._pool.submit(self._one, boot)] = boot

    def wait(self):
        """[(boot, None or why it was lost)] of boots that ended, once one has."""
        done, _ = concurrent.futures.wait(self._running,
                                          return_when=concurrent.futures.FIRST_COMPLETED)
        return [(self._running.pop(f), "never started" if f.cancelled() else f.result())
                for f in done]

    def drain(self):
        """Start no more boots; those running go on.  The boots dropped."""
        return [boot for f, boot in self._running.items() if f.cancel()]

    def cancel(self):
        self._cancelled = True
        with self._lock:
            for proc in self._procs:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        self._pool.shutdown(wait=True, cancel_futures=True)

    def close(self):
        self._pool.shutdown(wait=True)


def run(engine, boots, retries=RETRIES, on_outcome=None, say=None):
    """Run boots on engine, retrying lost ones; their Outcomes in the
    boots' order.  on_outcome(outcome) is called as each is final (the
    caller records it at once: a killed run keeps what it did); when it
    returns STOP, no boot that has not started yet will (the engine drops
    its queued ones), those running finish and are reported (lost ones
    with their reason, not retried), and the dropped ones come back lost,
    attempts 0, never passed to on_outcome.  say(line) reports retries.
    Interrupted, the engine's boots are cancelled."""
    say = say or LOGGER.info
    attempts = {id(b): 1 for b in boots}
    final = {}
    stopping, dropped = False, set()
    try:
        if boots:
            engine.submit(boots)
        while len(final) < len(boots):
            again = []
            for boot, lost in engine.wait():
                n = attempts[id(boot)]
                if id(boot) in dropped:
                    final[id(boot)] = not_run(boot)
                    continue
                if lost is not None and n <= retries and not stopping:
                    say(f"boot {boot.out.name} lost ({lost}); run again with the same "
                        f"flags, attempt {n + 1} of {retries + 1}")
                    attempts[id(boot)] = n + 1
                    again.append(boot)
                    continue
                outcome = result(boot, n) if lost is None else \
                    Outcome(boot, None, lost, None, [], "", n, 0.0)
                final[id(boot)] = outcome
                if on_outcome and on_outcome(outcome) is STOP and not stopping:
                    stopping = True
                    dropped = {id(b) for b in engine.drain()}
            for boot in again:
                if stopping:
                    final[id(boot)] = not_run(boot)
            if again and not stopping:
                engine.submit(again)
    except BaseException:
        engine.cancel()
        raise
    return [final[id(b)] for b in boots]


def statuses(boots, jobs):
    """The BootStatus of each boot, run jobs at a time on this machine; a
    boot that fails or is lost ends the caller with its one-line reason."""
    engine = LocalEngine(jobs)
    try:
        outcomes = run(engine, boots)
    finally:
        engine.close()
    for o in outcomes:
        if o.returncode != 0:
            die(f"boot {o.boot.out.name}: {o.reason}")
    return [o.status for o in outcomes]
