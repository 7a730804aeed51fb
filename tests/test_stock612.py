"""chkwin on Debian's 6.12 arm64 kernel (bookworm-backports or a bookworm
point release), unmodified: one shared boot of Russell King's loop under
the loader, as tests/test_stock.py does for 6.1.  This kernel differs
where it matters: fexit attaches on arm64 (ftrace direct calls), its
kallsyms has __irq_regs (KALLSYMS_ALL), virtio_pci is built in, and three
symbols are called chksum_update, so the kprobe goes by address to
crc32c_generic's."""

import re
import subprocess
import sys

import pytest

from kernels import PY, REPO
from test_stock import Tally, rk_loop_recorded

sys.path.insert(0, str(REPO / "guest"))
import loaderbuild  # noqa: E402
import stockkernel  # noqa: E402

pytestmark = pytest.mark.guest

SERIES = "6.12"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return rk_loop_recorded(tmp_path_factory, "stock612-rk", "--stock-package", SERIES)


@pytest.fixture(scope="module")
def log(run):
    return Tally(loaderbuild.build() / "host" / "chkwin", run.out / "log.bin")


def test_boots_with_the_modules_that_are_not_built_in(run):
    kdir = stockkernel.build(SERIES)
    release = (kdir / "release").read_text().strip()
    assert release.startswith("6.12.")
    order = run.fields("init: loaded modules")[0].split()
    assert order == (kdir / "modules" / "order").read_text().split()
    assert "virtio_pci" not in order and "ext4" in order and "crc32c_generic" in order
    assert "EXT4-fs (vda): mounted filesystem" in run.console


def test_plan_fexit_irq_regs_and_chksum_update_by_address(log):
    h = log.header
    assert h["kernel_release"].startswith("6.12.") and h["kernel_kind"] == "stock"
    modes = {k[5:]: v for k, v in h.items() if k.startswith("mode.")}
    assert modes["iget"] == "fexit"
    assert modes["irq"] == "tp_btf+irq_regs"
    assert re.fullmatch(r"kprobe:crc32c_generic:chksum_update@0x[0-9a-f]+ "
                        r"\(\d+ share the name\)", modes["chksum"]), modes["chksum"]
    addr = modes["chksum"].split("@")[1].split()[0]
    assert h["func.0"].split()[:2] == ["chksum_update", addr]


def test_records_in_plausible_numbers_nothing_lost_no_failures(run, log):
    assert log.status["status"] == "complete", (log.status, log.stderr)
    lost = {k: v for k, v in log.trailer.items() if k.startswith("lost.")}
    assert lost and set(lost.values()) == {"0"}, lost
    igets = log.types["iget"]
    assert igets >= 5000
    assert log.types["chksum"] >= igets
    assert log.types["irq"] >= 1000 and log.completions >= 1000
    assert set(log.irq_classes) <= {"chksum", "kernel", "user"}
    assert log.irq_classes["chksum"] > 0 and log.irq_no_pc == 0
    assert set(log.iget_errs) == {0}, log.iget_errs
    assert run.status["checksum_failures_total"] == 0
    seed = log.caller("EXT4_CHKSUM_SEED")
    assert igets <= log.callers[seed] <= 2 * igets


def test_report_renders(run, tmp_path):
    proc = subprocess.run([PY, str(REPO / "analysis/chkwin-analyze"), "report",
                           str(tmp_path), str(run.out / "log.bin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "verdict: no checksum failures in these logs" in proc.stdout
    assert "6.12." in (tmp_path / "report.md").read_text()
