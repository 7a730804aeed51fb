"""One record boot on instruction time under chkwin --prog-stats.

The kernel's BPF statistics give each program's runs and run time in
guest nanoseconds; on the icount clock those are instructions times
2^shift, so a run's cost is the same in every boot.  The benches that
price programs (windows_bench, event_cost) boot through here.
"""

from analysis.documents import BootStatus
from bench import runs


def boot(out, what, *, flavour, window, loader, shift, seconds, run_args=()):
    """The closing record (with "programs") of one phase-seeded inode-loop
    boot; loader: chkwin's options, commas for spaces; exits with one line
    naming what on failure."""
    runs.boot(["--flavour", flavour, "--scenario", "record", *run_args, "--clock", "icount",
               "--shift", str(shift), "--phase-seed", "1", "--duration", str(seconds),
               "--out", str(out), "--append",
               f"ext4.chksum_window={window} chkwin.workload=inode-loop "
               f"chkwin.loader=-q,{loader},--prog-stats"], f"boot {what}")
    result = BootStatus.read(out / "status.json").chkwin
    if not result or not result.get("programs"):
        runs.fail(f"boot {what}", "no closing record with program statistics")
    return result


def instructions(result, prog, shift):
    """Guest instructions a run of prog, or None if it never ran."""
    p = result["programs"].get(prog)
    return p["ns"] / p["runs"] / 2 ** shift if p and p["runs"] else None
