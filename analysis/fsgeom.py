"""Where an inode lives on disk: its inode-table block and the 512-byte
sectors a block request must cover to have brought it in.

The log has no fs geometry, so it comes from the test disk's geometry JSON
(guest/testdisk.py writes <image>.json), from the image itself (superblock
and group descriptors, read-only), or is found through the run's
cmdline.txt, which names the image QEMU attached.
"""

import json
import pathlib
import re
import struct

SECTOR = 512
EXT4_MAGIC = 0xEF53
INCOMPAT_64BIT = 0x80


class GeometryError(Exception):
    pass


class Geometry:
    def __init__(self, block_size, inode_size, inodes_per_group, inode_tables,
                 source):
        self.block_size = block_size
        self.inode_size = inode_size
        self.inodes_per_group = inodes_per_group
        self.inode_tables = list(inode_tables)
        self.source = source

    def inode_block(self, ino):
        """The inode-table block holding inode ino, or None if out of range."""
        group, index = divmod(int(ino) - 1, self.inodes_per_group)
        if ino < 1 or group >= len(self.inode_tables):
            return None
        return self.inode_tables[group] + index * self.inode_size // self.block_size

    def inode_sectors(self, ino):
        """(first sector, sector count) of the inode's table block."""
        block = self.inode_block(ino)
        if block is None:
            return None
        per = self.block_size // SECTOR
        return block * per, per


def from_json(path):
    try:
        meta = json.loads(pathlib.Path(path).read_text())
        return Geometry(int(meta["block_size"]), int(meta["inode_size"]),
                        int(meta["inodes_per_group"]),
                        [int(t) for t in meta["inode_tables"]], str(path))
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise GeometryError(f"{path}: not a geometry file ({e})") from None


def from_image(path):
    """Parse the ext4 superblock and group descriptors of an image file."""
    try:
        with open(path, "rb") as f:
            sb = f.read(2048)[1024:]
            if len(sb) < 1024 or struct.unpack_from("<H", sb, 56)[0] != EXT4_MAGIC:
                raise GeometryError(f"{path}: no ext4 superblock")
            (blocks_lo, first_data, log_bs, blocks_pg, inodes_pg) = (
                struct.unpack_from("<I", sb, o)[0] for o in (4, 20, 24, 32, 40))
            inode_size = struct.unpack_from("<H", sb, 88)[0]
            incompat = struct.unpack_from("<I", sb, 96)[0]
            desc_size = struct.unpack_from("<H", sb, 254)[0]
            blocks_hi = struct.unpack_from("<I", sb, 0x150)[0]
            block_size = 1024 << log_bs
            wide = bool(incompat & INCOMPAT_64BIT)
            blocks = blocks_lo | (blocks_hi << 32 if wide else 0)
            desc_size = desc_size if wide and desc_size >= 64 else 32
            groups = -(-(blocks - first_data) // blocks_pg)
            f.seek((first_data + 1) * block_size)
            gdt = f.read(groups * desc_size)
    except OSError as e:
        raise GeometryError(f"{path}: {e.strerror}") from None
    if len(gdt) < groups * desc_size:
        raise GeometryError(f"{path}: image ends inside the group descriptors")
    tables = []
    for g in range(groups):
        lo = struct.unpack_from("<I", gdt, g * desc_size + 8)[0]
        hi = struct.unpack_from("<I", gdt, g * desc_size + 0x28)[0] if desc_size >= 64 else 0
        tables.append(lo | hi << 32)
    return Geometry(block_size, inode_size, inodes_pg, tables, str(path))


def image_of_run(log_path):
    """The disk image named by cmdline.txt beside a guest/run.py log."""
    cmdline = pathlib.Path(log_path).resolve().parent / "cmdline.txt"
    if not cmdline.exists():
        return None
    m = re.search(r"-drive file=([^,\s]+),", cmdline.read_text(errors="replace"))
    return pathlib.Path(m.group(1)) if m else None


def find(log_path, geometry=None, image=None):
    """The geometry to use: --geometry, else --image, else the run's image
    (its JSON if there is one).  None if nothing says."""
    if geometry:
        return from_json(geometry)
    if image:
        return from_image(image)
    found = image_of_run(log_path)
    if found is None:
        return None
    if found.with_suffix(".json").exists():
        return from_json(found.with_suffix(".json"))
    return from_image(found) if found.exists() else None
