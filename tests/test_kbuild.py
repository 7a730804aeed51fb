"""Kernel builds: cache keys, rebuilds, patch hygiene, bad input."""

import json
import os
import pathlib
import shutil
import subprocess
import uuid

import pytest

from common import REPO
from common.cache import cache_root, locked
from common.digest import file_sha256
from guest.host import keptobjects
from tests.kernels import kbuild, kbuild_args, kernel_dir, run_together

pytestmark = pytest.mark.guest

PATCHES = REPO / "kernel-patches"
FLAVOURS = ("unpatched", "patched")


def patch_env(tmp_path, edit):
    """A copy of kernel-patches/ with edit(dir) applied, and an env using it."""
    copy = tmp_path / "kernel-patches"
    shutil.copytree(PATCHES, copy)
    edit(copy)
    return dict(os.environ, CHKWIN_PATCHES=str(copy))


def test_unchanged_inputs_hit_the_cache():
    first, _ = kbuild(*FLAVOURS)
    images = {f: file_sha256(pathlib.Path(first[f]["dir"]) / "Image") for f in FLAVOURS}
    again, proc = kbuild(*FLAVOURS)
    for flavour in FLAVOURS:
        assert again[flavour]["cache"] == "hit"
        assert again[flavour]["dir"] == first[flavour]["dir"]
        assert file_sha256(pathlib.Path(again[flavour]["dir"]) / "Image") == images[flavour]
    assert "cache hit" in proc.stderr


def test_changing_a_patch_rebuilds_only_the_flavours_using_it(tmp_path):
    """Two builds of the changed flavour at once: the flavour's tree is
    locked, so one builds and the other waits, then hits the same entry."""
    # A fresh token each run, so that no earlier run's output is a hit.
    token = uuid.uuid4().hex

    def touch_barrier_patch(d):
        p = next(d.glob("0003-*.patch"))
        p.write_text(p.read_text().replace(
            "Not for merging:", f"Not for merging (test edit {token}):", 1))
    env = patch_env(tmp_path, touch_barrier_patch)
    procs = run_together(kbuild_args(*FLAVOURS), env)
    for proc in procs:
        assert proc.returncode == 0, proc.stderr
    reports = [json.loads(proc.stdout) for proc in procs]
    rebuilt = pathlib.Path(reports[0]["patched"]["dir"])
    try:
        for report in reports:
            assert report["unpatched"]["cache"] == "hit"
            assert report["unpatched"]["dir"] == str(kernel_dir("unpatched"))
            assert report["patched"]["dir"] == str(rebuilt)
        assert sorted(r["patched"]["cache"] for r in reports) == ["built", "hit"]
        assert rebuilt != kernel_dir("patched")
        assert (rebuilt / "Image").stat().st_size > 0
        waited = next(p for p, r in zip(procs, reports)
                      if r["patched"]["cache"] == "hit")
        assert "built meanwhile by another process" in waited.stderr
    finally:
        shutil.rmtree(rebuilt, ignore_errors=True)


def test_patch_that_does_not_apply_names_patch_and_version(tmp_path):
    def break_context(d):
        p = next(d.glob("0003-*.patch"))
        p.write_text(p.read_text().replace("-\tdma_rmb();", "-\tdma_rmb_gone();", 1))
    env = patch_env(tmp_path, break_context)
    _, proc = kbuild("patched", env=env, check=False)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert "0003-arm64-io-use-rmb-in-__io_ar.patch does not apply to linux-source-6.1" \
        in lines[-1]
    assert "Traceback" not in proc.stderr


def test_missing_source_package_is_one_line_error(tmp_path):
    env = dict(os.environ, CHKWIN_KERNEL_SOURCE=str(tmp_path / "absent.tar.xz"),
               CHKWIN_CACHE=str(tmp_path / "cache"))
    _, proc = kbuild("unpatched", env=env, check=False)
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1
    assert "install linux-source-6.1" in proc.stderr


def test_unknown_flavour_is_one_line_error():
    _, proc = kbuild("nosuch", check=False)
    assert proc.returncode == 1
    assert "unknown flavour 'nosuch'" in proc.stderr


@pytest.mark.parametrize("patch", sorted(p.name for p in PATCHES.glob("*.patch")))
def test_patch_is_checkpatch_strict_clean(patch):
    tree = pathlib.Path(kernel_dir("unpatched")).parent.parent / "src"
    src = next(tree.glob("linux-source-6.1-*"))
    proc = subprocess.run(["perl", "scripts/checkpatch.pl", "--strict",
                           str(PATCHES / patch)], cwd=src,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
    assert "total: 0 errors, 0 warnings, 0 checks" in proc.stdout


def test_series_files_name_the_flavours():
    unpatched = (PATCHES / "series.unpatched").read_text().split()
    patched = (PATCHES / "series.patched").read_text().split()
    assert patched[:len(unpatched)] == unpatched
    assert [n[:4] for n in unpatched] == ["0001", "0002", "0004", "0005"]
    assert [n[:4] for n in patched] == ["0001", "0002", "0004", "0005", "0003"]


def disassemble(flavour, function):
    vmlinux = kernel_dir(flavour) / "vmlinux"
    return subprocess.run(["aarch64-linux-gnu-objdump", "-d",
                           f"--disassemble={function}", str(vmlinux)],
                          capture_output=True, text=True, check=True).stdout


def test_read_accessor_barrier_differs_between_flavours():
    # vp_modern_get_status() is one ioread8(): __io_ar() inlined.
    unpatched = disassemble("unpatched", "vp_modern_get_status")
    patched = disassemble("patched", "vp_modern_get_status")
    assert "dmb\toshld" in unpatched and "dsb\tld" not in unpatched
    assert "dsb\tld" in patched and "dmb\toshld" not in patched


def test_window_is_in_the_symbol_table():
    for flavour in FLAVOURS:
        symbols = (kernel_dir(flavour) / "System.map").read_text()
        for name in ("ext4_chksum", "ext4_chksum_gcc49",
                     "ext4_chksum_gcc49_window_start",
                     "ext4_chksum_gcc49_window_end",
                     "ext4_chksum_gcc49_exact_window",
                     "ext4_chksum_gcc49_indirect",
                     "ext4_chksum_gcc49_indirect_load"):
            assert f" {name}\n" in symbols, (flavour, name)
    listing = disassemble("unpatched", "ext4_chksum_gcc49")
    body = [ln.split("\t", 2)[-1] for ln in listing.splitlines() if "\t" in ln]
    releases = [i for i, ins in enumerate(body) if ins.startswith("mov\tsp, x29")]
    assert len(releases) == 2, body
    # gcc49: release, then a loop that ends a TCG block on each pass
    # (ext4.chksum_window_width passes), then the load.
    wide, exact = releases
    assert body[wide + 1].startswith("subs\tw1, w1, #0x1")
    assert body[wide + 2].startswith("b.ne\t")
    assert body[wide + 3].startswith("ldr\tw0, [x19, #8]")
    # gcc49-exact: the listing's release and load back to back.
    assert body[exact + 1].startswith("ldr\tw0, [x19, #8]")
    # gcc49-indirect: the load's base comes back from memory, so nothing
    # derived from sp points at the descriptor when it is read.
    listing = disassemble("unpatched", "ext4_chksum_gcc49_indirect")
    body = [ln.split("\t", 2)[-1] for ln in listing.splitlines() if "\t" in ln]
    releases = [i for i, ins in enumerate(body) if ins.startswith("mov\tsp, x29")]
    assert len(releases) == 1, body
    assert body[releases[0] + 1].startswith("ldr\tx2, [x29, #24]")
    assert body[releases[0] + 2].startswith("ldr\tw0, [x2, #8]")


def metas(report):
    return {f: json.loads((pathlib.Path(report[f]["dir"]) / "build.json").read_text())
            for f in FLAVOURS}


def fresh_pair(meta):
    """(first, second) where one flavour's tree was extracted and the
    other's seeded from it, else (None, None)."""
    for first in FLAVOURS:
        second = next(f for f in FLAVOURS if f != first)
        if meta[first].get("origin") == "extracted" and \
                meta[second].get("origin") == f"seeded from {first}":
            return first, second
    return None, None


def check_fresh_builds(report):
    """The kernels of a fresh cache: one flavour built in a tree extracted
    from the tarball, the other in a copy of that tree once it was built,
    compiling only part of what the first did (patch 0003 changes
    asm/io.h, which about two thirds of the objects include)."""
    for flavour in FLAVOURS:
        out = pathlib.Path(report[flavour]["dir"])
        for name in ("Image", "vmlinux", "System.map", "config", "vmlinux.h"):
            assert (out / name).stat().st_size > 0
        assert "enum ext4_chksum_caller" in (out / "vmlinux.h").read_text()
    meta = metas(report)
    first, second = fresh_pair(meta)
    assert first, meta
    assert meta[first]["build_seconds"] > 60, meta
    assert 0 < meta[second]["objects_compiled"] < meta[first]["objects_compiled"], meta
    # Most of what includes asm/io.h never expands the barrier: kept.
    assert meta[second]["objects_kept"] > meta[second]["objects_compiled"], meta


def compiled_again(tree, obj, out):
    """obj compiled once more in tree by the command its .cmd file
    recorded, into out (its dependency file not rewritten), debug
    sections stripped; and obj itself stripped alike."""
    cmd = keptobjects.cmd_file_of(tree / obj).read_text().splitlines()[0]
    command = cmd.split(" := ", 1)[1]
    command = command.replace(f" -o {obj} ", f" -o {out / 'again.o'} ")
    command = " ".join(w for w in command.split(" ") if not w.startswith("-Wp,-MMD,"))
    subprocess.run(command, shell=True, cwd=tree, check=True)
    for name, path in (("again", out / "again.o"), ("kept", tree / obj)):
        subprocess.run(["aarch64-linux-gnu-objcopy", "--strip-debug", str(path),
                        str(out / f"{name}.stripped")], check=True)
    return (out / "again.stripped").read_bytes(), (out / "kept.stripped").read_bytes()


def test_kept_objects_compile_to_the_same_code_with_the_patched_header(tmp_path):
    """Objects of the patched tree that include asm/io.h but never expand
    __io_ar()'s barrier (guest/host/keptobjects.py kept them from the
    unpatched build): compiled again against the patched header, the same
    bytes but for the debug sections (which name the tree they were built
    in).  One that expands it was rebuilt: it holds "dsb ld" only."""
    kernel_dir("patched")
    tree = cache_root() / "trees" / "patched"
    dmb_oshld, dsb_ld = bytes.fromhex("bf3103d5"), bytes.fromhex("9f3d03d5")
    with locked(tree.with_name(".patched.lock"), "test_kbuild"):
        rebuilt = (tree / "drivers/virtio/virtio_pci_modern_dev.o").read_bytes()
        assert dsb_ld in rebuilt and dmb_oshld not in rebuilt
        for obj in ("fs/ext4/super.o", "fs/ext4/inode.o", "kernel/sched/core.o"):
            assert "arch/arm64/include/asm/io.h" in \
                keptobjects.cmd_file_of(tree / obj).read_text(), obj
            code = (tree / obj).read_bytes()
            assert dmb_oshld not in code and dsb_ld not in code, obj
            again, kept = compiled_again(tree, obj, tmp_path)
            assert again == kept, obj


def test_fresh_cache_builds_one_flavour_cold_and_the_other_from_its_tree(tmp_path):
    """Check the cache's own kernels where they were a fresh cache's first
    builds (make test on a new machine); where they came from an older
    tree, build both again in an empty cache."""
    report, _ = kbuild(*FLAVOURS)
    if fresh_pair(metas(report))[0]:
        check_fresh_builds(report)
        return
    env = dict(os.environ, CHKWIN_CACHE=str(tmp_path / "cache"))
    report, _ = kbuild(*FLAVOURS, env=env)
    for flavour in FLAVOURS:
        assert report[flavour]["cache"] == "built"
    check_fresh_builds(report)
    shutil.rmtree(tmp_path / "cache")
