"""What an AArch64 instruction reads and writes, from its disassembly.

The walk follows a wrong value backwards through a traced call
(guest/host/provenance.py): for each instruction it needs the general
registers it defines and uses as data, and for a load or store the bytes it
accesses.  gdb prints each instruction as `mnemonic operands` (gdbwalk.py's
where(), whitespace collapsed); this reads that text.  Addresses are data
dependences only through an index register (a table lookup); a base
register is a pointer, not the value.

What it does not model: the flags (a conditional select depends on both
its registers, not on the comparison), a system cache operation other than
DC ZVA (no memory effect), and an atomic's dependence on the old value in
memory (the value it stores is followed through its register only).
"""

import re

# Mnemonics that define no general register (x30 for the branch-and-links
# is added below).
NO_DEST = {
    "cmp", "cmn", "tst", "ccmp", "ccmn", "fcmp", "fcmpe", "fccmp", "fccmpe",
    "b", "br", "bl", "blr", "ret", "retaa", "retab", "cbz", "cbnz", "tbz", "tbnz",
    "nop", "hint", "yield", "wfi", "wfe", "sev", "sevl", "isb", "dsb", "dmb",
    "msr", "eret", "svc", "hvc", "smc", "brk", "hlt", "clrex", "dc", "ic", "tlbi",
    "at", "bti", "csdb", "sb", "prfm", "prfum", "esb", "psb", "udf", "braa",
    "brab", "blraa", "blrab", "eretaa", "eretab", "autiasp", "paciasp",
    "autibsp", "pacibsp"}
# A destination that is also a source: the instruction keeps some of its bits.
KEEPS_DEST = {"movk", "bfi", "bfxil", "bfm", "ins", "bfc"}
# x30 in, x30 out.
POINTER_AUTH = {"autiasp", "paciasp", "autibsp", "pacibsp", "xpaclri"}

PLAIN_MEM = re.compile(
    r"^(?P<op>ld|st)(?P<kind>r|ur|tr|ar|lr|xr|axr|lxr|apr|lur|apur|p|np|xp|axp|lxp)"
    r"(?P<sign>s)?(?P<width>b|h|w)?$")
ATOMIC = re.compile(
    r"^(?:ld|st)(?:add|clr|eor|set|smax|smin|umax|umin)(?:a|al|l)?(?P<width>b|h)?$"
    r"|^(?:swp|cas|casp)(?:a|al|l)?(?P<width2>b|h)?$")
STRUCT = re.compile(r"^(ld|st)[1-4]r?$")
REG_SIZE = {"x": 8, "w": 4, "q": 16, "d": 8, "s": 4, "h": 2, "b": 1, "v": 16}
MEM_OPERAND = re.compile(
    r"\[(?P<inner>[^\]]*)\](?P<pre>!)?(?:,\s*(?P<post>[^,]+))?$")
IMM = re.compile(r"#?(-?(?:0x[0-9a-fA-F]+|\d+))$")
MASK64 = (1 << 64) - 1
# The registers a trace records, in gdbwalk.py's order.
REGS = [f"x{i}" for i in range(31)] + ["sp"]


def canon(name):
    """The register an operand names ('x3' for w3 or x3, 'v0' for q0, d0,
    v0.16b; 'sp'), or None: the zero register, an immediate, a shift, a
    condition or a label."""
    n = name.strip().lower()
    if n in ("sp", "wsp"):
        return "sp"
    m = re.fullmatch(r"[xw](\d+)", n)
    if m and int(m.group(1)) <= 30:
        return f"x{m.group(1)}"
    m = re.fullmatch(r"[vqdshb](\d+)(?:\.\w+)?(?:\[\d+\])?", n)
    if m and int(m.group(1)) <= 31:
        return f"v{m.group(1)}"
    return None


def reg_size(name):
    n = name.strip().lower()
    if n in ("sp", "xzr"):
        return 8
    if n in ("wsp", "wzr"):
        return 4
    return REG_SIZE.get(n[:1], 8)


def split_operands(text):
    """Operands at the top level: commas inside [] and {} do not split."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def parse_imm(text):
    m = IMM.match(text.strip())
    return int(m.group(1), 0) if m else None


def split(insn):
    """(mnemonic, operand list) of gdb's text, with its `<symbol>` and
    `// comment` tails dropped."""
    text = re.sub(r"\s*//.*$", "", insn)
    text = re.sub(r"\s*<[^>]*>", "", text).strip()
    mnem, _, rest = text.partition(" ")
    return mnem.lower(), split_operands(rest)


class Decoded:
    """dests, srcs: registers defined and read as data; mem: None or a
    dict (load, store, size, each, base, index, index_ext, shift, imm,
    mode, literal; data: the registers the access names in order, each
    `each` bytes; stored: those whose values a store writes) whose
    address effective() computes."""

    __slots__ = ("mnem", "dests", "srcs", "mem", "sysreg")

    def __init__(self, mnem):
        self.mnem, self.dests, self.srcs, self.mem = mnem, [], [], None
        self.sysreg = None

    def effective(self, regs):
        """(address, size) of the access, from the registers before it."""
        m = self.mem
        if m["literal"] is not None:
            return m["literal"], m["size"]
        addr = regs[m["base"]]
        if m["mode"] != "post":
            addr += m["imm"]
            if m["index"] is not None:
                index = regs[m["index"]]
                if m["index_ext"] == "uxtw":
                    index &= 0xFFFFFFFF
                elif m["index_ext"] == "sxtw":
                    index &= 0xFFFFFFFF
                    index -= (index & 0x80000000) << 1
                addr += index << m["shift"]
        if self.mnem == "dc":
            addr &= ~63
        return addr & MASK64, m["size"]


def memory_operand(text):
    """base, index, extension, shift, imm and mode of `[...]`, `[...]!` or
    `[...], #imm`."""
    m = MEM_OPERAND.search(text)
    parts = split_operands(m.group("inner"))
    base = canon(parts[0])
    index, ext, shift, imm = None, None, 0, 0
    for p in parts[1:]:
        r = canon(p)
        if r is not None and index is None and not p.startswith("#"):
            index = r
            if p.strip().lower().startswith("w"):
                ext = "uxtw"
            continue
        words = p.split()
        if words and words[0].lower() in ("lsl", "uxtw", "sxtw", "sxtx", "uxtx"):
            ext = words[0].lower() if words[0].lower() != "lsl" else ext
            shift = parse_imm(words[1]) if len(words) > 1 else 0
        else:
            imm = parse_imm(p) or 0
    mode = "pre" if m.group("pre") else "offset"
    if m.group("post"):
        mode, imm = "post", parse_imm(m.group("post")) or 0
    return {"base": base, "index": index, "index_ext": ext, "shift": shift,
            "imm": imm, "mode": mode, "literal": None}


def decode(insn):
    mnem, ops = split(insn)
    d = Decoded(mnem)
    plain, atomic = PLAIN_MEM.match(mnem), ATOMIC.match(mnem)
    if mnem.startswith(("prfm", "prfum")):
        return d
    if plain or atomic or STRUCT.match(mnem) or (mnem == "dc" and ops[:1] == ["zva"]):
        return decode_memory(d, mnem, ops, plain, atomic)
    if mnem in ("bl", "blr", "blraa", "blrab"):
        d.dests = ["x30"]
        return d
    if mnem in POINTER_AUTH:
        d.dests, d.srcs = ["x30"], ["x30"]
        return d
    if mnem == "mrs":
        d.dests = [r for r in [canon(ops[0])] if r]
        d.sysreg = ops[1].lower() if len(ops) > 1 else None
        return d
    if mnem == "msr":
        d.sysreg = ops[0].lower() if ops else None
        d.srcs = [r for r in (canon(o) for o in ops[1:]) if r]
        return d
    if mnem in NO_DEST or mnem.startswith("b."):
        return d
    regs = [canon(o) for o in ops]
    if not ops:
        return d
    dest = regs[0]
    d.dests = [dest] if dest else []
    d.srcs = [r for r in regs[1:] if r]
    if mnem in KEEPS_DEST and dest:
        d.srcs.append(dest)
    return d


def decode_memory(d, mnem, ops, plain, atomic):
    if mnem == "dc":
        reg = canon(ops[1])
        d.mem = {"base": reg, "index": None, "index_ext": None, "shift": 0, "imm": 0,
                 "mode": "offset", "literal": None, "load": False, "store": True,
                 "size": 64, "each": 64, "data": [], "stored": []}
        return d
    mem_at = next((i for i, o in enumerate(ops) if o.startswith("[")), None)
    regs_text = ops[:mem_at] if mem_at is not None else ops[:-1]
    if mem_at is None:
        # A literal load: `ldr x0, 0xffff...` (the address gdb printed).
        mem = {"base": None, "index": None, "index_ext": None, "shift": 0, "imm": 0,
               "mode": "offset", "literal": int(ops[-1].split()[0], 16)}
    else:
        mem = memory_operand(", ".join(ops[mem_at:]))
    if STRUCT.match(mnem):
        listed = re.findall(r"v\d+", ops[0].lower())
        first, last = (int(x[1:]) for x in (listed[0], listed[-1])) if listed else (0, 0)
        data = [f"v{n}" for n in range(first, last + 1)]
        mem.update(load=mnem.startswith("ld"), store=mnem.startswith("st"),
                   size=16 * len(data), data=data, each=16, stored=data)
        if mem["load"]:
            d.dests = list(data)
        else:
            d.srcs = list(data)
    elif atomic:
        width = atomic.group("width") or atomic.group("width2")
        data = [r for r in (canon(o) for o in regs_text) if r]
        each = {"b": 1, "h": 2}.get(width) or reg_size(regs_text[0])
        pair = mnem.startswith("casp")
        mem.update(load=True, store=True, size=each * (2 if pair else 1), data=data)
        # ld<op> rs, rt and swp rs, rt: rt gets the old value, rs is the
        # operand stored; cas rs, rt: rs gets the old value, rt is stored
        # (casp: the pairs rs, rs+1 and rt, rt+1).
        if mnem.startswith("cas"):
            d.dests = data[:2] if pair else data[:1]
            mem["stored"] = data[2:] if pair else data[1:2]
        else:
            d.dests, mem["stored"] = data[1:2], data[:1]
        d.srcs = list(data)
    else:
        exclusive_store = mnem in ("stxr", "stlxr", "stxrb", "stlxrb", "stxrh",
                                   "stlxrh", "stxp", "stlxp")
        if exclusive_store:
            status, regs_text = regs_text[0], regs_text[1:]
            d.dests = [r for r in [canon(status)] if r]
        pair = plain.group("kind") in ("p", "np", "xp", "axp", "lxp")
        width = plain.group("width")
        each = {"b": 1, "h": 2, "w": 4}.get(width) or reg_size(regs_text[0])
        data = [canon(o) for o in regs_text]
        mem.update(load=plain.group("op") == "ld", store=plain.group("op") == "st",
                   size=each * (2 if pair else 1), data=data, each=each, stored=data)
        if mem["load"]:
            d.dests = [r for r in data if r]
        else:
            d.srcs = [r for r in data if r]
    if mem.get("index"):
        d.srcs.append(mem["index"])
    if mem["mode"] in ("pre", "post") and mem["base"]:
        d.dests.append(mem["base"])
    mem.setdefault("each", mem["size"])
    d.mem = mem
    return d
