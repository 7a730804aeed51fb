"""The guest programs (loadgen, treewalk, perf-arrivals) build for both
architectures and do what they say."""

import pathlib
import struct
import subprocess

import pytest

from common import REPO

WORKLOADS = REPO / "guest/workloads"


def make(out, *extra, program="loadgen"):
    subprocess.run(["make", "-s", "-C", str(WORKLOADS), f"OUT={out}", *extra],
                   check=True)
    return pathlib.Path(out) / program


# perf script -F event,ip,sym,symoff --show-lost-events, as perf 6.1 prints
# it: two irq chains into the emulated code, one into the idle loop, a
# chain whose frame after el1h_64_irq is user space, and lost samples.
PERF_SCRIPT = """\
irq:irq_handler_entry: \n\
\tffffffc008155f10 handle_irq_event+0x44\n\
\tffffffc008010e64 el1h_64_irq+0x64\n\
\tffffffc0082ab22c ext4_chksum_gcc49+0x60\n\
\tffffffc0082984a0 ext4_chksum+0x5c\n\
ext4:ext4_chksum_end: \n\
\tffffffc0082984c0 ext4_chksum+0x7c\n\
irq:irq_handler_entry: \n\
\tffffffc008010e64 el1h_64_irq+0x64\n\
\tffffffc0080c0010 do_idle+0x10\n\
PERF_RECORD_LOST lost 12\n\
ext4:ext4_chksum_end: \n\
irq:irq_handler_entry: \n\
\tffffffc008155f10 handle_irq_event+0x44\n\
\tffffffc008010e64 el1h_64_irq+0x64\n\
\tffffffc0082ab22c ext4_chksum_gcc49+0x60\n\
irq:irq_handler_entry: \n\
\tffffffc008155f10 handle_irq_event+0x44\n\
\tffffffc008011000 el0t_64_irq+0x14\n\
\t0000aaaab0001000 [unknown]\n\
ext4:ext4_chksum_end: \n\
"""


def test_perf_arrivals_reads_perf_script(tmp_path):
    prog = make(tmp_path, "CC=gcc", program="perf-arrivals")
    proc = subprocess.run([str(prog)], input=PERF_SCRIPT, capture_output=True,
                          text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["lost 12", "calls 3",
                                        "arrival ext4_chksum_gcc49+0x60 2"]
    proc = subprocess.run([str(prog), "extra"], input="", capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert proc.stderr.startswith("perf-arrivals: error: ")


def test_host_build_runs_and_reports(tmp_path):
    loadgen = make(tmp_path, "CC=gcc")
    proc = subprocess.run([str(loadgen), "-d", "1", "-g", "2"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    fields = dict(kv.split("=") for kv in proc.stdout.split()[1:])
    assert fields["groups"] == "2" and int(fields["messages"]) > 0


def test_bad_flag_is_one_line_and_nonzero(tmp_path):
    loadgen = make(tmp_path, "CC=gcc")
    proc = subprocess.run([str(loadgen), "-g", "zero"], capture_output=True,
                          text=True)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1


def _tree(root):
    root.mkdir()
    for d in range(3):
        sub = root / f"d{d}"
        sub.mkdir()
        for f in range(20):
            (sub / f"f{f}").write_text("x")
    return root


def test_treewalk_spins_by_its_seed(tmp_path):
    """Every entry is visited each pass; the same seed draws the same spins,
    another seed others; no seed, no spin."""
    walk = make(tmp_path, "CC=gcc", program="treewalk")
    tree = _tree(tmp_path / "tree")

    def run(*args):
        proc = subprocess.run([str(walk), "-c", "3", *args, str(tree)],
                              capture_output=True, text=True, timeout=30)
        assert proc.returncode == 0, proc.stderr
        out = dict(line.split(": ") for line in proc.stdout.splitlines())
        assert out["passes"] == "3"
        assert out["entries"] == str(3 * 64)         # 3 dirs, 60 files, the top
        return int(out["spun"])

    assert run() == 0
    a, b, c = (run("-p", seed, "-e", "8", "-n", "1000") for seed in ("5", "5", "6"))
    assert a == b != c
    # 24 draws from [0, 1000)
    assert 0 < a < 24 * 1000 and 0 < c < 24 * 1000


def test_treewalk_bad_flags_are_one_line(tmp_path):
    walk = make(tmp_path, "CC=gcc", program="treewalk")
    for args in (["-t", "x", "/"], ["-t", "1"], ["/"], ["-t", "1", "-p", "3", "/"],
                 ["-t", "1", "-q", "/"], ["-t"]):
        proc = subprocess.run([str(walk), *args], capture_output=True, text=True)
        assert proc.returncode == 2, args
        assert proc.stderr.startswith("treewalk: error: "), args
        assert proc.stderr.count("\n") == 1, args


@pytest.mark.parametrize("program", ["loadgen", "treewalk", "perf-arrivals"])
def test_aarch64_build_is_static(tmp_path, program):
    elf = make(tmp_path, program=program).read_bytes()
    assert elf[:4] == b"\x7fELF"
    assert struct.unpack_from("<H", elf, 18)[0] == 183          # EM_AARCH64
    phoff, = struct.unpack_from("<Q", elf, 32)
    phentsize, phnum = struct.unpack_from("<HH", elf, 54)
    types = [struct.unpack_from("<I", elf, phoff + i * phentsize)[0]
             for i in range(phnum)]
    assert 3 not in types                                         # PT_INTERP
