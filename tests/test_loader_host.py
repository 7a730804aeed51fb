"""The loader on the host: it builds, and its log code survives damage.

Only --help, bad flags and --read run here: BPF never loads into this
machine's kernel (the guest tests do that).
"""

import re
import struct
import subprocess

import pytest

from analysis import declared
from guest.host import loaderbuild

# No guest boots here, but building the loader needs the unpatched lab
# kernel's vmlinux.h (guest/host/loaderbuild.py), which make test-host
# does not build.
pytestmark = pytest.mark.guest

EM_AARCH64, EM_BPF = 183, 247
PT_INTERP = 3


@pytest.fixture(scope="module")
def built():
    return loaderbuild.build()


def elf_machine(path):
    head = path.read_bytes()[:64]
    assert head[:4] == b"\x7fELF", f"{path} is not ELF"
    return struct.unpack_from("<H", head, 18)[0]


def program_header_types(path):
    data = path.read_bytes()
    phoff, = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    return [struct.unpack_from("<I", data, phoff + i * phentsize)[0]
            for i in range(phnum)]


def test_bpf_object_is_bpf_with_every_program(built):
    obj = built / "chkwin.bpf.o"
    assert elf_machine(obj) == EM_BPF
    sections = subprocess.run(["llvm-objdump", "-h", str(obj)],
                              capture_output=True, text=True, check=True).stdout
    for sec in ("tp_btf/ext4_chksum_begin", "tp_btf/ext4_chksum_end",
                "kprobe/chksum_update", "kretprobe/chksum_update",
                "tp_btf/ext4_inode_csum_verify", "fexit/__ext4_iget",
                "kprobe/__ext4_iget", "kretprobe/__ext4_iget",
                "tp_btf/irq_handler_entry", "tp_btf/irq_handler_exit",
                "tp_btf/ipi_entry", "tp_btf/softirq_entry",
                "tp_btf/block_rq_issue", "tp_btf/block_rq_complete",
                "perf_event", ".BTF.ext"):
        assert sec in sections, sec


def test_loader_is_static_aarch64(built):
    binary = built / "aarch64" / "chkwin"
    assert elf_machine(binary) == EM_AARCH64
    assert PT_INTERP not in program_header_types(binary), "dynamically linked"


def test_logfile_unit_tests(built):
    proc = subprocess.run([str(built / "host" / "logfile_test")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "all checks passed" in proc.stdout


def test_help_has_examples(built):
    proc = subprocess.run([str(built / "host" / "chkwin"), "--help"],
                          capture_output=True, text=True)
    assert proc.returncode == 0
    assert "EXAMPLES:" in proc.stdout and "--sample-hz" in proc.stdout


@pytest.mark.parametrize("argv", [["--bogus"], ["-f", "xml"], ["-d", "-3"],
                                  ["1", "2", "3"], ["--cpu", "x"], ["-R", "some"],
                                  ["--history", "0"], ["--history", "65537"],
                                  ["--wakeup-kb", "-1"], ["--snapshot-on", "sometimes"],
                                  ["--snapshot-on", "window"], ["--windows"],
                                  ["--irq-pc", "exact"], ["-r", "x.log", "-o", "y.log"],
                                  ["--no-sample"]])
def test_bad_flags_fail_with_one_error_line(built, argv):
    """Bad usage, argp's own checks and chkwin's alike: exit 2, the first
    line on stderr says why."""
    proc = subprocess.run([str(built / "host" / "chkwin"), *argv],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stdout == ""
    first = proc.stderr.splitlines()[0]
    assert first.startswith("chkwin") and first.strip()


def test_every_hook_with_help_has_its_no_option(built):
    """The --no-NAME options come from bpf/chkwin.h's hook table: one per
    hook with help, underscores as dashes, none for the others."""
    proc = subprocess.run([str(built / "host" / "chkwin"), "--help"],
                          capture_output=True, text=True)
    assert proc.returncode == 0
    options = re.findall(r"^ +--(no-[\w-]+) +(.*)$", proc.stdout, re.M)
    assert options == sorted((f"no-{h.name.replace('_', '-')}", h.help)
                             for h in declared.HOOKS if h.help)


@pytest.mark.parametrize("text, msg", [
    (None, "no-such.windows: No such file or directory"),
    ("chkwin-windows 9\n", "line 1: not a windows file"),
    ("chkwin-windows 1\nw f+0x2 f+0x4\n", "line 2: w: 'f+0x2' is not"),
])
def test_a_bad_windows_file_is_refused_before_anything_is_probed(built, tmp_path, text, msg):
    """chkwin --windows reads the file first: a bad one is one line and
    exit 1 before the loader looks at the kernel (so on this host too,
    where no BPF may load)."""
    path = tmp_path / "no-such.windows"
    if text is not None:
        path.write_text(text)
    proc = subprocess.run([str(built / "host" / "chkwin"), "--dry-run", "--windows", str(path)],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("chkwin: error: ")
    assert msg in proc.stderr, proc.stderr
