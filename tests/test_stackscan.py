"""stackscan (analysis/stackscan): accesses below sp after a frame release.

Unit tests on small objects assembled here, then the lab's kernels (the
gcc49 emulation's window is found, nothing else unexplained) and Debian's
stock kernel (its modules are scanned to the end; its Image has no
symbols to scan by).
"""

import gzip
import json
import pathlib
import subprocess

import pytest

from tests.kernels import kernel_dir

from analysis import windows
from analysis.stackscan import builder
from common import PY, REPO
from common.cache import cache_root

# Boots two-vCPU guests on the host clock: the hostclock mark.
pytestmark = [pytest.mark.guest, pytest.mark.hostclock]

ALLOW_LAB = REPO / "analysis/stackscan/allow-lab.txt"

# The posted listing of GCC 4.9.4's miscompiled ext4_chksum() (the 2021
# linux-arm-kernel thread; not in this tree); the leading nop puts
# each instruction at the offset the listing gives it.
FACTS = """
    nop
    stp  x29, x30, [sp, #-32]!
    mov  w3, w1
    mov  x1, x2
    mov  x29, sp
    str  x19, [sp, #16]
    sub  sp, sp, #0x180
    add  x19, sp, #0x7f
    ldr  w2, [x0]
    and  x19, x19, #0xffffffffffffff80
    cmp  w2, #0x4
    b.ne 1f
    mov  w4, w3
    mov  x3, x0
    str  w4, [x19, #128]
    mov  x0, x19
    str  x3, [x19]
    bl   crypto_shash_update
    cbnz w0, 2f
    mov  sp, x29
    ldr  w0, [x19, #128]
    ldr  x19, [sp, #16]
    ldp  x29, x30, [sp], #32
    ret
1:  brk  #0x800
2:  bl   ext4_chksum_part
"""

# The same function compiled correctly: the load comes before the release.
CORRECT = FACTS.replace("""    mov  sp, x29
    ldr  w0, [x19, #128]
""", """    ldr  w0, [x19, #128]
    mov  sp, x29
""")

# Released with add sp: x1 pointed 16 bytes into a 32-byte frame.
ADD_SP = """
    sub  sp, sp, #32
    add  x1, sp, #16
    str  x0, [x1]
    add  sp, sp, #32
    ldr  x0, [x1]
    ret
"""

# Released by a post-indexed ldp; x19 (kept across the call) still points
# into the frame.
LDP_POST = """
    stp  x29, x30, [sp, #-48]!
    mov  x29, sp
    add  x19, sp, #32
    str  xzr, [x19]
    bl   fill
    ldp  x29, x30, [sp], #48
    ldr  x0, [x19, #8]
    ret
"""

# After the release, accesses above sp: the caller's frame and sp itself.
ABOVE_SP = """
    stp  x29, x30, [sp, #-32]!
    mov  x29, sp
    add  x3, sp, #48
    ldp  x29, x30, [sp], #32
    ldr  x0, [x3]
    ldr  x1, [sp]
    ret
"""

# The release and the late load on both sides of a simple branch.
BRANCHES = """
    sub  sp, sp, #64
    mov  x4, sp
    cbz  x0, 1f
    str  x0, [x4, #8]
    b    2f
1:  str  xzr, [x4, #8]
2:  add  sp, sp, #64
    ldr  x0, [x4, #8]
    ret
"""

# The pointer differs between the two paths (frame vs. argument): a join
# forgets it, so nothing is reported.
JOIN_UNKNOWN = """
    sub  sp, sp, #64
    mov  x4, x1
    cbz  x0, 1f
    mov  x4, sp
1:  add  sp, sp, #64
    ldr  x0, [x4]
    ret
"""

# A pointer made from the frame pointer, used after the frame went.
FP_COPY = """
    stp  x29, x30, [sp, #-64]!
    mov  x29, sp
    add  x20, x29, #32
    str  xzr, [x20]
    ldp  x29, x30, [sp], #64
    ldr  x0, [x20]
    ret
"""

# A variable-length array makes sp unknown; mov sp, x29 brings it back,
# and the fixed part of the frame is still above sp: nothing to report.
VLA = """
    stp  x29, x30, [sp, #-32]!
    mov  x29, sp
    add  x19, x29, #16
    sub  sp, sp, x0
    mov  x2, sp
    str  xzr, [x2]
    mov  sp, x29
    ldr  x0, [x19]
    ldp  x29, x30, [sp], #32
    ret
"""

# Cases reached only through a jump table get the state at the br: the
# late load in case 2 is found.
JUMP_TABLE = """
    sub  sp, sp, #32
    mov  x5, sp
    adr  x6, 1f
    add  x6, x6, x0, lsl #2
    br   x6
1:  b    2f
    b    3f
2:  add  sp, sp, #32
    ldr  x0, [x5]
    ret
3:  mov  x0, #0
    add  sp, sp, #32
    ret
"""

# A tail call after the release: code after it that nothing reaches does
# not inherit x19, which points below sp there.
TAIL_CALL = """
    stp  x29, x30, [sp, #-32]!
    add  x19, sp, #16
    ldp  x29, x30, [sp], #32
    br   x1
    ldr  x0, [x19]
    ret
"""


def function(name, body):
    return (f"    .globl {name}\n    .type {name}, %function\n{name}:\n"
            f"{body}    .size {name}, .-{name}\n")


def assemble(tmp_path, name, functions):
    src = tmp_path / f"{name}.s"
    obj = tmp_path / f"{name}.o"
    src.write_text("    .text\n" + "".join(function(n, b)
                                           for n, b in functions.items()))
    subprocess.run(["aarch64-linux-gnu-as", "-o", str(obj), str(src)],
                   check=True)
    return obj


@pytest.fixture(scope="module")
def stackscan():
    return str(builder.build())


def scan(stackscan, *args):
    """Run stackscan --json; return (exit status, report)."""
    proc = subprocess.run([stackscan, "--json", *map(str, args)],
                          capture_output=True, text=True)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def where(report):
    return sorted((f["function"], f["offset"]) for f in report["findings"])


def test_facts_listing(stackscan, tmp_path):
    rc, rep = scan(stackscan, assemble(tmp_path, "facts",
                                       {"ext4_chksum": FACTS}))
    assert rc == 1
    assert where(rep) == [("ext4_chksum", 0x50)]
    f = rep["findings"][0]
    assert f["access"] == "ldr w0, [x19, #0x80]"
    assert f["release"]["offset"] == 0x4c
    assert f["release"]["insn"] == "mov sp, x29"
    # x19 = align128(entry sp - 0x1a0 + 0x7f) + 0x80, sp = entry sp - 32
    assert (f["below_sp_min"], f["below_sp_max"]) == (144, 256)


def test_variants_exactly_where_expected(stackscan, tmp_path):
    obj = assemble(tmp_path, "variants", {
        "add_sp": ADD_SP, "ldp_post": LDP_POST, "above_sp": ABOVE_SP,
        "branches": BRANCHES, "join_unknown": JOIN_UNKNOWN,
        "jump_table": JUMP_TABLE, "tail_call": TAIL_CALL, "fp_copy": FP_COPY,
        "vla": VLA, "correct": CORRECT})
    rc, rep = scan(stackscan, obj)
    assert rc == 1
    assert where(rep) == [("add_sp", 16), ("branches", 28), ("fp_copy", 20),
                          ("jump_table", 32), ("ldp_post", 24)]
    by = {f["function"]: f for f in rep["findings"]}
    assert by["add_sp"]["release"]["insn"] == "add sp, sp, #0x20"
    assert (by["add_sp"]["below_sp_min"], by["add_sp"]["below_sp_max"]) \
        == (16, 16)
    assert by["ldp_post"]["release"]["offset"] == 20
    assert by["ldp_post"]["release"]["insn"] == "ldp x29, x30, [sp], #0x30"
    assert by["ldp_post"]["below_sp_min"] == 8
    assert by["branches"]["release"]["offset"] == 24
    assert by["branches"]["below_sp_min"] == 56
    assert by["jump_table"]["release"]["offset"] == 28
    assert by["jump_table"]["below_sp_min"] == 32
    assert by["fp_copy"]["release"]["offset"] == 16
    assert by["fp_copy"]["below_sp_min"] == 32
    assert rep["functions"] == 10 and rep["undecodable"] == 0


def test_correct_epilogue_exit_0(stackscan, tmp_path):
    obj = assemble(tmp_path, "correct", {"ext4_chksum": CORRECT})
    proc = subprocess.run([stackscan, str(obj)], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("0 findings (0 allowed) in 1 functions, "
                                  "26 instructions")


def test_text_output(stackscan, tmp_path):
    obj = assemble(tmp_path, "facts", {"ext4_chksum": FACTS})
    proc = subprocess.run([stackscan, str(obj)], capture_output=True,
                          text=True)
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[0] == (
        "ext4_chksum+0x50 (.text 0x50): ldr w0, [x19, #0x80]: 144..256 "
        "bytes below sp; sp raised at +0x4c by mov sp, x29")


def test_allow_list(stackscan, tmp_path):
    obj = assemble(tmp_path, "facts", {"ext4_chksum": FACTS})
    allow = tmp_path / "allow.txt"
    allow.write_text("# why each is fine\next4_chksum+0x50 the listing\n"
                     "not_there stale entry\n")
    rc, rep = scan(stackscan, "--allow", allow, obj)
    assert rc == 0
    assert rep["findings"] == []
    assert [(f["offset"], f["reason"]) for f in rep["allowed"]] == \
        [(0x50, "the listing")]
    assert rep["unused_allow"] == ["not_there"]
    allow.write_text("ext4_chksum\n")
    proc = subprocess.run([stackscan, "--allow", str(allow), str(obj)],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr == f"stackscan: error: {allow}:1: ext4_chksum " \
        "has no reason\n"


def test_bad_input(stackscan, tmp_path):
    x86 = tmp_path / "x86.o"
    (tmp_path / "x86.s").write_text(".text\nf: ret\n")
    subprocess.run(["as", "-o", str(x86), str(tmp_path / "x86.s")],
                   check=True)
    text = tmp_path / "notes.txt"
    text.write_text("not a kernel\n" * 10)
    image = tmp_path / "Image"
    image.write_bytes(bytes(56) + b"ARM\x64" + bytes(64))
    cases = [
        ([tmp_path / "missing"], "missing: No such file or directory"),
        ([text], "notes.txt: not an ELF file or arm64 Image"),
        ([x86], "x86.o: not an aarch64 ELF file (e_machine 62)"),
        ([image], "Image: a raw arm64 Image has no symbols; give "
         "--system-map"),
        (["--frobnicate", x86], "unknown option --frobnicate (see --help)"),
        ([], "no KERNEL given (see --help)"),
        ([x86, "--allow"], "--allow needs a file"),
        (["--system-map", tmp_path / "no.map", image],
         "no.map: No such file or directory"),
    ]
    for args, msg in cases:
        proc = subprocess.run([stackscan, *map(str, args)],
                              capture_output=True, text=True)
        assert proc.returncode == 2, args
        assert proc.stdout == ""
        assert len(proc.stderr.splitlines()) == 1
        assert proc.stderr.startswith("stackscan: error: ")
        assert proc.stderr.rstrip().endswith(msg), proc.stderr


def windows_of(kdir):
    """The emulated windows from System.map, [(mov sp, x29, the load)]: the
    gcc49 one (release, loop, load) and the exact listing's pair."""
    syms = {}
    for line in (kdir / "System.map").read_text().splitlines():
        addr, _, name = line.split()
        syms[name] = int(addr, 16)
    return [(syms["ext4_chksum_gcc49_window_start"] - 4,
             syms["ext4_chksum_gcc49_window_end"]),
            (syms["ext4_chksum_gcc49_exact_window"] - 4,
             syms["ext4_chksum_gcc49_exact_window"])]


def assert_only_window(rep, kdir):
    assert [(f["function"], f["address"], f["release"]["address"],
             f["release"]["insn"]) for f in rep["findings"]] == \
        [("ext4_chksum_gcc49", load, release, "mov sp, x29")
         for release, load in windows_of(kdir)]
    assert all(f["reason"] for f in rep["allowed"])
    assert rep["unused_allow"] == []


@pytest.mark.parametrize("flavour", ["unpatched", "patched"])
def test_lab_vmlinux(stackscan, flavour):
    kdir = kernel_dir(flavour)
    rc, rep = scan(stackscan, "--allow", ALLOW_LAB, kdir / "vmlinux")
    assert rc == 1
    assert_only_window(rep, kdir)
    assert rep["functions"] > 15000


def test_lab_windows_file_names_exactly_the_emulated_windows(stackscan, tmp_path):
    """--windows-out on the lab kernel: a windows file of two windows,
    each from the instruction after mov sp, x29 to the load, which placed
    by the kernel's symbols are exactly the debug patch's labelled ranges
    (gcc49: window_start..window_end; gcc49-exact: the one load)."""
    kdir = kernel_dir("unpatched")
    out = tmp_path / "lab.windows"
    proc = subprocess.run([stackscan, "--allow", str(ALLOW_LAB), "--windows-out", str(out),
                           str(kdir / "vmlinux")], capture_output=True, text=True)
    assert proc.returncode == 1 and "2 windows written" in proc.stderr, proc.stderr
    ws = windows.read(out)
    placed = windows.place(ws, windows.symbols_from(kdir / "System.map"))
    assert [(first, last) for _, first, last in placed] == \
        [(release + 4, load) for release, load in windows_of(kdir)]
    assert all(windows.location(w.why["release"]).offset == w.first.offset - 4
               and w.why["access"] == str(w.last) for w in ws)
    assert not list(tmp_path.glob("*.tmp"))


def test_lab_image_by_system_map(stackscan, tmp_path):
    """Raw Image, gzip-compressed Image and stripped vmlinux, each with
    System.map: the same window is found."""
    kdir = kernel_dir("unpatched")
    vmlinuz = tmp_path / "vmlinuz"
    vmlinuz.write_bytes(gzip.compress((kdir / "Image").read_bytes(), 1))
    stripped = tmp_path / "vmlinux.stripped"
    subprocess.run(["aarch64-linux-gnu-objcopy", "--strip-all",
                    str(kdir / "vmlinux"), str(stripped)], check=True)
    proc = subprocess.run([stackscan, str(stripped)], capture_output=True,
                          text=True)
    assert proc.returncode == 2
    assert proc.stderr.endswith("no symbol table (stripped); give "
                                "--system-map\n")
    for kernel in (kdir / "Image", vmlinuz, stripped):
        rc, rep = scan(stackscan, "--allow", ALLOW_LAB, "--system-map",
                       kdir / "System.map", kernel)
        assert rc == 1, kernel
        assert_only_window(rep, kdir)


@pytest.fixture(scope="module")
def stock():
    out = subprocess.run([PY, str(REPO / "guest/stockkernel.py"),
                          "--print-dir"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return pathlib.Path(out.stdout.strip())


def test_stock_modules(stackscan, stock):
    """Debian's ext4 and the other modules the guest loads: scanned to the
    end; today none has a finding."""
    for ko in sorted((stock / "modules").glob("*.ko")):
        rc, rep = scan(stackscan, ko)
        assert rep["kind"] == "module"
        assert rep["functions"] > 0
        print(ko.name, rep["functions"], "functions,",
              len(rep["findings"]), "findings")
        assert (rc == 1) == bool(rep["findings"])
        if ko.name == "ext4.ko":
            assert rep["functions"] > 1000
            assert rep["findings"] == []


def test_stock_image_has_no_symbols(stackscan, stock, tmp_path):
    """Debian strips its Image and ships a placeholder System.map (the
    real one is in the 800 MB -dbg package): a one-line error each."""
    proc = subprocess.run([stackscan, str(stock / "Image")],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.endswith("a raw arm64 Image has no symbols; give "
                                "--system-map\n")
    package = stock.name.rsplit("-", 1)[0]
    release = (stock / "release").read_text().strip()
    debs = sorted((cache_root() / "debs").glob(f"{package}_*_arm64.deb"))
    tar = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(debs[-1])],
                         capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tmp_path),
                    f"./boot/System.map-{release}"], input=tar, check=True)
    placeholder = tmp_path / "boot" / f"System.map-{release}"
    assert "dbg" in placeholder.read_text()
    proc = subprocess.run([stackscan, "--system-map", str(placeholder),
                           str(stock / "Image")], capture_output=True,
                          text=True)
    assert proc.returncode == 2
    assert proc.stderr == (f"stackscan: error: {placeholder}: no _text "
                           "symbol to place the Image by (an empty "
                           "placeholder System.map?)\n")


def test_stock_image_by_its_own_kallsyms(stackscan, stock):
    """The stock Image placed by a System.map made from the booted kernel's
    /proc/kallsyms (guest/stocksymbols.py): scanned to the end, its
    findings reported."""
    out = subprocess.run([PY, str(REPO / "guest/stocksymbols.py")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    sysmap = pathlib.Path(out.stdout.strip())
    assert sysmap.parent == stock
    rc, rep = scan(stackscan, "--system-map", sysmap, stock / "Image")
    print(rep["functions"], "functions,", rep["instructions"], "instructions,",
          len(rep["findings"]), "findings:",
          [f["function"] for f in rep["findings"]])
    assert (rc == 1) == bool(rep["findings"])
    # The kallsyms functions were placed (84% of their addresses stay
    # separate functions: code that runs on into the next symbol is scanned
    # as one), and what was decoded is code: a misplaced Image decodes as
    # noise; 0.8% is LSE and pointer-authentication instructions that
    # capstone 4 does not know.
    starts = {ln.split()[0] for ln in sysmap.read_text().splitlines()
              if ln.split()[1] in "tTwW"}
    assert rep["functions"] >= len(starts) * 0.8
    assert rep["undecodable"] < rep["instructions"] * 0.02
