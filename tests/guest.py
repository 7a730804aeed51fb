"""Run guest/run.py from tests and read what it left behind."""

import concurrent.futures
import json
import os
import subprocess

from kernels import PY, REPO


class Run:
    def __init__(self, proc, out):
        self.proc = proc
        self.out = out
        self.console = (out / "console.log").read_text(errors="replace") \
            if (out / "console.log").exists() else ""
        self.status = json.loads((out / "status.json").read_text()) \
            if (out / "status.json").exists() else None

    def fields(self, key):
        """Values of 'key: value' lines the scenario printed."""
        prefix = key + ": "
        return [ln[len(prefix):].strip() for ln in self.console.splitlines()
                if ln.startswith(prefix)]


def boot(out, flavour, scenario, *extra):
    proc = subprocess.run([PY, str(REPO / "guest/run.py"), "--flavour", flavour,
                           "--scenario", scenario, "--out", str(out), *extra],
                          capture_output=True, text=True)
    return Run(proc, out)


def boot_many(specs):
    """boot(*spec) for every spec, one per core at a time (an icount
    guest runs on one host thread); the Runs in the specs' order."""
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        return list(pool.map(lambda spec: boot(*spec), specs))


def icount_args(seed, shift=4, duration=30):
    """run.py flags of an icount boot with a phase seed."""
    return ["--clock", "icount", "--shift", str(shift), "--phase-seed", str(seed),
            "--duration", str(duration)]


# One recorded gcc49 boot per flavour for every test that asks for it
# (the loader's and the analysis's tests ask the same run).  The 20 kHz
# sampler is the extra interrupt source, -f json the live summaries' form.
# Recorded 45 s gcc49 boots gave 2, 3 and 6 failures, so 90 s expects
# about 7 and a boot without one is p < 1e-3.
RECORDED_SECONDS = "90"
_recorded = {}


def recorded_gcc49(tmp_path_factory, flavour):
    if flavour not in _recorded:
        out = tmp_path_factory.mktemp(f"{flavour}-gcc49-recorded")
        run = boot(out, flavour, "record", "--duration", RECORDED_SECONDS, "--append",
                   "ext4.chksum_window=gcc49 chkwin.workload=inode-load "
                   "chkwin.loader=-F,20000,-f,json")
        assert run.proc.returncode == 0, run.proc.stderr + run.console[-3000:]
        assert run.fields("chkwin-status") == ["0"], run.console[-3000:]
        _recorded[flavour] = run
    return _recorded[flavour]
