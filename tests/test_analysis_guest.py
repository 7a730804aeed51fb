"""chkwin-analyze on a real gcc49 guest run of the lab.

The unpatched recorded gcc49 boot the loader's tests use too
(guest.recorded_gcc49: an icount boot of inode-loop under the loader).  Every failure must be traced to a window interrupt, and the
offset heat map must have arrivals in the window column.
"""

import json
import re
import subprocess

import pytest

from tests.boots import recorded_gcc49
from common import PY, REPO

from analysis import chkwinlog
from analysis import correlate
from analysis import fsgeom
from analysis import heatmap

from guest.host import kmsg

# The recorded gcc49 boots of tests/boots.py, shared with the other modules
# of its group in one process, which boot two-vCPU guests on the host
# clock: the hostclock mark.
pytestmark = [pytest.mark.guest, pytest.mark.hostclock,
              pytest.mark.xdist_group("recorded-gcc49")]

ANALYZE = REPO / "analysis" / "chkwin-analyze"
FAILURE_RE = re.compile(r"inode #(\d+): comm \S+: iget: checksum invalid")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    r = recorded_gcc49(tmp_path_factory, "unpatched")
    assert (r.out / "log.bin").exists(), r.console[-3000:]
    return r


def test_every_failure_is_attributed_to_a_window_interrupt(run):
    proc = subprocess.run([PY, str(ANALYZE), "correlate", str(run.out / "log.bin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    printed = {int(m) for m in FAILURE_RE.findall(run.console)}
    assert printed, "the gcc49 run produced no checksum failure to attribute"
    assert printed <= {f["ino"] for f in res["failures"]}
    assert res["geometry"], "cmdline.txt should lead to the test disk's geometry"
    for f in res["failures"]:
        assert f["attributed"], f
        assert f["window_arrivals"], f
        if f["kind"] == "inode":
            assert f["call"]["caller"] in correlate.INODE_CALLERS, f
            # The inode-table block came in by a block completion before the verdict.
            assert f["block"] and 0 < f["block"]["latency_ns"], f
        else:
            assert f["call"]["caller"] == "EXT4_CHKSUM_" + f["kind"].upper(), f
    # Every failure the console reports, of whatever kind, is in the log
    # (kinds as the log names them: the console tells leaf directory
    # blocks from index blocks and block from inode bitmaps, the log not).
    console = {}
    for kind, n in kmsg.failures(run.console).items():
        console[kmsg.LOG_KIND[kind]] = console.get(kmsg.LOG_KIND[kind], 0) + n
    logged = {k: v["failures"] for k, v in res["failures_by_kind"].items()}
    assert {k: n for k, n in console.items() if n} == logged
    # Every call with a window arrival fed a verdict that failed: under the
    # emulation a window interrupt always clobbers the result.
    assert res["window_hit_outcomes"], res
    for caller, fates in res["window_hit_outcomes"].items():
        assert fates["matched"] == 0, (caller, fates)


def test_heatmap_has_the_window_column(run, tmp_path):
    path = run.out / "log.bin"
    log = chkwinlog.read(path)
    corr = correlate.Correlation(log, fsgeom.find(path))
    res = heatmap.write_all(log, corr, tmp_path)
    assert sum(res["window_column"].values()) >= len(corr.failures) > 0, res
    for name in ("offset.png", "offset.svg", "position.png", "position.svg",
                 "arrivals.txt"):
        assert (tmp_path / name).stat().st_size > 0, name
