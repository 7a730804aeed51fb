#!/usr/bin/python3
"""Build the guest's Debian bookworm arm64 root filesystem, cached.

Stage one is `debootstrap --foreign` on the host: it downloads the
packages from the Debian mirror apt is set up with and unpacks them.
Stage two is `debootstrap --second-stage` in that tree under PRoot, which
runs each arm64 program through QEMU's user-mode emulator
(qemu-aarch64-static), so every maintainer script runs on arm64; nothing
is registered with the host's binfmt_misc, and the stage has a mount
namespace of its own, so no mount of it is left on the host.  That takes
about 4 minutes where booting the tree as the root of a lab guest took
14 (bench/RESULTS.md, "By hand"), and needs no lab kernel, so it runs
beside the kernel builds.  Besides the minimal base the root has the
peers chkwin is measured against: bpftrace, linux-perf, and rt-tests for
hackbench.  Guests boot it with `guest/run.py --root debian`, attached
with snapshot=on, so after this build nothing writes to it.

    /usr/bin/python3 guest/rootfs.py [--print-path] [--json]

The cache key hashes the suite, the package list, the versions of
debootstrap, PRoot and the emulator, and the files put into the root;
Debian's own package versions are listed in packages.txt beside
rootfs.img.
"""

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import tempfile
import time

from common import REPO
from common.cache import Key, cache_root, cached
from common.debian import installed_version
from common.errors import die, run_or_die
from common.progress import final_line, last_line, log, run_logged, tool_output

GUEST = REPO / "guest"
SUITE = "bookworm"
VARIANT = "minbase"
PACKAGES = ["bpftrace", "linux-perf", "rt-tests"]
# The programs the peers need: a second stage that did not leave them is
# an error here, not at the first boot.
PEER_PROGRAMS = ("usr/bin/bpftrace", "usr/bin/perf", "usr/bin/hackbench")
IMAGE_SIZE = "3G"
# Files put into the root, guest path -> source in the repo.
GLUE = {"sbin/chkwin-init": GUEST / "debian" / "chkwin-init"}
EMULATOR = "/usr/bin/qemu-aarch64-static"
STAGE_TWO_TIMEOUT = 3600


def package_version(name, path):
    """name's installed Debian version; path the program it provides."""
    if not os.path.exists(path):
        die(f"{path} not found: install {name} (make deps)")
    return installed_version(name)


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
    for name, path in (("debootstrap", "/usr/sbin/debootstrap"), ("proot", "/usr/bin/proot"),
                       ("qemu-user-static", EMULATOR)):
        key.add(name, package_version(name, path))
    key.add_file(__file__)
    for guest, source in sorted(GLUE.items()):
        key.add("glue:" + guest, source.read_bytes())
    return key.hexdigest()


def stage_one(tree, logfile):
    cmd = ["debootstrap", "--arch=arm64", "--foreign", f"--variant={VARIANT}",
           "--include=" + ",".join(PACKAGES), SUITE, str(tree), mirror()]
    log("rootfs", f"stage one: {' '.join(cmd)}")
    proc = run_logged(cmd, logfile, "rootfs", last_line)
    if proc.returncode != 0:
        die(f"debootstrap --foreign failed (exit {proc.returncode}): "
            f"{final_line(logfile) or 'no output'} (log: {logfile})")


def stage_two(tree, logfile):
    """debootstrap --second-stage in tree, each arm64 program emulated;
    the host's /proc is the only thing bound in (tree/dev has the nodes
    stage one made).  PRoot hands mount and umount to the host's kernel,
    and debootstrap mounts and unmounts /proc: a mount namespace of the
    stage's own keeps those from the host's mounts, and takes them away
    however the stage ends."""
    # Stage one leaves proc a symlink to the host's /proc, which PRoot
    # cannot bind onto.
    if (tree / "proc").is_symlink():
        (tree / "proc").unlink()
    (tree / "proc").mkdir(exist_ok=True)
    cmd = ["unshare", "--mount", "--propagation", "private",
           "proot", "-q", EMULATOR, "-r", str(tree), "-w", "/", "-b", "/proc",
           "/debootstrap/debootstrap", "--second-stage"]
    log("rootfs", "stage two: debootstrap --second-stage under proot and "
        "qemu-aarch64-static")
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "DEBOOTSTRAP_DIR": "/debootstrap",
           "LANG": "C.UTF-8", "HOME": "/root"}
    try:
        proc = run_logged(cmd, logfile, "rootfs", last_line, env=env,
                          timeout=STAGE_TWO_TIMEOUT)
        failed = f"exit {proc.returncode}" if proc.returncode else None
    except subprocess.TimeoutExpired:
        failed = f"not done in {STAGE_TWO_TIMEOUT} s"
    if failed:
        # The build's scratch directory goes; its log stays for a look.
        kept = cache_root() / "rootfs" / "second-stage.log"
        shutil.copyfile(logfile, kept)
        die(f"debootstrap --second-stage failed ({failed}): "
            f"{final_line(kept) or 'no output'} (log: {kept})")
    missing = [p for p in PEER_PROGRAMS if not (tree / p).exists()]
    if missing:
        die(f"the second stage left no {', '.join(missing)} in the root")


def installed_packages(tree):
    """'NAME VERSION' of every package the tree's dpkg database holds."""
    proc = run_or_die(["dpkg-query", f"--admindir={tree}/var/lib/dpkg", "-W",
                       "-f", "${Package} ${Version}\n"], "dpkg-query of the root")
    return sorted(proc.stdout.splitlines())


def add_glue(tree):
    """Our PID 1, and the paths the tools disk's init expects; the
    downloaded packages go."""
    for guest, source in GLUE.items():
        shutil.copyfile(source, tree / guest)
        os.chmod(tree / guest, 0o755)
    for d in ("chkwin", "mnt/test"):
        (tree / d).mkdir(parents=True, exist_ok=True)
    # Scenarios call each other by /scenarios/NAME, as in the initramfs.
    os.symlink("chkwin/scenarios", tree / "scenarios")
    for deb in (tree / "var/cache/apt/archives").glob("*.deb"):
        deb.unlink()


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
            one = time.monotonic() - started
            started = time.monotonic()
            stage_two(tree, tmp / "stage2.log")
            two = time.monotonic() - started
            packages = installed_packages(tree)
            add_glue(tree)
            run_or_die(["/usr/sbin/mke2fs", "-q", "-F", "-t", "ext4", "-L",
                        "chkwin-debian", "-d", str(tree), str(tmp / "rootfs.img"),
                        IMAGE_SIZE], "mke2fs of the root disk", stdout=tool_output())
            shutil.rmtree(tree)
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
