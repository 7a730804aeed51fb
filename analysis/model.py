"""The failure model of an icount boot: predicted before measured.

Under QEMU's -icount shift=N every instruction takes tau = 2^N ns of guest
time, and a virtual-clock timer interrupt (tick, hrtimers, the sampler) is
taken before the first instruction that starts at or after its deadline.
An instruction boundary inside the window is fatal when a deadline falls in
the tau before it, so with the phase between timer and workload random a
checksum call fails with probability

    p = W * lambda_timer * tau  +  W_dev * lambda_device * tau

W is the number of fatal boundaries a call executes: every instruction
from the one after "mov sp, x29" to the load of desc.ctx.  For
gcc49-exact that is the load alone, W = 1.  For the loop of width w, each
pass runs the loop body (L instructions, counted from the kernel's
System.map: ext4_chksum_gcc49_window_start to _window_end) and then the
load: W = L * w + 1.  Device interrupts come from QEMU's other threads and
are taken where a translation block starts: never inside gcc49-exact's
single block (W_dev = 0); in the loop, one raised while any of the W
instructions of the release block or the passes runs is taken at a block
start inside the window (W_dev = W).  lambda is interrupts per guest second
(guest/interrupts.py); sleep=off skips idle time, and a periodic tick
arrives at the same rate idle or not.
"""

import math
import pathlib

from poisson import poisson_ci

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
    """(W for timer interrupts, W for device interrupts) of one call."""
    if window == "off":
        return 0, 0
    if window == "gcc49-exact":
        return 1, 0
    w = loop_insns * width + 1
    return w, w


def per_call(window, width, interrupts, shift, loop_insns=LOOP_INSNS):
    """Predicted failures per checksum call of a boot whose interrupt
    counts (guest/interrupts.py) are given, at icount shift."""
    tau = 2 ** shift * 1e-9
    seconds = interrupts["seconds"] * interrupts["cpus"]
    w_timer, w_dev = fatal_boundaries(window, width, loop_insns)
    return tau * (w_timer * interrupts["timer"] + w_dev * interrupts["device"]) / seconds


def ratio_to_model(measured, predicted, phi=1.0, conf=0.95):
    """measured / predicted failures with the interval of the measured
    count (exact Poisson, widened by the dispersion phi); the prediction's
    own error (interrupt counts in the tens of thousands) is left out."""
    if predicted <= 0:
        return math.nan, (math.nan, math.nan)
    lo, hi = poisson_ci(measured / phi, conf)
    return measured / predicted, (lo * phi / predicted, hi * phi / predicted)
