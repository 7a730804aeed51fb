"""Build the guest's initramfs: busybox, our init, the scenarios, loadgen, treewalk, perf-arrivals, chkwin.

The cpio is written here rather than by cpio(1) so that the archive depends
only on file contents, paths and modes: fixed mtimes, owners and inode
numbers, sorted entries.  Equal inputs therefore give equal bytes, and the
cache key can be computed before anything is written.

    /usr/bin/python3 guest/initramfs.py [--add HOST:GUEST ...] [--print-path]
"""

import argparse
import gzip
import os
import pathlib
import stat
import subprocess
import tempfile

from common import REPO
from common.cache import Key, cache_root, cached
from common.errors import die, run_or_die
from common.progress import tool_output
from guest.host import loaderbuild

GUEST_DIR = REPO / "guest"
WORKLOADS = GUEST_DIR / "workloads"

# busybox --list cannot run on the x86 host, so the applets are named here.
APPLETS = """
    sh mount umount mkdir cat echo find xargs md5sum ls stat sleep grep dmesg
    poweroff uname sync date head tail wc sed cut tr seq kill ps true false
    test [ printf env awk timeout dd hexdump od ln cp rm mknod insmod sysctl tar
""".split()

# Mount points init needs; /dev/console must exist before devtmpfs is
# mounted, or the kernel gives init no stdin/stdout.
DIRS = ["dev", "proc", "sys", "tmp", "mnt/test"]
CONSOLE = ("dev/console", stat.S_IFCHR | 0o600, (5, 1))


def busybox_deb():
    """The busybox-static:arm64 .deb, downloaded once into the cache.

    Only downloaded, never installed: installing it would replace the
    host's own busybox."""
    debs = cache_root() / "debs"
    debs.mkdir(exist_ok=True)
    found = sorted(debs.glob("busybox-static_*_arm64.deb"))
    if found:
        return found[-1]
    foreign = subprocess.run(["dpkg", "--print-foreign-architectures"],
                             capture_output=True, text=True).stdout.split()
    if "arm64" not in foreign:
        die("dpkg has no arm64 architecture: run "
            "'dpkg --add-architecture arm64 && apt-get update'")
    # Download into a scratch directory so a failed fetch leaves no
    # partial .deb behind to be mistaken for a cached one.
    with tempfile.TemporaryDirectory(dir=debs) as tmp:
        # Not on stdout: --print-path keeps stdout for the path alone.
        run_or_die(["apt-get", "download", "busybox-static:arm64"],
                   "apt-get download busybox-static:arm64", cwd=tmp,
                   stdout=tool_output())
        got = list(pathlib.Path(tmp).glob("busybox-static_*_arm64.deb"))
        if len(got) != 1:
            die("apt-get download busybox-static:arm64 gave no .deb")
        final = debs / got[0].name
        os.replace(got[0], final)
    return final


def busybox_binary(scratch):
    """Unpack the .deb into scratch; unpacking is cheap, so it is not cached."""
    deb = busybox_deb()
    out = pathlib.Path(scratch) / "busybox-deb"
    run_or_die(["dpkg-deb", "-x", str(deb), str(out)], f"dpkg-deb -x {deb}",
               stdout=tool_output())
    binary = out / "bin" / "busybox"
    if not binary.is_file():
        die(f"{deb} has no bin/busybox")
    return binary.read_bytes()


# The guest programs guest/workloads/Makefile builds.
PROGRAMS = ("loadgen", "treewalk", "perf-arrivals")


def program_binaries():
    """{name: static aarch64 binary} of the guest programs, built by the
    workloads Makefile and cached by its sources."""
    if not (WORKLOADS / "Makefile").is_file():
        die(f"no {WORKLOADS / 'Makefile'}: cannot build {', '.join(PROGRAMS)}")
    key = Key("programs")
    for path in sorted(p for p in WORKLOADS.iterdir() if p.is_file()):
        key.add_file(path)

    def make_programs(tmp):
        tmp.mkdir()
        run_or_die(["make", "-C", str(WORKLOADS), f"OUT={tmp}"],
                   "building the guest programs", stdout=tool_output())
        missing = [n for n in PROGRAMS if not (tmp / n).is_file()]
        if missing:
            die(f"make -C {WORKLOADS} produced no {', '.join(missing)}")

    outdir, _ = cached(cache_root() / "programs" / key.hexdigest(), make_programs,
                       "programs", ready=lambda d: all((d / n).is_file() for n in PROGRAMS))
    return {n: (outdir / n).read_bytes() for n in PROGRAMS}


def host_mode(path):
    """Only the executable bit survives, so umask and checkout don't matter."""
    return 0o755 if os.access(path, os.X_OK) else 0o644


def collect(adds, scratch):
    """All entries: guest path -> (mode, data bytes, rdev)."""
    entries = {}

    def put(guest, mode, data=b"", rdev=(0, 0)):
        guest = guest.strip("/")
        if guest in entries:
            die(f"{guest!r} is in the initramfs twice")
        parts = guest.split("/")
        for i in range(1, len(parts)):
            parent = "/".join(parts[:i])
            kind = entries.setdefault(parent, (stat.S_IFDIR | 0o755, b"", (0, 0)))[0]
            if not stat.S_ISDIR(kind):
                die(f"{parent!r} in the initramfs is not a directory")
        entries[guest] = (mode, data, rdev)

    for d in DIRS:
        put(d, stat.S_IFDIR | 0o755)
    put(CONSOLE[0], CONSOLE[1], rdev=CONSOLE[2])
    put("bin/busybox", stat.S_IFREG | 0o755, busybox_binary(scratch))
    for applet in APPLETS:
        put(f"bin/{applet}", stat.S_IFLNK | 0o777, b"busybox")
    put("init", stat.S_IFREG | 0o755, (GUEST_DIR / "init").read_bytes())
    scenarios = sorted((GUEST_DIR / "scenarios").iterdir())
    for path in scenarios:
        # _lib.sh and _console.sh are sourced: not executable, so not scenarios.
        mode = 0o644 if path.name.startswith("_") else 0o755
        put(f"scenarios/{path.name}", stat.S_IFREG | mode, path.read_bytes())
    for name, binary in program_binaries().items():
        put(f"bin/{name}", stat.S_IFREG | 0o755, binary)
    put("bin/chkwin", stat.S_IFREG | 0o755,
        (loaderbuild.build() / "aarch64" / "chkwin").read_bytes())
    for host, guest in adds:
        if not os.path.isfile(host):
            die(f"--add {host}: not a regular file")
        put(guest, stat.S_IFREG | host_mode(host),
            pathlib.Path(host).read_bytes())
    return entries


def newc(entries):
    """The uncompressed newc cpio of the entries, sorted by path (a parent
    sorts before its children, as the kernel's unpacker needs)."""
    out = bytearray()

    def record(ino, name, mode, data, rdev):
        name = name.encode() + b"\0"
        nlink = 2 if stat.S_ISDIR(mode) else 1
        fields = (ino, mode, 0, 0, nlink, 0, len(data), 0, 0,
                  rdev[0], rdev[1], len(name), 0)
        out.extend(b"070701" + b"".join(b"%08X" % f for f in fields) + name)
        out.extend(b"\0" * (-len(out) % 4))
        out.extend(data)
        out.extend(b"\0" * (-len(out) % 4))

    for ino, name in enumerate(sorted(entries), start=1):
        record(ino, name, *entries[name])
    record(0, "TRAILER!!!", 0, b"", (0, 0))
    return bytes(out)


def entries_key(kind, writer, entries):
    """The cache key of a product made from entries by the script writer
    (its own source is an input too: changing the format changes the
    bytes)."""
    key = Key(kind)
    key.add_file(writer)
    for name in sorted(entries):
        mode, data, rdev = entries[name]
        key.add(f"entry:{name}:{mode:o}:{rdev[0]}:{rdev[1]}", data)
    return key.hexdigest()


def build(adds=()):
    """The initramfs's path (with adds, (host, guest) paths), built on a
    cache miss."""
    with tempfile.TemporaryDirectory() as scratch:
        entries = collect(adds, scratch)
    name = f"initramfs-{entries_key('initramfs', __file__, entries)}.cpio.gz"

    def make_initramfs(tmp):
        # mtime=0 and no file name keep the gzip header free of the build time.
        tmp.write_bytes(gzip.compress(newc(entries), compresslevel=9, mtime=0))
        os.chmod(tmp, 0o444)

    return cached(cache_root() / "initramfs" / name, make_initramfs,
                  "initramfs", ready=pathlib.Path.is_file)[0]


def parse_add(text):
    host, sep, guest = text.rpartition(":")
    if not sep or not host or not guest.startswith("/") or guest == "/":
        raise argparse.ArgumentTypeError(
            f"{text!r} is not HOSTPATH:/ABSOLUTE/GUESTPATH")
    return host, guest


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--add", type=parse_add, action="append", default=[],
                        metavar="HOSTPATH:GUESTPATH",
                        help="also put HOSTPATH at GUESTPATH (repeatable)")
    parser.add_argument("--print-path", action="store_true",
                        help="print the initramfs path on stdout (built first "
                             "on a cache miss, with the loader and kernel it needs)")
    args = parser.parse_args()
    path = build(args.add)
    if args.print_path:
        print(path)


if __name__ == "__main__":
    main()
