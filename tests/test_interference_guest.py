"""The flight recorder's diagnosis: what ran inside each failing computation.

Four `-R failures` boots of the unpatched lab kernel on instruction time
(one vCPU, the phase-seeded inode loop, the lab's windows watched): the
three off-stack modes of patch 0005, whose writers run inside the
checksum computation they corrupt without its code calling them (a timer
callback in softirq, a work item in a kworker the checksum yields to, an
hrtimer callback in hard interrupt), and the gcc49 stack window.  From
the snapshots alone, every inode failure the kernel prints is diagnosed:
the off-stack ones as interference with the writer's function first among
the suspects, the window ones as an interrupt in a known window, as the
recorder said before it kept what ran.  Nothing is lost.

Sizing: untraced 10 s boots of the off-stack modes failed 46, 36 and 48
times (tests/test_replay.py); the recorder slows the loop by about 1.6x,
so 10 s give about 20-30 each.  The gcc49 window at width 1 fails about
5e-5 a call (tests/boots.py): about 15 in 30 traced seconds.
"""

import re

import pytest

from tests.boots import assert_nothing_lost, boot_many, icount_args

from analysis import chkwinlog
from analysis import correlate
from analysis import declared
from analysis import fsgeom

pytestmark = pytest.mark.guest

FAILURE_RE = re.compile(r"inode #(\d+): comm \S+: iget: checksum invalid")
SEED = 7
# The writer of each mode as the diagnosis names it (what ran, its function).
OFFSTACK = {
    "percpu": "timer ext4_chksum_percpu_scrub",
    "shared": "work ext4_chksum_shared_scrub",
    "buffer": "hrtimer ext4_chksum_buffer_flip",
}
SECONDS = {"percpu": 10, "shared": 10, "buffer": 10, "gcc49": 30}
APPEND = {m: f"ext4.chksum_offstack={m}" for m in OFFSTACK}
APPEND["gcc49"] = "ext4.chksum_window=gcc49"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """{case: (run, log, correlation)}, one boot each."""
    outs = {c: tmp_path_factory.mktemp(f"interference-{c}") for c in APPEND}
    booted = boot_many([(out, "unpatched", "record",
                         *icount_args(SEED, duration=SECONDS[c]), "--append",
                         f"{APPEND[c]} chkwin.workload=inode-loop chkwin.loader=-R,failures")
                        for c, out in outs.items()])
    found = {}
    for c, run in zip(outs, booted):
        assert run.proc.returncode == 0, run.proc.stderr + run.console[-3000:]
        assert run.fields("chkwin-status") == ["0"], run.console[-3000:]
        path = run.out / "log.bin"
        log = chkwinlog.read(path)
        found[c] = run, log, correlate.Correlation(log, fsgeom.find(path))
    return found


def inode_failures(run, c):
    printed = sorted(int(m) for m in FAILURE_RE.findall(run.console))
    inode = [f for f in c.failures if f.kind == "inode"]
    assert printed, "the boot produced no checksum failure"
    assert sorted(f.ino for f in inode) == printed
    return inode


def test_every_kept_ran_hook_attached_and_nothing_lost(runs):
    """The lab kernel has every tracepoint that feeds the diagnosis; the
    inode loop loses no record and no snapshot."""
    for run, log, _ in runs.values():
        assert log.status == "complete"
        for hook in [h.name for h in declared.HOOKS if h.probe == "ran"] + ["softirq"]:
            assert log.header[f"mode.{hook}"] == "tp_btf", hook
        assert log.header["mode.iget"].startswith(chkwinlog.NOT_ATTACHED)
        assert_nothing_lost(log.trailer, {"iget", "sample"})
        assert int(log.trailer["count.ran"]) > 0


@pytest.mark.parametrize("mode", OFFSTACK)
def test_offstack_writer_is_the_first_suspect(runs, mode):
    """No window explains these; the writer ran inside every failing
    computation, and is ranked first against the good computations the
    snapshots carry."""
    run, log, c = runs[mode]
    for f in inode_failures(run, c):
        assert not f.attributed, f
        d = f.diagnosis
        assert d.kind == "interference", (d, f.computation)
        assert d.suspects[0].name == OFFSTACK[mode], d
        assert d.suspects[0].failing_share == 1.0, d
        assert d.good_computations > 0, d
        assert d.suspects[0].good_share < 1.0 and d.suspects[0].p < 0.05, d
        # The whole computation: the chain of calls that computed the
        # inode's checksum (a read-only loop: the task's whole group), from
        # the first to the verdict, with the writer among what ran inside it.
        comp = f.computation
        assert 1 < comp.calls <= f.group_calls and comp.begin < comp.end == f.ts
        assert OFFSTACK[mode] in {r.name for r in comp.inside}
    assert c.diagnoses()["first suspects"] == {OFFSTACK[mode]: len(c.failures)}


def test_stack_window_failures_are_still_an_interrupt_in_a_known_window(runs):
    run, log, c = runs["gcc49"]
    for f in inode_failures(run, c):
        assert f.attributed, f
        assert f.diagnosis.kind == "window" and not f.diagnosis.suspects, f.diagnosis
