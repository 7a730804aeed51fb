#!/usr/bin/python3
"""What Slurm costs a boot, and how long a +-2% A/A answer takes on N nodes.

The same A/A boots (the unpatched lab kernel, the loop at width 16, 30
guest seconds, phase seeds 1..N) run through the boot runner on the local
engine and as a Slurm job array on a single-node Slurm of the bench's own
(guest/host/slurmlocal.py, default scheduler settings; or the cluster
SLURM_CONF names, --use-slurm-conf), both one boot a core.  The
scheduler's cost a task is the array's extra wall time times the slots
over the boots.  The projection for N nodes like this one takes the
measured boot and that cost, and the boots a +-2% A/A answer needs
(analysis/planning.py at the failures a boot measured here, dispersion 1
and 2, 90% power), in waves of one boot a core; the demo's pilot and its
one barrier at the look add two boots' time to each.
"""

import argparse
import math
import os
import pathlib
import shutil
import tempfile
import time

from bench.section import print_section
from analysis import calibration
from analysis import planning
from guest.host import bootrunner
from guest.host import lab_demo
from guest.host import run as run_py
from guest.host import slurmlocal
from guest.host.slurmengine import SlurmEngine

NODES = (1, 8, 64)
MARGIN = 0.02


def aa_boots(artifacts, top, seeds, seconds):
    kernel = artifacts.kernel("unpatched")
    return [bootrunner.Boot(
        top / f"aa-{seed}",
        ["--flavour", "unpatched", "--kernel", str(kernel), "--initramfs",
         str(artifacts.initramfs), "--disk", str(artifacts.disk), "--scenario", "inode-loop",
         "--duration", str(seconds), "--no-lab-windows", "--clock", "icount", "--shift", "4",
         "--phase-seed", str(seed), "--append",
         "ext4.chksum_window=gcc49 ext4.chksum_window_width=16"],
        1024, run_py.watchdog_seconds(seconds, False, "icount", 4),
        (kernel, artifacts.initramfs, artifacts.disk)) for seed in seeds]


def series(engine, boots):
    """(wall seconds of the whole series, its Outcomes)."""
    engine.check(boots)
    start = time.monotonic()
    try:
        outcomes = bootrunner.run(engine, boots, retries=0)
    finally:
        engine.close()
    wall = time.monotonic() - start
    bad = [o for o in outcomes if o.returncode != 0]
    if bad:
        raise SystemExit(f"engine_bench: error: boot {bad[0].boot.out.name}: {bad[0].reason}")
    return wall, outcomes


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boots", type=int, default=12, help="boots a series (default 12)")
    ap.add_argument("--seconds", type=int, default=30, help="guest seconds a boot")
    ap.add_argument("--use-slurm-conf", action="store_true",
                    help="the cluster SLURM_CONF names instead of a private one")
    args = ap.parse_args()
    if args.boots < 2 or args.seconds < 1:
        ap.error("--boots at least 2, --seconds at least 1")
    slots = os.cpu_count() or 1
    artifacts = lab_demo.Artifacts(["unpatched"])
    rows = []
    cluster = None
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        seeds = range(1, args.boots + 1)
        local_wall, local = series(bootrunner.LocalEngine(slots), aa_boots(
            artifacts, tmp / "local", seeds, args.seconds))
        try:
            if not args.use_slurm_conf:
                cluster = pathlib.Path(tempfile.mkdtemp(prefix="chkwin-slurm-"))
                os.environ["SLURM_CONF"] = str(slurmlocal.start(cluster))
            (tmp / "slurm").mkdir()
            slurm_wall, slurm = series(SlurmEngine(tmp / "slurm" / "work", jobs=slots),
                                       aa_boots(artifacts, tmp / "slurm", seeds, args.seconds))
        finally:
            if cluster:
                slurmlocal.stop(cluster)
                shutil.rmtree(cluster)
    boot_wall = sum(o.wall_seconds for o in local + slurm) / (2 * args.boots)
    per_task = max(0.0, (slurm_wall - local_wall) * slots / args.boots)
    per_boot = sum(o.status.checksum_failures_total for o in local + slurm) / (2 * args.boots)
    for name, wall in (("local", local_wall), ("slurm", slurm_wall)):
        rows.append((f"{name} engine: {args.boots} boots, {slots} at a time",
                     f"{wall:.0f} s wall; {args.boots / wall * 3600:.0f} boots an hour"))
    rows.append(("a boot's own wall time (boottask.py's, both engines)",
                 f"{boot_wall:.1f} s for {args.seconds} guest seconds; "
                 f"{per_boot:.0f} failures a boot"))
    rows.append(("Slurm's cost a task: (array wall - local wall) x slots / boots",
                 f"{per_task:.1f} s"))
    for phi in (1.0, 2.0):
        need = planning.needed(per_boot, phi, MARGIN, calibration.PLAN_POWER)
        boots = 2 * need
        for nodes in NODES:
            waves = math.ceil(boots / (nodes * slots))
            minutes = waves * (boot_wall + per_task) / 60
            rows.append((f"+-2% A/A at dispersion {phi:g}: {need} boots a flavour, "
                         f"on {nodes} node{'s' if nodes > 1 else ''} of {slots} cores",
                         f"{minutes:.1f} min ({waves} waves of "
                         f"{boot_wall + per_task:.1f} s)"))
    print_section("The boot runner's engines: local and Slurm, and a projection",
                  __doc__.split("\n\n", 1)[1].strip().replace("\n", " "), rows)


if __name__ == "__main__":
    main()
