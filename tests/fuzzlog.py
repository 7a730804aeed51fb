#!/usr/bin/python3
"""A seeded mutation fuzzer for chkwin logs, and the two readers on it.

Base logs are small synthetic runs (analysis/synthlog.py): complete,
truncated, with metadata verdicts, fallback (no verify probe), with the
sampler, and one in version 1.  Each variant is one mutation of one base:

  cut       the log cut at a random byte
  flip      one bit flipped
  bytes     1-4 bytes overwritten
  header    a hostile header value, CRCs fixed up (the value checks must
            catch it) or not (the header CRC must)
  trailer   a hostile trailer value, CRCs fixed up or not
  chunks    chunks swapped, dropped or repeated with their sequence
            numbers fixed up; CRCs re-chained or not
  length    a huge header, chunk or trailer length

run() feeds every variant to the Python reader and the analysis that
follows it (summary and correlation; a few through chkwin-analyze report),
and to the C reader (tests/c/read_main.c, the code of chkwin --read), and
compares them: for a log that reads, the same JSON lines byte for byte
(analysis/logjson.py against chkwin --read -f json: header, records,
trailer, status, offset, record count); for a corrupt one the same
offset and reason.  Used by tests/test_fuzz.py; as a command it prints
what it found.
"""

import argparse
import json
import pathlib
import random
import resource
import signal
import struct
import subprocess
import tempfile
import time
import traceback
import zlib

from analysis import chkwinlog
from analysis import correlate
from analysis import flight
from analysis import logjson
from analysis import summary
from analysis import synthlog
from common import PY, REPO

KINDS = ("cut", "flip", "bytes", "header", "trailer", "chunks", "retype", "length")
HOSTILE_HEADER = [
    b"cpus=2a", b"cpus=-1", b"cpus=2_0", b"cpus=100000", b"cpus=" + b"9" * 31, b"cpus=0",
    b"cpus=64", b"cpus=", b"caller.x=EXT4_CHKSUM_DIR", b"window=0xffffffc0082ab214",
    b"window=0x10 0x8", b"window.exact=0x1  0x2", b"started_ns=abc", b"started_ns=-5",
    b"func.0=ext4_chksum 0xffffffc008298444",
    b"func.0=ext4_chksum 0xffffffc008298610 0xffffffc008298444",
    b"func.1=ext4_chksum_gcc49 0xffffffc000000000 0xffffffc100000000",
    b"func.999=x 0x1 0x2", b"irq.-3=timer", b"irq.99999999999=x", b"sample_hz=1e3",
    b"target_cpu=-2", b"chksum_window_width=wide", b"no equals sign here", b"=value",
    b"tool=\xff\xfe\x00\x01", b"mode.irq=\xe2\x80\xa8line separator",
    # Watched windows: good ones, then bad names, ranges and indexes.
    b"watch.0=ext4_chksum_gcc49+0x60 0xffffffc0082ab214 0xffffffc0082ab218",
    b"watch.4095=ext4:f+0x8 0x10 0x10", b"watch.4096=w 0x10 0x10", b"watch.x=w 0x1 0x2",
    b"watch.1=w/1 0x1 0x2", b"watch.1=w 0x2 0x1", b"watch.1=w 0x1", b"watch.1= 0x1 0x2",
    b"watch.1=" + b"w" * 128 + b" 0x1 0x2", b"watch.1=w 0x0 0x200000",
    # Record layouts: damaged, and well-formed ones the readers must both
    # follow (a field more, fields fewer, a type renamed).
    b"record.1=chksum", b"record.0=chksum end_ns:u64@0", b"record.32=x a:u8@0",
    b"record.1=chksum end_ns:u64@44", b"record.1=chksum end_ns:q64@0",
    b"record.1=Chksum end_ns:u64@0", b"record.1=chksum a:u8@0 a:u8@1",
    b"record.2=chksum ino:u64@0", b"record.3=iget ino:u64@0?metax",
    b"record.3=iget  ino:u64@0", b"record.4=irq pc:str49@0", b"record.4=irq pc:u24@0",
    b"record.1=chksum end_ns:u64@0 seed:u32@8 length:u32@12 result:u32@16 dev:u32@20 "
    b"caller:u16@24 irqs:u16@26 spare:x32@28 tail:str8@40",
    b"record.4=irq pc:x64@0 class:class8@30 ipi:str14@34",
    b"record.5=soft end_ns:u64@0 vec:s32@8",
    b"record.8=snapshot trigger:type8@36 calls:u32@20?meta",
]
HOSTILE_TRAILER = [
    b"lost.irq=x", b"ended_ns=abc", b"ended_ns=0", b"count.chksum=1.5",
    b"records.irq=0", b"records.chksum=99999999999999999999999",
    b"hist.irq.0=999:1", b"hist.irq.1=" + b" ".join(b"%d:1" % i for i in range(300)),
    b"hist.sample.0=1:2  3:4", b"ending", b"ended_ns=1\nended_ns=2",
    # Counters a run left out: valid for count./lost., never for records.
    b"count.softirq=not-attached", b"lost.sample=not-attached",
    b"records.irq=not-attached", b"count.chksum=not-attached ", b"count.block=Not-attached",
]


class Parts:
    """A well-formed base log taken apart: version, header text, chunk
    bodies, trailer text (or None)."""

    def __init__(self, data):
        version = struct.unpack_from("<H", data, 8)[0]
        head = chkwinlog.FILE_HEAD_V1 if version == 1 else chkwinlog.FILE_HEAD
        hlen = struct.unpack_from("<I", data, 12)[0]
        self.version, self.htext = version, bytes(data[head.size:head.size + hlen])
        self.chunks, self.trailer = [], None
        off = head.size + hlen
        while off < len(data):
            magic, count, _, _ = chkwinlog.CHUNK_HEAD.unpack_from(data, off)
            body = off + chkwinlog.CHUNK_HEAD.size
            if magic == b"TRLR":
                self.trailer = bytes(data[body:body + count])
                break
            self.chunks.append(bytes(data[body:body + count * chkwinlog.REC_SIZE]))
            off = body + count * chkwinlog.REC_SIZE

    def join(self, htext=None, chunks=None, trailer=None, fix_crc=True):
        """The log again, with parts replaced; fix_crc=False keeps each
        chunk's and the trailer's CRC as they were in the base."""
        htext = self.htext if htext is None else _pad(htext)
        chunks = self.chunks if chunks is None else chunks
        trailer = self.trailer if trailer is None else _pad(trailer)
        old = _chain(self.version, self.htext, self.chunks, self.trailer)
        new = _chain(self.version, htext, chunks, trailer)
        crcs = new if fix_crc else [old[i] if i < len(old) else new[i]
                                    for i in range(len(new))]
        if self.version == 1:
            out = chkwinlog.FILE_HEAD_V1.pack(chkwinlog.MAGIC, 1, chkwinlog.REC_SIZE, len(htext))
        else:
            out = chkwinlog.FILE_HEAD.pack(chkwinlog.MAGIC, self.version, chkwinlog.REC_SIZE,
                                           len(htext), crcs[0], 0)
        out += htext
        for seq, body in enumerate(chunks):
            out += chkwinlog.CHUNK_HEAD.pack(b"CHNK", len(body) // chkwinlog.REC_SIZE,
                                             crcs[seq + 1], seq) + body
        if trailer is not None:
            out += chkwinlog.CHUNK_HEAD.pack(b"TRLR", len(trailer), crcs[-1],
                                             len(chunks)) + trailer
        return bytearray(out)


def _pad(text):
    return text + b"\0" * (-len(text) % 8)


def _chain(version, htext, chunks, trailer):
    """The CRCs of a log's blocks: [header, chunk..., trailer]."""
    if version == 1:
        crc = 0
        out = [0] + [zlib.crc32(b) for b in chunks]
    else:
        first = chkwinlog.FILE_HEAD_V1.pack(chkwinlog.MAGIC, version, chkwinlog.REC_SIZE,
                                            len(htext))
        crc = zlib.crc32(htext, zlib.crc32(first))
        out = [crc]
        for b in chunks:
            crc = zlib.crc32(b, crc)
            out.append(crc)
    if trailer is not None:
        out.append(zlib.crc32(trailer, crc))
    return out


def bases(tmp):
    """The base logs: {name: bytes}."""
    out = {}
    plans = {"complete": dict(seed=1), "metadata": dict(seed=2, dirs=2),
             "fallback": dict(seed=3, verify="absent"), "sampler": dict(seed=4, sample_hz=20000)}
    for name, kw in plans.items():
        s = synthlog.generate(igets=240, k=2, m=1, **kw)
        path = tmp / f"{name}.bin"
        synthlog.write(path, s.header, s.records,
                       synthlog.trailer_for(s.header, s.records, 3_000_000_000), chunk=400)
        out[name] = path.read_bytes()
    s = synthlog.generate(igets=240, k=1, m=1, seed=5)
    synthlog.write(tmp / "truncated.bin", s.header, s.records, None, chunk=400)
    out["truncated"] = (tmp / "truncated.bin").read_bytes()
    synthlog.write(tmp / "v1.bin", s.header, s.records,
                   synthlog.trailer_for(s.header, s.records, 3_000_000_000), chunk=400, version=1)
    out["v1"] = (tmp / "v1.bin").read_bytes()
    synthlog.write(tmp / "v2.bin", s.header, s.records,
                   synthlog.trailer_for(s.header, s.records, 3_000_000_000), chunk=400, version=2)
    out["v2"] = (tmp / "v2.bin").read_bytes()
    # What the flight recorder writes: snapshots (version 3 only).
    cut = flight.cut(chkwinlog.parse(bytearray(out["complete"])), 8)
    synthlog.write(tmp / "flight.bin", cut.header, cut.records,
                   synthlog.trailer_for(cut.header, cut.records, 3_000_000_000), chunk=40)
    out["flight"] = (tmp / "flight.bin").read_bytes()
    return out


def _edit_text(rng, text, hostile):
    lines = text.split(b"\0", 1)[0].split(b"\n")
    edit = rng.choice(hostile)
    key = edit.partition(b"=")[0]
    how = rng.random()
    same = [i for i, ln in enumerate(lines) if ln.partition(b"=")[0] == key]
    if same and how < 0.6:
        lines[same[0]] = edit                # replace the key's value
    elif how < 0.8:
        lines.insert(rng.randrange(len(lines) + 1), edit)
    else:
        lines.insert(rng.randrange(len(lines) + 1), edit)
        lines.insert(rng.randrange(len(lines) + 1), edit)   # and again
    return b"\n".join(lines)


def mutate(rng, name, data):
    """One variant: (description, bytes)."""
    kind = rng.choice(KINDS)
    parts = Parts(data)
    out = bytearray(data)
    if kind == "cut":
        at = rng.randrange(len(data))
        return f"{name} cut at {at}", out[:at]
    if kind == "flip":
        at = rng.randrange(len(data))
        out[at] ^= 1 << rng.randrange(8)
        return f"{name} flip at {at}", out
    if kind == "bytes":
        at = rng.randrange(len(data))
        n = rng.randint(1, 4)
        out[at:at + n] = bytes(rng.randrange(256) for _ in range(n))[:len(out) - at]
        return f"{name} bytes at {at}", out
    if kind == "header":
        fix = rng.random() < 0.8
        text = _edit_text(rng, parts.htext, HOSTILE_HEADER)
        if rng.random() < 0.05:
            text += b"".join(b"k%d=v\n" % i for i in range(5000))
        return f"{name} header edit (crc {'fixed' if fix else 'kept'})", \
            parts.join(htext=text, fix_crc=fix)
    if kind == "trailer" and parts.trailer is not None:
        fix = rng.random() < 0.8
        text = _edit_text(rng, parts.trailer, HOSTILE_TRAILER)
        return f"{name} trailer edit (crc {'fixed' if fix else 'kept'})", \
            parts.join(trailer=text, fix_crc=fix)
    if kind == "retype" and parts.chunks:
        # Any type number, in a log of any version (snapshots only from 3).
        i = rng.randrange(len(parts.chunks))
        body = bytearray(parts.chunks[i])
        body[rng.randrange(len(body) // chkwinlog.REC_SIZE) * chkwinlog.REC_SIZE] = \
            rng.randrange(len(chkwinlog.TYPES) + 2)
        chunks = parts.chunks[:i] + [bytes(body)] + parts.chunks[i + 1:]
        return f"{name} retype (chunk {i})", parts.join(chunks=chunks)
    if kind == "chunks" and len(parts.chunks) >= 2:
        chunks = list(parts.chunks)
        i, j = rng.sample(range(len(chunks)), 2)
        how = rng.choice(["swap", "drop", "repeat"])
        if how == "swap":
            chunks[i], chunks[j] = chunks[j], chunks[i]
        elif how == "drop":
            del chunks[i]
        else:
            chunks.insert(j, chunks[i])
        fix = rng.random() < 0.5
        return f"{name} chunks {how} (crc {'fixed' if fix else 'kept'})", \
            parts.join(chunks=chunks, fix_crc=fix)
    # length (and trailer/chunks edits a base cannot take)
    head = 24 if parts.version > 1 else 16
    spots = [12, head + len(parts.htext) + 4]
    if parts.trailer is not None:
        spots.append(len(data) - len(parts.trailer) - 12)
    at = rng.choice(spots)
    struct.pack_into("<I", out, at, rng.choice([0xFFFFFFF8, 1 << 24, (1 << 24) + 1, 0x7FFFFFF8]))
    return f"{name} length at {at}", out


def variants(count, seed, base):
    rng = random.Random(seed)
    names = sorted(base)
    for _ in range(count):
        name = rng.choice(names)
        yield mutate(rng, name, base[name])


def python_side(data, path):
    """What the Python reader gives, after running the analysis on what it
    read: (status, offset, reason, JSON lines or None when corrupt).
    Raises on anything but LogError."""
    try:
        log = chkwinlog.parse(bytearray(data))
    except chkwinlog.LogError as e:
        return "corrupt", e.offset, str(e), None
    try:
        corr = correlate.Correlation(log, None)
        summary.summarize(log, path, corr)
    except chkwinlog.LogError:
        pass        # a layout the analysis cannot use: refused in one line, read all the same
    return log.status, log.end_offset, log.reason, "".join(
        line + "\n" for line in logjson.lines(log))


def c_side(reader, path):
    """(status, offset, reason, its whole output)."""
    proc = subprocess.run([str(reader), str(path)], capture_output=True, timeout=20)
    if proc.returncode not in (0, 1, 3):
        raise RuntimeError(f"C reader exited {proc.returncode}: {proc.stderr[-200:]!r}")
    last = json.loads(proc.stdout.splitlines()[-1])
    return last["status"], last["offset"], last["reason"], proc.stdout.decode()


def differ(py, c):
    """Why the two readers' answers differ, or None."""
    if py[:3] != c[:3]:
        return f"python {py[:3]}, C {c[:3]}"
    if py[3] is not None and py[3] != c[3]:
        pl, cl = py[3].splitlines(), c[3].splitlines()
        n = next((i for i, (a, b) in enumerate(zip(pl, cl)) if a != b), min(len(pl), len(cl)))
        return f"JSON line {n + 1}: python {pl[n:n + 1]}, C {cl[n:n + 1]}"
    return None


def build_reader(out):
    """The C reader alone (loader/Makefile's reader: tests/c/read_main.c
    and the log format's C), built into the directory out."""
    subprocess.run(["make", "-s", "-C", str(REPO / "loader"), f"OUT={out}", "reader"],
                   check=True)
    return out / "host/read_main"


def _alarm(signum, frame):
    raise TimeoutError("a variant took more than 10 s")


def run(count, seed, report_every=0, mem_gib=2):
    """Fuzz both readers; returns a dict of what was found."""
    resource.setrlimit(resource.RLIMIT_AS, (mem_gib << 30, mem_gib << 30))
    signal.signal(signal.SIGALRM, _alarm)
    found = {"variants": 0, "python_failures": [], "c_failures": [], "disagreements": [],
             "statuses": {}, "reports": 0, "seconds": 0.0}
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        reader = build_reader(tmp)
        base = bases(tmp)
        path = tmp / "variant.bin"
        for what, data in variants(count, seed, base):
            path.write_bytes(data)
            found["variants"] += 1
            signal.alarm(10)
            try:
                py = python_side(data, path)
            except Exception as e:  # noqa: BLE001 - any escape is the finding
                py = None
                found["python_failures"].append(
                    f"{what}: {type(e).__name__}: {e} "
                    f"({traceback.extract_tb(e.__traceback__)[-1].name})")
            finally:
                signal.alarm(0)
            try:
                c = c_side(reader, path)
            except Exception as e:  # noqa: BLE001
                c = None
                found["c_failures"].append(f"{what}: {type(e).__name__}: {e}")
            why = differ(py, c) if py and c else None
            if why:
                found["disagreements"].append(f"{what}: {why[:400]}")
            if py:
                found["statuses"][py[0]] = found["statuses"].get(py[0], 0) + 1
            readable = found["statuses"].get("complete", 0) + found["statuses"].get("truncated", 0)
            if report_every and py and py[0] != "corrupt" and readable % report_every == 1:
                (tmp / "rep").mkdir(exist_ok=True)
                proc = subprocess.run([PY, str(REPO / "analysis/chkwin-analyze"), "report",
                                       str(tmp / "rep"), str(path)],
                                      capture_output=True, text=True, timeout=120)
                found["reports"] += 1
                if proc.returncode != 0 or "Traceback" in proc.stderr:
                    found["python_failures"].append(
                        f"{what}: report: {proc.stderr.strip()[-300:]}")
    found["seconds"] = round(time.monotonic() - start, 1)
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--report-every", type=int, default=50,
                    help="also run chkwin-analyze report on every Nth variant that reads")
    args = ap.parse_args()
    if args.count <= 0 or args.report_every < 0:
        ap.error("--count must be positive, --report-every 0 or more")
    print(json.dumps(run(args.count, args.seed, args.report_every), indent=1))


if __name__ == "__main__":
    main()
