"""chkwin --windows in the guest (docs/windows.md): the pipeline from
stackscan to attributed failures with no built-in window names, per-window
counts from BPF equal to an offline classification of the same boot's
records, hand-written adjacent windows on Debian's stock kernel, and a
file chkwin cannot place refused in one line.  Where the interrupted pc
comes from (loader/plan.c: __irq_regs, a kprobe on do_interrupt_handler,
the stack) is checked where the answer is known from the code: a CPU kept
in a frameless assembly leaf and an idle CPU, whose interrupts arrive
just after the instruction that unmasks them."""

import subprocess

import numpy as np
import pytest

from tests.boots import Run, boot, icount_args
from common import PY, REPO
from tests.kernels import IRQ_KPROBE_MODE, kernel_dir

from analysis import chkwinlog
from analysis import correlate
from analysis import fsgeom
from analysis import windows
from guest.host import stockkernel
from guest.host import stocksymbols

# Boots two-vCPU guests on the host clock: the hostclock mark.
pytestmark = [pytest.mark.guest, pytest.mark.hostclock]

# A phase seed whose 20 instruction-time seconds of inode-loop at width 1
# give 16 failures on the lab kernel (the same every boot: icount).
PHASE_SEED = 5


def chkwin_in_guest(path, *options):
    """--append words: the record scenario's loader options with the
    windows file the guest finds in /tmp/host."""
    return f"chkwin.loader={','.join(options)},--windows,/tmp/host/{path.name}"


def offline_counts(log, kind):
    """{window name: arrivals of kind (irq or sample) whose pc lies in it},
    from the records and the header's watch.N ranges."""
    pcs = log.of(kind)["pc"]
    return {name: int(np.count_nonzero((pcs >= first) & (pcs <= last)))
            for name, first, last in log.watched()}


def bpf_counts(log, kind):
    return {name: log.counter(f"watch.{kind}.{name}") for name, _, _ in log.watched()}


@pytest.fixture(scope="module")
def lab_run(tmp_path_factory):
    """make windows (guest/lab_windows.py): the unpatched lab kernel at
    gcc49 width 1, watching the windows stackscan finds in its vmlinux."""
    tmp = tmp_path_factory.mktemp("windows-lab")
    proc = subprocess.run([PY, str(REPO / "guest/lab_windows.py"), "--results", str(tmp),
                           "--seconds", "20", "--phase-seed", str(PHASE_SEED)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out, = tmp.glob("windows-*")
    run = Run(proc, out / "boot")
    log = chkwinlog.read(out / "boot/log.bin")
    return out / "lab.windows", run, log, correlate.Correlation(
        log, fsgeom.find(out / "boot/log.bin"))


def test_stackscans_windows_attribute_every_failure(lab_run):
    """No built-in window names: the header's windows are stackscan's two
    (as placed by the kernel's System.map), and every failure the kernel
    printed follows an arrival in one."""
    wfile, run, log, corr = lab_run
    sysmap = kernel_dir("unpatched") / "System.map"
    placed = windows.place(windows.read(wfile), windows.symbols_from(sysmap))
    assert log.watched() == [(w.name, first, last) for w, first, last in placed]
    assert "window" not in log.header and "window.exact" not in log.header
    assert [name for name, _, _ in log.watched()] == [w.name for w in windows.read(wfile)]
    printed = run.status.checksum_failures_total
    assert printed >= 5, "the gcc49 run produced too few failures to attribute"
    assert len(corr.failures) == printed
    assert corr.attributed() == printed
    assert run.status.chkwin["watched_arrivals"]


def test_per_window_counts_from_bpf_equal_the_records(lab_run):
    _, run, log, _ = lab_run
    assert log.lost()["irq"] == 0
    irq = bpf_counts(log, "irq")
    assert irq == offline_counts(log, "irq")
    assert sum(irq.values()) == log.counter("irq.window") > 0
    assert not log.attached(f"watch.sample.{log.watched()[0][0]}")
    assert run.status.chkwin["watched_arrivals"] == {k: v for k, v in irq.items() if v}


def test_a_file_chkwin_cannot_place_is_one_line(tmp_path):
    wfile = tmp_path / "bad.windows"
    wfile.write_text("chkwin-windows 1\nnfsw nfs:nfs_read_folio nfs:nfs_read_folio\n")
    run = boot(tmp_path / "run", "unpatched", "record", *icount_args(1, duration=5),
               "--guest-file", str(wfile), "--append",
               "chkwin.workload=inode-loop " + chkwin_in_guest(wfile, "-q"))
    errors = [ln for ln in run.console.splitlines() if ln.startswith("chkwin: error:")]
    assert errors == ["chkwin: error: nfsw: module nfs is not loaded"], run.console[-3000:]
    assert run.fields("chkwin-status") != ["0"]


def test_stock_kernel_hand_written_windows_count_as_the_records(tmp_path):
    """Debian's 6.1 kernel: windows written by hand from its kallsyms;
    chkwin's per-window counts from BPF equal the -R all log's arrivals
    classified offline by the same ranges."""
    sysmap = stocksymbols.system_map(stockkernel.build(None), None)
    wfile = tmp_path / "idle.windows"
    wfile.write_text(windows.idle_windows(windows.symbols_from(sysmap)))
    run = boot(tmp_path / "run", "stock", "record", "--duration", "15",
               "--guest-file", str(wfile), "--append",
               "chkwin.workload=rk-loop " + chkwin_in_guest(wfile, "-q"))
    assert run.proc.returncode == 0, run.proc.stderr + run.console[-3000:]
    assert run.fields("chkwin-status") == ["0"], run.console[-3000:]
    log = chkwinlog.read(tmp_path / "run/log.bin")
    assert log.status == "complete" and log.lost()["irq"] == 0
    names = [name for name, _, _ in log.watched()]
    assert len(names) == len(windows.read(wfile)) and "do_idle" in names
    # Adjacent windows: each starts one instruction after the one before.
    spans = sorted((first, last) for _, first, last in log.watched())
    assert any(b[0] == a[1] + 4 for a, b in zip(spans, spans[1:]))
    irq = bpf_counts(log, "irq")
    assert irq == offline_counts(log, "irq")
    assert sum(irq.values()) > 0


def test_snapshot_on_window_keeps_the_history_of_every_window_arrival(tmp_path):
    """-R failures --snapshot-on window (the lab's windows, which run.py
    passes): every arrival in a watched window
    sends a snapshot (triggered by its irq record, which the snapshot
    carries), and failures still send theirs and are attributed from them."""
    run = boot(tmp_path / "run", "unpatched", "record", *icount_args(PHASE_SEED, duration=20),
               "--append", "ext4.chksum_window=gcc49 chkwin.workload=inode-loop "
               "chkwin.loader=-q,-R,failures,--snapshot-on,window")
    assert run.proc.returncode == 0, run.proc.stderr + run.console[-3000:]
    assert run.fields("chkwin-status") == ["0"], run.console[-3000:]
    log = chkwinlog.read(tmp_path / "run/log.bin")
    assert log.header["snapshot_on"] == "failure,window"
    snaps = log.of("snapshot")
    triggers = {name: int(np.count_nonzero(snaps["trigger"] == num))
                for num, name in log.layout.types.items()}
    window_arrivals = sum(bpf_counts(log, "irq").values())
    assert window_arrivals > 0 and triggers["irq"] == window_arrivals
    assert len(snaps) == log.counter("snapshot")
    # Each window snapshot carries its arrival: an irq record in a window
    # with the snapshot's own time.
    irq = log.of("irq")
    in_window = irq[irq["class"] == chkwinlog.CLASSES.index("window")]
    assert set(snaps["ts"][snaps["trigger"] == log.layout.type_ids["irq"]]) \
        <= set(in_window["ts"])
    corr = correlate.Correlation(log, fsgeom.find(tmp_path / "run/log.bin"))
    printed = run.status.checksum_failures_total
    assert printed > 0 and corr.attributed() == len(corr.failures) == printed


def test_snapshot_on_window_needs_the_flight_recorder(tmp_path):
    run = boot(tmp_path / "run", "unpatched", "record", *icount_args(1, duration=5),
               "--append", "chkwin.workload=inode-loop chkwin.loader=-q,--snapshot-on,window")
    errors = [ln for ln in run.console.splitlines() if ln.startswith("chkwin: error:")]
    assert errors == ["chkwin: error: --snapshot-on window needs --record failures"], \
        run.console[-3000:]


@pytest.mark.parametrize("kernel,options,mode", [
    ("stock", [], IRQ_KPROBE_MODE),
    ("unpatched", ["-m", "fallback"], IRQ_KPROBE_MODE),
    ("unpatched", ["-m", "fallback", "--irq-pc", "stack"], "tp_btf+stack"),
], ids=["6.1-auto", "lab-fallback", "lab-fallback-stack"])
def test_arrivals_in_a_frameless_leaf_and_the_idle_path_are_where_the_code_says(
        tmp_path, kernel, options, mode):
    """A CPU reading /dev/zero sits in __arch_clear_user, an assembly leaf
    with no frame; an idle CPU leaves wfi with interrupts masked and takes
    them where arch_cpu_idle unmasks them.  Every method puts arrivals on
    the leaf's own instructions and on the one after the unmask (predicted
    from the Image's bytes); the regs methods add sp and pstate: one sp per
    idle CPU, 16-byte aligned, EL1.  Debian's 6.1 has no __irq_regs in
    kallsyms, so its plan (and the lab's under -m fallback) names the
    kprobe, and the stack method still serves when asked."""
    if kernel == "stock":
        kdir = stockkernel.build(None)
        sysmap = stocksymbols.system_map(kdir, None)
    else:
        kdir = kernel_dir(kernel)
        sysmap = kdir / "System.map"
    syms = windows.symbols_from(sysmap)
    tag = windows.IDLE_FUNCTIONS["arch_cpu_idle"]
    wfile = tmp_path / "leaf.windows"
    wfile.write_text("\n".join(["chkwin-windows 1",
                                *windows.instruction_windows(syms, "__arch_clear_user", "leaf"),
                                *windows.instruction_windows(syms, "arch_cpu_idle", tag)])
                     + "\n")
    unmasked, = windows.after_unmask(kdir / "Image", syms, "arch_cpu_idle")
    at_unmask = f"{tag}.{unmasked:#x}"
    run = boot(tmp_path / "run", kernel, "record", "--duration", "15",
               "--guest-file", str(wfile), "--append",
               "chkwin.workload=leaf-loop " + chkwin_in_guest(wfile, "-q", *options))
    assert run.proc.returncode == 0, run.proc.stderr + run.console[-3000:]
    assert run.fields("chkwin-status") == ["0"], run.console[-3000:]
    log = chkwinlog.read(tmp_path / "run/log.bin")
    assert log.status == "complete" and log.lost()["irq"] == 0
    assert log.header["mode.irq"] == mode
    counts = bpf_counts(log, "irq")
    assert counts == offline_counts(log, "irq")
    leaf = sum(n for name, n in counts.items() if name.startswith("leaf."))
    assert leaf >= 100, counts
    # An interrupt pending a little later than wfi's wake-up may land
    # further on, before interrupts are masked again.
    idle = {name: n for name, n in counts.items() if name.startswith(tag + ".") and n}
    assert idle.get(at_unmask, 0) >= max(100, 0.99 * sum(idle.values())), (at_unmask, idle)
    irq = log.of("irq")
    unknown = np.count_nonzero(irq["class"] == chkwinlog.CLASSES.index("unknown"))
    assert unknown <= len(irq) // 100, unknown
    if mode == "tp_btf+stack":
        assert not irq["sp"].any()
        assert log.trailer["count.irq_pc_stack"] == chkwinlog.NOT_ATTACHED
        return
    # The kprobe misses arrivals inside another kprobe's handler (chkwin's
    # own): those, and only those, have their pc from the stack, no sp.
    assert np.count_nonzero(irq["sp"] == 0) == log.counter("irq_pc_stack")
    regs = irq[irq["sp"] != 0]
    assert not (regs["sp"][regs["el"] == 1] % 16).any()
    first = next(f for name, f, _ in log.watched() if name == at_unmask)
    at_idle = regs[regs["pc"] == first]
    assert len(at_idle) >= 100
    for cpu in set(at_idle["cpu"]):
        assert len(set(at_idle["sp"][at_idle["cpu"] == cpu])) == 1, cpu
    # User arrivals come with their pc too (the stack method has none).
    user = regs[regs["el"] == 0]
    assert len(user) and user["pc"].all()
