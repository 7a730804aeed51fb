#!/usr/bin/python3
"""Runs every benchmark and writes bench/RESULTS.md: the commit, the
machine, then each benchmark's Markdown section in turn.

A benchmark that fails stops the run with its one-line error, and the
previous RESULTS.md stays as it was (the file is replaced only whole).
Without --out, the result goes to stdout.  --only with --out updates just
those sections of the file (each marked with the commit it was measured
at) and keeps the others.  Sections titled "## By hand:" (figures timed
by hand, with their command and commit) are kept by a full run too.
"""

import argparse
import datetime
import os
import pathlib
import platform
import re
import subprocess
import sys
import tempfile

from common import PY, REPO
from common.progress import log

BENCHES = {
    "lab": ["bench.lab_bench"],
    "loader": ["bench.loader_bench"],
    "ttff": ["bench.ttff_bench"],
    "analysis": ["bench.analysis_bench"],
    "stock": ["bench.loader_bench", "--flavour", "stock", "--modes", "fallback",
              "--rates", "", "--seconds", "10"],
    # Debian's 6.12: the plan chkwin makes by itself (fexit, __irq_regs,
    # chksum_update by address) beside the 6.1-style fallback.
    "stock612": ["bench.loader_bench", "--flavour", "stock", "--stock-package", "6.12",
                 "--modes", "chkwin,fallback", "--rates", "", "--seconds", "10"],
    "stackscan": ["bench.stackscan_bench"],
    "windows": ["bench.windows_bench"],
    "event-cost": ["bench.event_cost"],
    "stock-scan": ["bench.stock_scan_bench"],
    # The interrupted pc: the kprobe against the stack where __irq_regs is
    # missing (6.1), and all three where it is there (6.12).
    "irq-pc": ["bench.irq_pc_bench"],
    "irq-pc-612": ["bench.irq_pc_bench", "--stock-package", "6.12",
                   "--methods", "irq_regs,kprobe,stack"],
    "peers": ["bench.peers"],
    # 20 s pieces: an icount pass takes seconds, and 5 s held 2-4 of them.
    "peers-icount": ["bench.peers", "--clock", "icount", "--seconds", "20"],
    "dose": ["bench.dose_bench"],
    "clock": ["bench.clock_bench"],
    "calibration": ["bench.calibration_bench"],
    "replay": ["bench.replay_bench"],
    "engine": ["bench.engine_bench"],
}


BY_HAND = "## By hand:"


def git(*args):
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True,
                          text=True).stdout.strip()


def machine():
    model = next((ln.split(":", 1)[1].strip() for ln in
                  pathlib.Path("/proc/cpuinfo").read_text().splitlines()
                  if ln.startswith("model name")), platform.machine())
    mem_kib = int(next(ln.split()[1] for ln in
                       pathlib.Path("/proc/meminfo").read_text().splitlines()
                       if ln.startswith("MemTotal:")))
    qemu = subprocess.run(["qemu-system-aarch64", "--version"], capture_output=True,
                          text=True).stdout.splitlines()[:1]
    return (f"{os.cpu_count()} x {model} ({platform.machine()}), "
            f"{mem_kib / 1048576:.0f} GiB, Linux {platform.release()}; "
            f"{qemu[0] if qemu else 'qemu-system-aarch64 not found'}, TCG, "
            "guests -M virt -cpu cortex-a72 -smp 2")


def commit():
    """HEAD's short hash, marked where the tree has uncommitted changes."""
    dirty = " (with uncommitted changes)" if git("status", "--porcelain",
                                                "--untracked-files=no") else ""
    return git("rev-parse", "--short", "HEAD") + dirty


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=pathlib.Path, help="file to replace (default: stdout)")
    ap.add_argument("--only", action="append", choices=sorted(BENCHES),
                    help="run only these benchmarks (repeatable)")
    args = ap.parse_args()
    head = commit()
    sections = []
    for name, cmd in BENCHES.items():
        if args.only and name not in args.only:
            continue
        log("bench", f"{name}: python3 -m {' '.join(cmd)}")
        proc = subprocess.run([PY, "-m", *cmd], capture_output=True, text=True, cwd=REPO)
        if proc.returncode != 0 or not proc.stdout.startswith("## "):
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            sys.exit(f"bench: error: {name} failed (nothing written): {last}")
        sections.append(proc.stdout.rstrip("\n"))
    old = args.out.read_text() if args.out and args.out.exists() else ""
    if args.only and old:
        text = update(old, sections, head)
    else:
        text = "\n\n".join([
            "# chkwin benchmark results",
            f"Commit {head}, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M}"
            " UTC, written by `make bench` (bench/results.py).",
            f"Machine: {machine()}.", *sections, *by_hand(old)]) + "\n"
    if not args.out:
        sys.stdout.write(text)
        return
    fd, tmpname = tempfile.mkstemp(dir=args.out.parent, prefix=".tmp-")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmpname, args.out)
    log("bench", f"wrote {args.out}")


def by_hand(old):
    """The sections of old that no benchmark writes (titled "## By hand:
    ...": figures timed by hand, each with its command and commit)."""
    return [p.rstrip("\n") for p in re.split(r"(?m)^(?=## )", old)
            if p.startswith(BY_HAND)]


def update(old, sections, commit):
    """old with each of sections in place of the one with its title (or at
    the end), marked with the commit it was measured at."""
    parts = re.split(r"(?m)^(?=## )", old.rstrip("\n") + "\n")
    for section in sections:
        title, body = section.split("\n", 1)
        marked = f"{title}\n\n(Measured again at commit {commit}.)\n{body}\n\n"
        at = [i for i, p in enumerate(parts) if p.split("\n", 1)[0] == title]
        if at:
            parts[at[0]] = marked
        else:
            parts[-1] = parts[-1].rstrip("\n") + "\n\n"
            parts.append(marked)
    return "".join(parts).rstrip("\n") + "\n"


if __name__ == "__main__":
    main()
