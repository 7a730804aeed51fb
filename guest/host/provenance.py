"""Where a wrong checksum came from: the backward data flow of a traced call.

gdbwalk.py's trace pass single-steps a replay through the failing
ext4_chksum() call, from its first instruction to its return, whatever
runs on the CPU meanwhile: the call's own code, interrupts and the
softirqs run on their way out, other tasks the call yields to.  This file
reads that trace and asks of the wrong result one question, hop by hop:
where did this value come from?  A register comes from the instruction
that last defined it; a load from the bytes it read, and those from the
store that last wrote each byte, wherever the bytes live (stack, heap,
per-CPU, global, the checksummed buffer).  Nothing here knows where the
checksum state is.

The call's own context is its task outside any exception.  Everything
else (an exception entry and what runs before its eret, another task
between two context switches) is foreign.  The flow is followed through
the own context only, and the corruption entered where it crosses from a
foreign one:

- a load of the call reads bytes a foreign context wrote last, and they
  changed (the 2021 bug: an exception entry's register save over a
  released frame; a softirq, an hrtimer or another task writing shared
  state or the bytes being checksummed);
- a register the call reads was changed across an exception or a
  context switch (a handler that rewrote the saved registers);
- a load read checksummed bytes that differ from the bytes at the call's
  entry although no instruction on this CPU wrote them: another CPU or a
  device (DMA).  With one vCPU, as record/replay needs, only the device
  remains.

A foreign span that saves and restores a value (an exception entry and
exit, a context switch) leaves it unchanged and is looked through.
"""

import bisect

from guest.host import aarch64

OWN = 0
# Where a callback is called from, and what it is called: the function a
# dispatcher calls names the work done in that context.
DISPATCHERS = {
    "call_timer_fn": "timer callback", "expire_timers": "timer callback",
    "__run_timers": "timer callback", "__run_hrtimer": "hrtimer callback",
    "__hrtimer_run_queues": "hrtimer callback",
    "tasklet_action_common": "tasklet", "process_one_work": "work item",
    "__handle_irq_event_percpu": "irq handler", "__do_softirq": "softirq action",
    "kthread": "kernel thread"}
SWITCH = "cpu_switch_to"
# An exception vector's class: its offset in its 0x200-byte group.
VECTOR_KINDS = {0x000: "synchronous exception (a syscall, a fault, a breakpoint)",
                0x080: "hard interrupt", 0x100: "hard interrupt (FIQ)",
                0x180: "SError"}
THREAD_SIZE = 16 * 1024


def function_of(at):
    return at.split("+", 1)[0]


class Symbols:
    """Every symbol of a System.map, for naming data addresses, and the
    kernel's virtual address bits (its config), which place the linear
    map: [-2^VA_BITS, -2^(VA_BITS-1))."""

    def __init__(self, path, config=None):
        self.va_bits = 48
        if config is not None and config.is_file():
            for line in config.read_text().splitlines():
                if line.startswith("CONFIG_ARM64_VA_BITS="):
                    self.va_bits = int(line.split("=", 1)[1])
        syms = []
        for line in open(path):
            parts = line.split()
            if len(parts) >= 3:
                syms.append((int(parts[0], 16), parts[2]))
        syms.sort()
        self.addrs = [a for a, _ in syms]
        self.names = [n for _, n in syms]
        self.by_name = {n: a for a, n in syms}

    def name(self, addr):
        i = bisect.bisect_right(self.addrs, addr) - 1
        return f"{self.names[i]}+{addr - self.addrs[i]:#x}" if i >= 0 else f"{addr:#x}"

    def get(self, name):
        return self.by_name.get(name)


def add(index, addr, k, value):
    steps, values = index.setdefault(addr, ([], []))
    steps.append(k)
    values.append(value)


def last(entry, before):
    """(step, value) of the last entry of an index_memory() list before
    step before, or None."""
    if not entry:
        return None
    steps, values = entry
    i = bisect.bisect_left(steps, before) - 1
    return (steps[i], values[i]) if i >= 0 else None


class Span:
    """A stretch of the trace not run by the call's own context: an
    exception (entry to eret) or another task (switch out to switch
    back).  Spans nest: a softirq's interrupt inside another."""

    def __init__(self, number, kind, start, parent, **info):
        self.number, self.kind, self.start, self.parent = number, kind, start, parent
        self.end = None
        self.info = info
        self.chain = []           # [(function, return address)]

    def ancestry(self):
        """This span and the spans it is nested in, innermost first."""
        s = self
        while s is not None:
            yield s
            s = s.parent

    def outermost(self):
        s = self
        while s.parent is not None:
            s = s.parent
        return s


class Trace:
    """One traced call: its steps with the registers before each, the
    context each ran in, and what each read and wrote."""

    def __init__(self, doc, call, symbols):
        self.doc, self.call, self.symbols = doc, call, symbols
        start = doc["start"]
        regs = dict(zip(aarch64.REGS, start["regs"]))
        self.steps, self.before, self.decoded = doc["steps"], [], []
        self.span_of, self.spans, self.chain_at, self.task_at = [], [], [], []
        self.executed, self.icounts = [], []
        self.own_task = start["sp_el0"]
        self.entry_bytes = bytes.fromhex(start["bytes"])
        self.tasks = {start["sp_el0"]: start.get("task")}
        icount = start["icount"]
        current, span = self.own_task, None
        own_chain = [(function_of(self.steps[0]["at"]) if self.steps else "?", None)]
        for k, step in enumerate(self.steps):
            self.before.append(regs)
            d = aarch64.decode(step["insn"])
            self.decoded.append(d)
            exc = step.get("exception")
            # An exception taken before the instruction (its return address
            # is the instruction) did not run it.
            ran = not (exc and exc["elr_el1"] == step["pc"])
            self.executed.append(ran)
            self.span_of.append(span)
            chain = span.chain if span else own_chain
            self.chain_at.append([f for f, _ in chain])
            self.task_at.append(current)
            self.icounts.append(icount)
            if ran:
                icount += 1
                current, span = self.follow(k, step, d, regs, current, span, chain)
            if exc:
                span = Span(len(self.spans) + 1, "exception", k + 1, span,
                            taken_at=k, pc=exc["elr_el1"], sp=regs["sp"],
                            pstate=exc["spsr_el1"], vector=exc["vector"])
                span.chain.append((function_of(self.vector_name(k)), exc["elr_el1"]))
                self.spans.append(span)
                icount = exc.get("icount", icount)
            regs = {**regs, **step["set"]}
        self.after = regs
        self.writes, self.seen = self.index_memory()
        self.defs = self.index_defs()

    def vector_name(self, k):
        nxt = self.steps[k + 1] if k + 1 < len(self.steps) else None
        return nxt["at"] if nxt else "vectors"

    def follow(self, k, step, d, regs, current, span, chain):
        """The call chain and the context after step k ran."""
        mnem = d.mnem
        nxt = self.steps[k + 1] if k + 1 < len(self.steps) else None
        if mnem in ("bl", "blr", "blraa", "blrab") and nxt:
            chain.append((function_of(nxt["at"]), step["pc"] + 4))
            # The call's task switching away, from its own code or on its
            # way out of an interrupt (a preemption): another task runs
            # until it switches back.
            if function_of(nxt["at"]) == SWITCH and current == self.own_task:
                span = Span(len(self.spans) + 1, "task", k + 1, span,
                            own_chain=[f for f, _ in chain[:-1]])
                self.spans.append(span)
        elif mnem.startswith("ret") and nxt:
            for i in range(len(chain) - 1, -1, -1):
                if chain[i][1] == nxt["pc"]:
                    del chain[i:]
                    break
        elif mnem == "eret" and span is not None and span.kind == "exception":
            span.end = k
            span = span.parent
        elif mnem == "msr" and d.sysreg == "sp_el0":
            current = regs[d.srcs[0]] if d.srcs else current
            if step.get("task"):
                self.tasks[current] = step["task"]
            switched = next((s for s in span.ancestry() if s.kind == "task"), None) \
                if span is not None else None
            if switched is not None and current == self.own_task:
                # Back in the call's task: whatever the other task was in
                # (a syscall, an interrupt) ends with the switch.
                for s in span.ancestry():
                    s.end = k
                    if s is switched:
                        break
                span = switched.parent
        return current, span

    def index_memory(self):
        """Per byte address, the steps that stored to it and the steps that
        stored or loaded it, each ([steps], [byte value or None]): a load
        tells a byte's value as much as a store does."""
        writes, seen = {}, {}
        for k, d in enumerate(self.decoded):
            if not (self.executed[k] and d.mem):
                continue
            addr, size = d.effective(self.before[k])
            if d.mem["load"]:
                data = self.loaded_bytes(k, d, size)
                for i in range(size):
                    add(seen, addr + i, k, data[i] if data else None)
            if d.mem["store"]:
                data = self.stored_bytes(k, d, size)
                for i in range(size):
                    add(writes, addr + i, k, data[i] if data else None)
                    add(seen, addr + i, k, data[i] if data else None)
        return writes, seen

    def loaded_bytes(self, k, d, size):
        """The bytes a load read, from its data registers after it."""
        out = b""
        for r in d.mem["data"]:
            got = self.loaded(k, r, d.mem["each"]) if r else bytes(d.mem["each"])
            if got is None:
                return None
            out += got
        return out if len(out) == size else None

    def stored_bytes(self, k, d, size):
        """The bytes a store wrote, from its registers before it; None
        where they are not known (a vector register, an atomic's
        operation on the old value)."""
        regs, each = self.before[k], d.mem["each"]
        if d.mnem == "dc":
            return bytes(size)
        if d.mem["load"]:
            return None
        out = b""
        for r in d.mem["stored"]:
            value = 0 if r is None else regs.get(r)
            if value is None or r and r.startswith("v"):
                return None
            out += (value & ((1 << (8 * each)) - 1)).to_bytes(each, "little")
        return out if len(out) == size else None

    def index_defs(self):
        defs = {}
        for k, d in enumerate(self.decoded):
            if self.executed[k]:
                for r in d.dests:
                    defs.setdefault(r, []).append(k)
        return defs

    def value(self, reg, k):
        """reg's value before step k (k = len(steps): after the last)."""
        regs = self.after if k >= len(self.steps) else self.before[k]
        return regs.get(reg)

    def last_def(self, reg, before):
        ks = self.defs.get(reg, [])
        i = bisect.bisect_left(ks, before) - 1
        return ks[i] if i >= 0 else None

    def last_write(self, addr, before):
        """(step, byte value) of the last store to addr before step before."""
        return last(self.writes.get(addr), before)

    def byte_before(self, addr, k):
        """The byte at addr before step k: as the last store or load of it
        left or found it, or for the checksummed bytes, at the call's
        entry; None where the trace does not know."""
        w = last(self.seen.get(addr), k)
        if w is not None and w[1] is not None:
            return w[1]
        if w is not None:
            return None
        offset = addr - self.call["address"]
        return self.entry_bytes[offset] if 0 <= offset < len(self.entry_bytes) else None

    def span_end(self, span):
        return len(self.steps) if span.end is None else span.end + 1

    def loaded(self, k, reg, size):
        """The bytes reg received from memory at step k (its value after)."""
        value = self.value(reg, k + 1)
        if value is None or reg.startswith("v"):
            return None
        return (value & ((1 << (8 * size)) - 1)).to_bytes(size, "little")

    def context(self, k):
        """What ran step k: the call's own task, or the innermost foreign
        context (an exception: a hard interrupt, or a softirq run on its
        way out; another task) with its chain, the callback a dispatcher
        called, and what it interrupted or the call yielded in."""
        span = self.span_of[k]
        chain = self.chain_at[k]
        if span is None:
            return {"kind": "the call's own task", "task": self.tasks.get(self.own_task),
                    "chain": chain}
        callback = None
        for i in range(len(chain) - 2, -1, -1):
            if chain[i] in DISPATCHERS:
                callback = {"function": chain[i + 1], "what": DISPATCHERS[chain[i]],
                            "via": chain[i]}
                break
        if span.kind == "task":
            kind = "another task"
        elif "__do_softirq" in chain:
            kind = "softirq"
        else:
            kind = VECTOR_KINDS[(span.info["vector"] - self.doc["start"]["vectors"]) & 0x180]
        switched = next((s for s in span.ancestry() if s.kind == "task"), None)
        out = {"kind": kind, "chain": chain, "callback": callback,
               "task": self.tasks.get(self.task_at[k]) if switched else None}
        if span.kind == "exception":
            out["interrupted"] = self.interrupted(span)
        if switched:
            out["yielded_in"] = switched.info.get("own_chain")
        return out

    def interrupted(self, span):
        k = span.info["taken_at"]
        return {"pc": span.info["pc"], "at": self.steps[k]["at"],
                "insn": self.steps[k]["insn"], "sp": span.info["sp"],
                "pstate": span.info["pstate"], "icount": self.icounts[k]}


class Walk:
    """The backward flow from the call's result (x0 at its return)."""

    def __init__(self, trace):
        self.t = trace
        self.parent = {}
        self.suspects = []
        self.leaves = []

    def run(self):
        root = ("reg", "x0", len(self.t.steps))
        self.parent[root] = None
        queue = [root]
        while queue:
            node = queue.pop(0)
            for child in self.expand(node):
                if child not in self.parent:
                    self.parent[child] = node
                    queue.append(child)
        return self

    def own(self, k):
        return self.t.span_of[k] is None

    def expand(self, node):
        t = self.t
        if node[0] == "reg":
            _, reg, before = node
            d = t.last_def(reg, before)
            while d is not None and not self.own(d):
                span = t.span_of[d].outermost()
                end = t.span_end(span)
                if end <= before and t.value(reg, span.start) == t.value(reg, end):
                    d = t.last_def(reg, span.start)
                    continue
                self.suspects.append({"kind": "register", "node": node, "step": d,
                                      "reg": reg})
                return []
            if d is None:
                self.leaves.append({"kind": "register at entry", "reg": reg,
                                    "value": t.value(reg, 0), "node": node})
                return []
            return [("step", d, reg)]
        if node[0] == "step":
            _, k, reg = node
            d = t.decoded[k]
            if d.mem and d.mem["load"] and reg in d.mem["data"]:
                return self.load(node, k, d, reg)
            if d.mem and reg == d.mem["base"]:
                return [("reg", reg, k)]
            return [("reg", r, k) for r in d.srcs]
        if node[0] == "store":
            _, k, lo, hi = node
            d = t.decoded[k]
            addr, _ = d.effective(t.before[k])
            each = d.mem["each"]
            stored = d.mem["stored"]
            regs = {stored[i // each] for i in range(lo - addr, hi - addr)
                    if i // each < len(stored)}
            return [("reg", r, k) for r in sorted(r for r in regs if r)]
        return []

    def load(self, node, k, d, reg):
        t = self.t
        addr, size = d.effective(t.before[k])
        each = d.mem["each"]
        off = d.mem["data"].index(reg) * each if d.mem["store"] is False else 0
        lo, hi = addr + off, addr + off + min(each, size)
        out = [("reg", d.mem["index"], k)] if d.mem.get("index") else []
        by_store, unwritten = {}, []
        for b in range(lo, hi):
            w = t.last_write(b, k)
            # A foreign store is looked through where it changed nothing:
            # the byte held its value just before it (a save of what it
            # had just read), or before the whole foreign span (a save
            # and restore).
            while w is not None and not self.own(w[0]) and w[1] is not None:
                span = t.span_of[w[0]].outermost()
                if w[1] == t.byte_before(b, w[0]):
                    w = t.last_write(b, w[0])
                    continue
                if w[1] == t.byte_before(b, span.start):
                    w = t.last_write(b, span.start)
                    continue
                break
            if w is None:
                unwritten.append(b)
            else:
                by_store.setdefault(w[0], []).append(b)
        for s, bs in sorted(by_store.items()):
            if self.own(s):
                out.append(("store", s, min(bs), max(bs) + 1))
            else:
                self.suspects.append({"kind": "memory", "node": node, "step": s,
                                      "load": k, "bytes": (min(bs), max(bs) + 1)})
        if unwritten:
            self.unwritten(node, k, reg, lo, hi, unwritten)
        return out

    def unwritten(self, node, k, reg, lo, hi, unwritten):
        """Bytes no instruction of the trace wrote: read as they were at
        the call's entry, unless they are checksummed bytes whose value
        changed since (another CPU or a device wrote them)."""
        t, call = self.t, self.t.call
        got = t.loaded(k, reg, hi - lo)
        entry = t.entry_bytes
        changed = [b for b in unwritten if call["address"] <= b < call["address"] + len(entry)
                   and got is not None and got[b - lo] != entry[b - call["address"]]]
        if changed:
            self.suspects.append({"kind": "no cpu writer", "node": node, "step": k,
                                  "load": k, "bytes": (min(changed), max(changed) + 1)})
        self.leaves.append({"kind": "memory at entry", "node": node, "load": k,
                            "bytes": (min(unwritten), max(unwritten) + 1)})

    def chain(self, node):
        """The hops from node back up to the result, result first."""
        out = []
        while node is not None:
            out.append(node)
            node = self.parent[node]
        return out[::-1]


def pt_regs_field(offset, layout):
    """The pt_regs member at offset, e.g. 'pt_regs.x13 (low half)'."""
    named = {layout["sp"]: "sp", layout["pc"]: "pc", layout["pstate"]: "pstate"}
    word = offset - offset % 8
    half = "low" if offset % 8 == 0 else "high"
    if word in named:
        return f"pt_regs.{named[word]} ({half} half)"
    if 0 <= word < 8 * 31:
        return f"pt_regs.x{word // 8} ({half} half)"
    return f"pt_regs+{offset:#x}"


def window_of(pc, placed):
    for window, first, last in placed:
        if first <= pc <= last:
            return window.name
    return None


def memory_kind(t, addr):
    """What kind of memory addr is, from the call's bytes and stack, the
    kernel's symbols and arm64's memory map."""
    call, start, syms = t.call, t.doc["start"], t.symbols
    if call["address"] <= addr < call["address"] + call["length"]:
        return f"the checksummed bytes (offset {addr - call['address']})"
    sp = start["regs"][31]
    if addr // THREAD_SIZE == sp // THREAD_SIZE:
        return "the calling task's stack"
    pcpu = syms.get("__per_cpu_start"), syms.get("__per_cpu_end")
    local = (addr - start["tpidr_el1"]) & aarch64.MASK64
    if None not in pcpu and pcpu[0] <= local < pcpu[1]:
        return f"per-CPU {syms.name(local)} (this CPU's copy)"
    image = syms.get("_text"), syms.get("_end")
    if None not in image and image[0] <= addr < image[1]:
        return f"global {syms.name(addr)}"
    if -(1 << syms.va_bits) <= addr - (1 << 64) < -(1 << (syms.va_bits - 1)):
        return "heap (linear map: slab or page)"
    return "vmalloc space (a stack, a module or vmalloc)"


def slot_value(t, lo, hi, k):
    """The little-endian value of bytes [lo, hi) after step k, where the
    trace wrote them all; None otherwise."""
    data = [t.byte_before(b, k + 1) for b in range(lo, hi)]
    return None if None in data else int.from_bytes(bytes(data), "little")


def step_info(t, k):
    context = t.context(k)
    return {"step": k, "icount": t.icounts[k], "pc": t.steps[k]["pc"],
            "at": t.steps[k]["at"], "insn": t.steps[k]["insn"],
            "sp": t.before[k]["sp"], "context": context}


def hop(t, node):
    """One hop of a chain, for people and tools."""
    if node[0] == "reg":
        _, reg, before = node
        return {"hop": "register", "reg": reg, "value": t.value(reg, before)}
    if node[0] == "step":
        _, k, reg = node
        d = t.decoded[k]
        kind = "load" if d.mem and d.mem["load"] and reg in d.mem["data"] else \
            "copied" if d.mnem == "mov" and len(d.srcs) == 1 else "computed"
        out = {"hop": kind, "defines": reg, "value": t.value(reg, k + 1), **step_info(t, k)}
        if out["hop"] == "load":
            addr, _ = d.effective(t.before[k])
            out["address"], out["memory"] = addr, memory_kind(t, addr)
        return out
    _, k, lo, hi = node
    return {"hop": "store", "address": lo, "bytes": hi - lo, "memory": memory_kind(t, lo),
            "value": slot_value(t, lo, hi, k), **step_info(t, k)}


def stores_to(t, lo, hi, after, before):
    """Steps that wrote any of bytes [lo, hi) in (after, before)."""
    steps = {k for b in range(lo, hi) for k in t.writes.get(b, ([], []))[0]
             if after < k < before}
    return sorted(steps)


def inputs(t):
    """The call's inputs against the recording: the seed it was passed,
    its bytes at entry and at return, and every read of those bytes by
    the call's own code that saw something else than the entry held."""
    call, start = t.call, t.doc["start"]
    entry = t.entry_bytes
    end = bytes.fromhex(t.doc.get("end", {}).get("bytes", start["bytes"]))
    lo, hi = call["address"], call["address"] + len(entry)
    misread = []
    for k, d in enumerate(t.decoded):
        if not (t.executed[k] and t.span_of[k] is None and d.mem and d.mem["load"]):
            continue
        addr, size = d.effective(t.before[k])
        if addr >= hi or addr + size <= lo:
            continue
        got = t.loaded_bytes(k, d, size)
        if got is None:
            continue
        for i, byte in enumerate(got):
            b = addr + i
            if lo <= b < hi and byte != entry[b - lo]:
                misread.append({"offset": b - lo, "entry": entry[b - lo], "read": byte,
                                "at": t.steps[k]["at"], "icount": t.icounts[k]})
    return {"seed": call["crc"], "bytes_at_entry": start["bytes"],
            "changed_by_return": [i for i in range(len(entry)) if entry[i] != end[i]],
            "misread": misread}


def explain(doc, call, symbols, layout, placed):
    """The story of one failing call from its trace: the chain from the
    wrong result back to where it crossed from another context, the
    writer and its context, and the fields the walk's readers know (the
    stored state, the overwrites, the interrupt, the load)."""
    t = Trace(doc, call, symbols)
    w = Walk(t).run()
    story = {"explained": bool(w.suspects), "expected": call["expected"],
             "steps_traced": len(t.steps), "inputs": inputs(t),
             "own_task": t.tasks.get(t.own_task)}
    if not w.suspects:
        leaves = [leaf_info(t, leaf) for leaf in w.leaves]
        state = next((lf for lf in leaves if lf.get("memory", "").startswith(
            ("the calling", "per-CPU", "global", "heap", "vmalloc"))), None)
        story.update(why="no value the result depends on crossed from another "
                         "context during the call", leaves=leaves,
                     chain=[hop(t, n) for n in w.chain(state["node"])] if state else [])
        for lf in leaves:
            lf.pop("node", None)
        return story
    s = w.suspects[0]
    story["chain"] = [hop(t, n) for n in w.chain(s["node"])]
    story["suspects"] = [suspect_info(t, x) for x in w.suspects]
    story["writer"] = story["suspects"][0]
    if s["kind"] != "memory":
        return story
    lo, hi = s["bytes"]
    k_load, k_store = s["load"], s["step"]
    load = {**step_info(t, k_load), "addr": lo,
            "after": slot_value(t, lo, hi, k_store), "kind": "read"}
    own_before = [k for k in stores_to(t, lo, hi, -1, k_store) if t.span_of[k] is None]
    stored_k = own_before[-1] if own_before else None
    between = stores_to(t, lo, hi, -1 if stored_k is None else stored_k, k_load)
    overwrites = [{**step_info(t, k), "before": slot_value(t, lo, hi, k - 1),
                   "after": slot_value(t, lo, hi, k)} for k in between]
    story.update(slot=lo, load=load, overwrites=overwrites, overwrite=overwrites[-1],
                 read_value=load["after"], memory=memory_kind(t, lo),
                 stored=None if stored_k is None else
                 {**step_info(t, stored_k), "after": slot_value(t, lo, hi, stored_k)})
    story["stored_value"] = story["stored"]["after"] if story["stored"] else None
    story["stored_is_expected"] = story["stored_value"] == call["expected"]
    span = t.span_of[k_store].outermost()
    story["span"] = {"kind": story["writer"]["context"]["kind"],
                     "start_icount": t.icounts[span.start],
                     "end_icount": t.icounts[span.end] if span.end is not None
                     else t.doc["end"]["icount"]}
    if span.kind == "exception":
        irq = t.interrupted(span)
        base = irq["sp"] - layout["size"]
        entry = next(o for o in overwrites if t.span_of[o["step"]].outermost() is span)
        story["interrupt"] = {
            **irq, "frame_base": base, "elr_el1": span.info["pc"], "entry_write": entry,
            "field": pt_regs_field(lo - base, layout) if 0 <= lo - base < layout["size"]
            else None, "window": window_of(irq["pc"], placed)}
    return story


def suspect_info(t, s):
    k = s["step"]
    out = {"kind": s["kind"], **step_info(t, k)}
    if s["kind"] == "memory":
        lo, hi = s["bytes"]
        out.update(address=lo, bytes=hi - lo, memory=memory_kind(t, lo),
                   before=slot_value(t, lo, hi, k - 1), after=slot_value(t, lo, hi, k),
                   read_by={k2: v for k2, v in step_info(t, s["load"]).items()
                            if k2 != "context"})
    elif s["kind"] == "no cpu writer":
        lo, hi = s["bytes"]
        out.update(address=lo, bytes=hi - lo, memory=memory_kind(t, lo),
                   context={"kind": "no instruction on this CPU: another CPU or a device"})
    else:
        out["reg"] = s["reg"]
    return out


def leaf_info(t, leaf):
    if leaf["kind"] == "register at entry":
        return {**leaf, "memory": f"register {leaf['reg']} at the call's entry"}
    lo, hi = leaf["bytes"]
    return {**leaf, "address": lo, "bytes": hi - lo, "memory": memory_kind(t, lo),
            "read_by": t.steps[leaf["load"]]["at"]}
