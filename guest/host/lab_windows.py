"""make windows: from a static scan to attributed failures, end to end.

stackscan scans the unpatched lab kernel's vmlinux and writes the windows
it finds (docs/windows.md); one boot on instruction time runs the gcc49
emulation under chkwin --windows with that file (as every boot of a lab
kernel does: guest/host/kernelwindows.py), and chkwin knows no window by
a built-in name; the analysis then attributes every checksum failure the
kernel printed to an interrupt arrival in a window stackscan found.
Everything goes to results/windows-<timestamp>/: the windows file, the
boot (log.bin, console.log, status.json) and windows.json.
Exit 0 when every failure is attributed, 1 otherwise.
"""

import argparse
import json
import pathlib
import sys

from analysis import chkwinlog
from analysis import correlate
from analysis import fsgeom
from analysis import windows
from common import REPO
from common.cache import one_line, quietly
from common.errors import die
from guest.host import kbuild
from guest.host import kernelwindows
from guest.host import run
from guest.host.resultsdir import new_run_dir


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=30,
                    help="instruction-time seconds of the gcc49 boot (default 30)")
    ap.add_argument("--phase-seed", type=int, default=5,
                    help="the boot's phase seed: the same seed, the same failures")
    ap.add_argument("--results", type=pathlib.Path, default=REPO / "results",
                    help="where windows-<timestamp>/ goes")
    args = ap.parse_args()
    if args.seconds < 1:
        ap.error("--seconds must be at least 1")
    with quietly():
        kdir = kbuild.kernel_dir("unpatched")
    out = new_run_dir(args.results, "windows-")
    with one_line():
        wfile = kernelwindows.copy_to(kdir / "vmlinux", out)
    found = windows.read(wfile)
    print(f"windows: stackscan found {len(found)} in {kdir / 'vmlinux'}: "
          + ", ".join(w.name for w in found), flush=True)
    boot = out / "boot"
    status = run.boot(run.BootSpec(
        flavour="unpatched", scenario="record", clock="icount",
        phase_seed=args.phase_seed, duration=args.seconds, out=boot,
        append="ext4.chksum_window=gcc49 chkwin.workload=inode-loop chkwin.loader=-q"))
    if status.reason:
        die(f"the boot failed: {status.reason}")
    log = chkwinlog.read(boot / "log.bin")
    corr = correlate.Correlation(log, fsgeom.find(boot / "log.bin"))
    printed = status.checksum_failures_total
    per_window = {name: log.counter(f"watch.irq.{name}") for name, _, _ in log.watched()}
    watched = [name for name, _, _ in log.watched()]
    result = {"windows": [w.name for w in found], "watched": watched,
              "failures_printed": printed, "failures_logged": len(corr.failures),
              "attributed": corr.attributed(), "arrivals_per_window": per_window,
              "checksum_calls": log.counter("chksum")}
    (out / "windows.json").write_text(json.dumps(result, indent=1) + "\n")
    print(f"windows: {printed} checksum failures printed, {len(corr.failures)} logged, "
          f"{corr.attributed()} after an arrival in a window stackscan found; "
          "arrivals per window: " + ", ".join(f"{k} {v}" for k, v in per_window.items()))
    print(f"windows: {out}")
    ok = printed > 0 and corr.attributed() == len(corr.failures) == printed \
        and sorted(watched) == sorted(result["windows"])
    if not ok:
        print("windows: error: not every failure is attributed to a window stackscan found",
              file=sys.stderr)
    return 0 if ok else 1
