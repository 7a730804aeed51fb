"""The guest kernel's checksum-failure messages, one definition each.

Every ext4 metadata checksum that the kernel verifies and finds wrong ends
in one console line (ext4_error and friends), with the ratelimit off:
guest/init sets err_ratelimit_interval_ms to 0 after mounting, so none is
folded into "callbacks suppressed".  Counting those lines is how a run
without any tracer knows its failures, kind by kind (Linux 6.1 fs/ext4).
"""

import re

# kind -> the message of each verify site that reports a bad checksum.
KINDS = {
    "inode": r"iget: checksum invalid",                         # inode.c __ext4_iget
    "dirblock": r"Directory block failed checksum"              # namei.c __ext4_read_dirblock
                r"|checksumming directory block \d+",           # namei.c __ext4_find_entry
    "dxnode": r"Directory index failed checksum",               # namei.c __ext4_read_dirblock
    "extent": r"bad header/extent: extent tree corrupted",      # extents.c __ext4_ext_check
    "block_bitmap": r"bad block bitmap checksum",               # balloc.c
    "inode_bitmap": r"Corrupt inode bitmap",                    # ialloc.c
    "group_desc": r"Checksum for group \d+ failed",             # super.c
    "superblock": r"invalid superblock checksum",               # super.c, at mount
    "orphan": r"orphan file block \d+: bad checksum",           # orphan.c
}

# Each kind as the log names its verdicts (analysis/correlate.kind_name):
# by the caller kind of the checksum, which does not tell leaf directory
# blocks from index blocks, or block bitmaps from inode bitmaps.
LOG_KIND = {"inode": "inode", "dirblock": "dir", "dxnode": "dir", "extent": "extent",
            "block_bitmap": "bitmap", "inode_bitmap": "bitmap",
            "group_desc": "group_desc", "superblock": "superblock", "orphan": "orphan"}

_LINE = re.compile("|".join(f"(?P<{k}>{v})" for k, v in KINDS.items()))


def failures(console_text):
    """{kind: count} of checksum-failure lines, every kind present (0 too)."""
    counts = dict.fromkeys(KINDS, 0)
    for line in console_text.splitlines():
        m = _LINE.search(line)
        if m:
            counts[m.lastgroup] += 1
    return counts
