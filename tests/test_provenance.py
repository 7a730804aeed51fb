"""The walk's reading of a traced call without a guest: what an AArch64
instruction defines, uses and accesses as gdb prints it
(guest/host/aarch64.py), and the backward flow over a trace
(guest/host/provenance.py): a value crossing from an exception is found
and named, a register an exception saves and restores is looked through,
a checksummed byte that changed with no writer on the CPU is said so, and
a result whose flow never crosses is unexplained with the chain to the
state it read and that state's kind of memory (guest/host/walk.py's
text).  The guest tests walk real recordings (tests/test_replay.py)."""

import pytest

from guest.host import aarch64
from guest.host import provenance
from guest.host import walk

REGS = [f"x{i}" for i in range(31)] + ["sp"]
LAYOUT = {"size": 0x150, "sp": 248, "pc": 256, "pstate": 264}
VECTORS = 0xffffffc008010000
TPIDR = 0x1_0000
PCPU_VAR = 0xffffffc008851000


@pytest.mark.parametrize("insn, dests, srcs, access", [
    ("ldr w0, [x19, #8]", ["x0"], [], ("load", "x19", 8, 4, "offset")),
    ("stp x29, x30, [sp, #-32]!", ["sp"], ["x29", "x30"], ("store", "sp", -32, 16, "pre")),
    ("ldp x29, x30, [sp], #32", ["x29", "x30", "sp"], [], ("load", "sp", 32, 16, "post")),
    ("ldrb w1, [x0], #1", ["x1", "x0"], [], ("load", "x0", 1, 1, "post")),
    ("ldr w3, [x4, x3, lsl #2]", ["x3"], ["x3"], ("load", "x4", 0, 4, "offset")),
    ("strb w1, [x2, w0, uxtw]", [], ["x1", "x0"], ("store", "x2", 0, 1, "offset")),
    ("stxr w2, x1, [x0]", ["x2"], ["x1"], ("store", "x0", 0, 8, "offset")),
    ("ldrsw x1, [x2, #4]", ["x1"], [], ("load", "x2", 4, 4, "offset")),
    ("stp xzr, xzr, [sp, #16]", [], [], ("store", "sp", 16, 16, "offset")),
    ("dc zva, x0", [], [], ("store", "x0", 0, 64, "offset")),
    ("crc32cx w0, w0, x3", ["x0"], ["x0", "x3"], None),
    ("movk x0, #0x1, lsl #16", ["x0"], ["x0"], None),
    ("csel w0, w0, w8, eq // eq = none", ["x0"], ["x0", "x8"], None),
    ("bl 0xffffffc0082ac0c0 <crypto_shash_update>", ["x30"], [], None),
    ("msr sp_el0, x1", [], ["x1"], None),
    ("cmp w2, #0x4", [], [], None),
    ("mov x29, sp", ["x29"], ["sp"], None),
])
def test_decode_reads_what_an_instruction_defines_uses_and_accesses(insn, dests, srcs,
                                                                    access):
    d = aarch64.decode(insn)
    assert d.dests == dests and d.srcs == srcs
    if access is None:
        assert d.mem is None
    else:
        kind, base, imm, size, mode = access
        assert d.mem[kind] and (d.mem["base"], d.mem["imm"], d.mem["size"],
                                d.mem["mode"]) == (base, imm, size, mode)


def test_effective_addresses_from_the_registers_before():
    regs = {"x0": 0x10, "x2": 0x1000, "x19": 0x1800, "sp": 0x2000, "x4": 0x100, "x3": 3}
    assert aarch64.decode("ldr w0, [x19, #8]").effective(regs) == (0x1808, 4)
    assert aarch64.decode("ldp x29, x30, [sp], #32").effective(regs) == (0x2000, 16)
    assert aarch64.decode("stp x29, x30, [sp, #-32]!").effective(regs) == (0x1fe0, 16)
    assert aarch64.decode("ldr w3, [x4, x3, lsl #2]").effective(regs) == (0x10c, 4)
    regs["x0"] = 0xFFFFFFFF_FFFFFFFF
    assert aarch64.decode("strb w1, [x2, w0, uxtw]").effective(regs) == (0x1000 + 0xFFFFFFFF, 1)
    assert aarch64.decode("ldr x1, [x2, w0, sxtw #3]").effective(regs) == (0x1000 - 8, 8)


class Tracer:
    """A trace in gdbwalk.py's form, one step at a time."""

    def __init__(self, **regs):
        self.regs = {r: 0 for r in REGS}
        self.regs.update(regs)
        self.start = {"icount": 1000, "regs": [self.regs[r] for r in REGS],
                      "sp_el0": 0xaaaa, "task": {"addr": 0xaaaa, "comm": "walker", "pid": 7},
                      "tpidr_el1": TPIDR, "vectors": VECTORS, "bytes": "00" * 8}
        self.steps, self.pc = [], 0xffffffc0082ac000

    def step(self, at, insn, pc=None, **changed):
        pc = self.pc if pc is None else pc
        self.steps.append({"pc": pc, "at": at, "insn": insn, "set": changed})
        self.regs.update(changed)
        self.pc = pc + 4
        return self.steps[-1]

    def interrupt(self, at, insn):
        """The step whose instruction an interrupt preempts, then the entry."""
        s = self.step(at, insn)
        s["exception"] = {"vector": VECTORS + 0x280, "elr_el1": s["pc"],
                          "spsr_el1": 5, "icount": 1000 + len(self.steps)}
        self.pc = s["pc"]
        interrupted_sp = self.regs["sp"]
        self.step("vectors+0x280", "sub sp, sp, #0x150", VECTORS + 0x280,
                  sp=interrupted_sp - 0x150)
        return s["pc"]

    def eret(self, back):
        self.step("ret_to_kernel+0x50", "add sp, sp, #0x150", 0xffffffc008012000,
                  sp=self.regs["sp"] + 0x150)
        self.step("ret_to_kernel+0x58", "eret")
        self.pc = back

    def doc(self, result_at="ext4_chksum+0x90"):
        self.step(result_at, "ret")
        return {"start": self.start, "steps": self.steps,
                "end": {"icount": 1000 + len(self.steps), "pc": 0, "bytes": "00" * 8}}


def symbols(tmp_path):
    (tmp_path / "System.map").write_text(
        "ffffffc008000000 T _text\n"
        f"{PCPU_VAR:016x} D __per_cpu_start\n"
        f"{PCPU_VAR:016x} d chksum_scratch\n"
        f"{PCPU_VAR + 0x1000:016x} D __per_cpu_end\n"
        "ffffffc008a70000 B _end\n")
    (tmp_path / "config").write_text("CONFIG_ARM64_VA_BITS=39\n")
    return provenance.Symbols(tmp_path / "System.map", tmp_path / "config")


CALL = {"crc": 0x1111, "address": 0xffffff8001ba4f00, "length": 8, "result": 0,
        "expected": 0x1234, "entry_icount": 1000, "return_icount": 1012,
        "sp": 0xffffff8001813950, "lr": 0}


def test_an_exception_entry_over_released_state_is_the_writer(tmp_path):
    """The 2021 bug in miniature: the state is stored, the frame released,
    an interrupt's entry saves x17 (0) over it, the load reads 0."""
    stack = 0xffffff8001813800
    t = Tracer(x19=stack, x1=0x1234, x29=stack + 0xd0, sp=stack + 0x150, x17=0)
    t.step("chksum_update+0x20", "str w1, [x19, #8]")
    t.step("ext4_chksum_gcc49+0x70", "mov sp, x29", sp=stack + 0xd0)
    window = t.interrupt("ext4_chksum_gcc49+0x74", "ldr w0, [x19, #8]")
    t.step("el1h_64_irq+0x20", "stp x16, x17, [sp, #128]")
    t.eret(window)
    t.step("ext4_chksum_gcc49+0x74", "ldr w0, [x19, #8]", pc=window, x0=0)
    story = provenance.explain(t.doc(), CALL, symbols(tmp_path), LAYOUT, [])
    assert story["explained"]
    w = story["writer"]
    assert w["at"] == "el1h_64_irq+0x20" and w["context"]["kind"] == "hard interrupt"
    assert (w["before"], w["after"]) == (0x1234, 0)
    assert w["memory"] == "the calling task's stack"
    assert story["stored"]["at"] == "chksum_update+0x20" and story["stored_is_expected"]
    irq = story["interrupt"]
    assert irq["pc"] == window and irq["at"] == "ext4_chksum_gcc49+0x74"
    assert irq["field"] == "pt_regs.x17 (low half)"
    assert story["load"]["at"] == "ext4_chksum_gcc49+0x74" and story["read_value"] == 0
    assert [h["hop"] for h in story["chain"]] == ["register", "load"]


def test_a_register_an_exception_saves_and_restores_is_looked_through(tmp_path):
    """x24 carries state read from a per-CPU variable before the call;
    an interrupt saves and restores it unchanged.  Nothing crossed: the
    walk is unexplained and says what the result depends on, with the
    chain to it and its kind of memory."""
    stack = 0xffffff8001813800
    t = Tracer(sp=stack + 0x150, x2=(PCPU_VAR + 0x10 + TPIDR) & aarch64.MASK64)
    t.step("chksum_final+0x4", "ldr w24, [x2]", x24=0x5555)
    back = t.interrupt("chksum_final+0x8", "mov w0, w24")
    t.step("el1h_64_irq+0x60", "stp x24, x25, [sp, #192]")
    t.step("el1h_64_irq+0x100", "mov x24, #0x0", x24=0)
    t.step("ret_to_kernel+0x30", "ldp x24, x25, [sp, #192]", x24=0x5555)
    t.eret(back)
    t.step("chksum_final+0x8", "mov w0, w24", pc=back, x0=0x5555)
    story = provenance.explain(t.doc(), {**CALL, "result": 0x5555}, symbols(tmp_path),
                               LAYOUT, [])
    assert not story["explained"]
    assert [h["hop"] for h in story["chain"]] == ["register", "copied", "register", "load"]
    assert story["chain"][-1]["at"] == "chksum_final+0x4"
    assert story["chain"][-1]["memory"] == "per-CPU chksum_scratch+0x10 (this CPU's copy)"
    text = walk.story_text(1, {"message": "iget: checksum invalid", "function": "f",
                               "icount": 2000}, CALL, story, True)
    assert "unexplained: no value the result depends on crossed from another context" in text
    assert "one vCPU" in text
    assert "depends on per-CPU chksum_scratch+0x10 (this CPU's copy)" in text
    assert "loaded by chksum_final+0x4 (ldr w24, [x2])" in text


def test_checksummed_bytes_that_changed_with_no_writer_on_the_cpu(tmp_path):
    """A byte the computation reads is not what the call's bytes held at
    entry and no store of the trace wrote it: another CPU or a device."""
    t = Tracer(x1=CALL["address"], x0=0x1111)
    t.step("__crc32c_le+0x88", "ldr x3, [x1]", x3=0x0100)
    t.step("__crc32c_le+0x94", "crc32cx w0, w0, x3", x0=0x9999)
    story = provenance.explain(t.doc(), {**CALL, "result": 0x9999}, symbols(tmp_path),
                               LAYOUT, [])
    assert story["explained"]
    assert story["writer"]["kind"] == "no cpu writer"
    assert story["writer"]["memory"] == "the checksummed bytes (offset 1)"
    assert story["inputs"]["misread"][0]["offset"] == 1
    text = walk.story_text(1, {"message": "m", "function": "f", "icount": 2000},
                           CALL, story, True)
    assert "none on this CPU" in text and "one vCPU here: a device" in text


def test_a_handler_that_writes_back_what_it_read_changed_nothing(tmp_path):
    """An interrupt handler reads a word the call left and stores the same
    value back: no value crossed, though the trace never saw the call
    store it."""
    t = Tracer(x19=0xffffff8001813800, sp=0xffffff8001813950)
    back = t.interrupt("chksum_final+0x8", "ldr w0, [x19, #8]")
    t.step("handler+0x0", "ldr w2, [x19, #8]", x2=0x77)
    t.step("handler+0x4", "str w2, [x19, #8]")
    t.eret(back)
    t.step("chksum_final+0x8", "ldr w0, [x19, #8]", pc=back, x0=0x77)
    story = provenance.explain(t.doc(), {**CALL, "result": 0x77}, symbols(tmp_path),
                               LAYOUT, [])
    assert not story["explained"]
    assert story["chain"][-1]["at"] == "chksum_final+0x8"


def test_a_writer_whose_bytes_the_trace_cannot_know_is_still_named(tmp_path):
    """A vector store's bytes are not in the trace (no vector registers):
    the writer is named, its values are '?', nothing fails."""
    stack = 0xffffff8001813800
    t = Tracer(x19=stack, x1=0x1234, sp=stack + 0x150)
    t.step("chksum_update+0x20", "str w1, [x19, #8]")
    back = t.interrupt("f+0x74", "ldr w0, [x19, #8]")
    t.step("kernel_neon_begin+0x40", "str q0, [x19]")
    t.eret(back)
    t.step("f+0x74", "ldr w0, [x19, #8]", pc=back, x0=0x5)
    story = provenance.explain(t.doc(), {**CALL, "result": 0x5}, symbols(tmp_path),
                               LAYOUT, [])
    assert story["explained"] and story["writer"]["at"] == "kernel_neon_begin+0x40"
    assert story["writer"]["after"] is None and story["read_value"] is None
    text = walk.story_text(1, {"message": "m", "function": "f", "icount": 2000},
                           CALL, story, True)
    assert "wrote     0xffffff8001813808 (the calling task's stack): 0x1234 -> ?" in text
