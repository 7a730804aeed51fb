"""The flight recorder (`chkwin --record failures`) in a gcc49 guest.

A flight run: the unpatched kernel, window gcc49 at width 4 with the 20 kHz
sampler, inode-load under `-R failures`, beside a CPU-bound load on every
host core (a snapshot is sent while the sampler keeps interrupting: its
rings stay frozen meanwhile, so nothing it sends is overwritten however
slowly the host runs it).  On the host clock a loaded host fails less
per call: alone, boots like it gave 12 and 17 inode failures in 30 s;
beside the load one 45 s boot gave 7 (0 lost, 15 snapshots), so the test
boots 75 s, about 12 expected, none is p < 1e-5.  Every
"iget: checksum invalid" the kernel prints must be attributed from the
snapshots alone to a window interrupt on the failing CPU, with nothing
lost and the rings reaching back over the failing call.

The differential half: the full log of the recorded gcc49 boot the other
tests share (guest.recorded_gcc49), cut down to what the flight recorder
would have kept (analysis/flight.py), gives the same attributions.
"""

import dataclasses
import re

import pytest

from tests.boots import assert_nothing_lost, boot, recorded_gcc49

from guest.host.hostload import busy_cores

from analysis import chkwinlog
from analysis import correlate
from analysis import flight
from analysis import fsgeom

# Two-vCPU guests on the host clock (the hostclock mark); the
# recorded gcc49 boots of tests/boots.py shared with the other modules of
# its group, in one process.
pytestmark = [pytest.mark.guest, pytest.mark.hostclock,
              pytest.mark.xdist_group("recorded-gcc49")]

FAILURE_RE = re.compile(r"inode #(\d+): comm \S+: iget: checksum invalid")
# Each sampler tick at 20 kHz leaves four records in the arrivals ring (the
# sample, the irq, its handler's and the sampler hrtimer's ran records),
# twice as many as before ran records: 512 reaches as far back as 256 did,
# across a failing call that took 73 interrupts on a loaded host.
HISTORY = 512


@pytest.fixture(scope="module")
def flight_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("flight-gcc49")
    with busy_cores():
        run = boot(out, "unpatched", "record", "--duration", "75", "--append",
                   "ext4.chksum_window=gcc49 ext4.chksum_window_width=4 "
                   f"chkwin.workload=inode-load chkwin.loader=-R,failures,"
                   f"--history,{HISTORY},-F,20000")
    assert run.proc.returncode == 0, run.proc.stderr + run.console[-3000:]
    assert run.fields("chkwin-status") == ["0"], run.console[-3000:]
    log = chkwinlog.read(out / "log.bin")
    return run, log, correlate.Correlation(log, fsgeom.find(out / "log.bin"))


def test_every_printed_failure_is_attributed_from_snapshots(flight_run):
    run, log, c = flight_run
    assert log.status == "complete"
    assert log.header["record"] == "failures" and log.header["history"] == str(HISTORY)
    printed = [int(m) for m in FAILURE_RE.findall(run.console)]
    assert printed, "the gcc49 flight run produced no checksum failure"
    inode = [f for f in c.failures if f.kind == "inode"]
    assert sorted(f.ino for f in inode) == sorted(printed)
    for f in inode:
        assert f.attributed, f
        # K covers the failing call: it began inside both rings' reach.
        assert flight.covered(log, f.cpu, f.ts, f.call.ts), f
        assert f.call.caller in correlate.INODE_CALLERS, f
        assert f.window_arrivals and all(a.cpu == f.cpu for a in f.window_arrivals)
        assert f.call.cpu == f.cpu, f
    # Nothing lost, every failure snapshotted, and only snapshots sent;
    # block issues and iget results, which would only feed counters (the
    # verdict tracepoint sees every inode verdict first), are not
    # attached in this mode.
    assert_nothing_lost(log.trailer, {"iget"})
    assert log.trailer["count.iget"] == log.trailer["count.block"] == "not-attached"
    assert log.header["mode.iget"].startswith("not-attached")
    assert int(log.trailer["count.frozen"]) >= 0
    assert int(log.trailer["count.snapshot"]) == len(log.rows("snapshot")) \
        == int(log.trailer["count.verify_bad"]) >= len(printed)
    # Each failure is an interrupt in a known window, as before the
    # recorder kept what ran.
    assert all(f.diagnosis.kind == "window" for f in inode), inode
    snaps = log.of("snapshot")
    # A horizon is the ts of a record already in the ring when the failure
    # came: interrupts during the snapshot must not have replaced it.
    assert (snaps["call_horizon"] <= snaps["ts"]).all()
    assert (snaps["arrival_horizon"] <= snaps["ts"]).all()
    assert len(log) == len(snaps) + int((snaps["calls"] + snaps["arrivals"]
                                         + snaps["blocks"]).sum())
    assert len(log) < int(log.trailer["count.chksum"]) / 20
    assert run.status.chkwin["snapshots"] == len(snaps)


def test_failing_block_reads_are_in_the_snapshots(flight_run):
    """The blocks ring is shared by the CPUs: the completion that brought
    each failing inode's table block in is there, on whatever CPU it ran."""
    _, _, c = flight_run
    for f in c.failures:
        if f.kind == "inode":
            assert f.block and f.block.latency_ns > 0, f


def test_full_log_cut_down_gives_the_same_attributions(tmp_path_factory):
    run = recorded_gcc49(tmp_path_factory, "unpatched")
    path = run.out / "log.bin"
    log, geo = chkwinlog.read(path), fsgeom.find(path)
    full = correlate.Correlation(log, geo)
    cut_log = flight.cut(log, HISTORY)
    cut = correlate.Correlation(cut_log, geo)
    assert full.failures, "the recorded gcc49 run produced no checksum failure"
    strip = [[dataclasses.replace(f, history_covered=None, computation=None, diagnosis=None)
              for f in c.failures] for c in (cut, full)]
    assert strip[0] == strip[1]
    # What ran inside a computation whose history the rings cover is all
    # there, and the diagnosis the same.
    for f, g in zip(cut.failures, full.failures):
        assert f.diagnosis == g.diagnosis
        if f.history_covered:
            assert f.computation == g.computation
    # K covers each failing call; where the task had an earlier verdict,
    # its whole group (history_covered).
    for f in cut.failures:
        assert flight.covered(cut_log, f.cpu, f.ts, f.call.ts), f
    assert any(f.history_covered for f in cut.failures)
