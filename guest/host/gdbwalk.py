"""The gdb side of a walk: one replay pass, driven inside gdb-multiarch.

guest/host/walk.py starts QEMU replaying a recorded boot with its gdb stub
and runs

    gdb-multiarch -batch -nx VMLINUX -x guest/host/gdbwalk.py

with CHKWIN_WALK_JOB naming a JSON job and CHKWIN_WALK_OUT the file this
writes its findings to.  Guest time is QEMU's replay instruction count
(`monitor info replay`); `monitor replay_break N` stops the replay right
before instruction N.  A pass is one of:

failures   stop at each ext4 error report whose error is EFSBADCRC; note
           its instruction count, function, message and inode.
calls      for each failure, from some instructions before it: every
           call of the checksum function (its arguments, its stack
           pointer, its result), and for each call whose result is not
           the CRC32C of its bytes, the stack words below its frame that
           hold the wrong result.
slots      for each such call, from its first instruction: every access
           to those words until it returns (instruction count, pc, sp,
           value), and the exception frame below the writer's sp.

This file only observes: it never writes guest memory or registers.
"""

import json
import os
import re

import gdb

EFSBADCRC = 74            # EBADMSG, as ext4 reports a bad checksum
MASK64 = (1 << 64) - 1
ICOUNT_RE = re.compile(r"instruction count = (\d+)")
# Later accesses at which a write's exception frame is looked for: an
# entry saves its frame within a few dozen instructions.
FRAME_TRIES = 64
POST_INDEX_SP = re.compile(r"\[sp\], #(-?(?:0x[0-9a-f]+|\d+))")


class ReplayEnded(Exception):
    """The replay ran to its end (the guest powered off)."""


def crc32c_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


TABLE = crc32c_table()


def crc32c_update(crc, data):
    """The kernel's __crc32c_le(): CRC32C without pre- or post-inversion,
    which is what ext4_chksum() returns for its bytes."""
    for b in data:
        crc = TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


def reg(name):
    return int(gdb.parse_and_eval(f"${name}")) & MASK64


def read(addr, n):
    return bytes(gdb.selected_inferior().read_memory(addr, n))


def u32(addr):
    return int.from_bytes(read(addr, 4), "little")


def u64(addr):
    return int.from_bytes(read(addr, 8), "little")


def icount():
    out = gdb.execute("monitor info replay", to_string=True)
    m = ICOUNT_RE.search(out)
    if not m:
        raise gdb.GdbError(f"no instruction count from 'info replay': {out.strip()!r}")
    return int(m.group(1))


def where(pc):
    """'symbol+0xoff' and the instruction at pc, as gdb reads vmlinux."""
    sym = gdb.execute(f"info symbol {pc:#x}", to_string=True).strip()
    m = re.match(r"(\S+)(?: \+ (\d+))? in section", sym)
    name = f"{m.group(1)}+{int(m.group(2) or 0):#x}" if m else f"{pc:#x}"
    insn = gdb.execute(f"x/i {pc:#x}", to_string=True).strip()
    insn = insn.split(":", 1)[1].strip() if ":" in insn else insn
    return name, re.sub(r"\s+", " ", insn)


def resume():
    """Continue to the next stop; ReplayEnded when the replay is over."""
    # QEMU exits when the replayed guest powers off: the inferior has no
    # thread left (with or without an error from gdb).  Any other error is
    # one.
    try:
        gdb.execute("continue", to_string=True)
    except gdb.error as e:
        if gdb.selected_inferior().threads():
            raise
        raise ReplayEnded(str(e)) from e
    if not gdb.selected_inferior().threads():
        raise ReplayEnded("the replay ran to its end")


def run_to(count):
    """Stop right before instruction count (no earlier stop may intervene:
    callers set their breakpoints after it)."""
    now = icount()
    if count <= now:
        return now
    gdb.execute(f"monitor replay_break {count}", to_string=True)
    resume()
    return icount()


def address_of(symbol):
    return int(gdb.parse_and_eval(f"(unsigned long)&{symbol}")) & MASK64


def string_at(expr):
    try:
        return gdb.parse_and_eval(f"(const char *){expr}").string()
    except gdb.error:
        return None


def failure_report(name):
    """What the arguments of the error function name say, or None when its
    error is not a bad checksum.  __ext4_error_inode(inode, func, line,
    block, error, fmt, ...); __ext4_error(sb, func, line, force_ro, error,
    block, fmt, ...)."""
    if reg("x4") & 0xFFFFFFFF != EFSBADCRC:
        return None
    report = {"function": name, "reported_by": string_at("$x1"),
              "line": reg("x2") & 0xFFFFFFFF}
    if name == "__ext4_error_inode":
        report["message"] = string_at("$x5")
        report["block"] = reg("x3")
        try:
            report["inode"] = int(gdb.parse_and_eval("((struct inode *)$x0)->i_ino"))
        except gdb.error:
            report["inode"] = None
    else:
        report["message"] = string_at("$x6")
    return report


def pass_failures(job):
    names = {address_of(name): name for name in job["error_functions"]}
    for addr in names:
        gdb.Breakpoint(f"*{addr:#x}", internal=True)
    found = []
    try:
        while job["limit"] is None or len(found) < job["limit"]:
            resume()
            pc = reg("pc")
            if pc not in names:
                continue
            report = failure_report(names[pc])
            if report:
                found.append({"icount": icount(), **report})
    except ReplayEnded:
        pass
    return {"failures": found}


def chksum_args():
    """The checksum call's arguments at its first instruction, by their
    DWARF names."""
    return {name: int(gdb.parse_and_eval(f"(unsigned long){name}")) & MASK64
            for name in ("crc", "address", "length")}


def pass_calls(job):
    """For each target (ascending), the checksum calls that returned from
    target['from'] to the failure at target['icount'].  Targets closer
    than their reach share one stretch of the replay."""
    entry = address_of(job["chksum_function"])
    calls, pending, returns, results = [], {}, {}, []
    bps = [gdb.Breakpoint(f"*{entry:#x}", internal=True)]
    since = 0       # calls are known from this instruction count on
    try:
        for target in job["targets"]:
            if target["from"] > icount():
                # A gap: no breakpoint may stop the run there, and no call
                # in flight before it can be followed.
                for bp in bps:
                    bp.enabled = False
                since = run_to(target["from"])
                pending.clear()
                for bp in bps:
                    bp.enabled = True
            start = max(target["from"], since, target["after"])
            # Stop at the failure even if no call follows it.
            gdb.execute(f"monitor replay_break {target['icount']}", to_string=True)
            while icount() < target["icount"]:
                resume()
                pc, sp, now = reg("pc"), reg("sp"), icount()
                if pc == entry:
                    call = {"entry_icount": now, "sp": sp, "lr": reg("x30"),
                            **chksum_args()}
                    pending[sp] = call
                    if call["lr"] not in returns:
                        returns[call["lr"]] = True
                        bps.append(gdb.Breakpoint(f"*{call['lr']:#x}", internal=True))
                elif sp in pending and pending[sp]["lr"] == pc:
                    calls.append(returned(pending.pop(sp), now, job["stack_scan_bytes"]))
            results.append(calls_of(target, calls, start))
    except ReplayEnded:
        if len(results) < len(job["targets"]):
            target = job["targets"][len(results)]
            results.append(calls_of(target, calls, max(target["from"], since)))
    finally:
        for bp in bps:
            bp.delete()
    return {"targets": results}


def calls_of(target, calls, start):
    """The calls that entered from start on and returned before the
    target's failure was reported."""
    return {"failure": target["failure"], "calls": [
        c for c in calls if start <= c["entry_icount"]
        and c["return_icount"] <= target["icount"]]}


def returned(call, now, scan_bytes):
    """A call at its return: its result against the CRC32C of its bytes,
    and where it went wrong, the stack words that hold the wrong result."""
    call["return_icount"] = now
    call["result"] = reg("x0") & 0xFFFFFFFF
    data = read(call["address"], call["length"])
    call["expected"] = crc32c_update(call["crc"] & 0xFFFFFFFF, data)
    call["bad"] = call["result"] != call["expected"]
    if call["bad"]:
        call["holding_result"] = stack_words(call["sp"], scan_bytes, call["result"])
    return call


def stack_words(sp, nbytes, value):
    """Addresses of the 4-byte-aligned words in [sp - nbytes, sp) that
    hold value: where the wrong result may have been read from."""
    base = sp - nbytes
    data = read(base, nbytes)
    return [base + i for i in range(0, nbytes, 4)
            if int.from_bytes(data[i:i + 4], "little") == value]


def exception_frame(sp, layout):
    """The saved registers of an exception frame at sp: (pc, sp, pstate),
    or None when the words there do not form one (an EL1 exception saves
    the interrupted sp as its own frame's top)."""
    saved_sp = u64(sp + layout["sp"])
    if saved_sp != sp + layout["size"]:
        return None
    return {"base": sp, "pc": u64(sp + layout["pc"]), "sp": saved_sp,
            "pstate": u64(sp + layout["pstate"])}


def access(addr, before, pc, sp, kind):
    """One watchpoint stop on the word at addr.  QEMU stops after the
    access, so the instruction that made it is the one before pc (loads
    and stores do not branch).  For a write, ELR_EL1 is the return
    address of the exception being handled, if any."""
    by = pc - 4
    at, insn = where(by)
    hit = {"icount": icount(), "kind": kind, "addr": addr, "pc": by, "at": at,
           "insn": insn, "sp": sp_of_access(insn, sp), "before": before,
           "after": u32(addr), "frame": None}
    if kind == "write":
        hit["elr_el1"], hit["frame_tries"] = reg("ELR_EL1"), 0
    return hit


def sp_of_access(insn, sp):
    """The sp an access is judged against, from the sp after it: a
    post-indexed pop ("ldp x25, x26, [sp], #16") read its words before it
    raised sp, at the sp before."""
    m = POST_INDEX_SP.search(insn)
    return sp - int(m.group(1), 0) if m else sp


def frame_writes(hits, layout):
    """Read the exception frame of each earlier write made by an exception
    entry, once the entry has finished saving the frame: at a later access
    (the entry saves the interrupted sp after the word was written)."""
    for write in hits[:-1]:
        if write["kind"] != "write" or write["frame"] is not None \
                or write["frame_tries"] >= FRAME_TRIES:
            continue
        write["frame_tries"] += 1
        frame = exception_frame(write["sp"], layout)
        # Complete once it holds the return address the write saw.
        if frame and frame["pc"] == write["elr_el1"]:
            frame["at"], frame["insn"] = where(frame["pc"])
            write["frame"] = frame


def pt_regs_layout():
    def offset(field):
        return int(gdb.parse_and_eval(
            f"(unsigned long)&((struct pt_regs *)0)->{field}"))
    return {"size": int(gdb.parse_and_eval("sizeof(struct pt_regs)")),
            "sp": offset("sp"), "pc": offset("pc"), "pstate": offset("pstate")}


def pass_slots(job):
    """For each bad call (ascending entry icount): the writes that change
    its candidate words from its first instruction until it returns, and
    the reads of each word once a write has put the wrong result over a
    value the call stored there."""
    layout = pt_regs_layout()
    results = []
    try:
        for target in job["targets"]:
            now = run_to(target["entry_icount"])
            if now != target["entry_icount"] or reg("sp") != target["sp"]:
                results.append({"entry_icount": target["entry_icount"], "error":
                                f"replay at {now}, sp {reg('sp'):#x}: not the call's "
                                f"entry ({target['entry_icount']}, sp {target['sp']:#x})"})
                continue
            results.append({"entry_icount": target["entry_icount"],
                            "hits": watch_call(target, layout)})
    except ReplayEnded:
        pass
    return {"targets": results, "pt_regs": layout}


def word_values(words):
    """The current value of each watched word, in one read of their span."""
    low, high = min(words), max(words) + 4
    data = read(low, high - low)
    return {a: int.from_bytes(data[a - low:a - low + 4], "little") for a in words}


def watch_call(target, layout):
    wrong = target["result"]
    words = {addr: u32(addr) for addr in target["words"]}
    changed = {addr: [] for addr in target["words"]}
    # gdb's write watchpoints stop only where the value changes.
    watches = {}

    def watch(addr, kind):
        bp = gdb.Breakpoint(f"*(unsigned int *){addr:#x}", gdb.BP_WATCHPOINT,
                            gdb.WP_WRITE if kind == "write" else gdb.WP_READ,
                            internal=True)
        watches[bp.number] = (bp, addr, kind)

    for addr in target["words"]:
        watch(addr, "write")
    back = gdb.Breakpoint(f"*{target['lr']:#x}", internal=True)
    hits, stopped_by, reading = [], [], set()

    def on_stop(event):
        stopped_by[:] = [bp.number for bp in getattr(event, "breakpoints", [])]

    gdb.events.stop.connect(on_stop)
    try:
        while True:
            resume()
            pc, sp = reg("pc"), reg("sp")
            if pc == target["lr"] and sp == target["sp"]:
                break
            triggered = {watches[n][1] for n in stopped_by if n in watches}
            if not triggered:
                continue
            # A stop names one word, though a pair store may have written
            # two: every watched word whose value moved was written, and a
            # named word that kept its value was read.
            now_values = word_values(words)
            moved = [a for a in words if now_values[a] != words[a]]
            read_back = [] if moved else [a for a in triggered if a in reading]
            # gdb stops on a write watchpoint only when the value differs
            # from the one it last saw: renew those of words it did not name.
            for number, (bp, addr, kind) in list(watches.items()):
                if kind == "write" and addr in moved and addr not in triggered:
                    bp.delete()
                    del watches[number]
                    watch(addr, "write")
            for addr, kind in [(a, "write") for a in moved] + [(a, "read") for a in read_back]:
                hit = access(addr, words[addr], pc, sp, kind)
                # A word gdb did not name changed at this instruction or
                # at one since the last stop.
                hit["exact"] = addr in triggered
                hits.append(hit)
                frame_writes(hits, layout)
                if kind == "read":
                    continue
                words[addr] = hit["after"]
                changed[addr].append(hit["after"])
                # The wrong result over a value stored during the call:
                # from now on its reads matter.
                if hit["after"] == wrong and addr not in reading and \
                        any(v != wrong for v in changed[addr][:-1]):
                    reading.add(addr)
                    watch(addr, "read")
    finally:
        gdb.events.stop.disconnect(on_stop)
        if gdb.selected_inferior().threads():
            back.delete()
            for bp, _, _ in watches.values():
                bp.delete()
    return hits


def main():
    with open(os.environ["CHKWIN_WALK_JOB"]) as f:
        job = json.load(f)
    gdb.execute("set pagination off")
    gdb.execute("set confirm off")
    gdb.execute("set print pretty off")
    gdb.execute(f"target remote {job['socket']}", to_string=True)
    result = {"failures": pass_failures, "calls": pass_calls,
              "slots": pass_slots}[job["pass"]](job)
    tmp = os.environ["CHKWIN_WALK_OUT"] + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f)
    os.replace(tmp, os.environ["CHKWIN_WALK_OUT"])
    try:
        gdb.execute("kill", to_string=True)
    except gdb.error:
        pass


main()
