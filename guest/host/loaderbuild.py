#!/usr/bin/python3
"""Build the chkwin loader (BPF object, static aarch64 binary, host build).

The BPF object is compiled against the unpatched lab kernel's vmlinux.h
(CO-RE relocates it on other kernels).  Outputs are cached under
$CHKWIN_CACHE/loader/<key>, the key covering bpf/, loader/, the C unit
tests, that vmlinux.h and the compilers' versions.

    /usr/bin/python3 guest/loaderbuild.py [--print-dir]
"""

from common import REPO
from common.cache import builder_main, Key, cache_root, cached
from common.errors import die, run_or_die
from common.progress import tool_output
from guest.host import kbuild

SOURCES = [REPO / "bpf", REPO / "loader", REPO / "tests" / "c"]
TOOLS = (["clang", "--version"], ["bpftool", "version"],
         ["aarch64-linux-gnu-gcc", "--version"], ["gcc", "--version"])
OUTPUTS = ("aarch64/chkwin", "host/chkwin", "host/logfile_test",
           "chkwin.bpf.o")


def tool_versions():
    lines = []
    for cmd in TOOLS:
        out = run_or_die(cmd, f"{cmd[0]} (is it installed? make deps)").stdout
        lines.append(out.splitlines()[0] if out else cmd[0])
    return "\n".join(lines)


def build():
    """Return the output directory, building on a cache miss."""
    kdir, _ = kbuild.build("unpatched", REPO / "kernel-patches", kbuild.JOBS)
    vmlinux_h = kdir / "vmlinux.h"
    key = Key("loader").add("tools", tool_versions())
    key.add_file(vmlinux_h)
    for top in SOURCES:
        for path in sorted(p for p in top.rglob("*") if p.is_file()):
            key.add("path:" + str(path.relative_to(REPO)), path.read_bytes())

    def make_loader(tmp):
        tmp.mkdir()
        run_or_die(["make", "-C", str(REPO / "loader"), f"OUT={tmp}",
                    f"VMLINUX_H={vmlinux_h}", "all"],
                   "building the loader (make -C loader)", stdout=tool_output())
        for f in OUTPUTS:
            if not (tmp / f).is_file():
                die(f"make -C loader produced no {f}")

    outdir, _ = cached(cache_root() / "loader" / key.hexdigest(), make_loader,
                       "loader", ready=lambda d: all((d / f).is_file()
                                                     for f in OUTPUTS))
    return outdir


def main():
    builder_main(build, __doc__, "--print-dir", "the output directory (with the unpatched kernel it needs)")


if __name__ == "__main__":
    main()
