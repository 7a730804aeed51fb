"""loadgen builds for both architectures and does what it says."""

import pathlib
import struct
import subprocess

from kernels import REPO

WORKLOADS = REPO / "guest/workloads"


def make(out, *extra):
    subprocess.run(["make", "-s", "-C", str(WORKLOADS), f"OUT={out}", *extra],
                   check=True)
    return pathlib.Path(out) / "loadgen"


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


def test_aarch64_build_is_static(tmp_path):
    elf = make(tmp_path).read_bytes()
    assert elf[:4] == b"\x7fELF"
    assert struct.unpack_from("<H", elf, 18)[0] == 183          # EM_AARCH64
    phoff, = struct.unpack_from("<Q", elf, 32)
    phentsize, phnum = struct.unpack_from("<HH", elf, 54)
    types = [struct.unpack_from("<I", elf, phoff + i * phentsize)[0]
             for i in range(phnum)]
    assert 3 not in types                                         # PT_INTERP
