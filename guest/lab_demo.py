#!/usr/bin/python3
"""The lab experiment: {unpatched, patched} x {window off, gcc49}.

Each cell boots its kernel, runs the inode-heavy loop beside loadgen for
--duration guest seconds and counts genuine "iget: checksum invalid"
errors.  Every run's console, results and command line are kept under
results/<timestamp>/<cell>/; results/latest points at the newest.
"""

import argparse
import json
import pathlib
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
CELLS = [(f, w) for f in ("unpatched", "patched") for w in ("off", "gcc49")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=int, default=60)
    ap.add_argument("--smp", type=int, default=2)
    ap.add_argument("--mem", type=int, default=1024)
    ap.add_argument("--results", type=pathlib.Path, default=REPO / "results")
    args = ap.parse_args()
    top = args.results / time.strftime("%Y%m%d-%H%M%S")
    top.mkdir(parents=True)
    rows = []
    for n, (flavour, window) in enumerate(CELLS, 1):
        out = top / f"{flavour}-{window}"
        print(f"demo: run {n}/{len(CELLS)}: {flavour}, window {window}, "
              f"{args.duration} s guest time", flush=True)
        proc = subprocess.run(
            ["/usr/bin/python3", str(REPO / "guest/run.py"), "--flavour",
             flavour, "--scenario", "inode-load", "--duration",
             str(args.duration), "--smp", str(args.smp), "--mem",
             str(args.mem), "--append", f"ext4.chksum_window={window}",
             "--out", str(out)], stderr=subprocess.PIPE, text=True)
        if proc.returncode != 0:
            print(proc.stderr.strip(), file=sys.stderr)
            sys.exit(f"demo: error: run {flavour}/{window} failed; "
                     f"results so far are in {top}")
        status = json.loads((out / "status.json").read_text())
        rows.append((flavour, window, status["checksum_invalid"],
                     status["guest_uptime"]))
    latest = args.results / "latest"
    latest.unlink(missing_ok=True)
    latest.symlink_to(top.name)
    print(f"\n{'flavour':<10} {'window':<7} {'failures':>8} {'uptime s':>9}")
    for flavour, window, fails, uptime in rows:
        print(f"{flavour:<10} {window:<7} {fails:>8} {uptime or 0:>9.1f}")
    (top / "summary.json").write_text(json.dumps(
        [dict(zip(("flavour", "window", "failures", "guest_uptime"), r))
         for r in rows], indent=2) + "\n")
    print(f"\nresults: {top}")


if __name__ == "__main__":
    main()
