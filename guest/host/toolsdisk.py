#!/usr/bin/python3
"""Build the tools disk: the initramfs's files as a small ext4 image.

A guest that boots the Debian root filesystem (guest/rootfs.py) has no
initramfs; it mounts this disk read-only at /chkwin instead and runs the
same init, scenarios, busybox, loadgen and chkwin from it.  Keeping them
off the root disk means a changed scenario or loader costs a second here,
not a new root filesystem.  Cached by the same entries as the initramfs.

    /usr/bin/python3 guest/toolsdisk.py [--print-path]
"""

import os
import pathlib
import stat
import tempfile

from common.cache import builder_main, cache_root, cached
from common.errors import run_or_die
from common.progress import tool_output
from guest.host import initramfs

SIZE_MIB = 64


def populate(root, entries):
    """Write entries (guest path -> (mode, data, rdev)) under root."""
    for name in sorted(entries):
        mode, data, rdev = entries[name]
        path = root / name
        if stat.S_ISDIR(mode):
            path.mkdir(exist_ok=True)
        elif stat.S_ISLNK(mode):
            os.symlink(data.decode(), path)
        elif stat.S_ISCHR(mode):
            os.mknod(path, mode, os.makedev(*rdev))
        else:
            path.write_bytes(data)
        if not stat.S_ISLNK(mode):
            os.chmod(path, stat.S_IMODE(mode))


def build():
    """The image's path, built on a cache miss."""
    with tempfile.TemporaryDirectory() as scratch:
        entries = initramfs.collect([], scratch)
    name = f"tools-{initramfs.entries_key('toolsdisk', __file__, entries)}.img"

    def make_image(image):
        with tempfile.TemporaryDirectory(dir=image.parent, prefix=".tmp-") as tmp:
            tree = pathlib.Path(tmp) / "tree"
            tree.mkdir()
            populate(tree, entries)
            run_or_die(["/usr/sbin/mke2fs", "-q", "-F", "-t", "ext4", "-L",
                        "chkwin-tools", "-E", "root_owner=0:0", "-d", str(tree),
                        str(image), f"{SIZE_MIB}M"],
                       "mke2fs of the tools disk", stdout=tool_output())
        os.chmod(image, 0o444)

    return cached(cache_root() / "toolsdisk" / name, make_image, "toolsdisk",
                  ready=pathlib.Path.is_file)[0]


def main():
    builder_main(build, __doc__, "--print-path", "the image's path")


if __name__ == "__main__":
    main()
