"""Reader of the chkwin event log, versions 4 to 1 (docs/log-format.md).

The C reader (chkwin --read) and this one follow the same document.
Records come back as a numpy structured array (one dtype for all types,
the payload fields of each type at their documented offsets), so a run of
millions of records reads in well under a second.

    log = chkwinlog.read("log.bin")
    log.status          # "complete" or "truncated"; corrupt raises LogError
    log.version         # 4; 3 before record layouts, 2 before snapshots, 1 before header CRCs
    log.header["mode.chksum"], log.trailer["lost.irq"]
    irqs = log.of("irq"); irqs["pc"], irqs["class"]
"""

import os
import re
import struct
import zlib

import numpy as np

from analysis import declared

MAGIC = b"CHKWLOG\0"
VERSION = 4
REC_SIZE = 64
FILE_HEAD_V1 = struct.Struct("<8sHHI")
FILE_HEAD = struct.Struct("<8sHHIII")     # version 2 on: plus header CRC, 4 zero bytes
CHUNK_HEAD = struct.Struct("<4sIII")
# Bounds on what a header may say (loader/logtext.h): analysis sizes its
# tables by them.
MAX_CPUS = 4096
MAX_SPAN = 1 << 20
MAX_LINES = 16384
HIST_SLOTS = 256
# Windows watched by name (bpf/chkwin.h, docs/windows.md).
MAX_WATCHED = 4096
_WATCH_NAME = re.compile(rb"[A-Za-z0-9_.+:-]{1,127}")

# The interrupt classes by number, and the probes (trailer lost.PROBE), in
# the order of bpf/chkwin.h's tables.
CLASSES = declared.CLASSES
# What a ran record's what field names, by number.
RAN = declared.RAN
PROBES = declared.PROBES
# What a run did not count, and whether it attached a hook: analysis/declared.py.
NOT_ATTACHED = declared.NOT_ATTACHED
hook_attached = declared.hook_attached
# The flight recorder's rings (bpf/chkwin.h CHKWIN_RECORDS): which record
# types each keeps.  Blocks: completions only, one ring for all CPUs.
RINGS = declared.RINGS
# Header keys of the gcc49 windows in logs written while the loader knew
# them by name (before 2026-12-06); windows are watch.N now.
WINDOW_KEYS = ["window", "window.exact"]
# A record's flags (bpf/chkwin.h CHKWIN_F_*).
F_IN_CHKSUM, F_WINDOW_HIT, F_HANDLED, F_COMPLETE, F_MISMATCH, F_METADATA = (
    declared.FLAGS[name] for name in ("IN_CHKSUM", "WINDOW_HIT", "HANDLED", "COMPLETE",
                                      "MISMATCH", "METADATA"))
CALLER_UNKNOWN = 0xFFFF
FUNC_NONE = 0xFF

# Every record: the common head, then the payload, 48 bytes from offset 16.
HEAD_FIELDS = [("type", "u1", 0), ("flags", "u1", 1), ("cpu", "<u2", 2),
               ("tid", "<u4", 4), ("ts", "<u8", 8)]
PAYLOAD = REC_SIZE - 16
MAX_TYPES = 32
MAX_FIELDS = 16

# Logs before version 4 carry no record layout: theirs, as written then
# (version 3 added the snapshot).  Never edited; loader/schema.c has the same.
LEGACY = [
    b"chksum end_ns:u64@0 seed:u32@8 length:u32@12 result:u32@16 dev:u32@20 "
    b"caller:u16@24 irqs:u16@26",
    b"verify ino:u64@0 dev:u32@8 stored:u32@12 computed:u32@16 caller:u16@20?meta "
    b"block:u64@24?meta",
    b"iget ino:u64@0 dev:u32@8 err:s32@12",
    b"irq pc:x64@0 sp:x64@8 end_ns:u64@16 irq:u32@24 offset:u16@28 class:class8@30 "
    b"el:u8@31 func:u8@32 ipi:str14@34",
    b"softirq end_ns:u64@0 vec:u32@8",
    b"block sector:u64@0 nr_sectors:u32@8 dev:u32@12 cmd_flags:u32@16 error:s32@20",
    b"sample pc:x64@0 sp:x64@8 offset:u16@16 class:class8@18 el:u8@19 func:u8@20",
    b"snapshot call_horizon:u64@0 arrival_horizon:u64@8 history:u32@16 calls:u32@20 "
    b"arrivals:u32@24 blocks:u32@28 evicted:u32@32 trigger:type8@36",
]

# Types version 4 added after version 3's, as this loader writes them (the
# record table of bpf/chkwin.h; tests/test_logformat.py holds them to it).
# Older version 4 logs lack them: the analysis reads none there.
NEWER = [
    b"ran fn:x64@0 arg:u32@8 what:u8@12 comm:str16@16",
]

# Field codes (loader/schema.c): what a reader does with each.
SHOWS = ("u", "s", "x", "class", "type", "str")
_NAME = re.compile(rb"[a-z][a-z0-9_]{0,31}")
_SMALL = re.compile(rb"[0-9]{1,3}")


def _code(c):
    """(show, size in bytes) of a field code, or None."""
    for show in SHOWS:
        k = len(show)
        if len(c) <= k or not c.startswith(show.encode()) or not _SMALL.fullmatch(c[k:]):
            continue
        width = int(c[k:])
        if show == "str":
            return (show, width) if 1 <= width <= PAYLOAD else None
        return (show, width // 8) if width in (8, 16, 32, 64) else None
    return None


def _field(tok):
    """(name, show, size, offset, meta), or why the field is wrong."""
    colon = tok.find(b":")
    at = tok.find(b"@", colon) if colon >= 0 else -1
    if colon < 0 or at < 0:
        return "a field that is not name:code@offset"
    if not _NAME.fullmatch(tok[:colon]):
        return "a bad name"
    code = _code(tok[colon + 1:at])
    if code is None:
        return "a bad field code"
    rest, meta = tok[at + 1:], False
    q = rest.find(b"?")
    if q >= 0:
        if rest[q:] != b"?meta":
            return "a field that is not name:code@offset"
        rest, meta = rest[:q], True
    if not _SMALL.fullmatch(rest):
        return "a field that is not name:code@offset"
    off = int(rest)
    if off + code[1] > PAYLOAD:
        return "a field beyond the 48-byte payload"
    return tok[:colon].decode(), code[0], code[1], off, meta


def schema_line(layout, n, value):
    """Parse the value of header line record.N into layout ({n: (name,
    fields)}): None, or why it is wrong (loader/schema.c, the same rules)."""
    if not 1 <= n < MAX_TYPES:
        return "not record.N (1-31)"
    name, fields = None, []
    for tok in value.split(b" "):
        if not tok:
            return "not TYPE FIELD... with single spaces"
        if name is None:
            if not _NAME.fullmatch(tok):
                return "a bad name"
            name = tok.decode()
            continue
        if len(fields) == MAX_FIELDS:
            return "more than 16 fields"
        f = _field(tok)
        if isinstance(f, str):
            return f
        if any(g[0] == f[0] for g in fields):
            return "a field named twice"
        fields.append(f)
    if not fields:
        return "not TYPE FIELD... with single spaces"
    if any(m != n and other[0] == name for m, other in layout.items()):
        return "a record type named twice"
    layout[n] = (name, fields)
    return None


def legacy_layout(version):
    """The record layout of a version 1-3 log."""
    layout = {}
    for n, line in enumerate(LEGACY[:7 if version < 3 else 8], 1):
        schema_line(layout, n, line)
    return layout


_FORMATS = {("u", 1): "u1", ("u", 2): "<u2", ("u", 4): "<u4", ("u", 8): "<u8",
            ("s", 1): "i1", ("s", 2): "<i2", ("s", 4): "<i4", ("s", 8): "<i8"}


def _format(show, size):
    if show == "str":
        return f"S{size}"
    return _FORMATS[("s" if show == "s" else "u", size)]


def _dtype(fields):
    names, formats, offsets = zip(*fields)
    return np.dtype({"names": list(names), "formats": list(formats),
                     "offsets": list(offsets), "itemsize": REC_SIZE})


class Layout:
    """A log's record types: numbers, names, each type's fields (name,
    show, size, offset, meta) and the numpy dtype that views a record."""

    def __init__(self, layout):
        self.types = {n: name for n, (name, _) in sorted(layout.items())}
        self.type_ids = {name: n for n, name in self.types.items()}
        self.fields = {name: fields for name, fields in layout.values()}
        self.dtypes = {name: _dtype(HEAD_FIELDS + [(f[0], _format(f[1], f[2]), 16 + f[3])
                                                   for f in fields])
                       for name, fields in layout.values()}


def current_layout():
    """Version 3's layout and the types added since, as this loader writes
    them in its record.N lines."""
    layout = legacy_layout(3)
    for n, line in enumerate(NEWER, len(layout) + 1):
        schema_line(layout, n, line)
    return layout


# The layout this reader writes synthetic logs with, and the names the
# analysis expects: what version 4 logs written by this loader carry in
# their header.
CURRENT = Layout(current_layout())
TYPES, TYPE_IDS, DTYPES = CURRENT.types, CURRENT.type_ids, CURRENT.dtypes
HEAD_DTYPE = _dtype(HEAD_FIELDS)


class LogError(Exception):
    """A corrupt log or not a log: the message names the byte offset."""

    def __init__(self, offset, what):
        super().__init__(what if offset is None else f"{what} at byte {offset}")
        self.offset = offset


_DEC = re.compile(rb"[0-9]{1,20}")
_HEX = re.compile(rb"0x[0-9a-fA-F]{1,16}")


def _dec(v):
    return int(v) if _DEC.fullmatch(v) and int(v) < 1 << 64 else None


def _fields(v, n):
    """v's fields separated by single spaces, if there are n, none empty."""
    f = v.split(b" ")
    return f if len(f) == n and all(f) else None


def _range(start, end, strict):
    if not (_HEX.fullmatch(start) and _HEX.fullmatch(end)):
        return False
    a, b = int(start, 16), int(end, 16)
    return (a < b if strict else a <= b) and b - a <= MAX_SPAN


def _prefixed(key, prefix):
    return key.startswith(prefix) and len(key) > len(prefix)


def _indexed(key, prefix, top):
    if not _prefixed(key, prefix):
        return False
    n = _dec(key[len(prefix):])
    return n is not None and n <= top


def _header_value(key, v, facts):
    """Why a header value is wrong, or None (loader/logtext.c, the same rules)."""
    if key == b"cpus":
        n = _dec(v)
        if n is None or not 1 <= n <= MAX_CPUS:
            return "not a CPU count (1-4096)"
        facts["cpus"] = n
    elif key == b"started_ns":
        n = _dec(v)
        if n is None:
            return "not a whole number"
        facts["started_ns"] = n
    elif key == b"sample_hz":
        if _dec(v) is None:
            return "not a whole number"
    elif key == b"target_cpu":
        if v != b"-1" and _dec(v) is None:
            return "not -1 or a CPU number"
    elif key == b"chksum_window_width":
        if v != b"absent" and _dec(v) is None:
            return "not absent or a whole number"
    elif _prefixed(key, b"func."):
        if not _indexed(key, b"func.", 255):
            return "not func.N"
        f = _fields(v, 3)
        if not f or not _range(f[1], f[2], True):
            return "not NAME START END with 0 < END - START <= 1 MiB"
    elif _prefixed(key, b"watch."):
        if not _indexed(key, b"watch.", MAX_WATCHED - 1):
            return f"not watch.N (0-{MAX_WATCHED} - 1)"
        f = v.split(b" ")
        if len(f) != 3 or not _WATCH_NAME.fullmatch(f[0]) or not _range(f[1], f[2], False):
            return "not NAME FIRST LAST with 0 <= LAST - FIRST <= 1 MiB"
    elif key in (b"window", b"window.exact"):
        f = _fields(v, 2)
        if not f or not _range(f[0], f[1], False):
            return "not START END with 0 <= END - START <= 1 MiB"
    elif _prefixed(key, b"record."):
        n = _dec(key[len(b"record."):])
        if not _indexed(key, b"record.", MAX_TYPES - 1) or not n:
            return "not record.N (1-31)"
        facts["has_schema"] = True
        return schema_line(facts.setdefault("schema", {}), n, v)
    elif _prefixed(key, b"caller.") or _prefixed(key, b"irq."):
        if not (_indexed(key, b"caller.", 0xFFFFFFFF) or _indexed(key, b"irq.", 0xFFFFFFFF)):
            return "not a numbered key"
    return None


def _trailer_value(key, v, facts):
    if key == b"ended_ns":
        n = _dec(v)
        if n is None:
            return "not a whole number"
        if "started_ns" in facts and n < facts["started_ns"]:
            return "ends before the header's started_ns"
    elif _prefixed(key, b"lost.") or _prefixed(key, b"count."):
        if _dec(v) is None and v != NOT_ATTACHED.encode():
            return f"not a whole number or {NOT_ATTACHED}"
    elif _prefixed(key, b"records."):
        n = _dec(v)
        if n is None:
            return "not a whole number"
        name = key[len(b"records."):].decode("ascii", "replace") \
            if key.startswith(b"records.") else None
        if name in facts["layout"].type_ids:
            facts.setdefault("records", {})[name] = n
    elif _prefixed(key, b"hist."):
        pairs = v.split(b" ")
        if len(pairs) > HIST_SLOTS or not all(pairs):
            return "not SLOT:COUNT pairs"
        for pair in pairs:
            slot, colon, count = pair.partition(b":")
            n = _dec(slot)
            if not colon or n is None or n >= HIST_SLOTS or _dec(count) is None:
                return "not SLOT:COUNT pairs"
    return None


def _printable(key):
    return "".join(chr(c) if 0x20 < c < 0x7F else "?" for c in key[:32])


def check_text(raw, base, trailer, facts):
    """Check a header or trailer text (bytes, NUL padding included) as
    loader/logtext.c does: LogError at the bad line's byte offset.  facts
    gathers cpus, started_ns and the trailer's records.TYPE counts (with
    their offsets).  Returns the text as a dict of str."""
    text = raw.split(b"\0", 1)[0]
    lines, seen, pos = [], set(), 0
    while pos < len(text):
        end = text.find(b"\n", pos)
        end = len(text) if end < 0 else end
        line = text[pos:end]
        if line:
            if len(lines) == MAX_LINES:
                raise LogError(base + pos, f"more than {MAX_LINES} lines")
            key, sep, value = line.partition(b"=")
            if not sep or not key:
                raise LogError(base + pos, "a line that is not key=value")
            if key in seen:
                raise LogError(base + pos, f"key '{_printable(key)}': duplicate key")
            seen.add(key)
            lines.append((key, value, pos))
        pos = end + 1
    check = _trailer_value if trailer else _header_value
    for key, value, at in lines:
        why = check(key, value, facts)
        if why:
            raise LogError(base + at, f"key '{_printable(key)}': {why}")
        if trailer and key.startswith(b"records."):
            facts.setdefault("records_at", {})[key[8:].decode("ascii", "replace")] = base + at
    return {k.decode("utf-8", "replace"): v.decode("utf-8", "replace") for k, v, _ in lines}


class Log:
    def __init__(self, header, trailer, records, status, end_offset, reason, version,
                 layout=CURRENT, raw=(b"", None), chunks=()):
        self.version = version
        self.layout = layout            # its record types and their fields
        # The header and trailer text as bytes (NUL padding stripped), and
        # (first record index, file offset of its body) of each chunk.
        self.raw_header, self.raw_trailer = raw
        self.chunks = list(chunks)
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
        rows = self.records[self._types == self.layout.type_ids.get(kind, -1)]
        return np.ascontiguousarray(rows).view(self.dtype(kind)).reshape(-1)

    def check_analysable(self):
        """The analysis reads records by the names and codes of the fields
        this reader knows (CURRENT): a log whose layout gives a type it has
        other fields is read, but not analysed (LogError, one line)."""
        for kind, fields in CURRENT.fields.items():
            have = {f[0]: f[1:3] for f in self.layout.fields.get(kind, fields)}
            for f in fields:
                if have.get(f[0]) != f[1:3]:
                    raise LogError(None, f"its {kind} records have no {f[0]} field of "
                                   f"code {f[1]}{f[2] * (1 if f[1] == 'str' else 8)}, which "
                                   f"the analysis needs (a log of another chkwin version?)")

    def dtype(self, kind):
        """The dtype of a record type in this log's layout (a type it does
        not have: the current layout's, for its empty arrays)."""
        return self.layout.dtypes.get(kind) or DTYPES[kind]

    def rows(self, kind):
        """Indexes (file order) of the records of one type."""
        return np.nonzero(self._types == self.layout.type_ids.get(kind, -1))[0]

    def field(self, kind, name, rows):
        """One payload field of the given records, gathered without copying
        whole records: what millions-of-records analyses use instead of of()."""
        return self.records.view(self.dtype(kind)).reshape(-1)[name][rows]

    def positions(self):
        """The file offset of every record, in file order."""
        out = np.zeros(len(self), np.uint64)
        for n, (start, body) in enumerate(self.chunks):
            end = self.chunks[n + 1][0] if n + 1 < len(self.chunks) else len(self)
            out[start:end] = body + REC_SIZE * np.arange(end - start, dtype=np.uint64)
        return out

    def heads(self):
        return np.ascontiguousarray(self.records).view(HEAD_DTYPE).reshape(-1)

    def func(self, n):
        """(name, start, end) of checksum function n from the header, or None."""
        value = self.header.get(f"func.{n}")
        if not value:
            return None
        name, start, end = value.split()
        return name, int(start, 16), int(end, 16)

    def watched(self):
        """[(name, first, last)] of the windows chkwin --windows watched
        (watch.N), in order of N, both addresses inclusive."""
        found = []
        for n in range(MAX_WATCHED):
            value = self.header.get(f"watch.{n}")
            if value is None:
                break
            name, first, last = value.split()
            found.append((name, int(first, 16), int(last, 16)))
        return found

    def windows(self):
        """[(start, end)] of the windows arrivals are classed by, both
        inclusive: those of --windows (watch.N), or in an older log the
        gcc49 windows the loader knew by name."""
        found = []
        for key in WINDOW_KEYS:
            value = self.header.get(key)
            if value:
                start, end = value.split()
                found.append((int(start, 16), int(end, 16)))
        return found + [(first, last) for _, first, last in self.watched()]

    def window_known(self):
        """Whether window figures mean anything: the run watched a window.
        Without one, window counts are unknown, not 0."""
        return bool(self.windows())

    def callers(self):
        return {int(k.split(".", 1)[1]): v for k, v in self.header.items()
                if k.startswith("caller.")}

    def symbols(self):
        """{address: "NAME+0xOFF"} of the functions the ran records name:
        the trailer's sym. lines (a cut log keeps them in its header)."""
        out = {}
        for text in (self.header, self.trailer or {}):
            for k, v in text.items():
                if k.startswith("sym.0x"):
                    try:
                        out[int(k[4:], 16)] = v
                    except ValueError:
                        continue
        return out

    def irq_names(self):
        return {int(k.split(".", 1)[1]): v for k, v in self.header.items()
                if k.startswith("irq.")}

    def first_ns(self):
        """Time zero for plots and slices: started_ns, else the earliest record."""
        start = self.header.get("started_ns")
        if start:
            return int(start)
        return int(self.heads()["ts"].min()) if len(self) else 0

    def duration_s(self):
        """Seconds recorded: started_ns to ended_ns, or to the last record of
        a truncated log."""
        start = int(self.header.get("started_ns", "0") or 0)
        if self.trailer and self.trailer.get("ended_ns"):
            end = int(self.trailer["ended_ns"])
        elif len(self):
            end = int(self.heads()["ts"].max())
        else:
            end = start
        return max(0.0, (end - start) / 1e9)

    def lost(self):
        """{probe: records lost, or NOT_ATTACHED}; {} without a trailer."""
        return {k[5:]: v if v == NOT_ATTACHED else int(v)
                for k, v in (self.trailer or {}).items() if k.startswith("lost.")}

    def attached(self, name):
        """Whether the run attached what feeds count.NAME (a counter the
        trailer lacks is an error, as in counter())."""
        return self.counter(name, not_attached=NOT_ATTACHED) != NOT_ATTACHED

    def counter(self, name, not_attached=None):
        """The trailer's count.NAME, or None when the log has no trailer (a
        cut log).  A trailer without it is an error, not a zero: a counter
        renamed on the C side must not read as nothing counted.  One whose
        hooks the run left out is not_attached where the caller gives a
        value for it, else an error that says so."""
        if self.trailer is None:
            return None
        value = self.trailer.get(f"count.{name}")
        if value is None:
            raise LogError(self.end_offset, f"the trailer has no count.{name} "
                           f"(a log of another chkwin version?)")
        if value == NOT_ATTACHED:
            if not_attached is not None:
                return not_attached
            raise LogError(self.end_offset, f"count.{name} is {NOT_ATTACHED}: "
                           f"this run left out the hooks that feed it")
        return int(value)


def _check_records(rows, base, cpus, layout):
    """Offset of the first record that cannot be right, or None."""
    types = rows[:, 0]
    cpu = rows[:, 2].astype(np.uint32) | (rows[:, 3].astype(np.uint32) << 8)
    known = np.zeros(256, bool)
    known[list(layout.types)] = True
    bad = ~known[types]
    if cpus:
        bad |= cpu >= cpus
    if bad.any():
        return base + int(np.argmax(bad)) * REC_SIZE
    return None


def _file_head(data, view):
    """(version, head struct, header text, CRC chain) of a log's file head
    and header text, checked as loader/logfile.c checks them."""
    size = len(data)
    if size == 0:
        raise LogError(0, "empty file, not a chkwin log")
    if size < len(MAGIC) or data[:len(MAGIC)] != MAGIC:
        raise LogError(0, "not a chkwin log (no magic)")
    if size < FILE_HEAD_V1.size:
        raise LogError(size, "file ends inside the file header")
    _, version, rec_size, hlen = FILE_HEAD_V1.unpack_from(data, 0)
    if not 1 <= version <= VERSION:
        raise LogError(8, f"unsupported log version {version}")
    head = FILE_HEAD_V1 if version == 1 else FILE_HEAD
    if size < head.size:
        raise LogError(size, "file ends inside the file header")
    if rec_size != REC_SIZE:
        raise LogError(10, f"unexpected record size {rec_size}")
    if hlen % 8:
        raise LogError(12, "header length not a multiple of 8")
    if head.size + hlen > size:
        raise LogError(size, "file ends inside the header text")
    htext = bytes(view[head.size:head.size + hlen])
    chain = 0
    if version > 1:
        chain = zlib.crc32(htext, zlib.crc32(view[:16]))
        _, _, _, _, hcrc, reserved = FILE_HEAD.unpack_from(data, 0)
        if hcrc != chain:
            raise LogError(16, "header CRC mismatch")
        if reserved:
            raise LogError(20, "reserved file header bytes not zero")
    return version, head, htext, chain


def _trailer(ttext, at, facts, layout, counts):
    """The trailer's fields, its record counts held to the records read."""
    trailer = check_text(ttext, at, True, facts)
    for num, name in layout.types.items():
        said = facts.get("records", {}).get(name)
        if said is not None and said != counts[num]:
            raise LogError(facts["records_at"][name],
                           f"trailer says {said} {name} records, the log has {counts[num]}")
    return trailer


def parse(data):
    """Parse a whole log held in memory; see read().  A writable buffer
    (bytearray) is reused: the records are moved down over the chunk heads
    so that they need no second copy.  The checks and their order are
    loader/logfile.c's: the differential test holds the two readers to the
    same status, offset and record count."""
    size = len(data)
    view = memoryview(data)
    version, head, htext, chain = _file_head(data, view)
    hlen = len(htext)
    facts = {}
    header = check_text(htext, head.size, False, facts)
    # Version 4 on, the header says the record layout; before, it was fixed.
    if facts.get("has_schema", False) != (version >= 4):
        raise LogError(head.size, f"record.N lines in a version {version} log"
                       if facts.get("has_schema") else
                       f"no record.N lines in a version {version} log")
    layout = Layout(facts["schema"] if version >= 4 else legacy_layout(version))
    facts["layout"] = layout
    cpus = facts.get("cpus", 0)
    buf = np.frombuffer(data, dtype=np.uint8)
    if not buf.flags.writeable:
        buf = buf.copy()
    seq, off = 0, head.size + hlen
    first = dst = off
    chunks = []
    # Records per type, chunk by chunk: one count over the whole log would
    # cast ten million type bytes to a temporary 80 MB array.
    counts = np.zeros(256, np.int64)

    def keep(rows):
        nonlocal dst
        buf[dst:dst + rows.size] = rows.reshape(-1)     # overlap-safe move
        dst += rows.size

    def done(status, trailer, end, reason, ttext=None):
        rows = buf[first:dst].reshape(-1, REC_SIZE)
        return Log(header, trailer, rows, status, end, reason, version, layout,
                   (htext.split(b"\0", 1)[0],
                    None if ttext is None else ttext.split(b"\0", 1)[0]), chunks)

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
            if zlib.crc32(view[body:body + count], chain) != crc:
                raise LogError(off, "trailer CRC mismatch")
            if body + count != size:
                raise LogError(body + count, "bytes after the trailer")
            ttext = bytes(view[body:body + count])
            return done("complete", _trailer(ttext, body, facts, layout, counts), size,
                        "complete", ttext)
        if magic != b"CHNK" or count == 0 or count > 1 << 24:
            raise LogError(off, "bad chunk head")
        avail = (size - body) // REC_SIZE
        whole = min(avail, count)
        rows = buf[body:body + whole * REC_SIZE].reshape(-1, REC_SIZE)
        bad = _check_records(rows, body, cpus, layout)
        if avail < count:
            if bad is not None:
                raise LogError(off, "bad record in the last chunk")
            chunks.append(((dst - first) // REC_SIZE, body))
            keep(rows)
            return done("truncated", None, size,
                        f"log truncated inside a chunk at byte {size}")
        if bad is not None:
            raise LogError(bad, "bad record")
        # Version 2 chains the CRCs: a chunk moved, dropped or repeated fails.
        want = zlib.crc32(view[body:body + count * REC_SIZE], chain)
        if want != crc:
            raise LogError(off, "chunk CRC mismatch")
        if version > 1:
            chain = want
        chunks.append(((dst - first) // REC_SIZE, body))
        counts += np.bincount(rows[:, 0], minlength=256)
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
