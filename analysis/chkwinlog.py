"""Reader of the chkwin event log, version 1 (docs/log-format.md).

The C reader (chkwin --read) and this one follow the same document.
Records come back as a numpy structured array (one dtype for all types,
the payload fields of each type at their documented offsets), so a run of
millions of records reads in well under a second.

    log = chkwinlog.read("log.bin")
    log.status          # "complete" or "truncated"; corrupt raises LogError
    log.header["mode.chksum"], log.trailer["lost.irq"]
    irqs = log.of("irq"); irqs["pc"], irqs["class"]
"""

import os
import struct
import zlib

import numpy as np

MAGIC = b"CHKWLOG\0"
VERSION = 1
REC_SIZE = 64
FILE_HEAD = struct.Struct("<8sHHI")
CHUNK_HEAD = struct.Struct("<4sIII")

TYPES = {1: "chksum", 2: "verify", 3: "iget", 4: "irq", 5: "softirq",
         6: "block", 7: "sample"}
TYPE_IDS = {name: num for num, name in TYPES.items()}
CLASSES = ["window", "chksum", "kernel", "user", "unknown"]
# Header keys of the emulated windows, in bpf/chkwin.h's enum chkwin_window order.
WINDOW_KEYS = ["window", "window.exact"]

F_IN_CHKSUM, F_WINDOW_HIT, F_HANDLED, F_COMPLETE, F_MISMATCH, F_METADATA = 1, 2, 4, 8, 16, 32
CALLER_UNKNOWN = 0xFFFF
FUNC_NONE = 0xFF

# Every record: the common head, then the payload, 48 bytes from offset 16.
HEAD_FIELDS = [("type", "u1", 0), ("flags", "u1", 1), ("cpu", "<u2", 2),
               ("tid", "<u4", 4), ("ts", "<u8", 8)]

PAYLOADS = {
    "chksum": [("end_ns", "<u8", 0), ("seed", "<u4", 8), ("length", "<u4", 12),
               ("result", "<u4", 16), ("dev", "<u4", 20), ("caller", "<u2", 24),
               ("irqs", "<u2", 26)],
    # caller and block only with F_METADATA (an inode verdict has neither).
    "verify": [("ino", "<u8", 0), ("dev", "<u4", 8), ("stored", "<u4", 12),
               ("computed", "<u4", 16), ("caller", "<u2", 20), ("block", "<u8", 24)],
    "iget": [("ino", "<u8", 0), ("dev", "<u4", 8), ("err", "<i4", 12)],
    "irq": [("pc", "<u8", 0), ("sp", "<u8", 8), ("end_ns", "<u8", 16),
            ("irq", "<u4", 24), ("offset", "<u2", 28), ("class", "u1", 30),
            ("el", "u1", 31), ("func", "u1", 32), ("ipi", "S14", 34)],
    "softirq": [("end_ns", "<u8", 0), ("vec", "<u4", 8)],
    "block": [("sector", "<u8", 0), ("nr_sectors", "<u4", 8), ("dev", "<u4", 12),
              ("cmd_flags", "<u4", 16), ("error", "<i4", 20)],
    "sample": [("pc", "<u8", 0), ("sp", "<u8", 8), ("offset", "<u2", 16),
               ("class", "u1", 18), ("el", "u1", 19), ("func", "u1", 20)],
}


def _dtype(fields):
    names, formats, offsets = zip(*fields)
    return np.dtype({"names": list(names), "formats": list(formats),
                     "offsets": list(offsets), "itemsize": REC_SIZE})


HEAD_DTYPE = _dtype(HEAD_FIELDS)
DTYPES = {kind: _dtype(HEAD_FIELDS + [(n, f, 16 + o) for n, f, o in fields])
          for kind, fields in PAYLOADS.items()}


class LogError(Exception):
    """A corrupt log or not a log: the message names the byte offset."""

    def __init__(self, offset, what):
        super().__init__(f"{what} at byte {offset}")
        self.offset = offset


def parse_text(raw):
    """key=value lines (NUL padding stripped) into a dict."""
    out = {}
    for line in raw.split(b"\0", 1)[0].decode("utf-8", "replace").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key] = value
    return out


class Log:
    def __init__(self, header, trailer, records, status, end_offset, reason):
        self.header = header
        self.trailer = trailer          # None unless complete
        self.records = records          # raw uint8 (n, 64) array, file order
        self.status = status
        self.end_offset = end_offset
        self.reason = reason
        self._types = records[:, 0] if len(records) else np.zeros(0, "u1")

    def __len__(self):
        return len(self.records)

    def of(self, kind):
        """Records of one type, as a structured array in file order."""
        rows = self.records[self._types == TYPE_IDS[kind]]
        return np.ascontiguousarray(rows).view(DTYPES[kind]).reshape(-1)

    def rows(self, kind):
        """Indexes (file order) of the records of one type."""
        return np.nonzero(self._types == TYPE_IDS[kind])[0]

    def field(self, kind, name, rows):
        """One payload field of the given records, gathered without copying
        whole records: what millions-of-records analyses use instead of of()."""
        return self.records.view(DTYPES[kind]).reshape(-1)[name][rows]

    def heads(self):
        return np.ascontiguousarray(self.records).view(HEAD_DTYPE).reshape(-1)

    def func(self, n):
        """(name, start, end) of checksum function n from the header, or None."""
        value = self.header.get(f"func.{n}")
        if not value:
            return None
        name, start, end = value.split()
        return name, int(start, 16), int(end, 16)

    def windows(self):
        """[(start, end)] of the emulated windows the kernel has, both
        inclusive: the gcc49 window and the exact listing's instruction."""
        found = []
        for key in WINDOW_KEYS:
            value = self.header.get(key)
            if value:
                start, end = value.split()
                found.append((int(start, 16), int(end, 16)))
        return found

    def window_known(self):
        """Whether window figures mean anything: the kernel has the window
        symbols, or at least the emulation (chksum_window is not absent).
        A stock kernel has neither, and its window counts are unknown, not 0."""
        return (bool(self.windows())
                or self.header.get("chksum_window", "absent") != "absent")

    def callers(self):
        return {int(k.split(".", 1)[1]): v for k, v in self.header.items()
                if k.startswith("caller.")}

    def irq_names(self):
        return {int(k.split(".", 1)[1]): v for k, v in self.header.items()
                if k.startswith("irq.")}


def _check_records(rows, base, cpus):
    """Offset of the first record that cannot be right, or None."""
    types = rows[:, 0]
    cpu = rows[:, 2].astype(np.uint32) | (rows[:, 3].astype(np.uint32) << 8)
    bad = (types < 1) | (types > len(TYPES))
    if cpus:
        bad |= cpu >= cpus
    if bad.any():
        return base + int(np.argmax(bad)) * REC_SIZE
    return None


def parse(data):
    """Parse a whole log held in memory; see read().  A writable buffer
    (bytearray) is reused: the records are moved down over the chunk heads
    so that they need no second copy."""
    size = len(data)
    if size < len(MAGIC) or data[:len(MAGIC)] != MAGIC:
        raise LogError(0, "not a chkwin log (no magic)")
    if size < FILE_HEAD.size:
        raise LogError(size, "file ends inside the file header")
    _, version, rec_size, hlen = FILE_HEAD.unpack_from(data, 0)
    if version != VERSION:
        raise LogError(8, f"unsupported log version {version}")
    if rec_size != REC_SIZE:
        raise LogError(10, f"unexpected record size {rec_size}")
    if hlen % 8:
        raise LogError(12, "header length not a multiple of 8")
    if FILE_HEAD.size + hlen > size:
        raise LogError(size, "file ends inside the header text")
    header = parse_text(data[FILE_HEAD.size:FILE_HEAD.size + hlen])
    cpus = int(header.get("cpus", "0") or 0)
    buf = np.frombuffer(data, dtype=np.uint8)
    if not buf.flags.writeable:
        buf = buf.copy()
    view = memoryview(data)
    seq, off = 0, FILE_HEAD.size + hlen
    first = dst = off

    def keep(rows):
        nonlocal dst
        buf[dst:dst + rows.size] = rows.reshape(-1)     # overlap-safe move
        dst += rows.size

    def done(status, trailer, end, reason):
        rows = buf[first:dst].reshape(-1, REC_SIZE)
        return Log(header, trailer, rows, status, end, reason)

    while off < size:
        if size - off < CHUNK_HEAD.size:
            return done("truncated", None, size,
                        f"log truncated inside a chunk head at byte {size}")
        magic, count, crc, chunk_seq = CHUNK_HEAD.unpack_from(data, off)
        if chunk_seq != seq:
            raise LogError(off + 12, "chunk out of sequence")
        body = off + CHUNK_HEAD.size
        if magic == b"TRLR":
            if count % 8:
                raise LogError(off + 4, "bad trailer length")
            if body + count > size:
                return done("truncated", None, size,
                            f"log truncated inside the trailer at byte {size}")
            if zlib.crc32(view[body:body + count]) != crc:
                raise LogError(off, "trailer CRC mismatch")
            if body + count != size:
                raise LogError(body + count, "bytes after the trailer")
            return done("complete", parse_text(data[body:body + count]), size,
                        "complete")
        if magic != b"CHNK" or count == 0 or count > 1 << 24:
            raise LogError(off, "bad chunk head")
        avail = (size - body) // REC_SIZE
        whole = min(avail, count)
        rows = buf[body:body + whole * REC_SIZE].reshape(-1, REC_SIZE)
        bad = _check_records(rows, body, cpus)
        if avail < count:
            if bad is not None:
                raise LogError(off, "bad record in the last chunk")
            keep(rows)
            return done("truncated", None, size,
                        f"log truncated inside a chunk at byte {size}")
        if bad is not None:
            raise LogError(bad, "bad record")
        if zlib.crc32(view[body:body + count * REC_SIZE]) != crc:
            raise LogError(off, "chunk CRC mismatch")
        keep(rows)
        off = body + count * REC_SIZE
        seq += 1
    return done("truncated", None, size, f"log truncated: no trailer at byte {size}")


def read(path):
    """The log at path.  Truncated logs are returned (status says so, every
    whole record kept); corrupt ones raise LogError."""
    with open(path, "rb") as f:
        data = bytearray(os.fstat(f.fileno()).st_size)
        del data[f.readinto(data):]     # in place: a file that shrank
    return parse(data)
