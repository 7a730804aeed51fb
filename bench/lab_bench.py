#!/usr/bin/python3
"""Lab figures: build times, cache-hit time, boot-to-init, verify rate.

Prints a Markdown section; each figure names the command that produced it.
"""

import argparse
import json
import pathlib
import re
import subprocess
import sys
import tempfile
import time

from bench.section import print_section
from common import PY, REPO

FLAVOURS = ("unpatched", "patched")


def timed(cmd):
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"bench: error: {' '.join(cmd)} failed: "
                 f"{proc.stderr.strip().splitlines()[-1:]}")
    return time.monotonic() - start, proc.stdout


def boot(flavour, scenario, duration, window, out):
    timed([PY, str(REPO / "guest/run.py"), "--flavour", flavour, "--scenario",
           scenario, "--duration", str(duration), "--append",
           f"ext4.chksum_window={window}", "--out", str(out)])
    return (out / "console.log").read_text(errors="replace")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=int, default=30,
                    help="guest seconds of each verify-rate run")
    args = ap.parse_args()
    duration = args.duration
    rows = []
    for flavour in FLAVOURS:
        cmd = [PY, str(REPO / "guest/kbuild.py"), "--flavour", flavour,
               "--print-dir"]
        seconds, out = timed(cmd)
        meta = json.loads((pathlib.Path(out.strip()) / "build.json").read_text())
        rows.append((f"{flavour}: last real build", f"{meta['build_seconds']} s",
                     f"`guest/kbuild.py --flavour {flavour}` (its build.json)"))
        rows.append((f"{flavour}: cache hit", f"{seconds:.2f} s",
                     f"`guest/kbuild.py --flavour {flavour} --print-dir`"))
    with tempfile.TemporaryDirectory() as tmp:
        for flavour in FLAVOURS:
            console = boot(flavour, "lab-check", 1, "off", pathlib.Path(tmp) / flavour)
            m = re.search(r"^\[\s*(\d+\.\d+)\] Run /init as init process", console, re.M)
            rows.append((f"{flavour}: boot to init (guest uptime)",
                         f"{float(m.group(1)):.2f} s" if m else "not seen",
                         f"`guest/run.py --flavour {flavour} --scenario lab-check`"))
            for window in ("off", "gcc49"):
                out = pathlib.Path(tmp) / f"{flavour}-{window}"
                console = boot(flavour, "verify-rate", duration, window, out)
                verified = int(re.search(r"^verified: (\d+)", console, re.M).group(1))
                rows.append((f"{flavour}, window {window}: inodes verified/s",
                             f"{verified / duration:.0f}",
                             f"`guest/run.py --flavour {flavour} --scenario verify-rate "
                             f"--duration {duration} --append ext4.chksum_window={window}`"))
    print_section("Lab", "Kernel builds (from each build's build.json), cache hits, "
                  "boot and the rate of inode checksum verifications with no tracer "
                  "(counted by the ring buffer's own statistics).", rows)


if __name__ == "__main__":
    main()
