"""Build the deterministic ext4 test disk (metadata_csum on) that the guest reads.

The corpus is many small files generated from a seeded PRNG, so the guest's
read loop touches many inodes, each one an inode checksum computation.  The
image is cached under cache_root()/disks, keyed by the parameters, the mke2fs
version and this file's source; a JSON file beside it records the geometry
that the analysis needs to map blocks to inodes.
"""

import argparse
import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from cachedir import Key, cache_root, die  # noqa: E402

EPOCH = 1609459200          # 2021-01-01: every timestamp in the image
UUID = "c4ec5a11-0000-4000-8000-000000002021"
HASH_SEED = "c4ec5a11-0000-4000-8000-00000000f00d"
BLOCK_SIZE = 4096
INODE_SIZE = 256

# Our own profile, so that the host's /etc/mke2fs.conf cannot change the image.
MKE2FS_PROFILE = """\
[defaults]
	base_features = sparse_super,large_file,filetype,resize_inode,dir_index,ext_attr

[fs_types]
	ext4 = {
		features = has_journal,extent,huge_file,flex_bg,metadata_csum,64bit,dir_nlink,extra_isize
	}
	testdisk = {
		inode_ratio = 16384
	}
"""


def tool(name):
    """Path of an e2fsprogs tool; they live in sbin, often not on a user's PATH."""
    path = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    found = shutil.which(name, path=path)
    if not found:
        die(f"{name} not found (install e2fsprogs)")
    return found


def run(cmd, env=None):
    """Run cmd with its output captured; die with its last error line if it fails."""
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        die(f"{pathlib.Path(cmd[0]).name} failed: "
            f"{lines[-1] if lines else f'exit status {proc.returncode}'}")
    return proc


def fixed_time_env():
    """Environment that makes e2fsprogs stamp EPOCH instead of the clock."""
    return dict(os.environ, E2FSPROGS_FAKE_TIME=str(EPOCH),
                SOURCE_DATE_EPOCH=str(EPOCH))


def layout(dirs):
    """Directory paths, nested two levels: sqrt(dirs) top-level ones, the rest below."""
    tops = [f"d{i:02d}" for i in range(max(1, round(dirs ** 0.5)))][:dirs]
    subs = [f"{tops[i % len(tops)]}/s{i:02d}" for i in range(dirs - len(tops))]
    return tops + subs


def make_corpus(root, files, dirs, seed):
    """Write the corpus under root; return every path made, relative, sorted."""
    rng = random_source(seed)
    dir_paths = layout(dirs)
    made = list(dir_paths)
    try:
        root.mkdir()
        for d in dir_paths:
            (root / d).mkdir()
        for i in range(files):
            rel = f"{dir_paths[i % len(dir_paths)]}/f{i:05d}"
            (root / rel).write_bytes(rng.randbytes(rng.randint(0, 8192)))
            made.append(rel)
        # Modes and times are copied into the image: pin them (umask, clock).
        for rel in made + ["."]:
            p = root / rel
            os.chmod(p, 0o755 if p.is_dir() else 0o644)
            if os.listxattr(p):
                die(f"host attached xattrs to {p} (SELinux? default ACL?): "
                    "the image would not be reproducible")
            os.utime(p, (EPOCH, EPOCH))
    except OSError as e:
        die(f"cannot write the test corpus: {e}")
    return sorted(made)


def random_source(seed):
    import random
    return random.Random(seed)


def pin_inodes(debugfs, image, paths, work):
    """mke2fs -d copies each file's ctime and owner from the host, which no
    user can set: overwrite them in the image."""
    cmds = work / "pin.debugfs"
    with open(cmds, "w") as f:
        for rel in ["/"] + ["/" + p for p in paths]:
            for field, value in (("ctime", f"@{EPOCH}"), ("uid", "0"), ("gid", "0")):
                f.write(f"set_inode_field {rel} {field} {value}\n")
    proc = run([debugfs, "-w", "-f", str(cmds), str(image)], env=fixed_time_env())
    # debugfs exits 0 even when a command fails; its errors come on stderr
    # after the version banner.
    errors = [l for l in proc.stderr.splitlines() if not l.startswith("debugfs ")]
    if errors:
        die(f"debugfs failed: {errors[0]}")


def geometry(dumpe2fs, image):
    """The numbers an analysis needs, from dumpe2fs."""
    out = run([dumpe2fs, str(image)]).stdout
    head = dict(re.findall(r"^([A-Za-z][^:\n]*):[ \t]+(.*)$", out, re.M))
    if "metadata_csum" not in head.get("Filesystem features", "").split():
        die(f"{image}: metadata_csum is not among the features")
    tables = [int(b) for b in re.findall(r"^  Inode table at (\d+)-", out, re.M)]
    return {
        "block_size": int(head["Block size"]),
        "inode_size": int(head["Inode size"]),
        "inodes_per_group": int(head["Inodes per group"]),
        "blocks_per_group": int(head["Blocks per group"]),
        "inode_count": int(head["Inode count"]),
        "block_count": int(head["Block count"]),
        "first_ino": int(head["First inode"]),
        "inode_tables": tables,
        "uuid": head["Filesystem UUID"],
    }


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def build(args, image, meta):
    mke2fs, debugfs, dumpe2fs = tool("mke2fs"), tool("debugfs"), tool("dumpe2fs")
    # Work beside the image: the final renames are then atomic, and leaving
    # the block removes any partial result.
    with tempfile.TemporaryDirectory(dir=image.parent, prefix=".testdisk-") as tmp:
        work = pathlib.Path(tmp)
        paths = make_corpus(work / "corpus", args.files, args.dirs, args.seed)
        profile = work / "mke2fs.conf"
        profile.write_text(MKE2FS_PROFILE)
        tmp_image = work / image.name
        env = dict(fixed_time_env(), MKE2FS_CONFIG=str(profile))
        run([mke2fs, "-q", "-F", "-t", "ext4", "-T", "testdisk",
             "-b", str(BLOCK_SIZE), "-I", str(INODE_SIZE),
             "-O", "metadata_csum,^metadata_csum_seed", "-U", UUID,
             "-E", f"hash_seed={HASH_SEED},root_owner=0:0,nodiscard",
             "-d", str(work / "corpus"), str(tmp_image),
             str(args.size_mib * 1024 * 1024 // BLOCK_SIZE)], env=env)
        pin_inodes(debugfs, tmp_image, paths, work)
        info = geometry(dumpe2fs, tmp_image)
        info.update(files=args.files, dirs=args.dirs, seed=args.seed,
                    image=image.name, sha256=sha256(tmp_image))
        tmp_meta = work / meta.name
        tmp_meta.write_text(json.dumps(info, indent=1) + "\n")
        # The guest attaches it read-only; nothing may change it.
        tmp_image.chmod(0o444)
        os.replace(tmp_meta, meta)
        os.replace(tmp_image, image)


def mke2fs_version():
    proc = run([tool("mke2fs"), "-V"])
    return proc.stderr.strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=6000)
    ap.add_argument("--dirs", type=int, default=60)
    ap.add_argument("--size-mib", type=int, default=128)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--print-path", action="store_true",
                    help="print the image path on stdout")
    args = ap.parse_args()
    if args.files < 0 or args.dirs < 1 or args.size_mib < 1:
        die("--files must be >= 0, --dirs and --size-mib >= 1")

    key = (Key("testdisk").add("files", str(args.files))
           .add("dirs", str(args.dirs)).add("size_mib", str(args.size_mib))
           .add("seed", str(args.seed)).add("mke2fs", mke2fs_version())
           .add_file(__file__).hexdigest())
    disks = cache_root() / "disks"
    disks.mkdir(exist_ok=True)
    image = disks / f"testdisk-{key}.img"
    meta = disks / f"testdisk-{key}.json"
    if image.exists() and meta.exists():
        print(f"testdisk: cache hit {image}", file=sys.stderr)
    else:
        build(args, image, meta)
        print(f"testdisk: built {image}", file=sys.stderr)
    if args.print_path:
        print(image)


if __name__ == "__main__":
    main()
