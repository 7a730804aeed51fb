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
           pointer, its result against the CRC32C of its bytes).
trace      for each call whose result is wrong, from its first
           instruction to its return: every instruction the CPU ran, in
           whatever context, with the registers it changed
           (guest/host/provenance.py follows the wrong value in it).

This file only observes: it never writes guest memory or registers.
"""

import json
import os
import re

import gdb

EFSBADCRC = 74            # EBADMSG, as ext4 reports a bad checksum
MASK64 = (1 << 64) - 1
ICOUNT_RE = re.compile(r"instruction count = (\d+)")


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
                    calls.append(returned(pending.pop(sp), now))
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


def returned(call, now):
    """A call at its return: its result against the CRC32C of its bytes."""
    call["return_icount"] = now
    call["result"] = reg("x0") & 0xFFFFFFFF
    data = read(call["address"], call["length"])
    call["expected"] = crc32c_update(call["crc"] & 0xFFFFFFFF, data)
    call["bad"] = call["result"] != call["expected"]
    return call


def pt_regs_layout():
    def offset(field):
        return int(gdb.parse_and_eval(
            f"(unsigned long)&((struct pt_regs *)0)->{field}"))
    return {"size": int(gdb.parse_and_eval("sizeof(struct pt_regs)")),
            "sp": offset("sp"), "pc": offset("pc"), "pstate": offset("pstate")}


def task(addr):
    """The comm and pid of the task_struct at addr (sp_el0 in the kernel)."""
    try:
        t = gdb.parse_and_eval(f"(struct task_struct *){addr:#x}").dereference()
        return {"addr": addr, "comm": t["comm"].string(errors="replace"),
                "pid": int(t["pid"])}
    except gdb.error:
        return {"addr": addr, "comm": None, "pid": None}


REGS = [f"x{i}" for i in range(31)] + ["sp"]


def registers(frame):
    """x0-x30 and sp, read from gdb's register cache (one fetch a stop)."""
    return [int(frame.read_register(r)) & MASK64 for r in REGS]


def instruction(pc, cache):
    """The instruction at pc and its symbol, read once per pc (the text is
    read-only: gdb takes it from vmlinux)."""
    if pc not in cache:
        cache[pc] = where(pc)
    return cache[pc]


def trace_call(target, limit, cache):
    """Every instruction the CPU ran from the call's first instruction to
    its return, whatever context ran it: per step its pc and the registers
    that changed since the step before (x0-x30, sp), and at exception
    entries the system registers that name the exception.  The replay is
    deterministic, so single-stepping it changes nothing it would do."""
    frame = gdb.selected_frame()
    before = registers(frame)
    start = {"icount": icount(), "regs": before, "sp_el0": reg("SP_EL0"),
             "task": task(reg("SP_EL0")),
             "tpidr_el1": reg("TPIDR_EL1"), "vectors": address_of("vectors"),
             "bytes": read(target["address"], target["length"]).hex()}
    # The exception vector table: 16 entries of 128 bytes.
    vectors = (start["vectors"], start["vectors"] + 0x800)
    steps, pc = [], reg("pc")
    while True:
        at, insn = instruction(pc, cache)
        gdb.execute("stepi", to_string=True)
        if not gdb.selected_inferior().threads():
            raise ReplayEnded("the replay ended inside a traced call")
        frame = gdb.selected_frame()
        after = registers(frame)
        step = {"pc": pc, "at": at, "insn": insn,
                "set": {REGS[i]: v for i, (a, v) in enumerate(zip(before, after)) if a != v}}
        pc = int(frame.read_register("pc")) & MASK64
        # A context switch sets current: name the task it switches to.
        if insn.startswith("msr sp_el0,"):
            step["task"] = task(reg("SP_EL0"))
        # An exception enters the vector table from outside it.
        if vectors[0] <= pc < vectors[1] and not vectors[0] <= step["pc"] < vectors[1]:
            step["exception"] = {"vector": pc, "elr_el1": reg("ELR_EL1"),
                                 "spsr_el1": reg("SPSR_EL1"), "icount": icount()}
        steps.append(step)
        before = after
        if pc == target["lr"] and after[31] == target["sp"]:
            break
        if len(steps) >= limit:
            return {"start": start, "steps": steps, "error":
                    f"the call had not returned after {limit:,} instructions"}
    return {"start": start, "steps": steps, "end": {
        "icount": icount(), "pc": pc, "bytes": read(target["address"], target["length"]).hex()}}


def pass_trace(job):
    """For each bad call (ascending entry icount): its trace (trace_call)."""
    gdb.execute("set trust-readonly-sections on")
    results, cache = [], {}
    try:
        for target in job["targets"]:
            now = run_to(target["entry_icount"])
            if now != target["entry_icount"] or reg("sp") != target["sp"]:
                results.append({"entry_icount": target["entry_icount"], "error":
                                f"replay at {now}, sp {reg('sp'):#x}: not the call's "
                                f"entry ({target['entry_icount']}, sp {target['sp']:#x})"})
                continue
            results.append({"entry_icount": target["entry_icount"],
                            **trace_call(target, job["step_limit"], cache)})
    except ReplayEnded:
        pass
    return {"targets": results, "pt_regs": pt_regs_layout()}


def main():
    with open(os.environ["CHKWIN_WALK_JOB"]) as f:
        job = json.load(f)
    gdb.execute("set pagination off")
    gdb.execute("set confirm off")
    gdb.execute("set print pretty off")
    gdb.execute(f"target remote {job['socket']}", to_string=True)
    result = {"failures": pass_failures, "calls": pass_calls,
              "trace": pass_trace}[job["pass"]](job)
    tmp = os.environ["CHKWIN_WALK_OUT"] + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f)
    os.replace(tmp, os.environ["CHKWIN_WALK_OUT"])
    try:
        gdb.execute("kill", to_string=True)
    except gdb.error:
        pass


main()
