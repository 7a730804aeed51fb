"""The windows file of a lab kernel: what stackscan finds in its vmlinux.

The lab watches no window by a built-in name: every boot of a lab kernel
gets the windows stackscan finds in that kernel (docs/windows.md), which
on the gcc49 emulation are its two ranges, and the guest's chkwin watches
them (guest/scenarios/_lib.sh passes --windows).  The file and stackscan's
report are cached, keyed by the vmlinux (path, size, mtime), the stackscan
binary and the allow list, so a boot costs a lookup, not a scan.

    /usr/bin/python3 guest/kernelwindows.py VMLINUX   # prints the cache entry
"""

import argparse
import pathlib
import shutil
import subprocess

from analysis.stackscan import builder as stackscan
from common import REPO
from common.cache import Key, cache_root, cached
from common.errors import die

ALLOW = REPO / "analysis/stackscan/allow-lab.txt"
# The name a boot's copy has in the guest's /tmp/host and in its results.
GUEST_NAME = "lab.windows"


def cached_scan(vmlinux):
    """The cache entry (a directory: windows, stackscan.txt) of vmlinux,
    scanned on a miss."""
    vmlinux = pathlib.Path(vmlinux).resolve()
    st = vmlinux.stat()
    scanner = stackscan.build()
    key = Key("lab-windows")
    key.add("vmlinux", f"{vmlinux} {st.st_size} {st.st_mtime_ns}")
    key.add("stackscan", str(scanner))
    key.add("allow", ALLOW.read_bytes())

    def make(tmp):
        tmp.mkdir()
        proc = subprocess.run([str(scanner), "--allow", str(ALLOW),
                               "--windows-out", str(tmp / "windows"), str(vmlinux)],
                              capture_output=True, text=True)
        (tmp / "stackscan.txt").write_text(proc.stdout)
        if proc.returncode == 2 or not (tmp / "windows").is_file():
            die(f"stackscan {vmlinux} failed: "
                f"{(proc.stderr.strip().splitlines() or ['no message'])[-1]}")

    entry, _ = cached(cache_root() / "lab-windows" / key.hexdigest(), make,
                      "lab windows", ready=lambda d: (d / "windows").is_file())
    return entry


def copy_from(entry, out, name=GUEST_NAME):
    """The windows file of a cache entry as out/name, stackscan's report
    beside it (name.stackscan.txt); returns out/name."""
    shutil.copyfile(pathlib.Path(entry) / "windows", out / name)
    shutil.copyfile(pathlib.Path(entry) / "stackscan.txt", out / f"{name}.stackscan.txt")
    return out / name


def copy_to(vmlinux, out, name=GUEST_NAME):
    """The windows of vmlinux as out/name (scanned on a cache miss)."""
    return copy_from(cached_scan(vmlinux), out, name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("vmlinux", type=pathlib.Path)
    args = ap.parse_args()
    if not args.vmlinux.is_file():
        die(f"{args.vmlinux}: no such file")
    print(cached_scan(args.vmlinux))
