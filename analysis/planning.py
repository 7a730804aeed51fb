"""The plan of an icount experiment, fixed before its first counting boot:
what each comparison should show, and with what power at the boots it gets.

A pilot boot of each flavour (the A/A settings, phase seeds of its own,
left out of the verdicts) gives two things: failures a boot at the A/A
width, measured and pooled over the flavours (blind to their ratio), and
the calls and interrupts from which the failure model (model.py) predicts
every other condition's failures a boot before any of them runs.  The
dispersion is 1 (Poisson boots) unless a previous run is named, whose
spread is then used (never below 1: planning on under-dispersion would
promise power the run may not have).

Power is not the normal approximation's: it is the share of experiments,
simulated from the model the verdicts assume and analysed as the run will
be, that reach the verdict (calibration.power); the A/A boots are the
fewest that reach the wanted power (calibration.boots_for).
"""

import math

from analysis import model

def dispersion_text(phi, df, source):
    """The dispersion a plan is made at, and where it comes from."""
    if source is None:
        return "1, assumed (Poisson boots; --plan-from names a previous run to plan on its spread)"
    if phi < 1:
        return f"1, at least Poisson ({source} {phi:.2f} on {df} df)"
    return f"{phi:.2f} ({source}, on {df} df)"


def predicted_per_boot(cond, pilot_boots, shift, loop_insns):
    """Failures a boot of cond, by the model, from the pilot's calls and
    interrupt counts (averaged over its boots)."""
    return sum(b["calls"] * model.per_call(cond["window"], cond["width"], b["interrupts"],
                                           shift, loop_insns)
               for b in pilot_boots) / len(pilot_boots)


def describe(comparison):
    """One comparison of the plan as the demo prints it."""
    c = comparison
    means = " against ".join(f"{m:.3g}" for m in c["per_boot"])
    ratio = f", ratio {c['ratio']:.3g}" if c["ratio"] is not None and \
        math.isfinite(c["ratio"]) else ""
    return (f"{c['what']}: {c['boots']} boots a condition, {means} failures a boot "
            f"({c['source']}{ratio}), {c['power'] * 100:.1f}% power to find it "
            f"\"{c['verdict']}\"")
