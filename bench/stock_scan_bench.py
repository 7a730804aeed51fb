#!/usr/bin/python3
"""stackscan over every Debian arm64 kernel flavour, Image and modules,
then chkwin --windows on each.

For each package (6.1 and 6.12; generic, -rt and -cloud): the whole
`Image`, placed by a System.map made from the booted kernel's kallsyms
(guest/stocksymbols.py), and every module the package
ships (.ko, .ko.xz or .ko.zst, decompressed first), each module a
stackscan process, as many at once as the host has cores.  The figures:
time, functions and instructions, and every finding by name, for the
triage in bench/RESULTS.md.  Goal: all of one kernel in under 60 s.
Then one boot of each kernel under chkwin --windows with the windows
stackscan found, or where it found none, windows over the idle path:
arrivals per window per million interrupts.
"""

import argparse
import concurrent.futures
import json
import lzma
import os
import pathlib
import subprocess
import sys
import tempfile
import time

from analysis import chkwinlog
from analysis import windows
from analysis.documents import BootStatus
from analysis.stackscan import builder as stackscan_builder
from bench import runs
from bench.section import print_section
from common.cache import cache_root, quietly
from common.progress import log
from guest.host import stockkernel
from guest.host import stocksymbols

PACKAGES = ("6.1", "6.1-rt", "6.1-cloud", "6.12", "6.12-rt", "6.12-cloud")
GOAL_S = 60


def scan(stackscan, *args):
    """stackscan's JSON report of one file; None for a module of data
    alone (tables, firmware glue), which has no function to scan."""
    proc = subprocess.run([stackscan, "--json", *map(str, args)], capture_output=True,
                          text=True)
    if proc.returncode == 2 and proc.stderr.rstrip().endswith("names no functions"):
        return None
    if proc.returncode not in (0, 1):
        sys.exit(f"stock_scan_bench: error: stackscan {args[-1]}: {proc.stderr.strip()}")
    return json.loads(proc.stdout)


def modules_of(deb, into):
    """Every module of the .deb, decompressed, under into."""
    subprocess.run(["dpkg-deb", "-x", str(deb), str(into)], check=True)
    out = []
    for path in sorted(into.rglob("*.ko*")):
        if path.name.endswith(".ko"):
            out.append(path)
        elif path.name.endswith(".ko.xz"):
            plain = path.with_name(path.name[:-3])
            plain.write_bytes(lzma.decompress(path.read_bytes()))
            out.append(plain)
        elif path.name.endswith(".ko.zst"):
            subprocess.run(["zstd", "-q", "-d", str(path)], check=True)
            out.append(path.with_name(path.name[:-4]))
    return out


def findings(rep, where):
    return [f"{where}{f['function']}+{f['offset']:#x} ({f['access']}, "
            f"{f['below_sp_min']}..{f['below_sp_max']} below sp, "
            + (f"after {f['release']['insn']})" if f.get("release") else "no release)")
            for f in rep["findings"]]


def predicted_idle(image, symbols):
    """The idle windows (windows.idle_windows' names) just after an
    unmask: where an idle CPU should take its interrupts."""
    return {f"{tag}.{off:#x}" for name, tag in windows.IDLE_FUNCTIONS.items()
            for off in windows.after_unmask(image, symbols, name)}


def watch(spec, kdir, sysmap, found, tmp):
    """chkwin --windows on the kernel, one 15 s rk-loop boot: the windows
    stackscan found, or where it found none, hand-picked ones over the idle
    path (windows.idle_windows).  (kind and the plan's way to the
    interrupted pc, {window: arrivals per million interrupts}, interrupts)."""
    wfile = tmp / f"{spec}.windows"
    if found:
        sys.exit(f"stock_scan_bench: error: {spec}: stackscan found windows; watch them "
                 "with stackscan --windows-out (this bench does not yet)")
    symbols = windows.symbols_from(sysmap)
    wfile.write_text(windows.idle_windows(symbols))
    out = tmp / f"{spec}-boot"
    runs.boot(["--flavour", "stock", "--stock-package", spec, "--scenario", "record",
               "--duration", "15", "--guest-file", str(wfile), "--out", str(out), "--append",
               "chkwin.workload=rk-loop chkwin.loader=-q,-R,counts,--windows,"
               f"/tmp/host/{wfile.name}"], f"the {spec} boot failed")
    result = BootStatus.read(out / "status.json").chkwin
    irqs = result["irq_arrivals"]
    per_million = {name: n * 1e6 / irqs for name, n in result["watched_arrivals"].items()}
    log = chkwinlog.read(out / "log.bin")
    shares = [f"{int(log.trailer['count.irq.unknown']) / irqs:.2%} unknown"]
    missed = log.trailer.get("count.irq_pc_stack", chkwinlog.NOT_ATTACHED)
    if missed != chkwinlog.NOT_ATTACHED:
        shares.append(f"{int(missed) / irqs:.2%} missed by the kprobe, pc from the stack")
    predicted = predicted_idle(kdir / "Image", symbols)
    tags = set(windows.IDLE_FUNCTIONS.values())
    idle = {k: v for k, v in per_million.items() if k.split(".")[0] in tags}
    there = sum(v for k, v in idle.items() if k in predicted) / (sum(idle.values()) or 1)
    shares.append(f"predicted from the Image (after msr daifclr): {', '.join(sorted(predicted))}"
                  f", {there:.1%} of the idle functions' arrivals there")
    return (f"idle path (no stackscan window), irq `{log.header['mode.irq']}` "
            f"({'; '.join(shares)})", per_million, irqs)


def one_kernel(stackscan, spec, tmp):
    with quietly():
        kdir = stockkernel.build(spec)
        sysmap = stocksymbols.system_map(kdir, spec)
    package = kdir.name.rsplit("-", 1)[0]
    deb, = (cache_root() / "debs").glob(f"{package}_*_arm64.deb")
    kos = modules_of(deb, tmp / spec)
    t = time.monotonic()
    image = scan(stackscan, "--system-map", sysmap, kdir / "Image")
    image_s = time.monotonic() - t
    t = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        reps = list(pool.map(lambda ko: scan(stackscan, ko), kos))
    modules_s = time.monotonic() - t
    found = findings(image, "")
    for ko, rep in zip(kos, reps):
        found += findings(rep, ko.name[:-3] + ":") if rep else []
    code = [r for r in reps if r]
    watched = watch(spec, kdir, sysmap, found, tmp)
    return {"package": package, "image_s": image_s, "modules_s": modules_s, "watched": watched,
            "modules": len(kos), "data_only": len(kos) - len(code),
            "functions": image["functions"] + sum(r["functions"] for r in code),
            "instructions": image["instructions"] + sum(r["instructions"] for r in code),
            "image_functions": image["functions"], "findings": found}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packages", default=",".join(PACKAGES),
                    help=f"comma-separated series (default {','.join(PACKAGES)})")
    args = ap.parse_args()
    with quietly():
        stackscan = str(stackscan_builder.build())
    rows = []
    with tempfile.TemporaryDirectory(prefix="stock-scan-") as tmp:
        for spec in args.packages.split(","):
            log("stock_scan_bench", spec)
            k = one_kernel(stackscan, spec, pathlib.Path(tmp))
            total = k["image_s"] + k["modules_s"]
            rows.append((f"`{k['package']}`",
                         f"Image {k['image_functions']:,} functions in {k['image_s']:.1f} s; "
                         f"{k['modules']:,} modules ({k['data_only']} of data alone) in "
                         f"{k['modules_s']:.1f} s; "
                         f"{k['functions']:,} functions, {k['instructions']:,} instructions "
                         f"in all, {total:.1f} s "
                         f"({'within' if total < GOAL_S else 'OVER'} the {GOAL_S} s goal); "
                         f"findings: {'; '.join(k['findings']) or 'none'}"))
            kind, per_million, irqs = k["watched"]
            top = sorted(per_million.items(), key=lambda kv: -kv[1])
            rows.append((f"`{k['package']}`: chkwin --windows, {kind}",
                         f"{irqs:,} interrupts in 15 s of rk-loop; arrivals per million "
                         "interrupts: " + (", ".join(f"{name} {v:,.0f}" for name, v in top)
                                           or "none in any window")))
    print_section("stock-scan",
                  "stackscan over the whole `Image` (placed by the booted kernel's "
                  "kallsyms) and every module of each Debian arm64 kernel package, "
                  f"modules {os.cpu_count()} at once.", rows)


if __name__ == "__main__":
    main()
