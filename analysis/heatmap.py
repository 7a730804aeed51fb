"""Heat maps of where interrupts land: by instruction offset within the
checksum functions, and by position within each checksum computation, over
time, one row of panels per CPU, failures marked.

Also writes arrivals.txt for Brendan Gregg's trace2heatmap.pl: one line per
arrival inside a checksum call, "TIME LATENCY" with TIME in microseconds
since the recording started and LATENCY the nanoseconds from the call's
begin to the arrival:
    trace2heatmap.pl --unitstime=us --unitslatency=ns arrivals.txt
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.colors import LogNorm  # noqa: E402

from analysis.chkwinlog import FUNC_NONE
from analysis.correlate import table

DPI = 100
WIDTH_IN = 11
ROW_IN = 3.2
TIME_BINS = 60
POSITION_BINS = 50
SLOT = 4                # one bin per instruction
# Bounds whatever the header says: a record's offset is a u16, and a
# figure gets one row per CPU, for at most MAX_ROWS CPUs (the busiest).
OFFSET_SPAN = 1 << 16
MAX_ROWS = 16


def size_px(cpus):
    """(width, height) in pixels of the figures for that many CPU rows."""
    return WIDTH_IN * DPI, int(round((ROW_IN * cpus + 1.0) * DPI))


def _funcs(log):
    out = []
    for n in range(8):
        f = log.func(n)
        if f:
            out.append((n, f))
    return out


def _arrivals_in_funcs(log):
    """(source, cpu, ts, func, offset) of irq and sample arrivals whose pc
    was in a checksum function."""
    parts = [table(log, kind, ["cpu", "func", "offset"],
                   lambda r, kind=kind: log.field(kind, "func", r) != FUNC_NONE)
             for kind in ("irq", "sample")]
    return {k: np.concatenate([p[k] for p in parts]) for k in ("cpu", "ts", "func", "offset")}


def _cpus(log):
    """The CPUs that have records (the MAX_ROWS with the most), or [0]."""
    cpu, n = np.unique(log.heads()["cpu"], return_counts=True)
    if not len(cpu):
        return [0]
    return sorted(int(c) for c in cpu[np.argsort(-n, kind="stable")[:MAX_ROWS]])


def _failure_marks(corr, t0):
    """cpu -> list of (time s, func, offset, position) of window arrivals
    of attributed failures; unattributed failures have func None."""
    marks = {}
    for f in corr.failures:
        t = (f.ts - t0) / 1e9
        hits = f.window_arrivals or [None]
        for w in hits:
            marks.setdefault(f.cpu, []).append(
                (t, w.func if w else None, w.offset if w else None,
                 w.position if w else None))
    return marks


def _time_edges(log, t0):
    secs = max(log.duration_s(), 1e-3)
    return np.linspace(0, secs * 1.0001, TIME_BINS + 1)


def _draw(ax, x, y, xedges, yedges, norm):
    counts, _, _ = np.histogram2d(x, y, bins=(xedges, yedges))
    mesh = ax.pcolormesh(xedges, yedges, counts.T, norm=norm, cmap="inferno",
                         shading="flat", rasterized=True)  # keeps the SVG small
    return counts, mesh


def offset_map(log, corr, stem):
    """Figure (1): arrivals by byte offset (x) over time (y).  Returns the
    per-(cpu, func) offset histograms summed over time."""
    t0 = log.first_ns()
    funcs = _funcs(log)
    cpus = _cpus(log)
    arr = _arrivals_in_funcs(log)
    wins = log.windows()
    yedges = _time_edges(log, t0)
    marks = _failure_marks(corr, t0)
    fig, axes = plt.subplots(len(cpus), max(1, len(funcs)), squeeze=False,
                             figsize=(WIDTH_IN, ROW_IN * len(cpus) + 1.0), dpi=DPI,
                             layout="constrained")
    norm = LogNorm(vmin=1, vmax=max(2, _max_cell(arr, funcs, yedges, t0)))
    columns, mesh = {}, None
    for r, cpu in enumerate(cpus):
        for c, (n, (name, start, end)) in enumerate(funcs):
            ax = axes[r][c]
            size = min(end - start, OFFSET_SPAN)
            xedges = np.arange(0, size + SLOT, SLOT)
            sel = (arr["cpu"] == cpu) & (arr["func"] == n)
            counts, mesh = _draw(ax, arr["offset"][sel].astype(float),
                                 (arr["ts"][sel].astype(np.int64) - t0) / 1e9,
                                 xedges, yedges, norm)
            columns[(cpu, n)] = counts.sum(axis=1)
            for i, (lo, hi) in enumerate(w for w in wins if start <= w[0] < end):
                ax.axvspan(lo - start, hi - start + SLOT, color="cyan", alpha=0.25,
                           label=None if i else "stack-release window")
            pts = [m for m in marks.get(cpu, []) if m[1] == n]
            if pts:
                ax.scatter([p[2] + SLOT / 2 for p in pts], [p[0] for p in pts],
                           marker="x", s=60, color="lime", label="checksum failure")
            ax.set_title(f"CPU {cpu}: {name}", fontsize=9)
            ax.set_xlabel("instruction offset in function (bytes)")
            ax.set_ylabel("time since start (s)")
            ax.set_xlim(0, size)
            ax.set_ylim(yedges[0], yedges[-1])
            if pts or any(start <= w[0] < end for w in wins):
                ax.legend(loc="upper left", fontsize=7)
    if mesh is not None:
        fig.colorbar(mesh, ax=axes, label="arrivals per cell (log scale)")
    fig.suptitle("Interrupt arrivals inside the checksum functions "
                 f"({log.header.get('flavour', '?')}, window "
                 f"{log.header.get('chksum_window', '?')})")
    _save(fig, stem)
    return columns


def _max_cell(arr, funcs, yedges, t0):
    best = 1
    for n, (_, start, end) in funcs:
        sel = arr["func"] == n
        for cpu in np.unique(arr["cpu"][sel]):
            s = sel & (arr["cpu"] == cpu)
            counts, _, _ = np.histogram2d(
                arr["offset"][s].astype(float), (arr["ts"][s].astype(np.int64) - t0) / 1e9,
                bins=(np.arange(0, min(end - start, OFFSET_SPAN) + SLOT, SLOT), yedges))
            best = max(best, counts.max())
    return best


def position_map(log, corr, stem):
    """Figure (2): arrival position within the computation (0 = begin,
    1 = end) over time."""
    t0 = log.first_ns()
    cpus = _cpus(log)
    a = corr.arrivals
    yedges = _time_edges(log, t0)
    xedges = np.linspace(0, 1, POSITION_BINS + 1)
    marks = _failure_marks(corr, t0)
    times = (a.ts - t0) / 1e9
    peak = max([np.histogram2d(a.position[a.cpu == cpu], times[a.cpu == cpu],
                               bins=(xedges, yedges))[0].max() for cpu in cpus] + [2])
    norm = LogNorm(vmin=1, vmax=peak)
    fig, axes = plt.subplots(len(cpus), 1, squeeze=False,
                             figsize=(WIDTH_IN, ROW_IN * len(cpus) + 1.0), dpi=DPI,
                             layout="constrained")
    mesh = None
    for r, cpu in enumerate(cpus):
        ax = axes[r][0]
        sel = a.cpu == cpu
        _, mesh = _draw(ax, a.position[sel], times[sel], xedges, yedges, norm)
        pts = [m for m in marks.get(cpu, []) if m[3] is not None]
        if pts:
            ax.scatter([p[3] for p in pts], [p[0] for p in pts], marker="x", s=60,
                       color="lime", label="window arrival of a failing call")
            ax.legend(loc="upper left", fontsize=7)
        ax.set_title(f"CPU {cpu}", fontsize=9)
        ax.set_xlabel("arrival position within the checksum call (0 = begin, 1 = end)")
        ax.set_ylabel("time since start (s)")
        ax.set_xlim(0, 1)
        ax.set_ylim(yedges[0], yedges[-1])
    fig.colorbar(mesh, ax=axes, label="arrivals per cell (log scale)")
    fig.suptitle("Where in each checksum computation interrupts arrive")
    _save(fig, stem)


def _save(fig, stem):
    for ext in ("png", "svg"):
        fig.savefig(f"{stem}.{ext}", format=ext, dpi=DPI)
    plt.close(fig)


def trace_file(log, corr, path):
    t0 = log.first_ns()
    a = corr.arrivals
    order = np.argsort(a.ts, kind="stable")
    data = np.column_stack([(a.ts[order] - t0) / 1e3, a.offset_ns[order]])
    np.savetxt(path, data, fmt=["%.3f", "%d"])


def write_all(log, corr, outdir):
    """Both heat maps (PNG and SVG) and arrivals.txt in outdir.  Returns
    the arrivals counted in the window column of figure (1), per CPU."""
    outdir.mkdir(parents=True, exist_ok=True)
    columns = offset_map(log, corr, outdir / "offset")
    position_map(log, corr, outdir / "position")
    trace_file(log, corr, outdir / "arrivals.txt")
    in_window = {}
    for (cpu, n), col in columns.items():
        _, start, end = log.func(n)
        for win in log.windows():
            if start <= win[0] < end:
                lo, hi = (win[0] - start) // SLOT, (win[1] - start) // SLOT
                in_window[cpu] = in_window.get(cpu, 0) + int(col[lo:hi + 1].sum())
    return {"files": sorted(str(p.name) for p in outdir.iterdir()),
            "window_column": in_window}


class RangeError(Exception):
    """A --function name the log and the symbols cannot place: one line."""


def function_range(log, name, symbols=None):
    """(start, end exclusive) of name: a window the log watched (watch.N),
    a checksum function of its header (func.N), or a function of symbols
    (analysis.windows.symbols_from: a System.map or kallsyms copy of the
    same kernel, booted with the same KASLR offset, i.e. nokaslr)."""
    for watched, first, last in log.watched():
        if watched == name:
            return first, last + SLOT
    for _, f in _funcs(log):
        if f[0] == name:
            return f[1], f[2]
    if symbols is None:
        raise RangeError(f"{name}: neither a watched window nor a checksum function of "
                         f"this log; give --symbols (a System.map or kallsyms copy)")
    found = symbols.get((None, name), [])
    if len(found) != 1:
        raise RangeError(f"{name}: {len(found) or 'no'} text symbol"
                         f"{'s' if len(found) != 1 else ''} of that name in the symbols")
    return found[0]


def function_map(log, corr, name, start, end, stem):
    """Arrivals (interrupts and sampler ticks) by byte offset in [start,
    end) over time, one panel per CPU, watched or emulated windows inside
    it shaded, failures' window arrivals marked.  Returns {cpu: arrivals
    by offset slot}."""
    t0 = log.first_ns()
    cpus = _cpus(log)
    size = min(end - start, OFFSET_SPAN)
    parts = [table(log, kind, ["cpu", "pc"]) for kind in ("irq", "sample")]
    arr = {k: np.concatenate([p[k] for p in parts]) for k in ("cpu", "ts", "pc")}
    inside = (arr["pc"] >= start) & (arr["pc"] < start + size)
    offset = (arr["pc"][inside] - start).astype(float)
    cpu_of, times = arr["cpu"][inside], (arr["ts"][inside].astype(np.int64) - t0) / 1e9
    xedges = np.arange(0, size + SLOT, SLOT)
    yedges = _time_edges(log, t0)
    peak = max([np.histogram2d(offset[cpu_of == c], times[cpu_of == c],
                               bins=(xedges, yedges))[0].max() for c in cpus] + [2])
    norm = LogNorm(vmin=1, vmax=peak)
    fig, axes = plt.subplots(len(cpus), 1, squeeze=False,
                             figsize=(WIDTH_IN, ROW_IN * len(cpus) + 1.0), dpi=DPI,
                             layout="constrained")
    wins = [w for w in log.windows() if start <= w[0] < start + size]
    fails = {}
    for f in corr.failures:
        for w in f.window_arrivals:
            if start <= w.pc < start + size:
                fails.setdefault(f.cpu, []).append(((f.ts - t0) / 1e9, w.pc - start))
    columns, mesh = {}, None
    for r, cpu in enumerate(cpus):
        ax = axes[r][0]
        sel = cpu_of == cpu
        counts, mesh = _draw(ax, offset[sel], times[sel], xedges, yedges, norm)
        columns[cpu] = counts.sum(axis=1)
        for i, (lo, hi) in enumerate(wins):
            ax.axvspan(lo - start, hi - start + SLOT, color="cyan", alpha=0.25,
                       label=None if i else "window")
        if fails.get(cpu):
            ax.scatter([p[1] + SLOT / 2 for p in fails[cpu]], [p[0] for p in fails[cpu]],
                       marker="x", s=60, color="lime", label="checksum failure")
        if wins or fails.get(cpu):
            ax.legend(loc="upper left", fontsize=7)
        ax.set_title(f"CPU {cpu}: {name}", fontsize=9)
        ax.set_xlabel("instruction offset (bytes)")
        ax.set_ylabel("time since start (s)")
        ax.set_xlim(0, size)
        ax.set_ylim(yedges[0], yedges[-1])
    fig.colorbar(mesh, ax=axes, label="arrivals per cell (log scale)")
    fig.suptitle(f"Interrupt arrivals in {name} ({log.header.get('kernel_release', '?')})")
    _save(fig, stem)
    return columns
