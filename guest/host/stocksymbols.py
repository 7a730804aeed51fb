#!/usr/bin/python3
"""The System.map of Debian's stock kernel (guest/stockkernel.py), made
from the kernel itself: Debian ships an empty placeholder (the real one
is in the 800 MB -dbg package), so the kernel is booted once with nokaslr
(the kallsyms scenario, through guest/host/run.py's boot()) and its
/proc/kallsyms kept as `System.map` in the kernel's directory.

    /usr/bin/python3 guest/stocksymbols.py [--package NAME]

prints the path of that System.map.  A module of its own, above both
run.py and stockkernel.py: run.py boots the stock kernel stockkernel.py
unpacks, and this boots run.py."""

import argparse
import pathlib
import re
import tempfile

from common.cache import cached
from common.errors import die
from guest.host import run
from guest.host import stockkernel


def system_map(kdir, package):
    """kdir/System.map, made from the booted kernel's (package's) kallsyms
    if missing (a cache entry: two tests that need it at once boot once)."""
    def make(tmp):
        with tempfile.TemporaryDirectory() as scratch:
            out = pathlib.Path(scratch) / "run"
            status = run.boot(run.BootSpec(
                flavour="stock", stock_package=stockkernel.resolve(package),
                scenario="kallsyms", duration=1, append="nokaslr", out=out))
            if status.reason:
                die(f"the kallsyms boot of the stock kernel failed: {status.reason}")
            lines = (out / "log.bin").read_text().splitlines()
        # Without KALLSYMS_ALL kallsyms starts at _stext; the Image starts at
        # _text, one SEGMENT_ALIGN (64 KiB) below it in arm64's vmlinux.lds.S
        # (so in the lab kernels' System.map too).
        stext = [ln.split()[0] for ln in lines if ln.endswith(" T _stext")]
        if not stext:
            die("the stock kernel's kallsyms has no _stext symbol")
        lines.insert(0, f"{int(stext[0], 16) - 0x10000:016x} T _text")
        # _einittext, an end marker typed T, is the last symbol kallsyms has:
        # as a function it would run on through the init data to the Image's end.
        lines = [re.sub(r" T _einittext$", " D _einittext", ln) for ln in lines]
        tmp.write_text("".join(ln + "\n" for ln in lines))

    return cached(kdir / "System.map", make, "stockkernel",
                  ready=lambda p: p.is_file() and p.stat().st_size > 0)[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--package", help="the stock kernel's package or series, as "
                    "guest/stockkernel.py --package takes it (default: 6.1, generic)")
    args = ap.parse_args()
    print(system_map(stockkernel.build(args.package), args.package))
