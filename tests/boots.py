"""Run guest/run.py and guest/lab_demo.py from tests and read what they
left behind."""

import json
import os
import subprocess

from common import PY, REPO

from analysis.chkwinlog import NOT_ATTACHED, PROBES
from analysis.documents import BootStatus
from guest.host import bootrunner


class Run:
    def __init__(self, proc, out):
        self.proc = proc
        self.out = out
        self.console = (out / "console.log").read_text(errors="replace") \
            if (out / "console.log").exists() else ""
        self.status = BootStatus.read(out / "status.json") \
            if (out / "status.json").exists() else None

    def fields(self, key):
        """Values of 'key: value' lines the scenario printed."""
        prefix = key + ": "
        return [ln[len(prefix):].strip() for ln in self.console.splitlines()
                if ln.startswith(prefix)]


def assert_nothing_lost(trailer, left_out):
    """Every probe lost 0 records; the probes in left_out, which the run
    did not attach, say not-attached (never a silent 0)."""
    lost = {k[5:]: v for k, v in trailer.items() if k.startswith("lost.")}
    assert lost == {p: NOT_ATTACHED if p in left_out else "0" for p in PROBES}, lost


def boot(out, flavour, scenario, *extra):
    proc = subprocess.run([PY, str(REPO / "guest/run.py"), "--flavour", flavour,
                           "--scenario", scenario, "--out", str(out), *extra],
                          capture_output=True, text=True)
    return Run(proc, out)


def slots(vcpus=1):
    """Boots of vcpus vCPUs at once in this test process: its share of the
    machine's cores when pytest-xdist runs the suite in several processes
    (tests/run), a core for each vCPU."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    return max(1, len(os.sched_getaffinity(0)) // workers // vcpus)


def vcpus(flags):
    """A run.py boot's vCPUs: one on instruction time, else --smp or 2."""
    if "icount" in flags:
        return 1
    smp = flags[flags.index("--smp") + 1] if "--smp" in flags else "2"
    return int(smp) if smp.isdigit() and int(smp) > 0 else 1


def boot_many(specs):
    """boot(*spec) for every spec, through the lab's boot runner
    (guest/host/bootrunner.py: the local engine, a core for each vCPU of
    this process's share, no retries); the Runs in the specs' order."""
    boots = [bootrunner.Boot(out, ["--flavour", flavour, "--scenario", scenario, *extra])
             for out, flavour, scenario, *extra in specs]
    engine = bootrunner.LocalEngine(slots(max(vcpus(b.flags) for b in boots)))
    try:
        outcomes = bootrunner.run(engine, boots, retries=0)
    finally:
        engine.close()
    return [Run(subprocess.CompletedProcess(o.boot.flags, o.returncode, "",
                                            "\n".join(o.stderr + [o.reason])), o.boot.out)
            for o in outcomes]


def demo(results, args):
    """guest/lab_demo.py with args into results, which must succeed:
    (the process, its run directory, its experiment.json)."""
    proc = subprocess.run([PY, str(REPO / "guest/lab_demo.py"), *args,
                           "--results", str(results)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    top = (results / "latest").resolve()
    return proc, top, json.loads((top / "experiment.json").read_text())


# The short demo of tests/test_demo.py, whose boots tests/test_slurm.py
# runs again through Slurm (no boot recorded for replay: tests/test_demo_replay.py
# walks the demo's): one flavour, four counting boots a condition
# of 20 walker passes, so that a phase seed makes the same calls wherever
# it runs.  A boot ends at 180 guest seconds if its passes have not: a
# quiet host's boots take about 28 (the pilot's wide window, which prints
# ~500 failures to the console, about 46), but a disk read the host is slow
# to complete costs guest time too (idle time is skipped to the next
# timer), and beside make demo, on two cores, a pilot boot managed only 17
# passes in 60 guest seconds (bench/RESULTS.md).
SHORT_DEMO = ["--flavours", "unpatched", "--boot-seconds", "180", "--passes", "20",
              "--boots", "4", "--record-seconds", "60", "--no-controls", "--seed", "11",
              "--jobs", str(slots()), "--rr-exact", "0"]
_short_demo = []


def short_demo(tmp_path_factory):
    """(the process, its results directory, its run, experiment.json) of
    SHORT_DEMO on the local engine, run once a session."""
    if not _short_demo:
        results = tmp_path_factory.mktemp("demo-results")
        proc, top, doc = demo(results, SHORT_DEMO)
        _short_demo.append((proc, results, top, doc))
    return _short_demo[0]


def icount_args(seed, shift=4, duration=30):
    """run.py flags of an icount boot with a phase seed."""
    return ["--clock", "icount", "--shift", str(shift), "--phase-seed", str(seed),
            "--duration", str(duration)]


# One recorded gcc49 boot per flavour for every test that asks for it
# (the loader's and the analysis's tests ask the same runs), on instruction
# time: the phase-seeded inode-loop under the loader, -R all, -f json the
# live summaries' form, no sampler (the host-clock exact-listing and flight
# runs keep the sampler's paths tested; on icount it would also fire in the
# idle time QEMU skips while the host drains the log).  Width 1 (W = 3) at
# the tick's 1,066 a task second fails about 5e-5 a call: about 25
# failures in a 30 s boot's half a million calls.  The ring holds the
# whole log (64 MB against about 50): the guest waits for its log port at
# the host's pace, and what these tests check is what was recorded, not how
# fast a loaded host drains it (bench/ measures that).
RECORDED_SECONDS = 30
RECORDED_PHASE_SEED = 2021
_recorded = {}


def recorded_gcc49(tmp_path_factory, flavour):
    """The flavour's recorded run; the first call boots both flavours
    side by side."""
    if flavour not in _recorded:
        flavours = ("unpatched", "patched")
        append = ("ext4.chksum_window=gcc49 chkwin.workload=inode-loop "
                  "chkwin.loader=-f,json,--ringbuf-mb,64")
        specs = [(tmp_path_factory.mktemp(f"{f}-gcc49-recorded"), f, "record",
                  *icount_args(RECORDED_PHASE_SEED, duration=RECORDED_SECONDS),
                  "--append", append) for f in flavours]
        for f, run in zip(flavours, boot_many(specs)):
            assert run.proc.returncode == 0, run.proc.stderr + run.console[-3000:]
            assert run.fields("chkwin-status") == ["0"], run.console[-3000:]
            _recorded[f] = run
    return _recorded[flavour]
