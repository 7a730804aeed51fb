#!/usr/bin/python3
"""Boot a chkwin kernel in qemu-system-aarch64 and run one scenario.

Everything the run produces stays in --out, which must be new or empty so
that no earlier run is overwritten: console.log (the serial console,
written by QEMU itself so it survives a kill), results.bin (the
virtio-serial results port), log.bin (the chkwin.log port, where the
loader streams its event log), qemu.log (QEMU's own messages), cmdline.txt
and status.json.  A watchdog kills a guest that hangs or panics, keeps the
console, and says why in one line; otherwise the exit status is the
scenario's.

--clock icount runs the guest on instruction time: QEMU's -icount
shift=N,sleep=off makes every instruction take 2^N ns of guest time and
takes virtual-clock timer interrupts at an exact instruction, so rates
per checksum call do not follow the host's load.  It needs -smp 1 (QEMU
7.2 runs every vCPU of an icount guest on one host thread and can starve
one of them), keeps the RTC on the virtual clock and the device tree free
of random seeds.  Block-I/O completions still arrive by the host's clock.
--phase-seed makes the workload redraw its phase against the timer many
times a boot (guest/workloads/treewalk.c), so boots with different seeds
are independent draws.  Block-I/O completions arrive by the host's clock,
and the idle time spent waiting for them is guest time, so a boot bounded
by --duration can end a pass early or late; with --passes the same seed
makes the same calls.

--record-replay (icount only) records the boot with QEMU's record/replay:
replay.bin (QEMU's log) and replay.json (the command line, QEMU's
version, the hashes of the log and of every input) join --out, every
disk sits behind a blkreplay filter over a snapshot, and the clock runs
with sleep=on, which recording needs; guest/replay.py replays it and
walks its failures (docs/replay.md).

A lab kernel boots with its windows file (guest/host/kernelwindows.py):
lab.windows in --out and in the guest's /tmp/host, which chkwin in the
scenarios watches unless told otherwise (--no-lab-windows leaves it out).
"""

import argparse
import dataclasses
import json
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import time

from analysis.documents import BootStatus
from common.cache import quietly
from common.errors import OneLineError
from guest.host import console_lines
from guest.host import initramfs
from guest.host import interrupts
from guest.host import kbuild
from guest.host import kernelwindows
from guest.host import kmsg
from guest.host import recordreplay
from guest.host import rootfs
from guest.host import stockkernel
from guest.host import testdisk
from guest.host import toolsdisk
from guest.host.resultsdir import check_out_dir

QEMU = "qemu-system-aarch64"
EXIT_HANG, EXIT_PANIC, EXIT_NO_STATUS = 124, 125, 126
PANIC_RE = re.compile(r"^.*Kernel panic - not syncing.*$", re.M)
UPTIME_RE = re.compile(r"^\[\s*(\d+\.\d+)\]", re.M)
# chkwin's closing record (loader/chkwin.c), as a scenario passes it on.
RESULT_RE = re.compile(r"^chkwin: result (\{.*\})\s*$", re.M)
# Entries between two phase spins of the walker: a few dozen checksum calls.
PHASE_EVERY = 16
# The scenario goes on the kernel command line as one word.
SCENARIO_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def guest_files(paths, out):
    """The files for /tmp/host as a tar archive in out (a disk the guest's
    init unpacks), or None when there are none."""
    if not paths:
        return None
    names = [p.name for p in paths]
    for path in paths:
        if not path.is_file():
            raise BootError(f"--guest-file {path}: no such file")
        if names.count(path.name) > 1:
            raise BootError(f"--guest-file: two files are called {path.name}")
    archive = out / "guest-files.tar"
    with tarfile.open(archive, "w", format=tarfile.USTAR_FORMAT) as tar:
        for path in paths:
            tar.add(path, arcname=path.name, recursive=False)
    return archive


def qemu_command(spec, kernel, boot, disk, out, files=None):
    """boot is the initramfs, or with --root debian the root disk and the
    tools disk; files a tar archive for the guest's /tmp/host, or None."""
    if spec.root == "debian":
        start = "root=/dev/vdb rootfstype=ext4 rw init=/sbin/chkwin-init"
    else:
        start = "rdinit=/init"
    append = (f"console=ttyAMA0 panic=-1 {start} "
              f"chkwin.scenario={spec.scenario} chkwin.duration={spec.duration}")
    if spec.phase_seed is not None:
        append += (f" chkwin.phase_seed={spec.phase_seed} chkwin.phase_every={PHASE_EVERY}"
                   f" chkwin.phase_spin={phase_spin(kernel, spec)}")
    if spec.passes:
        append += f" chkwin.passes={spec.passes}"
    if spec.append:
        append += " " + spec.append
    machine = "virt,dtb-randomness=off" if spec.clock == "icount" else "virt"
    cmd = [spec.qemu, "-M", machine, "-cpu", "cortex-a72",
           "-smp", str(spec.smp), "-m", str(spec.mem), "-nographic",
           "-no-reboot", "-monitor", "none",
           "-kernel", str(kernel), "-append", append,
           "-chardev", f"file,id=console,path={out / 'console.log'}",
           "-serial", "chardev:console"]
    record = spec.record_replay
    # read-only: no run can change the test disk (vda)
    cmd += recordreplay.drive(disk, "testdisk", True, record) + \
        ["-device", "virtio-blk-pci,drive=testdisk"]
    if spec.root == "debian":
        root, tools = boot
        # snapshot: the guest writes to a throwaway overlay, never to the
        # cached root disk.
        cmd += recordreplay.drive(root, "rootfs", False, record, snapshot=True) + \
            ["-device", "virtio-blk-pci,drive=rootfs"] + \
            recordreplay.drive(tools, "tools", True, record) + \
            ["-device", "virtio-blk-pci,drive=tools"]
    else:
        cmd += ["-initrd", str(boot)]
    if files:
        cmd += recordreplay.drive(files, "hostfiles", True, record) + \
            ["-device", "virtio-blk-pci,drive=hostfiles,serial=chkwin-files"]
    cmd += ["-device", "virtio-serial-pci",
           "-chardev", f"file,id=results,path={out / 'results.bin'}",
           "-device", "virtserialport,chardev=results,name=chkwin.results",
           "-chardev", f"file,id=log,path={out / 'log.bin'}",
           "-device", "virtserialport,chardev=log,name=chkwin.log"]
    if spec.singlestep:
        cmd.append("-singlestep")
    if spec.clock == "icount":
        rr_log = out / recordreplay.LOG_NAME if record else None
        cmd += ["-icount", recordreplay.icount_option(spec.shift, icount_sleep(spec), rr_log),
                "-rtc", "clock=vm"]
    return cmd


def icount_sleep(spec):
    """Whether an idle guest's virtual clock waits for the host's: never,
    except when recording, which hangs at the first disk read with
    sleep=off in QEMU 7.2 (docs/replay.md)."""
    return spec.record_replay


def watchdog_seconds(duration, singlestep, clock, shift):
    """Wall seconds before a boot of duration guest seconds counts as hung."""
    # TCG is slow, and -singlestep (a block per instruction) slower again,
    # booting included; under icount a guest second is 10^9 / 2^N
    # instructions, whose wall time grows as the shift falls (shift 4:
    # about 0.4 s wall).
    slower = 10 if singlestep else 1
    if clock == "icount":
        slower *= max(1, 16 // 2 ** shift)
    return (4 * duration + 120) * slower


def kernel_hz(kernel):
    """CONFIG_HZ from the config file beside the kernel's Image, or None."""
    config = pathlib.Path(kernel).parent / "config"
    if config.is_file():
        m = re.search(r"^CONFIG_HZ=(\d+)$", config.read_text(errors="replace"), re.M)
        if m:
            return int(m.group(1))
    return None


def phase_spin(kernel, spec):
    """Spin iterations (two instructions each) the walker draws from: one
    whole timer period at the kernel's HZ (100 when unknown, the longest),
    in instructions of the icount clock; on the host clock, as at shift 4."""
    period_ns = 1e9 / (kernel_hz(kernel) or 100)
    shift = spec.shift if spec.clock == "icount" else 4
    return max(1, round(period_ns / 2 ** shift / 2))


def clock_settings(spec):
    """The clock as status.json records it."""
    if spec.clock == "icount":
        return {"kind": "icount", "shift": spec.shift, "ns_per_insn": 2 ** spec.shift,
                "sleep": icount_sleep(spec), "rtc": "vm", "dtb_randomness": False,
                "record_replay": spec.record_replay}
    return {"kind": "host"}


class Console:
    """console.log as QEMU writes it; new bytes are echoed with -v."""

    def __init__(self, path, echo):
        self.path, self.echo, self.seen = path, echo, 0

    def text(self):
        data = self.path.read_bytes() if self.path.exists() else b""
        if self.echo and len(data) > self.seen:
            sys.stdout.buffer.write(data[self.seen:])
            sys.stdout.flush()
        self.seen = len(data)
        return data.decode(errors="replace")


def stop(proc):
    proc.kill()
    proc.wait()


def chkwin_result(text):
    """The last closing record chkwin printed on the console, or None (a
    line cut by a dying guest does not parse and does not count)."""
    for line in reversed(RESULT_RE.findall(text)):
        try:
            return json.loads(line)
        except ValueError:
            continue
    return None


def watch(proc, console, timeout):
    """Wait for QEMU; return 'exited', 'hang' or 'panic'."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            proc.wait(timeout=0.5)
            exited = True
        except subprocess.TimeoutExpired:
            exited = False
        text = console.text()
        if exited:
            return "panic" if PANIC_RE.search(text) else "exited"
        if PANIC_RE.search(text):
            # panic=-1 reboots and -no-reboot exits; give it a moment so
            # that the backtrace reaches the console.
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                stop(proc)
            console.text()
            return "panic"
        if time.monotonic() > deadline:
            stop(proc)
            console.text()
            return "hang"


@dataclasses.dataclass(kw_only=True)
class BootSpec:
    """One boot as run.py's command line holds it (parse_args builds it;
    code may as well): the defaults are the command's."""
    scenario: str
    out: pathlib.Path
    flavour: str = "unpatched"
    stock_package: str | None = None
    duration: int = 10
    smp: int | None = None          # None: 2, or 1 on instruction time
    mem: int = 1024
    append: str = ""
    root: str = "initramfs"
    kernel: pathlib.Path | None = None
    initramfs: pathlib.Path | None = None
    rootfs: pathlib.Path | None = None
    tools: pathlib.Path | None = None
    disk: pathlib.Path | None = None
    guest_file: list = dataclasses.field(default_factory=list)
    lab_windows: pathlib.Path | None = None
    qemu: str = QEMU
    no_lab_windows: bool = False
    timeout: int | None = None
    singlestep: bool = False
    clock: str = "host"
    shift: int = 4
    phase_seed: int | None = None
    passes: int | None = None
    record_replay: bool = False
    verbose: bool = False


class BootError(OneLineError):
    """A boot refused before QEMU starts: its spec, or a file it names."""


def positive(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return value


def scenario_name(text):
    if not SCENARIO_RE.match(text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a scenario name (letters, digits, ._-)")
    return text


def parse_args(argv=None):
    """run.py's command line as a BootSpec."""
    # Options not given stay out of the namespace: BootSpec holds the defaults.
    # prog: the command's name also where boottask.py parses in-process.
    ap = argparse.ArgumentParser(prog="run.py", description=__doc__.splitlines()[0],
                                 argument_default=argparse.SUPPRESS)
    ap.add_argument("--flavour", choices=["unpatched", "patched", "stock"],
                    help="a lab kernel, or Debian's own (guest/stockkernel.py; "
                         "default unpatched)")
    ap.add_argument("--stock-package", metavar="NAME",
                    help="with --flavour stock: which Debian linux-image-*-arm64, "
                         "or a series such as 6.12 (default: guest/stockkernel.py's, "
                         "the newest 6.1)")
    ap.add_argument("--scenario", type=scenario_name, required=True)
    ap.add_argument("--duration", type=positive,
                    help="guest seconds the scenario runs (default 10)")
    ap.add_argument("--smp", type=positive,
                    help="vCPUs (default 2; 1 with --clock icount, which needs it)")
    ap.add_argument("--mem", type=positive, help="MiB (default 1024)")
    ap.add_argument("--append", help="extra kernel parameters")
    ap.add_argument("--root", choices=["initramfs", "debian"],
                    help="userland: the busybox initramfs (default), or the Debian "
                         "root filesystem (guest/rootfs.py) with the tools disk")
    ap.add_argument("--kernel", type=pathlib.Path)
    ap.add_argument("--initramfs", type=pathlib.Path)
    ap.add_argument("--rootfs", type=pathlib.Path,
                    help="the root disk image for --root debian "
                         "(default: guest/rootfs.py's)")
    ap.add_argument("--tools", type=pathlib.Path,
                    help="the tools disk for --root debian (default: guest/toolsdisk.py's)")
    ap.add_argument("--disk", type=pathlib.Path)
    ap.add_argument("--guest-file", type=pathlib.Path, action="append",
                    metavar="PATH", help="make PATH /tmp/host/<its name> in the guest "
                    "(a windows file for chkwin --windows, say); repeatable")
    ap.add_argument("--lab-windows", type=pathlib.Path, metavar="PATH",
                    help="the lab kernel's windows file, already made (a batch task "
                         "names it: a node never builds); default: stackscan's for "
                         "the kernel's vmlinux, from the cache")
    ap.add_argument("--qemu", metavar="PATH",
                    help=f"the QEMU binary (default: {QEMU} on PATH)")
    ap.add_argument("--no-lab-windows", action="store_true",
                    help="a lab kernel boots without its windows file "
                         "(lab.windows: what stackscan finds in its vmlinux, "
                         "which chkwin in the guest watches); chkwin watches none")
    ap.add_argument("--timeout", type=positive,
                    help="wall seconds before the guest counts as hung "
                         "(default: 4 x duration + 120, x10 with --singlestep)")
    ap.add_argument("--singlestep", action="store_true",
                    help="one instruction per TCG block (slow, hardware-like)")
    ap.add_argument("--clock", choices=["host", "icount"],
                    help="guest time from the host's clock (multi-threaded TCG, the "
                         "default), or from instructions executed (-icount; -smp 1)")
    ap.add_argument("--shift", type=int, choices=range(0, 11), metavar="N",
                    help="with --clock icount: each instruction takes 2^N ns (default 4)")
    ap.add_argument("--phase-seed", type=int, metavar="S",
                    help="seed of the walker's phase spins (a whole number >= 0)")
    ap.add_argument("--passes", type=positive, metavar="N",
                    help="the walker stops after N passes (or --duration, "
                         "whichever ends first): calls that do not depend on "
                         "how much guest time block I/O took")
    ap.add_argument("--record-replay", action="store_true",
                    help="with --clock icount: record the boot with QEMU's "
                         "record/replay (replay.bin, replay.json in --out), so "
                         "that guest/replay.py can replay it and walk its failures")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="echo the guest console on stdout")
    ap.add_argument("--out", type=pathlib.Path, required=True)
    return BootSpec(**vars(ap.parse_args(argv)))


def settled(spec):
    """spec checked, with its vCPUs settled and --out absolute (a
    recording's command line is replayed from anywhere); BootError when
    its options do not go together."""
    check_out_dir(spec.out)
    if spec.root == "debian" and spec.flavour == "stock":
        raise BootError("--root debian needs a lab kernel: the stock kernel's ext4 and "
                        "virtio are modules, which only its initramfs loads")
    smp = spec.smp or 2
    if spec.clock == "icount":
        if spec.smp not in (None, 1):
            raise BootError("--clock icount needs --smp 1: QEMU 7.2 runs an icount "
                            "guest's vCPUs on one host thread and can starve all but one")
        smp = 1
    if spec.record_replay and spec.clock != "icount":
        raise BootError("--record-replay needs --clock icount: QEMU records and replays "
                        "only instruction time")
    if spec.phase_seed is not None and not 0 <= spec.phase_seed < 2 ** 32:
        raise BootError(f"--phase-seed {spec.phase_seed}: a whole number from 0 to 2^32-1")
    if spec.stock_package and spec.flavour != "stock":
        raise BootError("--stock-package goes with --flavour stock")
    return dataclasses.replace(spec, smp=smp, out=spec.out.resolve())


def inputs(spec):
    """(kernel, files, disk), absolute and checked to exist: the builders'
    where spec names none; files the initramfs, or the root and tools disks,
    each with its name for errors."""
    with quietly():
        kernel, files, disk = artifacts(spec)
    for what, path in [("kernel", kernel)] + files + [("disk", disk)]:
        if not pathlib.Path(path).is_file():
            raise BootError(f"{what} {path} does not exist")
    return (pathlib.Path(kernel).resolve(),
            [(what, pathlib.Path(path).resolve()) for what, path in files],
            pathlib.Path(disk).resolve())


def host_files(spec, kernel):
    """(the files for the guest's /tmp/host, whether the lab kernel's
    windows file is among them)."""
    vmlinux = kernel.parent / "vmlinux"
    lab_windows = spec.flavour != "stock" and not spec.no_lab_windows and vmlinux.is_file()
    passed = list(spec.guest_file)
    if lab_windows:
        if kernelwindows.GUEST_NAME in (p.name for p in passed):
            raise BootError(f"--guest-file: {kernelwindows.GUEST_NAME} is the name of the "
                            "lab kernel's own windows file (rename yours, or pass "
                            "--no-lab-windows)")
        if spec.lab_windows:
            if not spec.lab_windows.is_file():
                raise BootError(f"--lab-windows {spec.lab_windows}: no such file")
            shutil.copyfile(spec.lab_windows, spec.out / kernelwindows.GUEST_NAME)
            passed.append(spec.out / kernelwindows.GUEST_NAME)
        else:
            with quietly():
                passed.append(kernelwindows.copy_to(vmlinux, spec.out))
    return passed, lab_windows


def boot(spec):
    """Boot spec (a BootSpec) into spec.out: its BootStatus, also written
    there as status.json beside the console and the logs.  A boot that
    hung, panicked or whose scenario failed is a status with its reason;
    BootError when the boot is refused before QEMU starts."""
    spec = settled(spec)
    kernel, files, disk = inputs(spec)
    boot_files = tuple(path for _, path in files) if spec.root == "debian" else files[0][1]
    spec.out.mkdir(parents=True, exist_ok=True)
    console = Console(spec.out / "console.log", spec.verbose)
    passed, lab_windows = host_files(spec, kernel)
    cmd = qemu_command(spec, kernel, boot_files, disk, spec.out,
                       guest_files(passed, spec.out))
    (spec.out / "cmdline.txt").write_text(shlex.join(cmd) + "\n")
    timeout = spec.timeout or watchdog_seconds(spec.duration, spec.singlestep,
                                               spec.clock, spec.shift)
    ending, qemu_exit, wall = boot_qemu(cmd, console, spec.out, timeout)
    text = console.text()
    status = BootStatus(
        flavour=spec.flavour, kernel=kernel.parent.name, stock_package=spec.stock_package,
        root=spec.root, scenario=spec.scenario, duration=spec.duration,
        append=spec.append, lab_windows=lab_windows, singlestep=spec.singlestep,
        smp=spec.smp, clock=clock_settings(spec), phase_seed=spec.phase_seed,
        passes=spec.passes, **console_figures(text, ending, qemu_exit, wall))
    status.reason = failure(status, text, timeout, spec.out)
    status.write(spec.out / "status.json")
    if spec.record_replay and status.scenario_status is not None:
        recorded = {"kernel": kernel, "disk": disk}
        recorded.update({what.replace(" ", "_"): path for what, path in files})
        if (spec.out / "guest-files.tar").is_file():
            recorded["guest_files"] = spec.out / "guest-files.tar"
        recordreplay.save(spec.out, cmd, recorded, status.kernel,
                          status.guest_uptime, wall, timeout)
    return status


def main(argv=None):
    status = boot(parse_args(argv))
    if status.reason:
        print(f"run: error: {status.reason}", file=sys.stderr)
    return exit_status(status)


def artifacts(spec):
    """(kernel, files, disk): what the boot reads, each as given or the
    builders' (built on a cache miss); files the initramfs, or with --root
    debian the root and tools disks, each with its name for errors."""
    initrd = spec.initramfs
    if spec.flavour == "stock":
        # The same scenarios, with the modules the stock kernel needs.
        kdir = None if spec.kernel and initrd else stockkernel.build(spec.stock_package)
        kernel = spec.kernel or kdir / "Image"
        initrd = initrd or stockkernel.modules_initramfs(kdir)
    else:
        kernel = spec.kernel or kbuild.kernel_dir(spec.flavour) / "Image"
    if spec.root == "debian":
        files = [("root disk", spec.rootfs or rootfs.image()),
                 ("tools disk", spec.tools or toolsdisk.build())]
    else:
        files = [("initramfs", initrd or initramfs.build())]
    return kernel, files, spec.disk or testdisk.build()


def boot_qemu(cmd, console, out, timeout):
    """Run QEMU until it exits or the watchdog stops it: (ending, QEMU's
    exit status, wall seconds)."""
    start = time.monotonic()
    # QEMU's messages go to a file: a pipe nobody reads could fill and stall it.
    with open(out / "qemu.log", "wb") as qemu_log:
        try:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                    stdout=qemu_log, stderr=qemu_log)
        except FileNotFoundError:
            raise BootError(f"{cmd[0]} not found: install qemu-system-arm (make deps)")
        try:
            ending = watch(proc, console, timeout)
        finally:
            # Interrupted (^C, SIGTERM): leave no guest running behind us.
            if proc.poll() is None:
                stop(proc)
    return ending, proc.returncode, round(time.monotonic() - start, 1)


def console_figures(text, ending, qemu_exit, wall):
    """What a boot's console says of it: the part of status.json that a
    replay of the boot must reproduce (ending and figures), and its cost."""
    uptimes = UPTIME_RE.findall(text)
    failures = kmsg.failures(text)
    return {"ending": ending, "qemu_exit": qemu_exit,
            "scenario_status": console_lines.last_status(text),
            "wall_seconds": wall,
            "guest_uptime": float(uptimes[-1]) if uptimes else None,
            "checksum_invalid": failures["inode"],
            "checksum_failures": failures,
            "checksum_failures_total": sum(failures.values()),
            "checksum_calls": console_lines.last_calls(text),
            "interrupts": interrupts.around_scenario(text),
            "chkwin": chkwin_result(text)}


def failure(status, text, timeout, out):
    """Why the boot failed, in one line, or None when its scenario exited 0."""
    console = out / "console.log"
    if status.ending == "hang":
        return f"guest hung: no poweroff within {timeout} s (console: {console})"
    if status.ending == "panic":
        return f"guest panicked: {PANIC_RE.search(text).group(0).strip()}"
    if status.scenario_status is None:
        qemu_err = (out / "qemu.log").read_text(errors="replace").strip()
        why = qemu_err.splitlines()[-1] if qemu_err else f"QEMU exited {status.qemu_exit}"
        return (f"guest stopped without a {console_lines.STATUS_TAG} line "
                f"({why}; console: {console})")
    if status.scenario_status != 0:
        return (f"scenario {status.scenario} exited {status.scenario_status} "
                f"(console: {console})")
    return None


def exit_status(status):
    """run.py's exit status for a boot: the scenario's, or what ended it."""
    if status.ending == "hang":
        return EXIT_HANG
    if status.ending == "panic":
        return EXIT_PANIC
    if status.scenario_status is None:
        return EXIT_NO_STATUS
    return status.scenario_status


