"""The failure model of an icount boot: predicted before measured.

Under QEMU's -icount shift=N every instruction takes tau = 2^N ns of guest
time, and a virtual-clock timer interrupt (tick, hrtimers, the sampler) is
taken before the first instruction that starts at or after its deadline.
An instruction boundary inside the window is fatal when a deadline falls in
the tau before it, so with the phase between timer and workload random a
checksum call fails with probability

    p = W * lambda_timer * tau

W is the number of fatal boundaries a call executes: every instruction
from the one after "mov sp, x29" to the load of desc.ctx.  For
gcc49-exact that is the load alone, W = 1.  For the loop of width w, each
pass runs the loop body (L instructions, counted from the kernel's
System.map: ext4_chksum_gcc49_window_start to _window_end) and then the
load: W = L * w + 1.

Device interrupts (virtio completions) add nothing.  They are taken where
a translation block starts, so never inside gcc49-exact's single block;
and under icount QEMU 7.2 runs TCG round-robin with the iothread lock
held, so the main loop raises them only when the vCPU has stopped, which
is at a timer deadline: they land where a timer interrupt has just
landed.  Measured: with a term W * lambda_device * tau for the loop, the
width-16 A/A boots of a demo gave measured/predicted 0.96 (0.93-0.99) and
0.93 (0.90-0.96) at about 3,100 failures each; without it, about 1.0.

lambda is interrupts per second of task time (guest/host/interrupts.py): the
interrupts that arrived while the CPU was not idle (the periodic tick goes
on in idle, at the same rate), over guest time less idle and less hardirq
and softirq time.  A tick's handler runs from its own deadline on, so the
task code between two ticks spans the period less the handler's time, and
deadlines fall on task instructions at 1 / (P - H), not 1 / P.

The model also assumes a deadline is equally likely to land on any task
instruction.  Each lands P/tau - H task instructions after the last (H:
the handler's instructions, about 3,500 here), and the walker's phase
spins do not make that position uniform at every shift: on the same ten
seeds the width-16 loop measured 1.00-1.015 of the prediction at shift 4
(two kernel builds, with and without an extra disk), 1.04 at shift 5 and
0.93 at shift 6, where the handler is 12% and 21% of the period
(bench/RESULTS.md, "the model at width 16, by shift").  That resonance is
not modelled; the lab runs shift 4, and the model check claims agreement
only within +-10% (verdict.MODEL_MARGIN).

The model assumes the checksum code runs in a task whose share of the
ticks is its share of task time.  A second CPU-bound task breaks that: on
one CPU, inode-load's loadgen (whose pipe ping-pong sleeps and wakes)
leaves the walker to be preempted by ticks, so ticks land in the walker
more often than its share, and the loop windows failed 15-20% above the
prediction; the walker alone (inode-loop) fits.  Hence the icount lab
runs inode-loop.
"""

import math
import pathlib

from analysis.poisson import normal_quantile, poisson_ci

# The loop body of patch 0002 (subs, b.ne) when no System.map says otherwise.
LOOP_INSNS = 2


def loop_instructions(system_map):
    """Instructions of one pass of the emulated window's loop, from the
    labels in System.map; None when the map lacks them."""
    addr = {}
    for line in pathlib.Path(system_map).read_text(errors="replace").splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[2] in ("ext4_chksum_gcc49_window_start",
                                              "ext4_chksum_gcc49_window_end"):
            addr[fields[2]] = int(fields[0], 16)
    if len(addr) != 2:
        return None
    return (addr["ext4_chksum_gcc49_window_end"] - addr["ext4_chksum_gcc49_window_start"]) // 4


def fatal_boundaries(window, width, loop_insns=LOOP_INSNS):
    """W: the fatal instruction boundaries one call executes."""
    if window == "off":
        return 0
    if window == "gcc49-exact":
        return 1
    return loop_insns * width + 1


def rates(interrupts):
    """(lambda_timer, lambda_device): interrupts that arrived while the CPUs
    were not idle, per second of task time (guest/host/interrupts.py counts)."""
    busy = 1 - interrupts["idle_seconds"] / (interrupts["seconds"] * interrupts["cpus"])
    return (busy * interrupts["timer"] / interrupts["task_seconds"],
            busy * interrupts["device"] / interrupts["task_seconds"])


def per_call(window, width, interrupts, shift, loop_insns=LOOP_INSNS):
    """Predicted failures per checksum call of a boot whose interrupt
    counts are given, at icount shift."""
    return 2 ** shift * 1e-9 * fatal_boundaries(window, width, loop_insns) \
        * rates(interrupts)[0]


def ratio_to_model(measured, predicted, phi=1.0, conf=0.95, predicted_rel_var=0.0):
    """measured / predicted failures with its interval: the exact Poisson
    interval of the measured count widened by the dispersion phi, and, on
    the log scale in quadrature, the prediction's own relative variance
    (lambda is counted, not known)."""
    if predicted <= 0:
        return math.nan, (math.nan, math.nan)
    lo, hi = poisson_ci(measured / phi, conf)
    lo, hi = lo * phi, hi * phi
    if predicted_rel_var > 0:
        z = normal_quantile((1 + conf) / 2) * math.sqrt(predicted_rel_var)
        if lo > 0:
            lo = measured * math.exp(-math.hypot(math.log(measured / lo), z))
        hi = max(measured, 0.5) * math.exp(math.hypot(math.log(hi / max(measured, 0.5)), z))
    return measured / predicted, (lo / predicted, hi / predicted)


# An extrapolation, not a measurement: a Cortex-A72 at 2 GHz retiring about
# one instruction a cycle, the timer at Debian's HZ=250 with or without a
# thousand device interrupts a second (on hardware every interrupt can land
# between any two instructions), and checksum calls a second from a lightly
# used machine (a few cold inodes a second, five calls each) to the
# reproducers' cold-cache loops.
HARDWARE = {"insn_ns": 0.5, "interrupts_per_s": (250, 1250),
            "calls_per_s": (("light use, ~10 cold inodes/s", 50),
                            ("busy file server, ~1,000 cold inodes/s", 5_000),
                            ("drop_caches + find | xargs md5sum loop", 250_000))}


def hardware_rows(aa_failures):
    """(load, interrupts/s, mean time between failures in s, time to
    decide the A/A comparison in s) for the HARDWARE cases; aa_failures:
    failures a flavour the A/A plan needs."""
    rows = []
    for what, calls in HARDWARE["calls_per_s"]:
        for lam in HARDWARE["interrupts_per_s"]:
            mtbf = 1 / (calls * lam * HARDWARE["insn_ns"] * 1e-9)
            rows.append((what, lam, mtbf, mtbf * aa_failures))
    return rows


def duration(seconds):
    """A duration in the largest unit that keeps it above 1."""
    for unit, size in (("years", 365.25 * 86400), ("days", 86400), ("h", 3600),
                       ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.3g} s"
