#!/usr/bin/python3
"""Boot a chkwin kernel in qemu-system-aarch64 and run one scenario.

Everything the run produces stays in --out: console.log (the serial
console, written by QEMU itself so it survives a kill), results.bin (the
virtio-serial results port), cmdline.txt and status.json.  A watchdog
kills a guest that hangs or panics, keeps the console, and says why in one
line; otherwise the exit status is the scenario's.
"""

import argparse
import json
import pathlib
import re
import shlex
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from cachedir import die  # noqa: E402

GUEST = pathlib.Path(__file__).resolve().parent
PY = "/usr/bin/python3"
EXIT_HANG, EXIT_PANIC, EXIT_NO_STATUS = 124, 125, 126
STATUS_RE = re.compile(r"^CHKWIN-STATUS (\d+)\s*$", re.M)
PANIC_RE = re.compile(r"^.*Kernel panic - not syncing.*$", re.M)
UPTIME_RE = re.compile(r"^\[\s*(\d+\.\d+)\]", re.M)


def helper_output(script, *args):
    proc = subprocess.run([PY, str(GUEST / script), *args],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        die(f"{script} failed: {proc.stderr.strip().splitlines()[-1:]}")
    return proc.stdout.strip().splitlines()[-1]


def qemu_command(args, kernel, initramfs, disk, out):
    append = (f"console=ttyAMA0 panic=-1 rdinit=/init "
              f"chkwin.scenario={args.scenario} chkwin.duration={args.duration}")
    if args.append:
        append += " " + args.append
    cmd = ["qemu-system-aarch64", "-M", "virt", "-cpu", "cortex-a72",
           "-smp", str(args.smp), "-m", str(args.mem), "-nographic",
           "-no-reboot", "-monitor", "none",
           "-kernel", str(kernel), "-initrd", str(initramfs),
           "-append", append,
           "-chardev", f"file,id=console,path={out / 'console.log'}",
           "-serial", "chardev:console",
           # read-only: no run can change the test disk
           "-drive", f"file={disk},if=none,id=testdisk,format=raw,readonly=on",
           "-device", "virtio-blk-pci,drive=testdisk",
           "-device", "virtio-serial-pci",
           "-chardev", f"file,id=results,path={out / 'results.bin'}",
           "-device", "virtserialport,chardev=results,name=chkwin.results"]
    if args.singlestep:
        cmd.append("-singlestep")
    return cmd


def watch(proc, console, timeout):
    """Wait for QEMU; return 'exited', 'hang' or 'panic'."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            proc.wait(timeout=0.5)
            exited = True
        except subprocess.TimeoutExpired:
            exited = False
        text = console.read_text(errors="replace") if console.exists() else ""
        if exited:
            return "panic" if PANIC_RE.search(text) else "exited"
        if PANIC_RE.search(text):
            # panic=-1 reboots and -no-reboot exits; give it a moment.
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            return "panic"
        if time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            return "hang"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flavour", choices=["unpatched", "patched"],
                    default="unpatched")
    ap.add_argument("--scenario", required=True)
    ap.add_argument("--duration", type=int, default=10,
                    help="guest seconds the scenario runs")
    ap.add_argument("--smp", type=int, default=2)
    ap.add_argument("--mem", type=int, default=1024, help="MiB")
    ap.add_argument("--append", default="", help="extra kernel parameters")
    ap.add_argument("--kernel", type=pathlib.Path)
    ap.add_argument("--initramfs", type=pathlib.Path)
    ap.add_argument("--disk", type=pathlib.Path)
    ap.add_argument("--timeout", type=float,
                    help="wall seconds before the guest counts as hung "
                         "(default: 4 x duration + 120)")
    ap.add_argument("--singlestep", action="store_true",
                    help="one instruction per TCG block (slow, hardware-like)")
    ap.add_argument("--out", type=pathlib.Path, required=True)
    args = ap.parse_args()

    kernel = args.kernel or pathlib.Path(helper_output(
        "kbuild.py", "--flavour", args.flavour, "--print-dir")) / "Image"
    initramfs = args.initramfs or helper_output("initramfs.py", "--print-path")
    disk = args.disk or helper_output("testdisk.py", "--print-path")
    for what, path in (("kernel", kernel), ("initramfs", initramfs),
                       ("disk", disk)):
        if not pathlib.Path(path).is_file():
            die(f"{what} {path} does not exist")
    args.out.mkdir(parents=True, exist_ok=True)
    console = args.out / "console.log"
    cmd = qemu_command(args, kernel, initramfs, disk, args.out)
    (args.out / "cmdline.txt").write_text(shlex.join(cmd) + "\n")
    timeout = args.timeout or 4 * args.duration + 120

    start = time.monotonic()
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
    except FileNotFoundError:
        die("qemu-system-aarch64 not found: install qemu-system-arm (make deps)")
    ending = watch(proc, console, timeout)
    qemu_err = proc.stderr.read().decode(errors="replace").strip()
    text = console.read_text(errors="replace") if console.exists() else ""
    statuses = STATUS_RE.findall(text)
    uptimes = UPTIME_RE.findall(text)
    status = {"flavour": args.flavour, "scenario": args.scenario,
              "duration": args.duration, "append": args.append,
              "ending": ending, "qemu_exit": proc.returncode,
              "scenario_status": int(statuses[-1]) if statuses else None,
              "wall_seconds": round(time.monotonic() - start, 1),
              "guest_uptime": float(uptimes[-1]) if uptimes else None,
              "checksum_invalid": text.count("iget: checksum invalid")}
    (args.out / "status.json").write_text(json.dumps(status, indent=2) + "\n")

    if ending == "hang":
        print(f"run: error: guest hung: no poweroff within {timeout:.0f} s "
              f"(console: {console})", file=sys.stderr)
        sys.exit(EXIT_HANG)
    if ending == "panic":
        line = PANIC_RE.search(text).group(0).strip()
        print(f"run: error: guest panicked: {line}", file=sys.stderr)
        sys.exit(EXIT_PANIC)
    if status["scenario_status"] is None:
        why = qemu_err.splitlines()[-1] if qemu_err else f"exit {proc.returncode}"
        print(f"run: error: guest stopped without a status ({why}; "
              f"console: {console})", file=sys.stderr)
        sys.exit(EXIT_NO_STATUS)
    if status["scenario_status"] != 0:
        print(f"run: error: scenario {args.scenario} exited "
              f"{status['scenario_status']} (console: {console})",
              file=sys.stderr)
    sys.exit(status["scenario_status"])


if __name__ == "__main__":
    main()
