"""The prose of an experiment's report: what the lab cannot show, the
design paragraph with the plan, and the notes beside its tables, from the
record (analysis/documents.py) and its statistics (analysis/experiment.py's
Results)."""

from analysis import planning

LIMITS = (
    "What this lab cannot show: QEMU's TCG on an x86 host is not a weakly "
    "ordered CPU.  QEMU 7.2 translates dmb oshld and dsb ld alike "
    "(translate-a64.c, handle_sync: one tcg_gen_mb, which emits nothing "
    "without parallel TCG and no fence for load-only barriers on x86), so the "
    "two barrier flavours run identical host code: patched against unpatched "
    "is an A/A test here, the negative control of the verdicts, whose expected "
    "answer is \"equivalent\".  Whether the barrier matters on a Cortex-A72 "
    "needs that CPU.  The window is an emulation of the listing; on the host "
    "clock TCG interrupts only at translation-block boundaries, so there its "
    "width counts blocks, not cycles.")
MODEL_NOTE = ("Predicted before measured: failures per call = W x lambda x 2^N ns "
              "(analysis/model.py), lambda from each boot's own interrupt counts.")
HARDWARE_NOTE = (
    "Extrapolated, not measured: the model with a Cortex-A72's instruction "
    "time (2 GHz, about one instruction a cycle) and the listing's W = 1, "
    "beside the 2021 reports: failures after \"anything between a few hours "
    "and three months of uptime\", and \"within a few minutes\" under the "
    "find | xargs md5sum loop (seed 001).  The last column is how long each "
    "flavour would run for the A/A plan's failures, to tell the rmb() change "
    "from none within the margin.")
WALKS_SOURCE = ("replay: each failure of a boot recorded with QEMU's record/replay, "
                "walked under the gdb stub with no tracer in the boot")


def design(res):
    """The design paragraph: the boots, the clock and the plan, the seed,
    the margin, the spread the verdicts use and the windows watched."""
    doc, s = res.doc, res.doc.settings
    if s.clock == "icount":
        clock = (f"on the icount clock (-icount shift={s.shift}, "
                 f"{2 ** s.shift} ns an instruction, 1 CPU, a phase seed a boot)")
    else:
        clock = f"on the host clock, {s.smp} CPUs"
    clock += f"; {plan_line(doc)}"
    text = (f"{len(doc.boots)} boots of {s.boot_seconds} guest seconds "
            f"(recorded: {s.record_seconds} s, sampler {s.sample_hz} Hz), "
            f"{s.workload}, {clock}; conditions interleaved in rounds "
            f"shuffled with seed {doc.seed}; equivalence margin "
            f"+-{s.margin * 100:.0f}%; the verdicts treat the boot as the unit: "
            f"{spread_text(res.spread)}.")
    if s.windows:
        text += (" Recorded boots watch the windows stackscan found in their own kernel "
                 "(stackscan --windows-out, chkwin --windows; no built-in window names): "
                 + "; ".join(f"{f}: {', '.join(names) or 'none'}"
                             for f, names in sorted(s.windows.items())) + ".")
    return text


def spread_text(fit):
    """What the verdicts' intervals carry, fit the pooled spread."""
    if not fit.df:
        return ("no condition has two boots with failures, so the spread between boots "
                "cannot be estimated and Poisson is assumed")
    return ("each comparison's intervals carry the dispersion of its own conditions' "
            "boots (quasi-Poisson, floored at Poisson's 1: never narrower than Poisson), "
            f"with Student's t on its degrees of freedom; pooled over the experiment "
            f"the dispersion is {fit.phi:.2g} on {fit.df} df")


def plan_line(doc):
    """The plan the run fixed before its first counting boot, and whether
    every condition got the boots it was planned."""
    s = doc.settings
    plan = s.plan
    if not plan:
        return "no plan recorded (a run from before plans were fixed in advance)"
    missing = doc.missing
    lost = {name: sum(m.condition == name for m in missing) for name in plan}
    short = [f"{name} {len(doc.boots_of(name))} of {n}" for name, n in plan.items()
             if n is not None and len(doc.boots_of(name)) + lost[name] < n]
    aa = [n for c in doc.select(kind="aa") if (n := plan.get(c.name))]
    text = (f"the plan, fixed before the first counting boot: {s.boots} boots a "
            f"counting condition" + (f", {aa[0]} a flavour for the A/A comparison"
                                     if aa else ""))
    if s.plan_comparisons:
        text += (f" (predicted from a pilot the verdicts leave out, at "
                 f"dispersion {planning.dispersion_text(**s.plan_dispersion)}: "
                 + "; ".join(planning.describe(c) for c in s.plan_comparisons) + ")")
    again = s.plan_reestimated
    if s.plan_power_range:
        first = again["before"] if again else (aa[0] if aa else 0)
        text += ("; the A/A's power if the spread is wider: "
                 + planning.describe_range(s.plan_power_range, first,
                                           s.max_aa_boots))
    if again:
        text += (f"; re-estimated at {again['at']} boots a flavour (dispersion "
                 f"{again['phi']:.2f} about a rate per flavour, within phase-seed pairs), "
                 f"{again['before']} -> "
                 f"{again['boots']} boots a flavour")
    if missing:
        text += (f"; {len(missing)} boot{'s' if len(missing) != 1 else ''} lost on every "
                 "attempt, missing from the verdicts: "
                 + ", ".join(f"{m.dir} ({m.attempts} attempts: {m.reason})"
                             for m in missing))
    got = [c for c in s.plan_comparisons or [] if c.get("got")]
    if got:
        text += ("; the power with the boots the run got: "
                 + "; ".join(f"{c['what']} {c['got']['power'] * 100:.0f}% at "
                             f"{c['got']['boots']} of {c['got'].get('planned', c['boots'])} boots a "
                             f"condition (planned {c['power'] * 100:.0f}% at "
                             f"{c['boots']})" for c in got))
    if short:
        return text + "; the budget cut it short: " + ", ".join(short)
    return text + ("" if missing else "; every condition got its boots")


def walk_lead(res):
    """What the opening figure shows, and where each attribution of the
    report comes from."""
    n, explained, in_window = res.walk_totals
    traced = sum(len(corr.failures) for _, corr in res.runs.values())
    return (f"One failure of a boot recorded with QEMU's record/replay, replayed under "
            f"the gdb stub and followed from the wrong checksum back to where it came "
            f"from another context: {explained} of {n} walked failures were explained this way, "
            f"{in_window} by an interrupt in a window stackscan found. These attributions "
            f"come from replay, with no tracer in the boot; the recorded boots' tables "
            f"further down ({traced} failures) come from the flight recorder, a tracer "
            f"inside its boots.")


def notes(res):
    """{section title: the paragraph before its table}."""
    n, explained, in_window = res.walk_totals
    return {"Predicted against measured": MODEL_NOTE,
            "Extrapolation to hardware": HARDWARE_NOTE,
            "Failures walked by replay":
                f"Attribution by {WALKS_SOURCE}: {explained} of {n} failures explained, "
                f"{in_window} by an interrupt inside a window stackscan found in the "
                "kernel. The per-log failure tables further down come from the flight "
                "recorder inside the recorded boots instead."}
