"""chkwin on Debian's own arm64 kernels, unmodified (guest/stockkernel.py),
one series at a time: 6.1 (bookworm) and 6.12 (bookworm-backports).

One guest run a series, shared: the stock kernel boots with its modules,
the loader (default -m auto) plans every probe on its own, and Russell
King's loop runs under it.  Neither kernel has the lab's tracepoints or
window symbols, so the window figures must come out unknown.  Where they
differ, the plan must follow: 6.1 has no KALLSYMS_ALL (the interrupted
regs from a kprobe on do_interrupt_handler) and cannot attach fexit on
arm64 (kprobes for __ext4_iget); 6.12 has __irq_regs, attaches fexit (ftrace direct calls),
builds virtio_pci in, and has three symbols called chksum_update, so the
kprobe goes by address to crc32c_generic's.  The log is decoded on the
host by the loader's reader, streamed and tallied (a record as a Python
dict is about a kilobyte; the log has hundreds of thousands).
"""

import collections
import json
import re
import shutil
import subprocess

import numpy as np
import pytest

from tests.decoded import Decoded
from tests.boots import assert_nothing_lost, boot
from common import PY, REPO
from tests.kernels import IRQ_KPROBE_MODE

from guest.host import loaderbuild
from guest.host import stockkernel

from analysis import chkwinlog
from analysis import declared

# Boots two-vCPU guests on the host clock: the hostclock mark.
pytestmark = [pytest.mark.guest, pytest.mark.hostclock]

# A pass reads the disk's ~6,000 inodes: in 30 s, 3 and 4 passes (18,219
# and 24,292 igets, 6.1 and 6.12) in .ci/run at c068a83, beside the rest
# of the suite; the counts below need one.
DURATION = "30"
# Debian's 6.1 under -m fallback: every hook (bpf/chkwin.h's table) on its
# kernel tracepoint, but those the lab's own tracepoints or __irq_regs
# serve elsewhere, and the sampler, off without -F.
FALLBACK_MODES = {h.name: "tp_btf" for h in declared.HOOKS} | {
    "chksum": "kprobe:chksum_update", "verify": "absent", "verify_meta": "absent",
    "iget": "kprobe+kretprobe", "irq": IRQ_KPROBE_MODE, "sample": "off"}


class Tally(Decoded):
    """One streamed pass over the log: counts of what the tests look at."""

    def __init__(self, reader, path):
        self.types = collections.Counter()
        self.callers = collections.Counter()
        self.lengths = collections.defaultdict(collections.Counter)
        self.iget_errs = collections.Counter()
        self.irq_classes = collections.Counter()
        self.irq_no_pc = 0
        self.completions = 0
        self.chksum_offsets = collections.Counter()
        super().__init__(reader, path)

    def record(self, r):
        kind = r["type"]
        self.types[kind] += 1
        if kind == "chksum":
            self.callers[r["caller"]] += 1
            self.lengths[r["caller"]][r["length"]] += 1
        elif kind == "iget":
            self.iget_errs[r["err"]] += 1
        elif kind == "irq":
            self.irq_classes[r["class"]] += 1
            self.irq_no_pc += r["pc"] == "0x0" and r["class"] != "user"
            if r["class"] == "chksum":
                self.chksum_offsets[r["offset"]] += 1
        elif kind == "block":
            self.completions += bool(r["flags"] & chkwinlog.F_COMPLETE)

    def caller(self, name):
        """Number of caller kind `name` in the header's caller.N names."""
        found = [int(k.split(".")[1]) for k, v in self.header.items()
                 if k.startswith("caller.") and v == name]
        assert len(found) == 1, (name, self.header)
        return found[0]


def rk_loop_recorded(tmp_path_factory, name, *extra):
    """One 30 s rk-loop boot of a stock kernel under the loader."""
    out = tmp_path_factory.mktemp(name)
    run = boot(out, "stock", "record", *extra, "--duration", DURATION,
               "--append", "chkwin.workload=rk-loop")
    assert run.proc.returncode == 0, run.proc.stderr + run.console[-3000:]
    assert run.fields("chkwin-status") == ["0"], run.console[-3000:]
    return run


# --stock-package of each series (6.1: the default package).
SERIES = {"6.1": None, "6.12": "6.12"}


@pytest.fixture(scope="module", params=sorted(SERIES))
def series(request):
    return request.param


@pytest.fixture(scope="module")
def stock_run(tmp_path_factory, series):
    package = SERIES[series]
    return rk_loop_recorded(tmp_path_factory, f"stock-{series}",
                            *(["--stock-package", package] if package else []))


@pytest.fixture(scope="module")
def log(stock_run):
    reader = loaderbuild.build() / "host" / "chkwin"
    return Tally(reader, stock_run.out / "log.bin")


def test_stock_kernel_boots_with_its_modules(stock_run, series):
    kdir = stockkernel.build(SERIES[series])
    assert (kdir / "release").read_text().startswith(series + ".")
    assert stock_run.status.flavour == "stock"
    assert stock_run.status.ending == "exited"
    loaded = stock_run.fields("init: loaded modules")
    assert loaded and loaded[0].split() == (kdir / "modules" / "order").read_text().split()
    order = loaded[0].split()
    pairs = [("jbd2", "ext4"), ("mbcache", "ext4"), ("crc32c_generic", "ext4")]
    if series == "6.1":
        pairs += [("virtio_pci_modern_dev", "virtio_pci"), ("crc16", "ext4")]
    else:       # built in there (modules.builtin): not loaded
        assert "virtio_pci" not in order and "virtio_console" not in order
    for before, after in pairs:
        assert order.index(before) < order.index(after)
    assert "EXT4-fs (vda): mounted filesystem" in stock_run.console
    assert stock_run.fields("passes") and int(stock_run.fields("passes")[0]) >= 1


def test_header_says_stock_kernel_and_the_plan_it_allows(series, log):
    release = (stockkernel.build(SERIES[series]) / "release").read_text().strip()
    h = log.header
    assert h["kernel_release"] == release
    assert h["flavour"] == "stock" and h["kernel_kind"] == "stock"
    modes = {k[5:]: v for k, v in h.items() if k.startswith("mode.")}
    if series == "6.1":
        assert modes == FALLBACK_MODES
    else:
        assert modes["iget"] == "fexit"
        assert modes["irq"] == "tp_btf+irq_regs"
        assert re.fullmatch(r"kprobe:crc32c_generic:chksum_update@0x[0-9a-f]+ "
                            r"\(\d+ share the name\)", modes["chksum"]), modes["chksum"]
        addr = modes["chksum"].split("@")[1].split()[0]
        assert h["func.0"].split()[1] == addr
    assert h["caller_source"] == "stack"
    assert h["chksum_window"] == "absent"
    assert "window" not in h
    assert h["func.0"].split()[0] == "chksum_update"


def test_log_is_complete_and_nothing_was_lost(log):
    assert log.status["status"] == "complete", (log.status, log.stderr)
    assert log.trailer["ending"] == "signal"
    # No verify tracepoints on a stock kernel, no sampler, no flight recorder.
    assert_nothing_lost(log.trailer, {"verify", "sample", "snapshot"})
    assert log.trailer["count.verify"] == log.trailer["count.verify_bad"] == "not-attached"
    for kind in ("chksum", "iget", "irq", "softirq", "block"):
        assert int(log.trailer[f"records.{kind}"]) == log.types[kind], kind


def test_checksums_igets_interrupts_and_blocks_in_plausible_numbers(stock_run, log):
    igets = log.types["iget"]
    # A pass of the loop reads all ~6000 inodes of the test disk from disk.
    assert igets >= 5000
    assert log.types["chksum"] >= igets
    assert log.types["irq"] >= 1000
    assert log.completions >= 1000
    assert log.types["block"] >= 2 * log.completions - 100     # issue + completion
    # Zero failures: every iget succeeded, and the kernel printed none.
    assert set(log.iget_errs) == {0}, log.iget_errs
    assert log.trailer["count.iget_badcrc"] == "0"
    assert stock_run.status.checksum_invalid == 0


def test_caller_kinds_come_from_the_stack(log):
    igets = log.types["iget"]
    seed = log.caller("EXT4_CHKSUM_SEED")
    inode = log.caller("EXT4_CHKSUM_INODE")
    # __ext4_iget hashes the inode number and generation (4 bytes each)
    # into the seed when it reads an inode from disk; the verify that
    # follows checksums the inode in pieces (ext4_inode_csum).
    assert set(log.lengths[seed]) == {4}, log.lengths[seed]
    assert igets <= log.callers[seed] <= 2 * igets
    assert log.callers[inode] >= log.callers[seed] // 2
    assert 4 not in log.lengths[inode]
    assert log.callers[0xffff] <= log.types["chksum"] // 100, log.callers


def test_interrupts_have_a_pc_and_no_window_class(series, log):
    # No window symbols: the class cannot occur, and the plan says so.
    assert "window" not in log.irq_classes
    assert log.trailer["count.irq.window"] == "0"
    assert set(log.irq_classes) <= {"chksum", "kernel", "user", "unknown"}
    assert log.irq_classes["kernel"] >= 1000
    if series == "6.1":
        # __irq_regs is not in this kernel's kallsyms; a kprobe gave the
        # regs, and the stack the pc of arrivals the kprobe missed.
        assert log.irq_classes["unknown"] <= log.types["irq"] // 100, log.irq_classes
        assert int(log.trailer["count.irq_pc_stack"]) <= log.types["irq"] // 10
        assert log.irq_no_pc == log.irq_classes["unknown"]
    else:
        assert log.irq_classes["unknown"] == 0 and log.irq_no_pc == 0, log.irq_classes
    start, end = (int(x, 16) for x in log.header["func.0"].split()[1:])
    assert log.chksum_offsets and max(log.chksum_offsets) < end - start


def test_report_renders_with_unknown_window_figures(stock_run, series, tmp_path):
    cell = tmp_path / "stock"
    cell.mkdir()
    for name in ("log.bin", "cmdline.txt"):
        shutil.copy(stock_run.out / name, cell / name)
    analyze = str(REPO / "analysis/chkwin-analyze")
    proc = subprocess.run([PY, analyze, "report", str(tmp_path)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^verdict: no checksum failures in these logs; .*"
                     r"no window symbols: window arrivals unknown", proc.stdout, re.M)
    md = (tmp_path / "report.md").read_text()
    assert "kernel_kind: stock" in md and f"{series}." in md
    assert "irq classes: window=unknown" in md
    assert "| unknown (no window symbols) | unknown/0 |" in md
    assert (tmp_path / "report.html").stat().st_size > 10000
    proc = subprocess.run([PY, analyze, "summary", "--json", str(cell / "log.bin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    s = json.loads(proc.stdout)
    assert s["window_known"] is False and s["failures"] == 0
    assert s["failures_attributed"] is None and s["window_hit_calls"] is None
    assert s["classes"]["irq"]["window"] is None


@pytest.mark.parametrize("series", [None, "6.12"], ids=["6.1", "6.12"])
def test_flight_recorder_loads_on_stock_kernels(tmp_path, series):
    """-R failures on the stock plans (kprobes on 6.1; fexit and the kprobe
    by address on 6.12): the programs load and count, and with nothing
    failing no snapshot is sent, so the log holds no record."""
    which = ["--stock-package", series] if series else []
    run = boot(tmp_path, "stock", "record", *which, "--duration", "20", "--append",
               "chkwin.workload=rk-loop chkwin.loader=-R,failures")
    assert run.proc.returncode == 0, run.proc.stderr + run.console[-3000:]
    assert run.fields("chkwin-status") == ["0"], run.console[-3000:]
    log = chkwinlog.read(tmp_path / "log.bin")
    assert log.status == "complete" and log.header["record"] == "failures"
    assert log.header["history"] == "256"
    t = log.trailer
    assert int(t["count.chksum"]) > 1000 and int(t["count.iget"]) > 100
    assert t["count.snapshot"] == "0" and len(log) == 0
    assert_nothing_lost(t, {"verify", "sample"})
    assert t["count.block"] == "not-attached"
    # What ran inside the computations: every tracepoint there on both.
    for hook in ("hrtimer", "timer", "tasklet", "work", "switch", "softirq"):
        assert log.header[f"mode.{hook}"] == "tp_btf", hook
    assert int(t["count.ran"]) > 0


def test_bad_package_name_is_a_one_line_error():
    proc = subprocess.run([PY, str(REPO / "guest/stockkernel.py"), "--package",
                           "linux-image-amd64"], capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1
    assert "is not a Debian linux-image-VERSION-[rt-|cloud-]arm64" in proc.stderr


def test_the_rt_kernel_records(tmp_path):
    """Debian's PREEMPT_RT 6.12 (threaded interrupts; the primary handler
    still runs in hard interrupt context, where chkwin takes the pc): it
    boots, chkwin plans for it, records checksum calls and interrupts with
    their interrupted pc, and loses nothing."""
    run = boot(tmp_path, "stock", "record", "--stock-package", "6.12-rt", "--duration", "15",
               "--append", "chkwin.workload=rk-loop chkwin.loader=-q")
    assert run.proc.returncode == 0, run.proc.stderr + run.console[-3000:]
    assert run.fields("chkwin-status") == ["0"], run.console[-3000:]
    log = chkwinlog.read(tmp_path / "log.bin")
    assert log.status == "complete"
    assert re.fullmatch(r"6\.12\.\d+\+deb12-rt-arm64", log.header["kernel_release"])
    assert "PREEMPT_RT" in log.header["kernel_version"]
    assert_nothing_lost(log.trailer, {"verify", "sample", "snapshot"})
    assert int(log.trailer["count.chksum"]) > 10_000 and int(log.trailer["count.iget"]) > 1000
    irq = log.of("irq")
    assert len(irq) > 1000
    assert np.count_nonzero(irq["class"] == chkwinlog.CLASSES.index("unknown")) < len(irq) / 100


def test_a_method_the_kernel_lacks_is_refused_in_one_line(tmp_path):
    """--irq-pc irq_regs on 6.1 (no __irq_regs in kallsyms): the loader
    says why in one line and records nothing."""
    run = boot(tmp_path, "stock", "record", "--duration", "5",
               "--append", "chkwin.workload=rk-loop chkwin.loader=--irq-pc,irq_regs")
    errors = [ln for ln in run.console.splitlines() if ln.startswith("chkwin: error:")]
    assert errors == ["chkwin: error: --irq-pc irq_regs: no __irq_regs in kallsyms "
                      "(CONFIG_KALLSYMS_ALL)"], run.console[-3000:]
    assert run.fields("chkwin-status") != ["0"]
