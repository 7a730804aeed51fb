#!/usr/bin/python3
"""Debian's own arm64 kernel, unmodified, ready for guest/run.py --flavour stock.

Any Debian linux-image-*-arm64 package of the generic, -rt (PREEMPT_RT)
or -cloud flavour: bookworm's linux-image-6.1.0-N[-rt|-cloud]-arm64 or
bookworm-backports' linux-image-6.12.N+deb12[-rt|-cloud]-arm64 (make deps
adds backports to apt's sources; its packages are never picked unless
named, since backports is not automatic).  The package is fetched with
apt-get download (--package NAME or SERIES such as 6.12 or 6.12-rt,
default 6.1: the newest of the series and flavour already in
$CHKWIN_CACHE/debs, else the newest apt can fetch; kept in
$CHKWIN_CACHE/debs) and unpacked,
never installed.  Its dpkg-deb -x tree is reduced to what the guest needs:
`Image` (the gzip-compressed vmlinuz, decompressed), `config`, `release`,
and in `modules/` the virtio, ext4 and crc32c modules that are not built
in (modules.builtin says which are; .ko, decompressed if the package
compressed them) with `order`, their names in an order that insmod can
follow (each after the modules its modinfo `depends=` names).  The
directory $CHKWIN_CACHE/stock/<key> is keyed by the .deb's bytes and this
script.

    /usr/bin/python3 guest/stockkernel.py [--package NAME] [--print-dir]
        [--print-initramfs]

--print-initramfs builds guest/initramfs.py's initramfs with the modules
added under /lib/modules/stock (where guest/init looks for them) and
prints its path.  Debian ships an empty System.map; guest/stocksymbols.py
makes a real one by booting the kernel.
"""

import argparse
import gzip
import lzma
import os
import pathlib
import re
import shutil
import tempfile

from common.cache import Key, cache_root, cached
from common.errors import die, run_or_die
from common.progress import tool_output
from guest.host import initramfs

# Any Debian arm64 kernel of the generic, -rt (PREEMPT_RT: threaded
# interrupts) or -cloud flavour (not -16k, -unsigned or -dbg): 6.1.0-27,
# 6.1.0-57-rt, 6.12.95+deb12-cloud.
PACKAGE_RE = re.compile(r"^linux-image-(\d+)\.(\d+)\.(\d+)(?:-(\d+))?(?:\+deb\d+(?:\.\d+)?)?"
                        r"-(?:(rt|cloud)-)?arm64$")
DEFAULT_SERIES = (6, 1)
SERIES_RE = re.compile(r"^(\d+)\.(\d+)(?:-(rt|cloud))?$")
# What the guest loads: the virtio transport and its devices (test disk,
# results and log ports), ext4, and crc32c_generic, which ext4 asks the
# crypto API for by name (a softdep, so modinfo's depends= misses it).
# Their own dependencies (jbd2, mbcache, crc16, ...) are found by modinfo.
WANTED = ["virtio_pci", "virtio_blk", "virtio_console", "crc32c_generic", "ext4"]
GUEST_MODULES = "/lib/modules/stock"


def version_key(name):
    """(major, minor, patch, abi) of a package name PACKAGE_RE takes."""
    return tuple(int(g or 0) for g in PACKAGE_RE.match(name).groups()[:4])


def of_series(name, series, flavour):
    """Whether a package name is a kernel of series (6, 1) and flavour
    ("rt", "cloud" or None for the generic one)."""
    m = PACKAGE_RE.match(name)
    return bool(m) and version_key(name)[:2] == series and m.group(5) == flavour


def newest_package(series, flavour):
    """The highest-numbered linux-image-*-arm64 of a series (6, 1) and
    flavour that apt can fetch (its lists also name packages they no
    longer carry)."""
    prefix = "linux-image-%d.%d." % series
    out = run_or_die(["apt-cache", "pkgnames", prefix], "apt-cache pkgnames").stdout.split()
    found = sorted(((version_key(name), name) for name in out
                    if of_series(name, series, flavour)), reverse=True)
    for _, name in found:
        policy = run_or_die(["apt-cache", "policy", f"{name}:arm64"],
                            f"apt-cache policy {name}").stdout
        if "Candidate:" in policy and "Candidate: (none)" not in policy:
            return name
    die(f"apt can fetch no {prefix}*-{flavour + '-' if flavour else ''}arm64 package: "
        "run 'make deps' (it adds the arm64 architecture and bookworm-backports)")


def package_deb(package):
    """The package's arm64 .deb, downloaded once into the cache."""
    if not PACKAGE_RE.match(package):
        die(f"--package {package!r} is not a Debian linux-image-VERSION-[rt-|cloud-]arm64 "
            "(e.g. linux-image-6.1.0-27-arm64, linux-image-6.12.95+deb12-rt-arm64) "
            "or a series such as 6.12 or 6.12-rt")
    debs = cache_root() / "debs"
    debs.mkdir(exist_ok=True)
    found = sorted(debs.glob(f"{package}_*_arm64.deb"))
    if found:
        return found[-1]
    # A scratch directory, so a failed fetch leaves no partial .deb behind.
    with tempfile.TemporaryDirectory(dir=debs) as tmp:
        run_or_die(["apt-get", "download", f"{package}:arm64"],
                   f"apt-get download {package}:arm64", cwd=tmp,
                   stdout=tool_output())
        got = list(pathlib.Path(tmp).glob(f"{package}_*_arm64.deb"))
        if len(got) != 1:
            die(f"apt-get download {package}:arm64 gave no .deb")
        final = debs / got[0].name
        os.replace(got[0], final)
    return final


def modinfo(path, field):
    out = run_or_die(["modinfo", "-F", field, str(path)],
                     f"modinfo {path.name}").stdout.strip()
    return [m for m in out.replace(",", " ").split() if m]


def load_order(kos, builtin):
    """WANTED and everything they depend on, dependencies first; what the
    kernel has built in is left out."""
    order, visiting = [], set()

    def visit(name, wanted_by):
        if name in order or name in builtin:
            return
        if name in visiting:
            die(f"module dependency loop through {name}")
        if name not in kos:
            die(f"the package has no module {name} (needed by {wanted_by}); "
                "is it built in there?")
        visiting.add(name)
        for dep in modinfo(kos[name], "depends"):
            visit(dep, name)
        visiting.discard(name)
        order.append(name)

    for name in WANTED:
        visit(name, "the guest")
    return order


def module_name(filename):
    """virtio_pci for virtio-pci.ko, virtio_pci.ko.xz, ..."""
    return filename.split(".ko")[0].replace("-", "_")


def unpack(deb, outdir):
    """Make outdir from the .deb (see the module docstring)."""
    outdir.mkdir()
    with tempfile.TemporaryDirectory() as scratch:
        root = pathlib.Path(scratch)
        run_or_die(["dpkg-deb", "-x", str(deb), scratch], f"dpkg-deb -x {deb}",
                   stdout=tool_output())
        images = sorted((root / "boot").glob("vmlinuz-*"))
        if len(images) != 1:
            die(f"{deb.name} has {len(images)} boot/vmlinuz-* (expected 1)")
        release = images[0].name[len("vmlinuz-"):]
        data = images[0].read_bytes()
        # QEMU takes a gzip Image only below a size limit: decompress here.
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        # An arm64 Image has "ARM\x64" at offset 56 (Documentation/arm64/booting).
        if data[56:60] != b"ARM\x64":
            die(f"{images[0].name} in {deb.name} is not an arm64 Image")
        (outdir / "Image").write_bytes(data)
        shutil.copyfile(root / "boot" / f"config-{release}", outdir / "config")
        (outdir / "release").write_text(release + "\n")

        kos = {}
        moddir = root / "lib" / "modules" / release
        for path in moddir.rglob("*.ko*"):
            kos[module_name(path.name)] = path
        builtin = moddir / "modules.builtin"
        if not builtin.is_file():
            die(f"{deb.name} has no lib/modules/{release}/modules.builtin")
        mods = outdir / "modules"
        mods.mkdir()
        order = load_order(kos, {module_name(pathlib.PurePath(line).name)
                                 for line in builtin.read_text().split()})
        for name in order:
            data = kos[name].read_bytes()
            if kos[name].name.endswith(".ko.xz"):
                data = lzma.decompress(data)
            elif not kos[name].name.endswith(".ko"):
                die(f"{kos[name].name}: unknown module compression")
            (mods / f"{name}.ko").write_bytes(data)
        (mods / "order").write_text("".join(n + "\n" for n in order))


def cached_package(series, flavour):
    """The highest-numbered package of a series and flavour already in the
    cache, or None: once fetched, a kernel stays the default even when apt
    learns a newer one."""
    names = [deb.name.split("_")[0]
             for deb in (cache_root() / "debs").glob("linux-image-*_arm64.deb")]
    found = sorted((version_key(n), n) for n in names if of_series(n, series, flavour))
    return found[-1][1] if found else None


def resolve(package):
    """A package name from a name, a series "6.12" or "6.12-rt", or None
    (the generic 6.1 series): for a series, the newest cached, else the
    newest apt can fetch."""
    m = SERIES_RE.match(package or "")
    if package and not m:
        return package
    series = (int(m.group(1)), int(m.group(2))) if m else DEFAULT_SERIES
    flavour = m.group(3) if m else None
    return cached_package(series, flavour) or newest_package(series, flavour)


def build(package=None):
    """Return the stock kernel's directory, unpacking on a cache miss."""
    deb = package_deb(resolve(package))
    key = Key("stockkernel").add_file(deb).add_file(__file__)
    outdir, _ = cached(
        cache_root() / "stock" / f"{deb.name.split('_')[0]}-{key.hexdigest()}",
        lambda tmp: unpack(deb, tmp), "stockkernel",
        ready=lambda d: (d / "modules" / "order").is_file())
    return outdir


def initramfs_adds(kdir):
    """(host, guest) pairs that put the modules where guest/init finds them."""
    mods = kdir / "modules"
    return [(str(p), f"{GUEST_MODULES}/{p.name}")
            for p in sorted(mods.iterdir())]


def modules_initramfs(kdir):
    """The path of guest/initramfs.py's initramfs with kdir's modules
    added, built on a cache miss."""
    return initramfs.build(initramfs_adds(kdir))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--package", help="linux-image-VERSION-[rt-|cloud-]arm64, e.g. "
                    "linux-image-6.12.95+deb12-rt-arm64, or a series such as 6.12 or "
                    "6.12-rt: its newest cached, else the newest apt can fetch "
                    "(default: 6.1, generic)")
    ap.add_argument("--print-dir", action="store_true",
                    help="print the kernel directory on stdout")
    ap.add_argument("--print-initramfs", action="store_true",
                    help="build the initramfs with the modules, print its path")
    args = ap.parse_args()
    kdir = build(args.package)
    if args.print_dir:
        print(kdir)
    if args.print_initramfs:
        print(modules_initramfs(kdir))


if __name__ == "__main__":
    main()
