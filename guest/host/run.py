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
import json
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import time

from common.cache import quietly
from common.errors import die
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
from guest.host.resultsdir import check_out_dir, write_json

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
            die(f"--guest-file {path}: no such file")
        if names.count(path.name) > 1:
            die(f"--guest-file: two files are called {path.name}")
    archive = out / "guest-files.tar"
    with tarfile.open(archive, "w", format=tarfile.USTAR_FORMAT) as tar:
        for path in paths:
            tar.add(path, arcname=path.name, recursive=False)
    return archive


def qemu_command(args, kernel, boot, disk, out, files=None):
    """boot is the initramfs, or with --root debian the root disk and the
    tools disk; files a tar archive for the guest's /tmp/host, or None."""
    if args.root == "debian":
        start = f"root=/dev/vdb rootfstype=ext4 rw init={args.init}"
    else:
        start = "rdinit=/init"
    append = (f"console=ttyAMA0 panic=-1 {start} "
              f"chkwin.scenario={args.scenario} chkwin.duration={args.duration}")
    if args.phase_seed is not None:
        append += (f" chkwin.phase_seed={args.phase_seed} chkwin.phase_every={PHASE_EVERY}"
                   f" chkwin.phase_spin={phase_spin(kernel, args)}")
    if args.passes:
        append += f" chkwin.passes={args.passes}"
    if args.append:
        append += " " + args.append
    machine = "virt,dtb-randomness=off" if args.clock == "icount" else "virt"
    cmd = [args.qemu, "-M", machine, "-cpu", "cortex-a72",
           "-smp", str(args.smp), "-m", str(args.mem), "-nographic",
           "-no-reboot", "-monitor", "none",
           "-kernel", str(kernel), "-append", append,
           "-chardev", f"file,id=console,path={out / 'console.log'}",
           "-serial", "chardev:console"]
    record = args.record_replay
    # read-only: no run can change the test disk (vda)
    cmd += recordreplay.drive(disk, "testdisk", True, record) + \
        ["-device", "virtio-blk-pci,drive=testdisk"]
    if args.root == "debian":
        root, tools = boot
        # snapshot: the guest writes to a throwaway overlay, never to the
        # cached root disk, unless the build of that disk asks to write it.
        # The build writes through an unsafe cache: its guest flushes
        # (dpkg syncs every file) cost much under TCG, and a build that
        # does not finish is thrown away anyway.
        writes = ",cache=unsafe" if args.rootfs_writable else ",snapshot=on"
        cmd += recordreplay.drive(root, "rootfs", False, record, writes) + \
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
    if args.singlestep:
        cmd.append("-singlestep")
    if args.clock == "icount":
        rr_log = out / recordreplay.LOG_NAME if record else None
        cmd += ["-icount", recordreplay.icount_option(args.shift, icount_sleep(args), rr_log),
                "-rtc", "clock=vm"]
    return cmd


def icount_sleep(args):
    """Whether an idle guest's virtual clock waits for the host's: never,
    except when recording, which hangs at the first disk read with
    sleep=off in QEMU 7.2 (docs/replay.md)."""
    return args.record_replay


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


def phase_spin(kernel, args):
    """Spin iterations (two instructions each) the walker draws from: one
    whole timer period at the kernel's HZ (100 when unknown, the longest),
    in instructions of the icount clock; on the host clock, as at shift 4."""
    period_ns = 1e9 / (kernel_hz(kernel) or 100)
    shift = args.shift if args.clock == "icount" else 4
    return max(1, round(period_ns / 2 ** shift / 2))


def clock_settings(args):
    """The clock as status.json records it."""
    if args.clock == "icount":
        return {"kind": "icount", "shift": args.shift, "ns_per_insn": 2 ** args.shift,
                "sleep": icount_sleep(args), "rtc": "vm", "dtb_randomness": False,
                "record_replay": args.record_replay}
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


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])

    def positive(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid int value: {text!r}")
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
        return value

    def scenario(text):
        if not SCENARIO_RE.match(text):
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a scenario name (letters, digits, ._-)")
        return text

    ap.add_argument("--flavour", choices=["unpatched", "patched", "stock"],
                    default="unpatched",
                    help="a lab kernel, or Debian's own (guest/stockkernel.py)")
    ap.add_argument("--stock-package", metavar="NAME",
                    help="with --flavour stock: which Debian linux-image-*-arm64, "
                         "or a series such as 6.12 (default: guest/stockkernel.py's, "
                         "the newest 6.1)")
    ap.add_argument("--scenario", type=scenario, required=True)
    ap.add_argument("--duration", type=positive, default=10,
                    help="guest seconds the scenario runs")
    ap.add_argument("--smp", type=positive,
                    help="vCPUs (default 2; 1 with --clock icount, which needs it)")
    ap.add_argument("--mem", type=positive, default=1024, help="MiB")
    ap.add_argument("--append", default="", help="extra kernel parameters")
    ap.add_argument("--root", choices=["initramfs", "debian"], default="initramfs",
                    help="userland: the busybox initramfs, or the Debian root "
                         "filesystem (guest/rootfs.py) with the tools disk")
    ap.add_argument("--kernel", type=pathlib.Path)
    ap.add_argument("--initramfs", type=pathlib.Path)
    ap.add_argument("--rootfs", type=pathlib.Path,
                    help="the root disk image for --root debian "
                         "(default: guest/rootfs.py's)")
    ap.add_argument("--tools", type=pathlib.Path,
                    help="the tools disk for --root debian (default: guest/toolsdisk.py's)")
    ap.add_argument("--init", default="/sbin/chkwin-init",
                    help="PID 1 on the root disk, with --root debian")
    ap.add_argument("--rootfs-writable", action="store_true",
                    help="attach the root disk writable (only for building it)")
    ap.add_argument("--disk", type=pathlib.Path)
    ap.add_argument("--guest-file", type=pathlib.Path, action="append", default=[],
                    metavar="PATH", help="make PATH /tmp/host/<its name> in the guest "
                    "(a windows file for chkwin --windows, say); repeatable")
    ap.add_argument("--lab-windows", type=pathlib.Path, metavar="PATH",
                    help="the lab kernel's windows file, already made (a batch task "
                         "names it: a node never builds); default: stackscan's for "
                         "the kernel's vmlinux, from the cache")
    ap.add_argument("--qemu", default=QEMU, metavar="PATH",
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
    ap.add_argument("--clock", choices=["host", "icount"], default="host",
                    help="guest time from the host's clock (multi-threaded TCG), "
                         "or from instructions executed (-icount; -smp 1)")
    ap.add_argument("--shift", type=int, choices=range(0, 11), metavar="N", default=4,
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
    return ap.parse_args()


def main():
    args = parse_args()
    check_out_dir(args.out)
    # Absolute: a recording's command line is replayed from anywhere.
    args.out = args.out.resolve()
    if args.root == "debian" and args.flavour == "stock":
        die("--root debian needs a lab kernel: the stock kernel's ext4 and "
            "virtio are modules, which only its initramfs loads")
    if args.clock == "icount":
        if args.smp not in (None, 1):
            die("--clock icount needs --smp 1: QEMU 7.2 runs an icount guest's "
                "vCPUs on one host thread and can starve all but one")
        args.smp = 1
    elif args.smp is None:
        args.smp = 2
    if args.record_replay and args.clock != "icount":
        die("--record-replay needs --clock icount: QEMU records and replays "
            "only instruction time")
    if args.record_replay and args.rootfs_writable:
        die("--record-replay cannot write the root disk: a recorded boot's "
            "disks are snapshots")
    if args.phase_seed is not None and not 0 <= args.phase_seed < 2 ** 32:
        die(f"--phase-seed {args.phase_seed}: a whole number from 0 to 2^32-1")
    if args.stock_package and args.flavour != "stock":
        die("--stock-package goes with --flavour stock")
    with quietly():
        kernel, boot, files, disk = artifacts(args)
    for what, path in [("kernel", kernel)] + files + [("disk", disk)]:
        if not pathlib.Path(path).is_file():
            die(f"{what} {path} does not exist")
    kernel, disk = pathlib.Path(kernel).resolve(), pathlib.Path(disk).resolve()
    files = [(what, pathlib.Path(path).resolve()) for what, path in files]
    boot = tuple(path for _, path in files) if args.root == "debian" else files[0][1]
    args.out.mkdir(parents=True, exist_ok=True)
    console = Console(args.out / "console.log", args.verbose)
    vmlinux = pathlib.Path(kernel).parent / "vmlinux"
    lab_windows = args.flavour != "stock" and not args.no_lab_windows and vmlinux.is_file()
    passed = list(args.guest_file)
    if lab_windows:
        if kernelwindows.GUEST_NAME in (p.name for p in passed):
            die(f"--guest-file: {kernelwindows.GUEST_NAME} is the name of the lab kernel's "
                "own windows file (rename yours, or pass --no-lab-windows)")
        if args.lab_windows:
            if not args.lab_windows.is_file():
                die(f"--lab-windows {args.lab_windows}: no such file")
            shutil.copyfile(args.lab_windows, args.out / kernelwindows.GUEST_NAME)
            passed.append(args.out / kernelwindows.GUEST_NAME)
        else:
            with quietly():
                passed.append(kernelwindows.copy_to(vmlinux, args.out))
    cmd = qemu_command(args, kernel, boot, disk, args.out, guest_files(passed, args.out))
    (args.out / "cmdline.txt").write_text(shlex.join(cmd) + "\n")
    timeout = args.timeout or watchdog_seconds(args.duration, args.singlestep,
                                               args.clock, args.shift)

    ending, qemu_exit, wall = boot_qemu(cmd, console, args.out, timeout)
    text = console.text()
    # The kernel's cache entry (flavour and the hash of its inputs): what
    # tells two builds of one flavour apart when runs are pooled.
    status = {"flavour": args.flavour, "kernel": pathlib.Path(kernel).parent.name,
              "stock_package": args.stock_package,
              "root": args.root, "scenario": args.scenario,
              "duration": args.duration, "append": args.append,
              "lab_windows": lab_windows,
              "singlestep": args.singlestep, "smp": args.smp,
              "clock": clock_settings(args), "phase_seed": args.phase_seed,
              "passes": args.passes,
              **console_figures(text, ending, qemu_exit, wall)}
    write_json(args.out / "status.json", status)
    if args.record_replay and status["scenario_status"] is not None:
        inputs = {"kernel": kernel, "disk": disk}
        inputs.update({what.replace(" ", "_"): path for what, path in files})
        if (args.out / "guest-files.tar").is_file():
            inputs["guest_files"] = args.out / "guest-files.tar"
        recordreplay.save(args.out, cmd, inputs, status["kernel"],
                          status["guest_uptime"], wall, timeout)
    sys.exit(boot_exit(status, text, timeout, args.out, args.scenario))


def artifacts(args):
    """(kernel, boot, files, disk): what the boot reads, each as given or
    the builders' (built on a cache miss); boot is the initramfs, or with
    --root debian the root and tools disks, files those named for errors."""
    initrd = args.initramfs
    if args.flavour == "stock":
        # The same scenarios, with the modules the stock kernel needs.
        kdir = None if args.kernel and initrd else stockkernel.build(args.stock_package)
        kernel = args.kernel or kdir / "Image"
        initrd = initrd or stockkernel.modules_initramfs(kdir)
    else:
        kernel = args.kernel or kbuild.kernel_dir(args.flavour) / "Image"
    if args.root == "debian":
        root = args.rootfs or rootfs.image()
        tools = args.tools or toolsdisk.build()
        boot = (root, tools)
        files = [("root disk", root), ("tools disk", tools)]
    else:
        boot = initrd or initramfs.build()
        files = [("initramfs", boot)]
    return kernel, boot, files, args.disk or testdisk.build()


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
            die(f"{cmd[0]} not found: install qemu-system-arm (make deps)")
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


def boot_exit(status, text, timeout, out, scenario):
    """The exit status of a boot, with its one-line reason on stderr."""
    console = out / "console.log"
    if status["ending"] == "hang":
        print(f"run: error: guest hung: no poweroff within {timeout} s "
              f"(console: {console})", file=sys.stderr)
        return EXIT_HANG
    if status["ending"] == "panic":
        line = PANIC_RE.search(text).group(0).strip()
        print(f"run: error: guest panicked: {line}", file=sys.stderr)
        return EXIT_PANIC
    if status["scenario_status"] is None:
        qemu_err = (out / "qemu.log").read_text(errors="replace").strip()
        why = qemu_err.splitlines()[-1] if qemu_err else \
            f"QEMU exited {status['qemu_exit']}"
        print(f"run: error: guest stopped without a {console_lines.STATUS_TAG} line "
              f"({why}; console: {console})", file=sys.stderr)
        return EXIT_NO_STATUS
    if status["scenario_status"] != 0:
        print(f"run: error: scenario {scenario} exited "
              f"{status['scenario_status']} (console: {console})", file=sys.stderr)
    return status["scenario_status"]


if __name__ == "__main__":
    main()
