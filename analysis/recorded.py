"""The recorded boots of an experiment, read whole: per boot, the window
arrivals and window-hit calls behind its failures, what became of each
window-hit call, and how many failures were attributed
(experiment.Results.decomposition)."""

import math

from analysis import chkwinlog
from analysis.design import PER, is_control
from analysis.poisson import binom_ci, poisson_ci

GCC49_FUNC = 1      # enum chkwin_func: CHKWIN_FUNC_GCC49


def rows(res):
    """Rows of the recorded boots whose logs were read (runs)."""
    rows = []
    for c in res.doc.select(kind="recorded"):
        for b in res.doc.boots_of(c.name):
            if b.dir not in res.runs:
                continue
            log, corr = res.runs[b.dir]
            calls = b.calls
            hit_calls, arrivals = corr.window_totals()
            if hit_calls is None:
                # A cut flight log: only its trailer counted every window
                # arrival, so this boot cannot say how many there were.
                continue
            fails = b.failures_total
            logged = len(corr.failures)
            timing = poisson_ci(hit_calls)
            mech = binom_ci(min(fails, hit_calls), hit_calls) if hit_calls else None
            a = corr.arrivals
            emulated = a.func == GCC49_FUNC
            rows.append({"boot": b.dir, "condition": c.name,
                         "window": c.window, "singlestep": c.singlestep,
                         "control": is_control(c),
                         "calls": calls,
                         "window_calls": hit_calls, "window_arrivals": arrivals,
                         "timing": hit_calls / calls * PER if calls else math.nan,
                         "timing_ci": (timing[0] / calls * PER, timing[1] / calls * PER)
                         if calls else (math.nan, math.nan),
                         "failures": fails, "logged_failures": logged,
                         # The converse of attribution: what became of each
                         # window-hit call's result, by what it checksummed.
                         "window_outcomes": corr.outcomes_by_caller(),
                         # A flight log has the window calls of snapshots only.
                         "record": log.header.get("record", "all"),
                         "logged_by_kind": corr.by_kind(),
                         # Instructions of the emulated code that arrivals
                         # landed before: only block starts, unless -singlestep.
                         "gcc49_offsets": sorted({int(o) for o in a.offset[emulated]}),
                         "failures_by_kind": {k: n for k, n in b.failures.items() if n},
                         "attributed": corr.attributed(),
                         "mechanism": fails / hit_calls if hit_calls else None,
                         "mechanism_ci": mech,
                         "lost": sum(n for n in log.lost().values()
                                     if n != chkwinlog.NOT_ATTACHED)})
    return rows
