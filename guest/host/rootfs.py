#!/usr/bin/python3
"""Build the guest's Debian bookworm arm64 root filesystem, cached.

Stage one is `debootstrap --foreign` on the host: it downloads the
packages from the Debian mirror apt is set up with and unpacks them.
Stage two boots the unpatched lab kernel with that tree as its root disk
and runs `debootstrap --second-stage` as PID 1 (guest/debian/second-stage),
so every maintainer script runs on arm64, on our kernel.  Besides the
minimal base the root has the peers chkwin is measured against: bpftrace,
linux-perf, and rt-tests for hackbench.  Guests boot it with
`guest/run.py --root debian`, attached with snapshot=on, so after this
build nothing writes to it.

    /usr/bin/python3 guest/rootfs.py [--print-path] [--json]

The cache key hashes the suite, the package list, debootstrap's version
and the files put into the root; Debian's own package versions are listed
in packages.txt beside rootfs.img.
"""

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import tempfile
import time

from common import PY, REPO
from common.cache import Key, cache_root, cached
from common.errors import die, run_or_die
from common.progress import heartbeat, last_line, log, run_logged, tool_output

GUEST = REPO / "guest"
SUITE = "bookworm"
VARIANT = "minbase"
# busybox for the second stage's poweroff; the scenarios use the tools
# disk's static one, the same binary as in the initramfs.
PACKAGES = ["bpftrace", "linux-perf", "rt-tests", "busybox"]
IMAGE_SIZE = "3G"
# Files put into the root, guest path -> source in the repo.
GLUE = {"sbin/chkwin-init": GUEST / "debian" / "chkwin-init",
        "sbin/chkwin-second-stage": GUEST / "debian" / "second-stage",
        "sbin/chkwin-console.sh": GUEST / "scenarios" / "_console.sh"}
STAGE_TWO_TIMEOUT = 3600


def debootstrap_version():
    if shutil.which("debootstrap") is None and not os.path.exists("/usr/sbin/debootstrap"):
        die("debootstrap not found: install it (make deps)")
    proc = run_or_die(["dpkg-query", "-W", "-f", "${Version}", "debootstrap"],
                      "dpkg-query debootstrap")
    return proc.stdout.strip()


def mirror():
    """The URI apt fetches SUITE's arm64 main packages from."""
    proc = run_or_die(["apt-get", "indextargets", "--format",
                       "$(RELEASE) $(COMPONENT) $(ARCHITECTURE) $(IDENTIFIER) $(REPO_URI)"],
                      "apt-get indextargets")
    for line in proc.stdout.splitlines():
        fields = line.split()
        if fields[:4] == [SUITE, "main", "arm64", "Packages"] and len(fields) == 5:
            return fields[4]
    die(f"apt has no {SUITE} main arm64 package list: run "
        "'dpkg --add-architecture arm64 && apt-get update' (make deps)")


def cache_key():
    key = Key("rootfs").add("suite", SUITE).add("variant", VARIANT)
    key.add("packages", ",".join(PACKAGES)).add("size", IMAGE_SIZE)
    key.add("debootstrap", debootstrap_version()).add_file(__file__)
    for guest, source in sorted(GLUE.items()):
        key.add("glue:" + guest, source.read_bytes())
    return key.hexdigest()


def stage_one(tree, logfile):
    cmd = ["debootstrap", "--arch=arm64", "--foreign", f"--variant={VARIANT}",
           "--include=" + ",".join(PACKAGES), SUITE, str(tree), mirror()]
    log("rootfs", f"stage one: {' '.join(cmd)}")
    proc = run_logged(cmd, logfile, "rootfs", last_line)
    if proc.returncode != 0:
        lines = pathlib.Path(logfile).read_text(errors="replace").strip().splitlines()
        die(f"debootstrap --foreign failed (exit {proc.returncode}): "
            f"{lines[-1] if lines else 'no output'} (log: {logfile})")


def add_glue(tree):
    """Our PID 1 scripts with the console lines they print, and the paths
    the tools disk's init expects."""
    for guest, source in GLUE.items():
        shutil.copyfile(source, tree / guest)
        os.chmod(tree / guest, 0o755)
    # debootstrap leaves proc a symlink to the host's /proc, which its
    # second stage would replace only after our PID 1 needs a real one.
    if (tree / "proc").is_symlink():
        (tree / "proc").unlink()
    for d in ("proc", "chkwin", "mnt/test"):
        (tree / d).mkdir(parents=True, exist_ok=True)
    # Scenarios call each other by /scenarios/NAME, as in the initramfs.
    os.symlink("chkwin/scenarios", tree / "scenarios")


def stage_two(image, out):
    """Boot the half-made root; return the console's text."""
    cmd = [PY, str(GUEST / "run.py"), "--flavour", "unpatched",
           "--root", "debian", "--rootfs", str(image), "--rootfs-writable",
           "--init", "/sbin/chkwin-second-stage", "--scenario", "second-stage",
           "--append", f"chkwin.epoch={int(time.time())}",
           "--timeout", str(STAGE_TWO_TIMEOUT), "--out", str(out)]
    log("rootfs", "stage two: debootstrap --second-stage in the guest")
    console = out / "console.log"
    with heartbeat("rootfs", lambda: last_line(console)):
        proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
    text = console.read_text(errors="replace") if console.exists() else ""
    # The build's scratch directory goes; the console stays for a look.
    kept = cache_root() / "rootfs" / "second-stage-console.log"
    kept.write_text(text)
    if proc.returncode != 0:
        errors = [ln for ln in text.splitlines() if "error" in ln.lower()]
        why = (errors or proc.stderr.strip().splitlines() or ["no output"])[-1]
        die(f"second stage failed: {why.strip()} (console: {kept})")
    return text


def check(image):
    """Replay a journal the guest may have left, then insist on a clean
    file system.  A disk that fails is kept, with e2fsck's output, for a
    look."""
    for flags, ok in (("-fp", (0, 1)), ("-fn", (0,))):
        fsck = subprocess.run(["/usr/sbin/e2fsck", flags, str(image)],
                              capture_output=True, text=True)
        if fsck.returncode not in ok:
            kept = cache_root() / "rootfs" / "failed-rootfs.img"
            os.replace(image, kept)
            report = kept.with_suffix(".e2fsck.log")
            report.write_text(fsck.stdout + fsck.stderr)
            die(f"the finished root disk is not clean (e2fsck {flags} exit "
                f"{fsck.returncode}; kept as {kept}, output in {report})")


def image():
    """rootfs.img's path, built on a cache miss (as root only, even a hit:
    debootstrap and the device nodes of the root need root)."""
    if os.geteuid() != 0:
        die("debootstrap and the device nodes of the root need root")
    return build() / "rootfs.img"


def build():
    def make_rootfs(final):
        with tempfile.TemporaryDirectory(dir=final.parent, prefix=".tmp-") as tmp:
            tmp = pathlib.Path(tmp)
            tree = tmp / "tree"
            started = time.monotonic()
            stage_one(tree, tmp / "stage1.log")
            add_glue(tree)
            one = time.monotonic() - started
            run_or_die(["/usr/sbin/mke2fs", "-q", "-F", "-t", "ext4", "-L",
                        "chkwin-debian", "-d", str(tree), str(tmp / "rootfs.img"),
                        IMAGE_SIZE], "mke2fs of the root disk", stdout=tool_output())
            shutil.rmtree(tree)
            started = time.monotonic()
            console = stage_two(tmp / "rootfs.img", tmp / "stage2")
            two = time.monotonic() - started
            check(tmp / "rootfs.img")
            packages = [ln[len("package: "):].strip() for ln in console.splitlines()
                        if ln.startswith("package: ")]
            (tmp / "packages.txt").write_text("\n".join(packages) + "\n")
            report = {"suite": SUITE, "variant": VARIANT, "include": PACKAGES,
                      "packages": len(packages), "stage_one_seconds": round(one, 1),
                      "stage_two_seconds": round(two, 1)}
            (tmp / "build.json").write_text(json.dumps(report, indent=2) + "\n")
            os.chmod(tmp / "rootfs.img", 0o444)
            final.mkdir()
            for name in ("rootfs.img", "packages.txt", "build.json"):
                os.replace(tmp / name, final / name)
        log("rootfs", f"stage one {one:.0f} s, stage two {two:.0f} s")

    return cached(cache_root() / "rootfs" / f"debian-{cache_key()}", make_rootfs,
                  "rootfs", ready=lambda d: (d / "rootfs.img").is_file()
                  and (d / "build.json").is_file())[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--print-path", action="store_true",
                        help="print rootfs.img's path on stdout")
    parser.add_argument("--json", action="store_true",
                        help="print the build report (build.json) and its directory")
    args = parser.parse_args()
    path = image()
    if args.json:
        report = json.loads((path.parent / "build.json").read_text())
        print(json.dumps(dict(report, dir=str(path.parent)), indent=2))
    if args.print_path:
        print(path)


if __name__ == "__main__":
    main()
