"""The verdicts' guarantee as the calibration measured it, quoted by the
verdicts themselves: which kinds of run (a dispersion, with or without a
flagged aberrant boot) the intervals cover at their level, and which the
calibration found outside.  bench.calibration_bench writes the figures
(guarantee.json, beside this file, with its command and commit); a
comparison whose run falls outside them says so in its verdict, with the
coverage measured there, instead of leaving the reader to find the
scenario in bench/RESULTS.md."""

import functools
import json
import math
import pathlib

PATH = pathlib.Path(__file__).with_name("guarantee.json")
# The intervals a verdict rests on, by level.
LEVELS = (90, 95)


def record(scenarios, command, commit):
    """The document calibration_bench writes: scenarios [{scenario, what,
    dispersion, aberrant, covered: {level: share}, outside}], covered the
    lowest pooled coverage among the intervals the verdicts rest on (without
    the flagged boot where one is aberrant)."""
    return {"command": command, "commit": commit, "scenarios": scenarios}


@functools.cache
def load(path=PATH):
    """The calibration's record, or None where there is none to quote
    (read once: every simulated demo of the calibration asks)."""
    try:
        return json.loads(pathlib.Path(path).read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise SystemExit(f"guarantee: error: {path}: unreadable ({e})")


def _pct(x):
    return f"{x * 100:.1f}%"


def outside(v, calibrated):
    """Why the calibration does not vouch for Verdict v, or None where it
    does (or where there is no calibration to quote).  The run is placed by
    the dispersion its verdict used (without the flagged boots where there
    are any) among the calibrated scenarios of its kind (with a flagged
    aberrant boot or without) that draw at one dispersion: at the nearest
    on a log scale, or beyond them all past the top one's half of the gap
    to the one below it."""
    if not calibrated:
        return None
    flagged = bool(v.flagged)
    phi = max((v.without or v).phi, 1.0)
    same = sorted((s for s in calibrated["scenarios"]
                   if s["aberrant"] == flagged and s["dispersion"] is not None),
                  key=lambda s: s["dispersion"])
    if not same:
        return None
    where = f"(`{calibrated['command']}` at {calibrated['commit']})"
    what = "with a flagged aberrant boot" if flagged else "without an aberrant boot"
    top = same[-1]["dispersion"]
    below = same[-2]["dispersion"] if len(same) > 1 else top
    if math.log(phi) > math.log(top) + (math.log(top) - math.log(below)) / 2:
        return (f"outside the verdict's guarantee: dispersion {phi:.2g} {what} is beyond "
                f"the calibrated runs (up to {top:g}) {where}")
    s = min(same, key=lambda s: abs(math.log(s["dispersion"]) - math.log(phi)))
    if not s["outside"]:
        return None
    rests = "the intervals without it" if flagged else "the intervals"
    covered = " and ".join(f"{_pct(s['covered'][str(level)])} for {level}%" for level in LEVELS
                           if s["covered"].get(str(level)) is not None)
    return (f"outside the verdict's guarantee: dispersion {phi:.2g} {what}; in the "
            f"calibration's {s['scenario']} ({s['what']}) {rests} covered as little as "
            f"{covered} {where}")
