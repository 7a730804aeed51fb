"""The demo's boots as a Slurm job array, on a single-node Slurm that the
test starts for itself (guest/host/slurmlocal.py: its own munged, slurmctld
and slurmd, config and state in a temporary directory, stopped by their
pids afterwards).

tests/boots.py's short demo runs again with --engine slurm: its walker
boots end after 20 passes, so each phase seed makes the same walker
passes on either engine and, in boots without a failure, the same
checksum calls (a directory inode that fails its checksum hides its
subtree from that pass, and failures follow the disk's interrupts, which
arrive by the host's clock), and the decisions (the window and the positive
control, sized in tests/test_demo.py to be decided) must be the local
run's.  One array task is cancelled while it boots; the run must finish
with that boot run again on the same seed, and nothing missing.  A Slurm
that cannot be reached, a partition that does not exist and a node
without QEMU are refused in one line before anything is submitted.
"""

import json
import os
import pathlib
import re
import shutil
import subprocess
import tempfile
import threading
import time

import pytest

from tests import boots
from common import PY, REPO

from analysis import documents
from analysis import experiment
from analysis import prose
from guest.host import slurmlocal

# The short demo of tests/boots.py is shared with the other module of its
# group, in one process.
pytestmark = [pytest.mark.guest, pytest.mark.xdist_group("short-demo")]


@pytest.fixture(scope="module")
def cluster():
    # Not under pytest's own temporary directories: they are closed to the
    # munge user.
    top = pathlib.Path(tempfile.mkdtemp(prefix="chkwin-slurm-"))
    conf = slurmlocal.start(top)
    pids = json.loads((top / slurmlocal.PIDS).read_text())
    env = {**os.environ, "SLURM_CONF": str(conf)}
    yield env
    slurmlocal.stop(top)
    shutil.rmtree(top)
    for name, pid in pids.items():
        assert not os.path.exists(f"/proc/{pid}"), name


def lab_demo(env, results, *args):
    return subprocess.run([PY, str(REPO / "guest/lab_demo.py"), *args,
                           "--results", str(results)], capture_output=True, text=True,
                          env=env)


def running_tasks(env):
    """[(array task id, seconds it has run)] of chkwin boots running now."""
    out = subprocess.run(["squeue", "-h", "-r", "-t", "RUNNING", "-o", "%j %F_%K %M"],
                         capture_output=True, text=True, env=env).stdout
    found = []
    for line in out.splitlines():
        name, task, used = line.split()
        if name.startswith("chkwin-") and not name.endswith("-probe"):
            parts = [int(x) for x in re.split(r"[:-]", used)]
            found.append((task, sum(v * 60 ** i for i, v in enumerate(reversed(parts)))))
    return found


@pytest.fixture(scope="module")
def slurm_demo(cluster, tmp_path_factory):
    """The short demo through Slurm, one task cancelled mid-boot: (the
    process, experiment.json, the task ids cancelled, the run directory)."""
    results = tmp_path_factory.mktemp("slurm-results")
    cancelled = []

    def cancel_one():
        # A task two seconds into its boot has ten or more to go.
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and not cancelled:
            for task, used in running_tasks(cluster):
                if 2 <= used <= 5:
                    subprocess.run(["scancel", task], env=cluster, check=True)
                    cancelled.append(task)
                    break
            time.sleep(0.5)

    canceller = threading.Thread(target=cancel_one)
    canceller.start()
    proc = lab_demo(cluster, results, *boots.SHORT_DEMO, "--engine", "slurm")
    canceller.join()
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    top = (results / "latest").resolve()
    return proc, json.loads((top / "experiment.json").read_text()), cancelled, top


def test_each_seed_makes_the_local_engines_calls(slurm_demo, tmp_path_factory):
    _, doc, _, top = slurm_demo
    _, _, local_top, local = boots.short_demo(tmp_path_factory)
    assert doc["settings"]["engine"] == "slurm" and local["settings"]["engine"] == "local"
    kinds = {c["name"]: c["kind"] for c in doc["conditions"]}

    def calls(d, where):
        """{(condition, seed): (calls, failures, walker passes)}."""
        return {(b["condition"], b["phase_seed"]): (
                    b["calls"], b["failures_total"],
                    boots.Run(None, where / b["dir"]).fields("passes"))
                for b in d["boots"] if kinds[b["condition"]] != "recorded"}
    here, there = calls(doc, top), calls(local, local_top)
    assert here.keys() == there.keys() and len(here) == 14
    exact = 0
    for key, (n, failed, passes) in here.items():
        m, failed_there, passes_there = there[key]
        assert passes == passes_there == ["20"], key
        if failed == failed_there == 0:
            assert n == m, key
            exact += 1
    # The window's off boots at least.
    assert exact >= 4


def test_the_decisions_are_the_local_engines(slurm_demo, tmp_path_factory):
    doc = slurm_demo[1]
    local = boots.short_demo(tmp_path_factory)[3]

    def decided(d):
        res = experiment.Results(documents.ExperimentDoc.from_json(d))
        return {c["key"]: c["verdict"].kind for c in res.comparisons}
    assert decided(doc) == decided(local) == {"window": "differs", "control": "differs"}
    assert doc["settings"]["plan"] == local["settings"]["plan"]


def test_a_cancelled_task_runs_again_on_its_seed(slurm_demo):
    proc, doc, cancelled, _ = slurm_demo
    assert len(cancelled) == 1, "no task was seen two to five seconds into its boot"
    lost = re.findall(r"^demo: boot (\S+) lost \(CANCELLED.*\); run again with the same "
                      r"flags, attempt 2 of 3$", proc.stdout, re.M)
    assert len(lost) == 1, proc.stdout
    again = [b for b in doc["boots"] if b["attempts"] == 2]
    assert [b["dir"] for b in again] == lost
    assert doc["missing"] == [] and all(b["attempts"] == 1 for b in doc["boots"]
                                        if b not in again)
    assert prose.plan_line(documents.ExperimentDoc.from_json(doc)).endswith(
        "every condition got its boots")


def test_an_unreachable_slurm_is_refused_in_one_line(tmp_path):
    conf = tmp_path / "slurm.conf"
    # A controller on a port where nothing listens.
    conf.write_text(slurmlocal.slurm_conf(tmp_path, "nohost", 1))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    proc = lab_demo(env, tmp_path / "results", *boots.SHORT_DEMO, "--engine", "slurm")
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert lines[-1].startswith("lab_demo.py: error: slurm: the controller cannot be "
                                "reached"), proc.stderr
    assert lines[-1].endswith("nothing submitted")


def test_a_missing_partition_or_qemu_is_refused_before_submitting(cluster, tmp_path):
    proc = lab_demo(cluster, tmp_path / "a", *boots.SHORT_DEMO, "--engine", "slurm",
                    "--partition", "nosuch")
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        "lab_demo.py: error: slurm: no partition 'nosuch' (there are: "
        f"{slurmlocal.PARTITION}); nothing submitted")
    proc = lab_demo(cluster, tmp_path / "b", *boots.SHORT_DEMO, "--engine", "slurm",
                    "--qemu", "/nonexistent/qemu-system-aarch64")
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert re.fullmatch(r"lab_demo\.py: error: slurm: node \S+: \S+: /nonexistent/"
                        r"qemu-system-aarch64 not found \(install qemu-system-arm\); "
                        r"nothing submitted", last), proc.stderr
    # Nothing was submitted: no boot ran, the run directory holds no boot.
    top = next((tmp_path / "b").iterdir())
    assert not [p for p in top.iterdir() if p.is_dir()]
