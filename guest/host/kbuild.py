#!/usr/bin/python3
"""Build a chkwin kernel flavour from Debian's linux-source-6.1, cached.

On a cache miss this builds (minutes); a second run for the same flavour
meanwhile waits for the first, then hits.

A flavour is a series file in kernel-patches/ (series.<flavour>).  The
cache key covers the source package version, the series and its patches,
the config fragment and the cross compiler's version; a hit costs a hash.
On a miss the flavour's tree (extracted once, or copied from a built
sibling's) is brought to the new series by rewriting only the files whose
patched content changed, so make rebuilds only what the change touched;
of the objects that include a changed header, those that never expand
its changed lines are kept (guest/host/keptobjects.py): the patched
flavour compiles 48 objects, not 620.
"""

import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import tempfile
import time

from common import REPO
from common.cache import Key, cache_root, cached, locked
from common.debian import installed_version
from common.errors import die, run_or_die
from common.progress import heartbeat, log, run_logged
from guest.host import keptobjects

SOURCE_PACKAGE = "linux-source-6.1"
TARBALL = pathlib.Path(os.environ.get("CHKWIN_KERNEL_SOURCE",
                                      "/usr/src/linux-source-6.1.tar.xz"))
CROSS = "aarch64-linux-gnu-"
MAKE_VARS = ["ARCH=arm64", f"CROSS_COMPILE={CROSS}"]
# In a tree whose last build finished: the source version it was extracted from.
SOURCE_STAMP = ".chkwin-source-version"
OUTPUTS = ("Image", "vmlinux", "System.map", "config", "vmlinux.h")
JOBS = os.cpu_count() or 2
# Kbuild's quiet lines for a compiled or assembled object.
OBJECT_LINE = re.compile(r"^\s+(?:CC|AS)\s+(?:\[M\]\s+)?(\S+)$", re.M)


def source_version():
    if not TARBALL.exists():
        die(f"{TARBALL} is missing: install {SOURCE_PACKAGE} (make deps)")
    return installed_version(SOURCE_PACKAGE)


def compiler_version():
    if shutil.which(CROSS + "gcc") is None:
        die(f"{CROSS}gcc not found: install gcc-aarch64-linux-gnu (make deps)")
    return run_or_die([CROSS + "gcc", "--version"],
                      "cross gcc").stdout.splitlines()[0]


def read_series(patches_dir, flavour):
    series = patches_dir / f"series.{flavour}"
    if not series.exists():
        die(f"unknown flavour {flavour!r}: no {series}")
    names = [ln.strip() for ln in series.read_text().splitlines()
             if ln.strip() and not ln.startswith("#")]
    for name in names:
        if not (patches_dir / name).exists():
            die(f"{series.name} names {name}, which does not exist")
    return [patches_dir / n for n in names]


def cache_key(flavour, patches, fragment, witnesses, version, gcc):
    key = Key("kernel").add("flavour", flavour).add("source", version)
    key.add("gcc", gcc).add_file(fragment).add_file(witnesses)
    for patch in patches:
        key.add_file(patch)
    return key.hexdigest()


def touched_files(patch):
    """Paths a patch writes, from its +++ lines (new files included)."""
    paths = []
    for line in patch.read_text(errors="replace").splitlines():
        m = re.match(r"^\+\+\+ b/(\S+)", line)
        if m:
            paths.append(m.group(1))
    return paths


def extract(dest, version):
    """Unpack the source tarball so that dest is the top of a kernel tree."""
    log("kbuild", f"extracting {TARBALL.name} {version} into {dest}")
    tmp = pathlib.Path(tempfile.mkdtemp(dir=dest.parent, prefix=dest.name + "."))
    with heartbeat("kbuild", lambda: f"still extracting {TARBALL.name}"):
        proc = subprocess.run(["tar", "-xf", str(TARBALL), "-C", str(tmp)],
                              capture_output=True, text=True)
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        die(f"cannot extract {TARBALL}: {proc.stderr.strip()}")
    (tmp / SOURCE_PACKAGE).rename(dest)
    tmp.rmdir()


def pristine_tree(version):
    src = cache_root() / "src" / f"{SOURCE_PACKAGE}-{version}"
    with locked(src.with_name(f".{src.name}.lock"), "kbuild"):
        if not src.exists():
            extract(src, version)
    return src


def patched_contents(pristine, patches, version):
    """Apply the series to copies of the files it touches; {path: bytes}."""
    with tempfile.TemporaryDirectory() as stage:
        stage = pathlib.Path(stage)
        for patch in patches:
            for rel in touched_files(patch):
                src, dst = pristine / rel, stage / rel
                if src.exists() and not dst.exists():
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(src, dst)
            proc = subprocess.run(
                ["patch", "-p1", "--forward", "--batch", "-s", "-d", stage,
                 "-i", patch], capture_output=True, text=True)
            if proc.returncode != 0:
                first = (proc.stdout + proc.stderr).strip().splitlines()
                die(f"{patch.name} does not apply to {SOURCE_PACKAGE} {version}: "
                    f"{first[0] if first else 'patch failed'}")
        return {str(p.relative_to(stage)): p.read_bytes()
                for p in stage.rglob("*") if p.is_file()}


def sync_tree(tree, pristine, patches, version):
    """Make tree = pristine + series, writing only files that differ;
    {path: (its bytes before, after)} of those (None: no such file)."""
    state_file = tree / ".chkwin-applied.json"
    old = json.loads(state_file.read_text()) if state_file.exists() else []
    wanted = patched_contents(pristine, patches, version)
    changed = {}
    for rel in sorted(set(old) | set(wanted)):
        target, base = tree / rel, pristine / rel
        content = wanted.get(rel, base.read_bytes() if base.exists() else None)
        current = target.read_bytes() if target.exists() else None
        if content == current:
            continue
        changed[rel] = (current, content)
        if content is None:
            target.unlink()
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".chkwin-tmp")
        tmp.write_bytes(content)
        tmp.replace(target)
    state_file.write_text(json.dumps(sorted(wanted)))
    return changed


def seed_tree(tree, version):
    """Create tree: a copy of a sibling flavour's tree built from the same
    source (copied under its lock, so never mid-build), else the tarball
    extracted.  Returns how it started: "seeded from <flavour>" or
    "extracted"."""
    for sibling in sorted(tree.parent.iterdir()):
        if sibling.name.startswith(".") or not (sibling / SOURCE_STAMP).is_file() \
                or (sibling / SOURCE_STAMP).read_text() != version:
            continue
        with locked(sibling.with_name(f".{sibling.name}.lock"), "kbuild"):
            if (sibling / SOURCE_STAMP).is_file():
                log("kbuild", f"copying the {sibling.name} tree into {tree}")
                tmp = tree.with_name(f".tmp-{tree.name}-{os.getpid()}")
                shutil.rmtree(tmp, ignore_errors=True)
                run_or_die(["cp", "-a", str(sibling), str(tmp)],
                           f"copying {sibling} to {tmp}")
                tmp.rename(tree)
                return f"seeded from {sibling.name}"
    extract(tree, version)
    return "extracted"


def configure(tree, fragment, flavour):
    """allnoconfig + fragment + LOCALVERSION; every fragment line must hold."""
    local = tree / ".chkwin-localversion.config"
    local.write_text(f'CONFIG_LOCALVERSION="-chkwin-{flavour}"\n')
    run_or_die(["scripts/kconfig/merge_config.sh", "-n", str(fragment),
                str(local)], "merge_config.sh", cwd=tree,
               env=dict(os.environ, ARCH="arm64", CROSS_COMPILE=CROSS))
    config = (tree / ".config").read_text().splitlines()
    for line in fragment.read_text().splitlines() + local.read_text().splitlines():
        if line.startswith("CONFIG_") and line not in config:
            die(f"config fragment line {line!r} did not survive merge_config "
                f"(a dependency is missing); see {tree / '.config'}")


def build_status(logfile):
    """How far make has got: objects compiled so far and the last one."""
    built = OBJECT_LINE.findall(pathlib.Path(logfile).read_text(errors="replace"))
    return f"{len(built)} objects compiled so far, last {built[-1]}" if built \
        else "configured, compiling"


def make(tree, jobs):
    """Build the Image; the number of objects make compiled."""
    logfile = tree / "chkwin-build.log"
    proc = run_logged(["make", f"-j{jobs}", *MAKE_VARS, "Image"], logfile, "kbuild",
                      build_status, cwd=tree)
    text = logfile.read_text(errors="replace")
    if proc.returncode != 0:
        errors = [ln for ln in text.splitlines() if "error" in ln.lower()]
        die(f"kernel build failed: {errors[0] if errors else 'see log'} "
            f"(log: {logfile})")
    return len(OBJECT_LINE.findall(text))


def collect(tree, tmp, meta):
    tmp.mkdir()
    shutil.copy2(tree / "arch/arm64/boot/Image", tmp / "Image")
    shutil.copy2(tree / "vmlinux", tmp / "vmlinux")
    shutil.copy2(tree / "System.map", tmp / "System.map")
    shutil.copy2(tree / ".config", tmp / "config")
    with open(tmp / "vmlinux.h", "w") as out:
        proc = subprocess.run(["bpftool", "btf", "dump", "file",
                               str(tmp / "vmlinux"), "format", "c"],
                              stdout=out, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        die(f"bpftool could not dump BTF from vmlinux: {proc.stderr.strip()}")
    (tmp / "build.json").write_text(json.dumps(meta, indent=2) + "\n")


def default_patches():
    """The directory of the series: CHKWIN_PATCHES, else kernel-patches/."""
    return pathlib.Path(os.environ.get("CHKWIN_PATCHES", REPO / "kernel-patches"))


def build(flavour, patches_dir, jobs):
    """Return (output dir, 'hit' or 'built')."""
    version, gcc = source_version(), compiler_version()
    patches = read_series(patches_dir, flavour)
    fragment = patches_dir / "chkwin-virt.config"
    witnesses_file = patches_dir / keptobjects.WITNESSES
    try:
        witnesses = keptobjects.read_witnesses(witnesses_file)
    except (OSError, ValueError) as e:
        die(f"cannot read the witnesses: {e}")
    key = cache_key(flavour, patches, fragment, witnesses_file, version, gcc)
    tree = cache_root() / "trees" / flavour

    def make_kernel(tmp):
        start = time.monotonic()
        pristine = pristine_tree(version)
        # A flavour's first build starts from another flavour's tree of
        # the same source where one exists (make then rebuilds only what
        # the series' difference touches), else from the tarball: a cold
        # build, which the tests check rather than build every flavour twice.
        origin = "warm"
        if not tree.exists():
            origin = seed_tree(tree, version)
        changed = sync_tree(tree, pristine, patches, version)
        log("kbuild", f"{flavour}: {len(changed)} source files changed; building in {tree}")
        configure(tree, fragment, flavour)
        kept = keptobjects.keep(tree, changed, witnesses)
        if kept:
            log("kbuild", f"{flavour}: {kept} objects include a changed header but never "
                          f"expand its changed lines: kept ({witnesses_file.name})")
        # Stamped only while no build is under way in it.
        (tree / SOURCE_STAMP).unlink(missing_ok=True)
        compiled = make(tree, jobs)
        (tree / SOURCE_STAMP).write_text(version)
        meta = {"flavour": flavour, "key": key, "source_version": version,
                "compiler": gcc, "patches": [p.name for p in patches],
                "changed_files": sorted(changed), "origin": origin,
                "objects_compiled": compiled, "objects_kept": kept,
                "build_seconds": round(time.monotonic() - start, 1)}
        collect(tree, tmp, meta)
        log("kbuild", f"built {flavour} in {meta['build_seconds']} s")

    # Every key of a flavour builds in the same tree: one lock per tree.
    return cached(cache_root() / "kernels" / f"{flavour}-{key}", make_kernel,
                  "kbuild", ready=lambda d: all((d / f).exists() for f in OUTPUTS),
                  lock=tree.with_name(f".{flavour}.lock"))


def kernel_dir(flavour):
    """The flavour's output directory (Image, vmlinux, System.map, ...)
    as --print-dir prints it with the default settings, built on a miss."""
    return build(flavour, default_patches().resolve(), JOBS)[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flavour", action="append", required=True,
                    help="unpatched or patched (repeatable)")
    ap.add_argument("--patches-dir", type=pathlib.Path, default=default_patches())
    ap.add_argument("-j", "--jobs", type=int, default=JOBS)
    ap.add_argument("--print-dir", action="store_true",
                    help="print each flavour's output directory on stdout "
                         "(it is built first on a cache miss)")
    ap.add_argument("--json", action="store_true",
                    help="print {flavour: {dir, cache}} on stdout")
    args = ap.parse_args()
    report = {}
    for flavour in args.flavour:
        outdir, status = build(flavour, args.patches_dir.resolve(), args.jobs)
        report[flavour] = {"dir": str(outdir), "cache": status}
        if args.print_dir:
            print(outdir)
    if args.json:
        print(json.dumps(report))


if __name__ == "__main__":
    main()
