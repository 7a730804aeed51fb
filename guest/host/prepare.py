#!/usr/bin/python3
"""Build everything the lab boots from, at once, before the first boot.

    /usr/bin/python3 guest/prepare.py [--what lab|all]

`lab` is what make demo boots (the two kernel flavours, initramfs, test
disk, loader); `all` adds what the guest tests boot besides (the Debian
root filesystem, the stock Debian kernels, the tools disk, stackscan).

Each product is its builder's cache entry, so a product already built
costs a hash, and a second prepare (or a test that needs a product while
prepare builds it) waits on the entry's lock and then hits.  The builders
run side by side because their costs differ in kind: the kernels take the
cores, the root filesystem's first stage and the stock kernels are mostly
downloads and unpacking, and its second stage one emulated process at a
time; the loader waits for the unpatched kernel on its lock.
The patched flavour is built after the unpatched one, which its tree
starts from (guest/host/kbuild.py).  Prints each product's time at the end.
"""

import argparse
import concurrent.futures
import time

from common.cache import one_line
from common.errors import die
from common.progress import log
from guest.host import (initramfs, kbuild, loaderbuild, rootfs, stockkernel,
                        testdisk, toolsdisk)
from analysis.stackscan import builder as stackscan

# The stock kernels the guest tests boot: the default 6.1 series and
# backports' 6.12, generic and PREEMPT_RT (tests/test_stock.py).
STOCK_SERIES = (None, "6.12", "6.12-rt")


def kernels():
    for flavour in ("unpatched", "patched"):
        kbuild.kernel_dir(flavour)


def products(what):
    """{name: builder}; the builders of `lab` first."""
    lab = {"kernels": kernels, "initramfs": initramfs.build,
           "test disk": testdisk.build, "loader": loaderbuild.build}
    if what == "lab":
        return lab
    more = {"root filesystem": rootfs.image, "tools disk": toolsdisk.build,
            "stackscan": stackscan.build}
    for series in STOCK_SERIES:
        more[f"stock kernel {series or '6.1'}"] = \
            lambda series=series: stockkernel.build(series)
    return {**lab, **more}


def build_all(builders):
    """Run every builder in a thread of its own; [(name, seconds, error)]."""
    def timed(fn):
        start = time.monotonic()
        fn()
        return time.monotonic() - start

    start = time.monotonic()
    done = []
    with concurrent.futures.ThreadPoolExecutor(len(builders)) as pool:
        futures = {pool.submit(timed, fn): name for name, fn in builders.items()}
        for future in concurrent.futures.as_completed(futures):
            name = futures[future]
            try:
                done.append((name, future.result(), None))
            except BaseException as e:  # die() in a builder is SystemExit
                done.append((name, time.monotonic() - start,
                             str(e) if not isinstance(e, SystemExit) else "see its error above"))
    return done


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--what", choices=("lab", "all"), default="all",
                    help="lab: what make demo boots; all (default): what "
                         "the guest tests boot too")
    args = ap.parse_args()
    with one_line():
        done = build_all(products(args.what))
    for name, seconds, error in sorted(done, key=lambda d: d[1]):
        log("prepare", f"{name}: {seconds:.0f} s" + (f" (failed: {error})" if error else ""))
    failed = [name for name, _, error in done if error]
    if failed:
        die(f"{', '.join(failed)} failed (the errors above say why)")
    return 0
