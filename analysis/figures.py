"""The figures of an experiment's report, from the statistics of its record
(analysis/experiment.py's Results).  It leads with two: every
comparison's ratio with its 90% and 95% intervals against 1 and the
equivalence margin (a forest plot), and measured against predicted
failures on log axes; then each condition's boots one by one, aberrant
ones marked; a dose sweep adds its dose-response plots; a run
whose failures were walked by replay opens with one of them on the
instruction count."""

import math

import matplotlib
import matplotlib.ticker
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
import numpy as np  # noqa: E402

from analysis.design import PER, REPLICATED  # noqa: E402
from analysis.doses import DOSES  # noqa: E402
from analysis import walks  # noqa: E402

COLOURS = {"differs": "tab:red", "equivalent": "tab:green", "undecided": "tab:grey",
           "agrees": "tab:green"}
MARKERS = ("D", "s", "^", "o", "v", "P")


def _shown(v):
    """The verdict whose intervals a forest plot row draws as bars: the one
    without the flagged boots where it has a ratio, else v."""
    return v.without if v.without is not None and v.without.ratio is not None else v


def _intervals(ax, rows, lo_edge, hi_edge, margin):
    """One panel of the forest plot between lo_edge and hi_edge: each row's
    90% (thick) and 95% (thin) interval and ratio, the equivalence band on
    the rows that ask equivalence, and the model's prediction with its own
    95% interval where there is one.  Where a boot was flagged as aberrant
    the bars are the intervals without it, which the verdict's guarantee
    rests on, and the 95% interval with it is dotted above them.  No text
    in the panel: the rows are described in their labels, which cannot
    overprint each other."""
    ax.axvline(1, color="black", lw=0.8)
    for y, c in enumerate(reversed(rows)):
        v = c["verdict"]
        shown = _shown(v)
        colour = COLOURS[v.kind]
        if c.get("asks") == "equivalent":
            ax.fill_between([1 / (1 + margin), 1 + margin], y - 0.4, y + 0.4,
                            color="tab:green", alpha=0.15, lw=0)
        bars = [(shown.ci95, 1.5, y, "-"), (shown.ci90, 5, y, "-")]
        if v.without:
            bars.append((v.ci95, 1.5, y + 0.25, ":"))
        for (lo, hi), lw, at, style in bars:
            if hi < lo_edge or lo > hi_edge:
                continue
            ax.plot([max(lo, lo_edge), min(hi, hi_edge)], [at, at], color=colour, lw=lw,
                    ls=style, solid_capstyle="butt")
            if hi > hi_edge:
                ax.annotate("", xy=(hi_edge, at), xytext=(hi_edge / 1.15, at),
                            arrowprops={"arrowstyle": "->", "color": colour})
        if shown.ratio is not None and lo_edge <= shown.ratio <= hi_edge:
            ax.plot([shown.ratio], [y], "D", color=colour, ms=7)
        if v.without and v.ratio is not None and lo_edge <= v.ratio <= hi_edge:
            ax.plot([v.ratio], [y + 0.25], "D", mfc="none", mec=colour, ms=6)
        expect, spread = c.get("expect"), c.get("expect_ci")
        if expect and lo_edge <= expect <= hi_edge:
            # Below the row's own interval, so the two never hide each other.
            lo, hi = spread or (expect, expect)
            ax.plot([max(lo, lo_edge), min(hi, hi_edge)], [y - 0.25] * 2, color="black", lw=1.5)
            ax.plot([expect], [y - 0.25], "|", color="black", ms=10, mew=2)
    ax.set_xscale("log")
    ax.set_xlim(lo_edge, hi_edge)
    ax.set_ylim(-0.7, len(rows) - 0.3)


def _row_label(c):
    """A forest plot row's label: the comparison, its verdict with the
    ratio and 90% interval (without the flagged boots where there are
    any, as the bars), and its boots, df and dispersion."""
    v = c["verdict"]
    shown = _shown(v)
    ratio = "inf" if not math.isfinite(shown.ratio) else f"{shown.ratio:.3g}"
    hi = "inf" if not math.isfinite(shown.ci90[1]) else f"{shown.ci90[1]:.3g}"
    boots = " and ".join(map(str, c["boots"]))
    spread = (f"dispersion {shown.phi:.2g} on {shown.df} df" if shown.df else
              "no df: Poisson assumed")
    label = (f"{c['label']}\n{v.kind}: {ratio}, 90% CI {shown.ci90[0]:.3g}-{hi}\n"
             f"{boots} boots, {spread}")
    if v.without:
        label += f"\nwithout {', '.join(f['boot'] for f in v.flagged)} (dotted: with)"
    if v.outside:
        label += "\noutside the calibrated guarantee"
    return label


def forest(comparisons, margin, path):
    """comparisons: Results.comparisons.  Left, every comparison on a
    log axis wide enough for all (an infinite end is an arrow); right, the
    same near 1, where the margin is, so an A/A interval is visible.
    Returns the rows' labels, top first."""
    rows = [c for c in comparisons if c["verdict"].ratio is not None]
    fig, (ax, zoom) = plt.subplots(1, 2, figsize=(11, 1.6 + 1.0 * max(len(rows), 1)), dpi=100,
                                   sharey=True, width_ratios=(3, 2), layout="constrained")
    finite = [x for c in rows for w in (c["verdict"], c["verdict"].without) if w
              for x in (*w.ci95, w.ratio, *(c.get("expect_ci") or ()))
              if x and math.isfinite(x)] + [1 / (1 + margin), 1 + margin]
    _intervals(ax, rows, min(finite) / 1.5, max(finite) * 1.5, margin)
    _intervals(zoom, rows, 1 / (1 + 2.5 * margin), 1 + 2.5 * margin, margin)
    labels = [_row_label(c) for c in rows]
    ax.set_yticks(range(len(rows)), labels[::-1], fontsize=8)
    ax.set_xlabel("rate ratio (log): thick 90% CI, thin 95% CI; below, black: the model's "
                  "prediction with its 95% CI", fontsize=9)
    zoom.set_xlabel(f"near 1: +-{2.5 * margin * 100:.0f}%")
    for which in (zoom.xaxis.set_major_formatter, zoom.xaxis.set_minor_formatter):
        which(matplotlib.ticker.FormatStrFormatter("%.2f"))
    zoom.tick_params(axis="x", which="both", labelsize=7)
    fig.suptitle(f"Every comparison against 1; green: the equivalence margin +-"
                 f"{margin * 100:.0f}%, on the rows that ask equivalence")
    fig.savefig(path)
    plt.close(fig)
    return labels


def per_boot(res, path):
    """Each replicated condition's failures per million calls boot by boot
    (x: the boot's number in its condition, the phase-seed pair it belongs
    to on icount), its pooled rate with the 95% interval of its own spread
    as a band, and the boots a verdict flagged as aberrant circled and
    named.  Conditions without a failure have nothing to show and are
    left out (said in the title).  Returns the boots marked as aberrant
    (an empty list where none is), None when no condition has a failure
    and nothing was drawn."""
    rows = {r["condition"]: r for r in res.condition_rows}
    conds = [c for c in res.doc.conditions if c.kind in REPLICATED and rows[c.name]["failures"]]
    if not conds:
        return None
    marked = []
    flagged = {f["boot"] for c in res.comparisons for f in c["verdict"].flagged}
    fig, axes = plt.subplots(len(conds), 1, figsize=(8, 1.2 + 1.5 * len(conds)), dpi=100,
                             sharex=True, layout="constrained", squeeze=False)
    for ax, c in zip(axes[:, 0], conds):
        boots = res.doc.boots_of(c.name)
        r = rows[c.name]
        # Each boot at its phase seed (its round on the host clock): a pair
        # lines up across conditions even where a boot of it was lost.
        xs = [b.phase_seed if b.phase_seed is not None else b.round for b in boots]
        ys = [b.failures_total / b.calls * PER for b in boots]
        ax.axhspan(*r["ci"], color="tab:blue", alpha=0.15)
        ax.axhline(r["per_million"], color="tab:blue", lw=0.8)
        ax.plot(xs, ys, "o", color="tab:blue", ms=4)
        for x, y, b in zip(xs, ys, boots):
            if b.dir in flagged:
                marked.append(b.dir)
                ax.plot([x], [y], "o", mfc="none", mec="tab:red", ms=12, mew=2)
                ax.annotate(f"{b.dir}: aberrant", (x, y), xytext=(8, -3),
                            textcoords="offset points", fontsize=8, color="tab:red")
        ax.set_title(c.name, loc="left", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.margins(y=0.25)
    axes[-1, 0].set_xlabel("phase seed (the pair; the round on the host clock)")
    axes[-1, 0].xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    left = len([c for c in res.doc.conditions if c.kind in REPLICATED]) - len(conds)
    fig.supylabel("failures per million calls", fontsize=9)
    fig.suptitle("Boot by boot (band: the condition's pooled rate, 95% CI; red: flagged as "
                 "aberrant)" + (f"\n{left} condition{'s' if left != 1 else ''} without a "
                                "failure left out" if left else ""), fontsize=9)
    fig.savefig(path)
    plt.close(fig)
    return marked


def predicted_measured(rows, check, margin, path):
    """rows: Results.model_rows; check: Results.model_check.  Above, every
    windowed condition's measured failures (95% interval of its own
    spread) against its prediction; below, what the check tests: measured
    / predicted of each W group, thick its 90% interval, thin its 95%,
    against the +-margin band.  A count of 0 sits on the axis's lower
    edge."""
    rows = [r for r in rows if r["window"] != "off" and r["predicted"] > 0]
    fig, (ax, rax) = plt.subplots(2, 1, figsize=(7, 8), dpi=100, sharex=True,
                                  height_ratios=(3, 2), layout="constrained")
    xs = [r["predicted"] for r in rows] + [g["predicted"] for g in check["by_w"]]
    edge = (min(xs + [r["measured"] for r in rows if r["measured"]]) / 2,
            max(xs + [r["measured"] for r in rows]) * 2)
    grid = [edge[0], edge[1]]
    ax.plot(grid, grid, color="black", lw=0.8, label="measured = predicted")
    ax.fill_between(grid, [g / (1 + margin) for g in grid], [g * (1 + margin) for g in grid],
                    color="tab:green", alpha=0.12, label=f"within +-{margin * 100:.0f}%")
    for r in rows:
        y = max(r["measured"], edge[0])
        lo, hi = (max(x * r["predicted"], edge[0]) for x in r["ratio_ci"])
        ax.errorbar([r["predicted"]], [y], yerr=[[max(y - lo, 0)], [max(hi - y, 0)]],
                    fmt="o", capsize=3, label=f"{r['condition']} (W = {r['W']})")
    rax.axhspan(1 / (1 + margin), 1 + margin, color="tab:green", alpha=0.12,
                label=f"agrees: 90% CI inside +-{margin * 100:.0f}%")
    rax.axhline(1, color="black", lw=0.8)
    floor = min([0.5] + [g["ci95"][0] for g in check["by_w"] if g["ci95"][0] > 0]
                + [g["ci95"][1] / 2 for g in check["by_w"]])
    for n, g in enumerate(check["by_w"]):
        colour = COLOURS["differs" if g["kind"] == "differs" else
                         "agrees" if g["kind"] == "agrees" else "undecided"]
        y = max(g["ratio"], floor)
        for (lo, hi), lw in ((g["ci95"], 1.5), (g["ci90"], 5)):
            rax.plot([g["predicted"]] * 2, [max(lo, floor), hi], color=colour, lw=lw,
                     solid_capstyle="butt")
        # Named in the legend, each W its marker: groups whose predictions
        # lie close (W = 1 and W = 3) cannot overprint each other's names.
        rax.plot([g["predicted"]], [y], MARKERS[n % len(MARKERS)], color=colour, ms=7,
                 label=f"W = {g['W']}: {'disagrees' if g['kind'] == 'differs' else g['kind']}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*edge)
    ax.set_ylim(*edge)
    ax.set_ylabel("measured failures (95% CI of its own spread)")
    ax.set_title(f"Predicted against measured: chi-square {check['chi2']:.1f} on "
                 f"{check['df']} df, p = {check['p']:.2g}")
    ax.legend(fontsize=8, loc="upper left")
    rax.set_yscale("log")
    rax.set_ylabel("measured / predicted by W (90%, 95% CI)")
    rax.set_xlabel("predicted failures (W x lambda x 2^N ns x calls)")
    rax.legend(fontsize=8, loc="lower right")
    fig.savefig(path)
    plt.close(fig)


def dose_plot(d, path):
    """d: one of Results.doses.  Above, failures per million calls at each
    dose with the 95% interval of its own dispersion (the one its weight in
    the fit comes from) and the weighted line; below, the residuals."""
    how = DOSES[d["dose"]]
    fig, (ax, rax) = plt.subplots(2, 1, figsize=(7, 6), dpi=100, sharex=True,
                                  height_ratios=(3, 1), layout="constrained")
    xs = [p["x"] for p in d["points"]]
    ys = [p["per_million"] for p in d["points"]]
    err = [(p["per_million"] - p["ci"][0], p["ci"][1] - p["per_million"])
           for p in d["points"]]
    ax.errorbar(xs, ys, yerr=np.array(err).T, fmt="o", capsize=3,
                label="failures per 1M calls (95% CI of its own dispersion)")
    grid = np.linspace(0, max(xs) * 1.05, 50)
    ax.plot(grid, d["intercept"] + d["slope"] * grid, "-",
            label=f"weighted fit: slope {d['slope']:.3g} per {how['unit']}, intercept "
                  f"{d['intercept']:.3g}, R^2 {d['r2']:.2f}")
    ax.set_ylabel("failures per 1M checksum calls")
    ax.set_title(f"Dose-response: {how['what']} ({d['flavour']}, gcc49)")
    ax.legend(fontsize=8)
    rax.axhline(0, color="grey", lw=0.8)
    rax.plot(xs, [p["residual"] for p in d["points"]], "o")
    rax.set_xlabel(how["label"] + (" / 1000" if d["dose"] == "rate" else ""))
    rax.set_ylabel("residual")
    fig.savefig(path)
    plt.close(fig)


def walk_timeline(boot, walk, path):
    """One walked failure (analysis/walks.py) on the instruction count of
    its call: the call's own task on one row, the context that wrote the
    wrong value on the other, the store of the state, the arrival, the
    write and the load numbered where they happened and named below (so
    that events a few instructions apart never overprint)."""
    call, story = walk["call"], walk["story"]
    entry = call["entry_icount"]
    writer, span, load = story["writer"], story.get("span"), story.get("load")
    ctx = writer["context"]
    events = []
    if story.get("stored"):
        s = story["stored"]
        events.append((s["icount"], 1, "o", "tab:blue",
                       f"the call stores {walks.hexval(story['stored_value'])} ({s['at']})"))
    irq = story.get("interrupt")
    if irq:
        events.append((irq["icount"], 1, "v", "black",
                       f"an interrupt arrives before {irq['at']} ({irq['insn']})"))
    after = walks.hexval(writer.get("after"))
    events.append((writer["icount"], 0, "X", "tab:red",
                   f"{ctx['kind']} writes {after} ({writer['at']})"))
    if load:
        events.append((load["icount"], 1, "s", "tab:blue",
                       f"the call loads {walks.hexval(load['after'])} ({load['at']})"))
    events.sort()
    fig, ax = plt.subplots(figsize=(10, 2.2 + 0.22 * len(events)), dpi=100,
                           layout="constrained")
    ax.plot([0, call["return_icount"] - entry], [1, 1], color="tab:blue", lw=6,
            solid_capstyle="butt", alpha=0.35)
    if span:
        ax.plot([span["start_icount"] - entry, span["end_icount"] - entry], [0, 0],
                color="tab:red", lw=6, solid_capstyle="butt", alpha=0.35)
    for n, (ic, y, marker, colour, _) in enumerate(events, 1):
        ax.plot([ic - entry], [y], marker, color=colour, ms=9)
        # Alternate heights: events a few instructions apart stay legible.
        lift = 9 + 11 * (n % 2)
        ax.annotate(str(n), (ic - entry, y), xytext=(0, lift if y else -7 - lift),
                    textcoords="offset points", fontsize=9, ha="center", color=colour)
    cb = ctx.get("callback")
    ax.set_yticks([0, 1], [ctx["kind"] + (f"\n{cb['function']}" if cb else ""),
                           "the checksum call"])
    ax.set_ylim(-0.6, 1.6)
    ax.set_xlabel(f"instructions since the call's entry (instruction {entry:,})\n"
                  + "\n".join(f"{n}: {text} at +{ic - entry:,}"
                              for n, (ic, _, _, _, text) in enumerate(events, 1)),
                  loc="left", fontsize=8.5)
    ax.set_title(f"{boot}, failure {walk['failure']}: inode {walk['report'].get('inode')}, "
                 f"ext4_chksum() returned {call['result']:#010x}, the CRC32C of its bytes "
                 f"is {call['expected']:#010x}", fontsize=9)
    fig.savefig(path)
    plt.close(fig)
