#!/usr/bin/python3
"""Build the deterministic ext4 test disk (metadata_csum), cached.

The corpus is generated from a seeded PRNG (nothing is copied from the
host), every timestamp is fixed, and mke2fs gets a fixed UUID and hash
seed, so the same parameters give the same bytes.  The image is made
read-only: guests attach it read-only and no run may change it.
"""

import argparse
import json
import os
import pathlib
import random
import re
import shutil
import subprocess
import tempfile

from common.cache import Key, cache_root, cached
from common.digest import file_sha256
from common.errors import die

EPOCH = 1609804800          # 2021-01-05, the day of Russell King's report
UUID = "c4c4c4c4-2021-0105-a72a-000000000001"
HASH_SEED = "c4c4c4c4-2021-0105-a72a-000000000002"
# The disk every boot reads unless told otherwise.
FILES, DIRS, SIZE_MIB, SEED = 6000, 64, 128, 2021


# The e2fsprogs tools live in sbin, which a non-root PATH may lack; only
# their own processes get it (the builder runs inside other commands).
TOOL_ENV = dict(os.environ, PATH=os.pathsep.join([os.environ.get("PATH", ""),
                                                  "/usr/sbin", "/sbin"]))


def tool_version():
    """mke2fs's version; first make sure every e2fsprogs tool used is there."""
    for tool in ("mke2fs", "debugfs", "dumpe2fs"):
        if shutil.which(tool, path=TOOL_ENV["PATH"]) is None:
            die(f"{tool} not found: install e2fsprogs (make deps)")
    proc = subprocess.run(["mke2fs", "-V"], capture_output=True, text=True, env=TOOL_ENV)
    lines = proc.stderr.splitlines()
    if not lines:
        die(f"mke2fs -V printed no version (exit {proc.returncode})")
    return lines[0]


def make_corpus(root, files, dirs, seed):
    """dirs directories two levels deep, files spread over them."""
    rng = random.Random(seed)
    top = max(1, int(dirs ** 0.5))
    leaves = [root / f"d{i // top:03d}" / f"d{i % top:03d}" for i in range(dirs)]
    for leaf in leaves:
        leaf.mkdir(parents=True, exist_ok=True)
    for n in range(files):
        size = rng.randrange(0, 8193)
        (leaves[n % dirs] / f"f{n:06d}").write_bytes(rng.randbytes(size))
    # mke2fs -d copies modes and times: pin them against umask and clock.
    for path in sorted(root.rglob("*"), reverse=True) + [root]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
        os.utime(path, (EPOCH, EPOCH))


def pin_inodes(image, corpus, env):
    """mke2fs -d copies each source file's ctime (utime cannot set it) and
    owner (root_owner covers only /): overwrite them."""
    paths = ["/"] + ["/" + str(p.relative_to(corpus))
                     for p in sorted(corpus.rglob("*"))]
    script = "".join(f"set_inode_field {p} {field} {value}\n" for p in paths
                     for field, value in (("ctime", f"@{EPOCH}"), ("uid", "0"),
                                          ("gid", "0")))
    proc = subprocess.run(["debugfs", "-w", "-f", "-", str(image)],
                          input=script, capture_output=True, text=True, env=env)
    # debugfs exits 0 when a command fails; errors are the stderr lines
    # after its "debugfs <version>" banner.
    errors = [ln for ln in proc.stderr.splitlines()
              if not ln.startswith("debugfs ")]
    if proc.returncode != 0 or errors:
        die(f"debugfs could not pin inode fields: "
            f"{errors[0] if errors else proc.stderr.strip()[-200:]}")


def geometry(image):
    proc = subprocess.run(["dumpe2fs", str(image)], capture_output=True, env=TOOL_ENV,
                          text=True)
    if proc.returncode != 0:
        die(f"dumpe2fs {image} failed: {proc.stderr.strip()}")
    text = proc.stdout

    def field(name):
        m = re.search(rf"^{name}:\s+(.+)$", text, re.M)
        if not m:
            die(f"dumpe2fs output lacks {name!r}")
        return m.group(1).strip()
    if "metadata_csum" not in field("Filesystem features"):
        die("mke2fs made a file system without metadata_csum")
    return {
        "block_size": int(field("Block size")),
        "inode_size": int(field("Inode size")),
        "inodes_per_group": int(field("Inodes per group")),
        "blocks_per_group": int(field("Blocks per group")),
        "inode_tables": [int(m) for m in re.findall(
            r"Inode table at (\d+)-", text)],
        "uuid": field("Filesystem UUID"),
    }


def build(files=FILES, dirs=DIRS, size_mib=SIZE_MIB, seed=SEED):
    """The image's path, built on a cache miss."""
    key = Key("testdisk").add("params", f"{files}/{dirs}/{size_mib}/{seed}")
    key.add("mke2fs", tool_version()).add_file(__file__)

    def make_disk(partial):
        with tempfile.TemporaryDirectory(dir=partial.parent) as tmp:
            corpus = pathlib.Path(tmp) / "corpus"
            corpus.mkdir()
            make_corpus(corpus, files, dirs, seed)
            env = dict(TOOL_ENV, E2FSPROGS_FAKE_TIME=str(EPOCH),
                       SOURCE_DATE_EPOCH=str(EPOCH), MKE2FS_CONFIG="/dev/null")
            proc = subprocess.run(
                ["mke2fs", "-q", "-F", "-t", "ext4", "-b", "4096", "-I", "256",
                 "-i", "16384", "-O", "metadata_csum,extent,huge_file,flex_bg,"
                 "dir_nlink,extra_isize,64bit,^has_journal",
                 "-U", UUID, "-E", f"hash_seed={HASH_SEED},root_owner=0:0,"
                 "nodiscard", "-L", "chkwin-test", "-d", str(corpus),
                 str(partial), f"{size_mib}M"],
                capture_output=True, text=True, env=env)
            if proc.returncode != 0:
                die(f"mke2fs failed: {(proc.stderr or proc.stdout).strip()}")
            pin_inodes(partial, corpus, env)
        meta = geometry(partial)
        meta.update(files=files, dirs=dirs, seed=seed,
                    sha256=file_sha256(partial))
        # The geometry first: the image's presence is what makes a hit.
        image.with_suffix(".json").write_text(json.dumps(meta, indent=2) + "\n")
        os.chmod(partial, 0o444)

    image = cache_root() / "disks" / f"testdisk-{key.hexdigest()}.img"
    return cached(image, make_disk, "testdisk", ready=pathlib.Path.is_file)[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=FILES)
    ap.add_argument("--dirs", type=int, default=DIRS)
    ap.add_argument("--size-mib", type=int, default=SIZE_MIB)
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--print-path", action="store_true",
                    help="print the image path on stdout")
    args = ap.parse_args()
    if args.files < 1 or args.dirs < 1 or args.size_mib < 8:
        ap.error("--files and --dirs must be positive, --size-mib at least 8")
    image = build(args.files, args.dirs, args.size_mib, args.seed)
    if args.print_path:
        print(image)


if __name__ == "__main__":
    main()
