"""chkwin-analyze on a real gcc49 guest run of the lab.

One record run (unpatched, the window emulated, inode-load, the loader's
20 kHz sampler as an extra interrupt source: 6 failures in 120 s measured,
so 180 s expects about 9 and a run without one is p ~ 1e-4).  Every
failure must be traced to a window interrupt, and the offset heat map must
have arrivals in the window column.
"""

import json
import re
import subprocess
import sys

import pytest

from guest import boot
from kernels import PY, REPO

sys.path.insert(0, str(REPO / "analysis"))
import chkwinlog  # noqa: E402
import correlate  # noqa: E402
import fsgeom  # noqa: E402
import heatmap  # noqa: E402

ANALYZE = REPO / "analysis" / "chkwin-analyze"
FAILURE_RE = re.compile(r"inode #(\d+): comm \S+: iget: checksum invalid")
APPEND = "ext4.chksum_window=gcc49 chkwin.workload=inode-load chkwin.loader=-F,20000"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("gcc49-record")
    r = boot(out, "unpatched", "record", "--duration", "180", "--append", APPEND)
    assert r.proc.returncode == 0, r.proc.stderr + r.console[-3000:]
    assert (out / "log.bin").exists(), r.console[-3000:]
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
        assert f["call"]["caller"] in correlate.VERDICT_CALLERS, f
        # The inode-table block came in by a block completion before the verdict.
        assert f["block"] and 0 < f["block"]["latency_ns"], f


def test_heatmap_has_the_window_column(run, tmp_path):
    path = run.out / "log.bin"
    log = chkwinlog.read(path)
    corr = correlate.Correlation(log, fsgeom.find(path))
    res = heatmap.write_all(log, corr, tmp_path)
    assert sum(res["window_column"].values()) >= len(corr.failures) > 0, res
    for name in ("offset.png", "offset.svg", "position.png", "position.svg",
                 "arrivals.txt"):
        assert (tmp_path / name).stat().st_size > 0, name
