#!/usr/bin/python3
"""The experiment's figures: failures per guest minute and per million
checksum calls at each window width (untraced, the demo's boots) and at
each sampler rate (under the loader), both dose-response slopes, and the
wall time of the sweep.  It runs the sweep `make dose` runs
(guest/lab_demo.py --widths --rates) and reads its experiment.json with
analysis/experiment.py."""

import argparse
import pathlib
import tempfile
import time

from analysis import decisions
from analysis import documents
from analysis import doses
from analysis import experiment
from bench import runs
from bench.section import print_section
from common import PY, REPO


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--widths", default="1,2,4,8,16")
    ap.add_argument("--rates", default="0,1000,2000,4000",
                    help="sampler rates (Hz) of the interrupt-rate sweep; empty for none")
    ap.add_argument("--boots", type=int, default=2, help="boots per width")
    ap.add_argument("--boot-seconds", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        start = time.monotonic()
        cmd = [PY, str(REPO / "guest/lab_demo.py"), "--flavours", "unpatched",
               "--widths", args.widths, "--rates", args.rates,
               "--budget", "60", "--dose-boots", str(args.boots),
               "--boots", str(args.boots),
               "--boot-seconds", str(args.boot_seconds), "--record-seconds", "0",
               "--no-controls", "--seed", str(args.seed), "--results", tmp]
        runs.run(cmd, "the sweep failed", "no output")
        wall = time.monotonic() - start
        res = experiment.Results(documents.load(pathlib.Path(tmp) / "latest"))
    rows = []
    for r in res.condition_rows:
        if r["boots"]:
            rows.append((f"{r['condition']}: failures per guest minute; per 1M calls "
                         f"(95% CI); boots", f"{r['per_minute']:.3g}; "
                         f"{r['per_million']:.3g} ({r['ci'][0]:.3g}-{r['ci'][1]:.3g}); "
                         f"{r['boots']} ({' '.join(map(str, r['per_boot']))} failures)"))
    for which, how in doses.DOSES.items():
        d = res.dose(which)
        if not d:
            continue
        rows.append((f"{which} dose: the fit (decisions.dose_line)", decisions.dose_line(d)))
        rows.append((f"{which} dose: points (x: per 1M calls, residual)", ", ".join(
            f"{p['x']:.3g}: {p['per_million']:.3g}, {p['residual']:+.3g}"
            for p in d["points"])))
    rows.append(("wall time of the sweep", f"{wall / 60:.1f} min"))
    print_section("Dose-response: window width and interrupt rate",
                  f"Boots of {args.boot_seconds} guest seconds of the demo's default "
                  f"clock and workload (icount shift 4, inode-loop, a phase seed a "
                  f"boot) on the unpatched kernel, {args.boots} per width (untraced; "
                  f"the loop of width w has 2w + 1 fatal boundaries) and per sampler "
                  f"rate (under the loader, no log kept; x is the arrivals per second "
                  f"it counted, device irqs and sampler ticks), interleaved in rounds "
                  f"shuffled with seed {args.seed} (`make dose` runs the same); failures "
                  "are the kernel's console lines of every checksum kind, calls "
                  "ext4.chksum_calls.", rows)


if __name__ == "__main__":
    main()
