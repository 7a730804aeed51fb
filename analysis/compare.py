"""Kernels side by side: failures per million checksum calls with exact
95% Poisson intervals, window-hit rate, the share of failures that follow a
window interrupt, completion-to-verification latencies, and a verdict that
is computed from those numbers (verdict.py), never written in advance.

Each log is one boot, and a condition given one log shows no spread
between boots.  What a log can show is its own spread: it is cut into
SLICES equal spans of time, each with its failures and a share of the
log's checksum calls in proportion to its time, and the verdict's
dispersion comes from those slices (with a condition's logs side by side,
their differences are in it too).  The verdict says so: spread between
boots that no log shows, such as a whole boot's phase, is not in it.
"""

import numpy as np

from analysis import verdict as verdicts
from analysis.poisson import poisson_ci

PER = 1e6
SLICES = 10


def calls_of(log):
    """Checksum calls made: the in-kernel counter when the log has a
    trailer (it counts calls whose record was lost too), else the records."""
    calls = log.counter("chksum")
    return len(log.of("chksum")) if calls is None else calls


def slices(log, corr, calls):
    """[(failures, calls)] of the log's SLICES equal spans of time."""
    start, seconds = log.first_ns(), log.duration_s()
    if seconds <= 0:
        return [(len(corr.failures), calls)]
    at = [min(SLICES - 1, max(0, int((f.ts - start) / 1e9 / seconds * SLICES)))
          for f in corr.failures]
    return [(at.count(i), calls / SLICES) for i in range(SLICES)]


def row(path, log, corr):
    """One log's figures; the window ones are None where the kernel has no
    window (log.window_known()): unknown, which is not 0."""
    calls = calls_of(log)
    k = len(corr.failures)
    lo, hi = poisson_ci(k)
    lat = np.array(corr.latencies_ns(), float) / 1e6
    scale = PER / calls if calls else float("nan")
    out = {
        "log": str(path), "flavour": log.header.get("flavour", "?"),
        "window": log.header.get("chksum_window", "?"),
        "status": log.status, "calls": calls, "failures": k,
        "per_million": k * scale, "ci": (lo * scale, hi * scale),
        "window_hits": None, "window_per_million": None, "window_ci": None,
        "attributed": None,
        "latency_ms": lat.tolist(), "slices": slices(log, corr, calls),
    }
    w = corr.window_totals()[0] if log.window_known() else None
    if w is not None:
        wlo, whi = poisson_ci(w)
        out.update(window_hits=w, window_per_million=w * scale,
                   window_ci=(wlo * scale, whi * scale),
                   attributed=corr.attributed())
    return out


def _boots(rows):
    """The slices of a condition's logs."""
    return [sl for r in rows for sl in r["slices"]]


def _compare(a, b, margin, names):
    v = verdicts.compare(_boots(a), _boots(b), margin, names,
                         unit=f"log slices ({SLICES} a log)")
    return (f"{v.text}; the spread is within logs: spread between boots that no "
            "log shows is not in it")


def verdict(rows, margin=0.25):
    blind = [r for r in rows if r["attributed"] is None]
    total = sum(r["failures"] for r in rows)
    seen = total - sum(r["failures"] for r in blind)
    attributed = sum(r["attributed"] for r in rows if r not in blind)
    parts = []
    if not total:
        parts.append("no checksum failures in these logs")
    if seen:
        parts.append(f"{attributed} of {seen} failures follow an interrupt in "
                     "the stack-release window")
    if blind:
        parts.append(f"{total - seen} failures in {len(blind)} log(s) whose "
                     "kernel has no window symbols: window arrivals unknown there")
    gcc49 = [r for r in rows if r["window"] == "gcc49"]
    flavours = sorted({r["flavour"] for r in gcc49})
    if "patched" in flavours and "unpatched" in flavours:
        parts.append("barrier flavour: " + _compare(
            [r for r in gcc49 if r["flavour"] == "patched"],
            [r for r in gcc49 if r["flavour"] == "unpatched"], margin, ("patched", "unpatched")))
    off = [r for r in rows if r["window"] == "off"]
    if off and gcc49:
        parts.append("window: " + _compare(gcc49, off, margin, ("gcc49", "off")))
    return "; ".join(parts) + "."


def table(rows):
    head = ["log", "flavour", "window", "calls", "failures", "per 1M calls (95% CI)",
            "window hits per 1M (95% CI)", "after window irq", "latency ms median/max"]
    out = [head]
    for r in rows:
        lat = r["latency_ms"]
        known = r["attributed"] is not None
        out.append([
            r["log"] + (" (truncated)" if r["status"] == "truncated" else ""),
            r["flavour"], r["window"], str(r["calls"]), str(r["failures"]),
            f"{r['per_million']:.3g} ({r['ci'][0]:.3g}-{r['ci'][1]:.3g})",
            f"{r['window_per_million']:.3g} ({r['window_ci'][0]:.3g}-"
            f"{r['window_ci'][1]:.3g})" if known else "unknown (no window symbols)",
            f"{r['attributed']}/{r['failures']}" if known else f"unknown/{r['failures']}",
            f"{np.median(lat):.3g}/{max(lat):.3g}" if lat else "-"])
    return out


def text(rows):
    t = table(rows)
    widths = [max(len(line[i]) for line in t) for i in range(len(t[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in t]
    return "\n".join(lines) + "\n\nverdict: " + verdict(rows) + "\n"


def latency_plot(rows, path):
    """Completion-to-verification latency of each failure, one column per log."""
    # matplotlib is imported here: it costs a second of start-up that the
    # text-only commands should not pay.
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100, layout="constrained")
    for i, r in enumerate(rows):
        lat = r["latency_ms"]
        ax.scatter(np.full(len(lat), i + 1), lat, marker="o", alpha=0.7)
        if lat:
            ax.boxplot([lat], positions=[i + 1], widths=0.4)
    ax.set_xticks(range(1, len(rows) + 1),
                  [f"{r['flavour']}/{r['window']}\n#{i + 1}" for i, r in enumerate(rows)])
    ax.set_xlim(0.5, len(rows) + 0.5)
    ax.set_ylabel("block completion to failed verification (ms)")
    ax.set_title("Completion-to-verification latency of failing inodes")
    fig.savefig(path)
    plt.close(fig)
