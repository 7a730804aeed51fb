"""Boots as a Slurm job array (guest/host/bootrunner.py's second engine).

Each submission is one array: a JSON table of the boots (result directory
and guest/run.py flags) and one batch script whose task i runs
guest/host/boottask.py on row i, one CPU and the boot's memory a task,
--jobs tasks at a time (the array's % limit).  The results directory, the
table and the cache the flags name must be on a filesystem every node
mounts; a node needs QEMU, /usr/bin/python3 and this tree, and builds
nothing (the flags name every kernel, disk and file).  No accounting
daemon is assumed: a task is finished when it has left squeue; its result
directory says it published, and scontrol (while the controller still
remembers the job) or the task's output file says why it did not.

Before anything is submitted, check() makes sure the controller answers,
the partition exists and its limits admit a task, and every node of it
free to take one runs QEMU and reads the files the boots name (one probe
task a node): each refusal is one line.
"""

import concurrent.futures
import json
import math
import os
import pathlib
import re
import shutil
import subprocess
import time

from common import PY, REPO
from common.errors import die
from common.progress import log
from guest.host.bootrunner import QEMU_MEM_MB
from guest.host.boottask import RESULT
from guest.host.run import QEMU

# Seconds between looks at the queue; what a task's start and end cost
# beyond its boot is measured in bench/RESULTS.md ("The boot runner's
# engines").
POLL = 2.0
# How long a task that left the queue as COMPLETED may take to show its
# result here (a network filesystem's attribute cache): then it is lost.
RESULT_GRACE = 60
# Seconds a probe task may wait for its node; a command that hangs.
PROBE_SECONDS = 120
COMMAND_SECONDS = 60
# Reasons (squeue %r) for which a pending task would wait forever.
NEVER = ("PartitionTimeLimit", "BadConstraints", "InvalidAccount", "InvalidQOS")
# Minutes a task gets beyond its boot's watchdog (setup, the rename).
SLACK_MINUTES = 5
DEFAULT_MINUTES = 60


class SlurmEngine:
    name = "slurm"

    def __init__(self, workdir, partition=None, account=None, time_limit=None,
                 jobs=None, qemu=QEMU):
        self.workdir = pathlib.Path(workdir)
        self.partition, self.account = partition, account
        self.time_limit, self.jobs, self.qemu = time_limit, jobs, qemu
        self.slots = jobs or 1
        # One job name a run: squeue -n finds this run's tasks and no other's.
        self.job_name = f"chkwin-{os.getpid()}-{int(time.time())}"
        self._tasks = {}            # (array job id, index): boot
        self._gone = {}             # (job, index): when it left the queue
        self._submissions = 0

    def describe(self):
        return (f"Slurm partition {self.partition}, {self.slots} task"
                f"{'s' if self.slots != 1 else ''} at a time, job name {self.job_name}")

    def _slurm(self, *cmd, timeout=COMMAND_SECONDS):
        """(exit status, stdout, the last line of stderr) of a Slurm command."""
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except FileNotFoundError:
            die(f"slurm: {cmd[0]} not found: install slurm-wlm (make deps), "
                f"or use the local engine")
        except subprocess.TimeoutExpired:
            return 124, "", f"{cmd[0]} did not answer within {timeout} s"
        err = (proc.stderr.strip().splitlines() or [""])[-1]
        return proc.returncode, proc.stdout, err

    def check(self, boots):
        """One-line refusals before anything is submitted: the scheduler
        (check_scheduler), then the nodes (check_nodes)."""
        self.check_scheduler(boots)
        self.check_nodes(boots)

    def check_scheduler(self, boots=()):
        """The controller answers, the partition exists, and its limits
        admit a task of each boot (a task over them would pend forever)."""
        for tool in ("sbatch", "squeue", "scontrol", "sinfo", "srun", "scancel"):
            if shutil.which(tool) is None:
                die(f"slurm: {tool} not found: install slurm-wlm (make deps), "
                    f"or use the local engine")
        rc, out, err = self._slurm("scontrol", "ping")
        if rc != 0 or " is UP" not in out:
            # Its first line says where and what; a DOWN one adds a banner.
            said = (out.strip().splitlines() or [err or f"exit {rc}"])[0]
            die(f"slurm: the controller cannot be reached ({said}); nothing submitted")
        rc, out, err = self._slurm("sinfo", "-h", "-o", "%P %C %l")
        if rc != 0:
            die(f"slurm: sinfo failed: {err}; nothing submitted")
        rows = [line.split() for line in out.splitlines() if len(line.split()) == 3]
        parts = {name.rstrip("*"): (cpus, limit) for name, cpus, limit in rows}
        default = [name.rstrip("*") for name, _, _ in rows if name.endswith("*")]
        if self.partition is None:
            if not default:
                die("slurm: no default partition: name one (--partition); nothing submitted")
            self.partition = default[0]
        if self.partition not in parts:
            die(f"slurm: no partition {self.partition!r} (there are: "
                f"{', '.join(sorted(parts)) or 'none'}); nothing submitted")
        cpus, limit = parts[self.partition]
        self.slots = self.jobs or max(1, int(cpus.split("/")[-1]))
        most = minutes(limit)
        if boots and most is not None and self._minutes(boots) > most:
            die(f"slurm: a task needs {self._minutes(boots)} minutes and partition "
                f"{self.partition} allows {most} (--time-limit, or a shorter boot); "
                "nothing submitted")

    def check_nodes(self, boots):
        """Every node of the partition that can take a task now runs QEMU
        and reads the files the boots name (a probe task a node); a node
        that cannot be had at once is skipped, said in a line, and left to
        the tasks' own check (a boot on a node without QEMU or the files
        is lost and retried, not failed)."""
        rc, out, err = self._slurm("sinfo", "-h", "-N", "-p", self.partition, "-o", "%N %t %m")
        rows = [line.split() for line in out.splitlines() if len(line.split()) == 3]
        if rc != 0 or not rows:
            die(f"slurm: partition {self.partition} lists no node "
                f"({err or 'sinfo lists none'}); nothing submitted")
        need = max((b.mem_mb for b in boots), default=0) + QEMU_MEM_MB
        most = max(int(m.rstrip("+")) for _, _, m in rows)
        if need > most:
            die(f"slurm: a task needs {need} MB and the largest node of partition "
                f"{self.partition} has {most} MB; nothing submitted")
        nodes = sorted({node for node, state, _ in rows if state in ("idle", "mix")})
        if not nodes:
            log("slurm", f"no node of {self.partition} is free to probe now; each task "
                "checks QEMU and its files itself")
            return
        files = sorted({str(p) for b in boots for p in b.files})
        pool = concurrent.futures.ThreadPoolExecutor(min(16, len(nodes)))
        try:
            probes = {pool.submit(self._probe, n, files): n for n in nodes}
            for done in concurrent.futures.as_completed(probes):
                why, busy = done.result()
                if busy:
                    log("slurm", f"node {probes[done]} was not free at once, not probed "
                        f"({why})")
                elif why:
                    die(f"slurm: node {probes[done]}: {why}; nothing submitted")
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
            self._slurm("scancel", f"--name={self.job_name}-probe")

    def _options(self):
        opts = [f"--partition={self.partition}"]
        if self.account:
            opts.append(f"--account={self.account}")
        return opts

    def _probe(self, node, files):
        """(None, False) if the node runs QEMU and reads files; (why not,
        False); or (srun's line, True) when the node could not be had."""
        cmd = ["srun", *self._options(), f"--nodelist={node}", "--nodes=1", "--ntasks=1",
               "--cpus-per-task=1", "--mem=64", "--time=5", f"--job-name={self.job_name}-probe",
               f"--immediate={PROBE_SECONDS}", "--quiet", PY, str(REPO / "guest/boottask.py"),
               "--check",
               "--qemu", self.qemu, *[a for f in files for a in ("--file", f)]]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True,
                                  timeout=PROBE_SECONDS + COMMAND_SECONDS)
        except subprocess.TimeoutExpired:
            return f"the probe did not end within {PROBE_SECONDS + COMMAND_SECONDS} s", True
        if proc.returncode == 0:
            return None, False
        # The probe's own line, before srun's "task 0: Exited ...".
        lines = proc.stderr.strip().splitlines()
        own = [ln for ln in lines if not ln.startswith("srun:")]
        if own:
            return re.sub(r"^boottask(\.py)?: error: ", "", own[-1]), False
        said = lines[-1] if lines else f"the probe exited {proc.returncode}"
        return said, bool(re.search(r"allocat|[Ii]mmediate", said))

    def _minutes(self, boots):
        if self.time_limit:
            return self.time_limit
        limits = [b.wall_limit for b in boots if b.wall_limit]
        if not limits:
            return DEFAULT_MINUTES
        return math.ceil(max(limits) / 60) + SLACK_MINUTES

    def submit(self, boots):
        if not boots:
            return
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._submissions += 1
        table = self.workdir / f"tasks-{self._submissions}.json"
        table.write_text(json.dumps([{"out": str(b.out), "flags": list(b.flags)}
                                     for b in boots], indent=1) + "\n")
        script = self.workdir / "task.sh"
        if not script.exists():
            script.write_text(
                "#!/bin/sh\n"
                "# One array task: the boot in row $SLURM_ARRAY_TASK_ID of the table.\n"
                f"exec {PY} {REPO / 'guest/boottask.py'} --table \"$1\" "
                "--index \"$SLURM_ARRAY_TASK_ID\"\n")
        mem = max(b.mem_mb for b in boots) + QEMU_MEM_MB
        cmd = ["sbatch", "--parsable", *self._options(), f"--job-name={self.job_name}",
               f"--array=0-{len(boots) - 1}%{self.slots}", "--cpus-per-task=1",
               f"--mem={mem}", f"--time={self._minutes(boots)}", "--no-requeue",
               f"--output={self.workdir / 'slurm-%A_%a.out'}", str(script), str(table)]
        rc, out, err = self._slurm(*cmd)
        if rc != 0:
            self.cancel()
            die(f"slurm: sbatch refused the array: {err or f'exit {rc}'}")
        job = out.strip().split(";")[0]
        for i, boot in enumerate(boots):
            self._tasks[job, str(i)] = boot

    def _queued(self):
        """This run's (array job, index) pairs still in the queue; a task
        pending for a reason that never clears is a one-line error."""
        for attempt in range(COMMAND_SECONDS // int(POLL)):
            rc, out, err = self._slurm("squeue", "-h", "-r", "-n", self.job_name,
                                       "-o", "%F|%K|%T|%r")
            if rc == 0:
                rows = [line.split("|") for line in out.splitlines() if line.count("|") == 3]
                stuck = [r for r in rows if r[2] == "PENDING" and r[3] in NEVER]
                if stuck:
                    self.cancel()
                    die(f"slurm: task {stuck[0][0]}_{stuck[0][1]} can never start "
                        f"({stuck[0][3]}); cancelled, the boots so far are kept")
                return {(r[0], r[1]) for r in rows}
            time.sleep(POLL)
        die(f"slurm: squeue failed {COMMAND_SECONDS // int(POLL)} times in a row: {err}; "
            "the boots so far are kept")

    def _why(self, job, index):
        """(state, why a task that left the queue has no result), or
        (None, ...) when the controller no longer knows it."""
        rc, out, _ = self._slurm("scontrol", "-o", "show", "job", f"{job}_{index}")
        log = self.workdir / f"slurm-{job}_{index}.out"
        lines = log.read_text(errors="replace").strip().splitlines() if log.exists() else []
        said = f": {lines[-1]}" if lines else ""
        if rc != 0:
            return None, f"left the queue without a result{said}"
        fields = dict(re.findall(r"(\w+)=(\S+)", out))
        state, reason = fields.get("JobState", "?"), fields.get("Reason", "None")
        return state, (f"{state}" + (f" ({reason})" if reason != "None" else "")
                       + f", exit {fields.get('ExitCode', '?')}{said}")

    def wait(self):
        """[(boot, None or why it was lost)] of tasks that ended, once one has."""
        while True:
            queued = self._queued()
            ended = []
            for key, boot in list(self._tasks.items()):
                if key in queued:
                    continue
                if (boot.out / RESULT).exists():
                    ended.append((boot, None))
                    del self._tasks[key]
                    continue
                state, why = self._why(*key)
                since = self._gone.setdefault(key, time.monotonic())
                # A completed task's rename may not be visible here yet.
                if state in (None, "COMPLETED") and time.monotonic() - since < RESULT_GRACE:
                    continue
                ended.append((boot, why))
                del self._tasks[key]
            if ended:
                return ended
            time.sleep(POLL)

    def drain(self):
        """Start no more tasks; those running go on.  The boots dropped
        (the tasks pending when asked)."""
        rc, out, _ = self._slurm("squeue", "-h", "-r", "-t", "PENDING", "-n", self.job_name,
                                 "-o", "%F|%K")
        pending = {tuple(line.split("|")) for line in out.splitlines() if "|" in line}
        self._slurm("scancel", "--state=PENDING", f"--name={self.job_name}")
        return [boot for key, boot in self._tasks.items() if key in pending]

    def cancel(self):
        self._slurm("scancel", f"--name={self.job_name}")
        self._tasks.clear()

    def close(self):
        pass


def minutes(limit):
    """Minutes in a Slurm time limit (sinfo %l: [days-]hours:minutes:seconds,
    or minutes:seconds); None for none."""
    if limit in ("infinite", "UNLIMITED", "n/a", "NONE"):
        return None
    days, _, clock = limit.rpartition("-")
    parts = [int(x) for x in clock.split(":")]
    while len(parts) < 3:
        parts.insert(0, 0)
    hours, mins, secs = parts
    return (int(days or 0) * 24 + hours) * 60 + mins + (secs > 0)
