"""The conditions of a lab experiment: what guest/lab_demo.py boots and
analysis/experiment.py compares (and analysis/calibration.py simulates),
as analysis/documents.py's Conditions."""

from analysis.documents import Condition

# Failures are reported per million checksum calls.
PER = 1e6
# Condition kinds whose boots are replicates: their spread is the dispersion
# (the pilot's boots only plan the A/A comparison).
REPLICATED = ("counting", "dose", "control", "aa")


def is_control(c):
    """The block-boundary controls: gcc49-exact on the host clock, where
    only -singlestep lets an interrupt land in its window."""
    return c.window == "gcc49-exact" and c.clock == "host"


def condition(flavour, window, kind, width=1, singlestep=False, sample_hz=None,
              clock="host"):
    """One condition of the experiment; its name is its directory prefix.
    sample_hz: the sampler rate of a rate-dose condition; clock: the host's
    or icount (conditions of an icount experiment on the host clock are
    named -host)."""
    name = f"{flavour}-{window}" + (f"-w{width}" if width != 1 else "") + \
        ("-singlestep" if singlestep else "") + ("-recorded" if kind == "recorded" else "") + \
        (f"-F{sample_hz}" if kind == "rate" else "")
    return Condition(name=name, flavour=flavour, window=window, width=width,
                     singlestep=singlestep, kind=kind, clock=clock,
                     sample_hz=sample_hz if kind == "rate" else None)


def primary_window(clock):
    """The counting window: the listing's own on icount, where a timer
    interrupt can land between any two instructions; the loop of width 1
    on the host clock, where only block starts can be interrupted."""
    return "gcc49-exact" if clock == "icount" else "gcc49"


def conditions(flavours, clock, aa_width, recorded=True, controls=True, widths=(),
               rates=()):
    """The conditions, in a fixed order (the report's order): counting
    (window and off) for each flavour; on icount the positive control, a
    pilot and the A/A pair at aa_width; recorded boots, the host-clock
    controls of the listing, and the dose sweeps' conditions."""
    conds = []
    window = primary_window(clock)
    for flavour in flavours:
        conds.append(condition(flavour, window, "counting", clock=clock))
        conds.append(condition(flavour, "off", "counting", clock=clock))
    if clock == "icount":
        first = flavours[0]
        conds.append(condition(first, "gcc49", "control", clock=clock))
        for kind in ("pilot", "aa") if len(flavours) == 2 else ("pilot",):
            for flavour in flavours:
                c = condition(flavour, "gcc49", kind, width=aa_width, clock=clock)
                if kind == "pilot":
                    c.name += "-pilot"
                conds.append(c)
    if recorded:
        for flavour in flavours:
            conds.append(condition(flavour, window, "recorded", clock=clock))
    if controls:
        first = flavours[0]
        for singlestep in (False, True):
            c = condition(first, "gcc49-exact", "recorded", singlestep=singlestep)
            if clock == "icount":
                c.name += "-host"
            conds.append(c)
    for width in widths:
        if width != 1:
            conds.append(condition(flavours[0], "gcc49", "dose", width=width, clock=clock))
    for hz in rates:
        conds.append(condition(flavours[0], "gcc49", "rate", sample_hz=hz, clock=clock))
    return conds
