"""Synthetic chkwin logs with known answers, written in the format of
docs/log-format.md (version 3 by default, version 1 on request: the same
layouts chkwinlog reads).

generate() lays out igets the way the lab kernel does them: an inode-table
block completion when a block is first needed, two EXT4_CHKSUM_SEED calls
(inode number, generation), the inode checksum calls, the verdict and the
iget return, with interrupts of every class in between.  Chosen igets fail:
K of them with a window interrupt inside one of their calls (seed or inode,
alternately), M with no window interrupt at all.  A window interrupt on the
other CPU at the same moment checks that attribution stays on one CPU
and with the failing call.  With dirs=D, D directory-block reads fail with a
window interrupt in their EXT4_CHKSUM_DIR call (metadata verdicts), one
more has a window interrupt and still matches, and one EXT4_CHKSUM_BITMAP
call with a window interrupt is never verified.
"""

import struct
import zlib

import numpy as np

from analysis.chkwinlog import (CHUNK_HEAD, CLASSES, DTYPES, F_COMPLETE, F_HANDLED,
                               F_IN_CHKSUM, F_METADATA, F_MISMATCH, F_WINDOW_HIT,
                               FILE_HEAD, FILE_HEAD_V1, LEGACY, MAGIC, NOT_ATTACHED, PROBES,
                               REC_SIZE, TYPE_IDS, TYPES, VERSION)
from analysis.declared import not_attached

FUNC0 = ("ext4_chksum", 0xffffffc008298444, 0xffffffc008298610)
FUNC1 = ("ext4_chksum_gcc49", 0xffffffc0082ab1cc, 0xffffffc0082ab230)
WINDOW = (0xffffffc0082ab214, 0xffffffc0082ab218)
WINDOW_NAME = "ext4_chksum_gcc49+0x60"      # as stackscan names the gcc49 window
DEV = 254 << 20
CALLER_BITMAP, CALLER_INODE, CALLER_SEED, CALLER_DIR = 2, 3, 4, 6
DIR_INO, DIR_BLOCK = 2, 1234
CALLERS = ["SUPERBLOCK", "GROUP_DESC", "BITMAP", "INODE", "SEED", "EXTENT",
           "DIR", "XATTR", "MMP", "ORPHAN", "FAST_COMMIT"]
# Four groups, so that an inode's table block depends on its group.
GEOMETRY = {"block_size": 4096, "inode_size": 256, "inodes_per_group": 2048,
            "blocks_per_group": 32768, "inode_tables": [40, 300, 560, 820]}
SLOT_NS = 40_000            # one iget per CPU every 40 us
T0 = 2_000_000_000
CLASS = {"window": 0, "chksum": 1, "kernel": 2, "user": 3}


def text_block(pairs):
    raw = "".join(f"{k}={v}\n" for k, v in pairs.items()).encode()
    return raw + b"\0" * (-len(raw) % 8)


def header(cpus=2, flavour="unpatched", window="gcc49", verify="tp_btf",
           sample_hz=0):
    h = {"tool": "chkwin synth", "kernel_release": f"6.1.192-chkwin-{flavour}",
         "kernel_version": "#1 SMP synthetic", "kernel_cmdline":
         f"ext4.chksum_window={window}", "flavour": flavour,
         "chksum_window": window, "cpus": cpus, "clock": "CLOCK_MONOTONIC",
         "clocksource": "arch_sys_counter", "started_ns": T0, "target_cpu": -1,
         "sample_hz": sample_hz, "record": "all", "mode.chksum": "tp_btf",
         "mode.verify": verify, "mode.verify_meta": verify,
         "mode.iget": "kprobe+kretprobe",
         "mode.irq": "tp_btf+irq_regs", "mode.ipi": "tp_btf",
         "mode.softirq": "tp_btf", "mode.block": "tp_btf",
         "mode.sample": "perf_event" if sample_hz else "off"}
    for n, (name, start, end) in enumerate((FUNC0, FUNC1)):
        h[f"func.{n}"] = f"{name} {start:#x} {end:#x}"
    if window == "gcc49":
        h["watch.0"] = f"{WINDOW_NAME} {WINDOW[0]:#x} {WINDOW[1]:#x}"
    for n, name in enumerate(CALLERS):
        h[f"caller.{n}"] = f"EXT4_CHKSUM_{name}"
    h["irq.11"] = "arch_timer"
    h["irq.20"] = "virtio1-req.0"
    return h


def write(path, head, records, trailer=None, chunk=4096, version=VERSION):
    """Write a log: head (dict), records (uint8 (n, 64), commit order),
    trailer (dict, or None to leave the log truncated after the chunks).
    Version 2 chains every CRC from the header's; version 1 has none on
    the header and a CRC of its own per chunk.  Version 4 on, the header
    says the record layout: the head's own record.N lines, else those of
    the layout the records were made with (chkwinlog.CURRENT); older
    versions carry none."""
    has_layout = any(k.startswith("record.") for k in head)
    if version < 4:
        head = {k: v for k, v in head.items() if not k.startswith("record.")}
    elif not has_layout:
        head = dict(head, **{f"record.{n}": line.decode()
                             for n, line in enumerate(LEGACY, 1)})
    htext = text_block(head)
    with open(path, "wb") as f:
        if version == 1:
            f.write(FILE_HEAD_V1.pack(MAGIC, 1, REC_SIZE, len(htext)) + htext)
            chain = 0
        else:
            first = FILE_HEAD_V1.pack(MAGIC, version, REC_SIZE, len(htext))
            chain = zlib.crc32(htext, zlib.crc32(first))
            f.write(FILE_HEAD.pack(MAGIC, version, REC_SIZE, len(htext), chain, 0) + htext)
        seq = 0
        for start in range(0, len(records), chunk):
            body = np.ascontiguousarray(records[start:start + chunk]).tobytes()
            crc = zlib.crc32(body, chain)
            chain = crc if version > 1 else 0
            f.write(CHUNK_HEAD.pack(b"CHNK", len(body) // REC_SIZE, crc, seq) + body)
            seq += 1
        if trailer is not None:
            ttext = text_block(trailer)
            f.write(struct.pack("<4sIII", b"TRLR", len(ttext),
                                zlib.crc32(ttext, chain), seq) + ttext)


def trailer_for(head, records, ended_ns):
    """The trailer the loader would write after these records, counters
    as the BPF side counts them: checksum calls, those with a window
    arrival, interrupt and sampler arrivals by class, and lost records
    (none); what the header's modes leave out (the sampler, absent verify
    tracepoints, snapshots outside the flight recorder) is not-attached,
    by the rule the loader follows (analysis/declared.py)."""
    skipped = not_attached(head)
    types = records[:, 0]
    t = {"ended_ns": ended_ns, "ending": "signal"}
    for num, name in TYPES.items():
        t[f"records.{name}"] = int((types == num).sum())
    counts = {f"lost.{name}": 0 for name in PROBES}
    calls = records[types == TYPE_IDS["chksum"]].view(DTYPES["chksum"]).reshape(-1)
    counts["count.chksum"] = len(calls)
    counts["count.chksum_window"] = int(np.count_nonzero(calls["flags"] & F_WINDOW_HIT))
    for kind in ("irq", "sample"):
        rows = records[types == TYPE_IDS[kind]].view(DTYPES[kind]).reshape(-1)
        for n, name in enumerate(CLASSES):
            counts[f"count.{kind}.{name}"] = int(np.count_nonzero(rows["class"] == n))
    t.update({k: NOT_ATTACHED if k in skipped else v for k, v in counts.items()})
    # One watched window at most: its arrivals are those of class window.
    for kind in ("irq", "sample"):
        if "watch.0" in head and f"count.{kind}.window" not in skipped:
            t[f"count.watch.{kind}.{WINDOW_NAME}"] = t[f"count.{kind}.window"]
    return t


def _rows(kind, n):
    return np.zeros(n, DTYPES[kind])


def _raw(arr):
    return arr.view(np.uint8).reshape(-1, REC_SIZE)


class Synth:
    """The records of one synthetic run and the answers correlate must give."""

    def __init__(self, records, expected, head, outcomes):
        self.records = records
        self.expected = expected
        self.header = head
        # What correlate's converse must say: {caller: {outcome: calls}}.
        self.outcomes = outcomes

    def write(self, path, complete=True, version=VERSION):
        end = int(self.records[:, 8:16].copy().view("<u8").max()) + 1000
        write(path, self.header, self.records,
              trailer_for(self.header, self.records, end) if complete else None, version=version)


def generate(igets=2000, k=3, m=2, cpus=2, seed=1, inodes=6000, dirs=0, **head_kw):
    """igets inode reads spread over cpus; k failures with a window hit, m
    without; dirs directory-block failures (and, if any, the two window
    calls that do not fail).  About 8 records per iget (plus one block pair
    per 16)."""
    if dirs and head_kw.get("verify") == "absent":
        raise ValueError("metadata verdicts need the verify tracepoint")
    rng = np.random.default_rng(seed)
    slots = _slots(igets, cpus, inodes)
    issue, done = _block_reads(slots, cpus, rng)
    calls, verify, iget = _iget_records(slots, igets)
    irq_in, irq_out = _background_irqs(slots, calls, igets, rng)
    # Without the verify tracepoint (fallback) only iget tells of failures.
    verdicts = [iget] if head_kw.get("verify") == "absent" else [verify, iget]
    # Failures, away from the first and last slots and from each other.
    extra = dirs + 2 if dirs else 0
    chosen = rng.choice(np.arange(cpus * 2, igets - cpus * 2, 3), k + m + extra,
                        replace=False)
    outcomes = {"seed": {"failed": 0, "matched": 0, "not verified": 0},
                "inode": {"failed": 0, "matched": 0, "not verified": 0}}
    meta_rows, expected = _metadata_failures(slots, chosen[k + m:], dirs, outcomes, rng)
    win_rows, inode_expected = _inode_failures(slots, chosen[:k + m], k, calls, verify,
                                               iget, verdicts, done, outcomes, cpus, rng)
    expected += inode_expected
    flat = calls.reshape(-1)
    parts = [_raw(issue), _raw(done), _raw(flat), _raw(irq_in), _raw(irq_out)] \
        + [_raw(v) for v in verdicts] + [_raw(w) for w in win_rows + meta_rows]
    records = np.concatenate(parts)
    # Commit order, not timestamp order: sort by ts with a jitter larger
    # than the gaps between records on different CPUs.
    ts = records[:, 8:16].copy().view("<u8").reshape(-1).astype(np.int64)
    order = np.argsort(ts + rng.integers(-5000, 5000, len(ts)), kind="stable")
    expected.sort(key=lambda e: e["ts"])
    return Synth(records[order], expected, header(cpus=cpus, **head_kw),
                 {c: o for c, o in outcomes.items() if sum(o.values())})


def _slots(igets, cpus, inodes):
    """Each iget's CPU, start time, task, inode and inode-table block, and
    whether it is the first of its block (then the block is read)."""
    idx = np.arange(igets)
    cpu = (idx % cpus).astype(np.uint16)
    ino = 12 + idx % inodes
    g = GEOMETRY
    per_block = g["block_size"] // g["inode_size"]
    group, index = (ino - 1) // g["inodes_per_group"], (ino - 1) % g["inodes_per_group"]
    block = np.array(g["inode_tables"])[group] + index // per_block
    # A block is read when its first inode comes round (every pass re-reads
    # it: drop_caches).
    first = (index % per_block == 0) | (idx % inodes == 0)
    return {"idx": idx, "cpu": cpu, "ino": ino, "block": block, "first": first,
            "base": T0 + 1_000_000 + (idx // cpus) * SLOT_NS + (idx % cpus) * 7_000,
            "tid": (100 + cpu * 10 + (idx // (cpus * 500)) % 3).astype(np.uint32)}


def _block_reads(slots, cpus, rng):
    """Issue and completion of each block read; the completion runs on the
    CPU the request came from or, one in three times, on the other one."""
    first, cpu, base, tid = slots["first"], slots["cpu"], slots["base"], slots["tid"]
    nblk = int(first.sum())
    blk_cpu = np.where(rng.random(nblk) < 1 / 3, (cpu[first] + 1) % cpus, cpu[first])
    issue, done = _rows("block", nblk), _rows("block", nblk)
    sector = slots["block"] * (GEOMETRY["block_size"] // 512)
    for arr, ts, flags in ((issue, base[first] - 900, 0),
                           (done, base[first] - 300, F_COMPLETE)):
        arr["type"], arr["flags"], arr["ts"] = TYPE_IDS["block"], flags, ts
        arr["cpu"], arr["tid"] = blk_cpu, tid[first]
        arr["sector"], arr["nr_sectors"] = sector[first], 8
        arr["dev"], arr["cmd_flags"] = DEV, 0
    return issue, done


def _iget_records(slots, igets):
    """Each iget's checksum calls (seed(ino), seed(gen), inode x4; 1.5 us
    each, 0.5 us apart), its verify verdict and its iget result."""
    cpu, tid, base, ino = slots["cpu"], slots["tid"], slots["base"], slots["ino"]
    callers = [CALLER_SEED, CALLER_SEED] + [CALLER_INODE] * 4
    lengths = [4, 4, 124, 2, 2, 124]
    calls = _rows("chksum", igets * len(callers)).reshape(len(callers), igets)
    for j, (caller, length) in enumerate(zip(callers, lengths)):
        c = calls[j]
        c["type"], c["cpu"], c["tid"] = TYPE_IDS["chksum"], cpu, tid
        c["ts"] = base + j * 2000
        c["end_ns"] = c["ts"] + 1500
        c["caller"], c["length"], c["dev"] = caller, length, DEV
        c["seed"] = ino.astype(np.uint32) * 2654435761 % (1 << 32)
        c["result"] = c["seed"] ^ 0x5A5A5A5A
    verdict_ts = base + len(callers) * 2000 + 300
    verify = _rows("verify", igets)
    verify["type"], verify["cpu"], verify["tid"] = TYPE_IDS["verify"], cpu, tid
    verify["ts"], verify["ino"], verify["dev"] = verdict_ts, ino, DEV
    verify["stored"] = verify["computed"] = calls[-1]["result"]
    iget = _rows("iget", igets)
    iget["type"], iget["cpu"], iget["tid"] = TYPE_IDS["iget"], cpu, tid
    iget["ts"], iget["ino"], iget["dev"] = verdict_ts + 800, ino, DEV
    return calls, verify, iget


def _background_irqs(slots, calls, igets, rng):
    """Interrupts: one in a quarter of the calls (class chksum, inside), and
    two outside calls per iget slot (kernel or user)."""
    cpu, tid, base = slots["cpu"], slots["tid"], slots["base"]
    inside = rng.random(calls.size) < 0.25
    flat = calls.reshape(-1)
    n_in = int(inside.sum())
    irq_in = _irqs(flat["cpu"][inside], flat["tid"][inside],
                   flat["ts"][inside] + rng.integers(1, 1500, n_in), "chksum", rng)
    out_ts = np.concatenate([base + 14_000 + rng.integers(0, 20_000, igets),
                             base + 16_000 + rng.integers(0, 20_000, igets)])
    irq_out = _irqs(np.tile(cpu, 2), np.tile(tid, 2), out_ts,
                    rng.choice(["kernel", "user"], 2 * igets), rng)
    return irq_in, irq_out


def _metadata_failures(slots, chosen, dirs, outcomes, rng):
    """The metadata reads of the chosen slots (_metadata_read), counted in
    outcomes; (their record arrays, the failures expected)."""
    meta_rows, expected = [], []
    for n, i in enumerate(chosen):
        # After the slot's iget and its interrupts, before the next slot.
        rows, rec = _metadata_read(n, dirs, slots["cpu"][i], slots["tid"][i],
                                   int(slots["base"][i]) + 37_000, rng)
        meta_rows += rows
        if rec is not None:
            expected.append(rec)
        caller = "dir" if n <= dirs else "bitmap"
        mine = outcomes.setdefault(caller, {"failed": 0, "matched": 0, "not verified": 0})
        mine["failed" if n < dirs else "matched" if n == dirs else "not verified"] += 1
    return meta_rows, expected


def _inode_failures(slots, chosen, k, calls, verify, iget, verdicts, done, outcomes,
                    cpus, rng):
    """Make the chosen slots' inodes fail, the first k with a window
    arrival in one of their calls, the rest with one in the other CPU's
    call of the same moment (which did not fail, so must not count);
    (the window interrupts, the failures expected)."""
    cpu, tid, ino = slots["cpu"], slots["tid"], slots["ino"]
    first, block, idx = slots["first"], slots["block"], slots["idx"]
    win_rows, expected = [], []
    for n, i in enumerate(chosen):
        windowed = n < k
        verify["flags"][i] = F_MISMATCH
        verify["computed"][i] ^= 0xDEAD
        iget["err"][i] = -74
        hit_call = (n % 2) if windowed else None   # 0: seed call, 5th: inode
        j = 0 if hit_call == 0 else 4
        if windowed:
            outcomes["seed" if j == 0 else "inode"]["failed"] += 1
            calls[j]["flags"][i] = F_WINDOW_HIT
            calls[j]["irqs"][i] = 1
            t = int(calls[j]["ts"][i]) + 1400
            win_rows.append(_irqs([cpu[i]], [tid[i]], [t], ["window"], rng))
        else:
            other = (int(cpu[i]) + 1) % cpus
            j = i - int(cpu[i]) + other
            win_rows.append(_irqs([other], [tid[j]], [int(calls[4]["ts"][j]) + 1400],
                                  ["window"], rng))
            calls[4]["flags"][j] = F_WINDOW_HIT
            outcomes["inode"]["matched"] += 1
        bi = int(np.nonzero(first & (block == block[i]) & (idx <= i))[0][-1])
        bpos = int(np.nonzero(first)[0].searchsorted(bi))
        expected.append({"kind": "inode", "ino": int(ino[i]), "cpu": int(cpu[i]),
                         "ts": int(verdicts[0]["ts"][i]), "attributed": windowed,
                         "caller": (["EXT4_CHKSUM_SEED", "EXT4_CHKSUM_INODE"][hit_call]
                                    if windowed else None),
                         "block_ts": int(done["ts"][bpos]),
                         "block_cpu": int(done["cpu"][bpos])})
    return win_rows, expected


def _metadata_read(n, dirs, cpu, tid, ts, rng):
    """The records of one metadata checksum with a window interrupt: for
    n < dirs a directory block that fails, for n == dirs one that still
    matches, after that a bitmap call with no verdict.  Returns (record
    arrays, the expected failure or None)."""
    call = _rows("chksum", 1)
    call["type"], call["cpu"], call["tid"], call["ts"] = TYPE_IDS["chksum"], cpu, tid, ts
    call["end_ns"], call["flags"], call["irqs"] = ts + 1500, F_WINDOW_HIT, 1
    call["caller"] = CALLER_DIR if n <= dirs else CALLER_BITMAP
    call["length"], call["dev"], call["seed"] = 4084, DEV, 0x1234
    call["result"] = 0xC0FFEE00 + n
    rows = [call, _irqs([cpu], [tid], [ts + 1400], ["window"], rng)]
    if n > dirs:
        return rows, None
    v = _rows("verify", 1)
    v["type"], v["cpu"], v["tid"], v["ts"] = TYPE_IDS["verify"], cpu, tid, ts + 1800
    v["ino"], v["dev"], v["caller"], v["block"] = DIR_INO, DEV, CALLER_DIR, DIR_BLOCK + n
    v["computed"] = call["result"]
    v["stored"] = call["result"] ^ (0xBAD if n < dirs else 0)
    v["flags"] = F_METADATA | (F_MISMATCH if n < dirs else 0)
    rows.append(v)
    if n == dirs:
        return rows, None
    return rows, {"kind": "dir", "ino": DIR_INO, "meta_block": DIR_BLOCK + n, "cpu": int(cpu),
                  "ts": ts + 1800, "attributed": True, "caller": "EXT4_CHKSUM_DIR",
                  "block_ts": None, "block_cpu": None}


def _irqs(cpu, tid, ts, classes, rng):
    n = len(ts)
    r = _rows("irq", n)
    classes = np.broadcast_to(np.asarray(classes), (n,))
    cls = np.select([classes == name for name in CLASS], list(CLASS.values()))
    r["type"], r["cpu"], r["tid"] = TYPE_IDS["irq"], cpu, tid
    r["ts"] = ts
    r["end_ns"] = r["ts"] + 80     # a handler ends before the call it interrupted
    r["irq"] = 11
    r["class"], r["el"] = cls, np.where(cls == CLASS["user"], 0, 1)
    in_func = cls <= CLASS["chksum"]
    r["flags"] = F_HANDLED | np.where(in_func, F_IN_CHKSUM, 0)
    r["func"] = np.where(in_func, 1, 0xFF)
    r["offset"] = np.where(cls == 0, WINDOW[1] - FUNC1[1],
                           np.where(in_func, rng.integers(0, 18, n) * 4, 0))
    # uint64 throughout: np.where over Python ints of this size goes
    # through float64 and loses the low bits.
    r["pc"] = np.where(in_func, np.uint64(FUNC1[1]) + r["offset"].astype(np.uint64),
                       np.where(cls == CLASS["user"], np.uint64(0x400000),
                                np.uint64(0xffffffc008010000)))
    return r
