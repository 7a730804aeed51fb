"""What ran inside a failing computation, and the diagnosis it leads to.

A failing computation is the chain of calls that computed the failing
object's checksum (correlate's _chain over _group: the task's calls since
its previous verdict that feed the verdict's kind, each call's seed the
previous one's result), from the first call's begin to the verdict, on
each CPU while the task was there (where).  What ran inside it is every
record of the arrivals ring with its ts in those spans: interrupt handlers (the
ran record each handled irq leaves; the irq's name in logs without them),
softirq vectors, hrtimer and timer callbacks, tasklets, work items and
switches to another task (bpf/chkwin.h, CHKWIN_RAN_TABLE).  Each is named
by an identity, "hrtimer ext4_chksum_buffer_flip", with its function
placed by the log's sym. lines (the loader's kallsyms) or left in hex.

The diagnosis of one failure is the first that holds of:

- "window": an interrupt landed in a watched window during one of its
  calls (correlate's attribution, as before);
- "interference": something ran inside it that runs inside failing
  computations more often than inside good ones.  Its identities are
  ranked against the log's other computations of the same verdict kind
  by how much more often they ran inside failing ones than inside good
  ones (the verdicts that matched, whose span from the task's previous
  verdict the log's history holds: a flight log's snapshots, on each
  CPU), then those inside every failing computation first: a callback
  inside all failures and 2% of good computations leads, the timer tick
  inside all failures and all good ones does not.  Each suspect carries
  a one-sided Fisher exact p of running inside failing computations more
  often than good ones; the first suspect's p < ALPHA makes it
  "interference";
- "undecided": what ran inside it runs as often inside good
  computations (the first suspect's p >= ALPHA, or no good computation
  to compare with): listed, not accused;
- "nothing": nothing ran inside it on its CPU.  What remains is another
  CPU, a device, or the bytes themselves; the block completion that read
  the inode's block (its CPU and how long before the verdict) is the
  evidence the log has of those;
- "not covered": the log does not hold its whole computation (a flight
  log's rings wrapped after the task's previous verdict, the calls ring
  lost the first calls, a CPU's history does not reach its first call,
  or a log of every record lost some): what it saw is listed, but
  "nothing" would claim more than the log holds, and it is left out of
  the ranking.

The computation is the chain of calls that computed the failing
object's checksum (correlate's _chain), not every call of the task since
its previous verdict: write-side calls for other objects feed no
verdict.

Identities that tie in the ranking are ordered innermost first, as the
kernel nests them: a callback (hrtimer, timer, tasklet, work item) runs
inside an irq handler, a softirq or a worker, an irq handler inside
whatever it interrupted; so the function that ran is named before the
context that ran it (the writer's hrtimer callback before the timer
irq that ran every hrtimer, both inside every failing computation).
"""

import numpy as np
from scipy import stats

from analysis import chkwinlog
from analysis.documents import Computation, Diagnosis, Ran, Suspect

# The kernel's softirq vectors by number (include/linux/interrupt.h).
SOFTIRQS = ("HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED",
            "HRTIMER", "RCU")
# A suspect is accused when it runs inside failing computations more often
# than inside good ones at this one-sided level.
ALPHA = 0.05
# What a log of every record loses that the diagnosis reads.
HISTORY_PROBES = ("chksum", "irq", "softirq", "ran")
# Innermost first: the order in which identities that tie are ranked.
NESTING = ("hrtimer", "timer", "tasklet", "work", "kwork", "ipi", "irq", "softirq", "switch")
RAN_IRQ = chkwinlog.RAN.index("irq")
RAN_SWITCH = chkwinlog.RAN.index("switch")
RAN_IPI_FROM = chkwinlog.RAN.index("ipi_from")
WORDS = {
    "window": "an interrupt in a known window",
    "interference": "interference: these functions ran inside the computation",
    "undecided": "these ran inside it, none more often than inside good computations",
    "nothing": "nothing ran inside it: another CPU, a device or the bytes themselves",
    "not covered": "the log does not hold the whole computation",
}


def symbol(symbols, fn):
    """A function's name from the log's sym. lines (NAME, or NAME+0xOFF
    inside one), else its address."""
    name = symbols.get(int(fn))
    if name is None:
        return f"{int(fn):#x}"
    return name[:-4] if name.endswith("+0x0") else name


class Events:
    """Everything that ran, per CPU, sorted by ts: parallel arrays of ts,
    identity (an index into names), the tid of a switch's next task (0
    otherwise) and what/detail for reporting."""

    def __init__(self, log):
        symbols = log.symbols()
        irq_names = log.irq_names()
        has_ran = "ran" in log.layout.type_ids
        parts = []          # (cpu, ts, identity, next tid, what, detail)
        if has_ran:
            rows = log.rows("ran")
            what = log.field("ran", "what", rows)
            fn = log.field("ran", "fn", rows)
            arg = log.field("ran", "arg", rows)
            comm = log.field("ran", "comm", rows)
            for i in range(len(rows)):
                w = int(what[i])
                kind = chkwinlog.RAN[w] if w < len(chkwinlog.RAN) else str(w)
                text = bytes(comm[i]).rstrip(b"\0").decode("ascii", "replace")
                if w == RAN_SWITCH:
                    ident, nxt = f"switch to {task_family(text)}", int(arg[i])
                    detail = f"{text} pid {int(arg[i])}"
                elif w == RAN_IPI_FROM:
                    # Sent to this CPU: the sender, and its kind in the detail.
                    ident, nxt, detail = f"ipi from cpu {int(arg[i])}", 0, text
                elif w == RAN_IRQ:
                    # The number and action tell apart what one handler
                    # serves (every IPI's ipi_handler, every virtio-mmio
                    # device's vm_interrupt).
                    name = irq_names.get(int(arg[i]), "")
                    ident = " ".join(x for x in ("irq", str(int(arg[i])), name,
                                                 symbol(symbols, fn[i])) if x)
                    nxt, detail = 0, f"irq {int(arg[i])} {name}".rstrip()
                else:
                    ident = f"{kind} {symbol(symbols, fn[i])}"
                    nxt, detail = 0, text
                parts.append((rows[i], ident, nxt, kind, detail))
        else:
            rows = log.rows("irq")
            irq = log.field("irq", "irq", rows)
            for i in range(len(rows)):
                name = irq_names.get(int(irq[i]), "")
                parts.append((rows[i], f"irq {int(irq[i])} {name}".rstrip(), 0, "irq",
                              f"irq {int(irq[i])}"))
        rows = log.rows("softirq")
        vec = log.field("softirq", "vec", rows)
        for i in range(len(rows)):
            v = int(vec[i])
            name = SOFTIRQS[v] if v < len(SOFTIRQS) else str(v)
            parts.append((rows[i], f"softirq {name}", 0, "softirq", ""))
        heads = log.heads()
        rows = np.array([p[0] for p in parts], np.int64)
        cpu = heads["cpu"][rows] if len(rows) else np.zeros(0, np.uint16)
        ts = heads["ts"][rows].astype(np.int64) if len(rows) else np.zeros(0, np.int64)
        self.names = sorted({p[1] for p in parts})
        index = {n: i for i, n in enumerate(self.names)}
        ident = np.array([index[p[1]] for p in parts], np.int64)
        nxt = np.array([p[2] for p in parts], np.int64)
        self.what = [p[3] for p in parts]
        self.detail = [p[4] for p in parts]
        self.cpu, self.ts, self.ident, self.next = cpu, ts, ident, nxt
        # Per CPU: its events' indexes by ts, and their ts.
        self.by_cpu = {}
        for c in np.unique(cpu):
            mine = np.nonzero(cpu == c)[0]
            mine = mine[np.argsort(ts[mine], kind="stable")]
            self.by_cpu[int(c)] = (ts[mine], mine)

    def inside(self, spans, tid):
        """Indexes (into the parallel arrays) of what ran within spans, each
        (cpu, begin, end), by ts, leaving out switches back to the task itself."""
        out = []
        for c, begin, end in spans:
            if c in self.by_cpu:
                ts, idx = self.by_cpu[c]
                idx = idx[np.searchsorted(ts, begin, "left"):np.searchsorted(ts, end, "right")]
                out.append(idx[self.next[idx] != tid])
        out = np.concatenate(out) if out else np.zeros(0, np.int64)
        return out[np.argsort(self.ts[out], kind="stable")]

    def identities(self, spans, tid):
        """The set of identities (indexes into names) that ran within spans."""
        return {int(i) for i in self.ident[self.inside(spans, tid)]}


def task_family(comm):
    """A kernel thread's name without its CPU and index (kworker/0:1H,
    ksoftirqd/1), so one writer is one identity wherever it ran."""
    return comm.split("/", 1)[0]


def where(call_ts, call_cpus, end, end_cpu):
    """[(cpu, begin, end)]: where the task was over a computation, from its
    first call to its verdict at end on end_cpu: each CPU from the task's
    first record there to its first record on the next (a task that
    migrated is searched on each CPU only while it was there)."""
    points = sorted(zip((int(t) for t in call_ts), (int(c) for c in call_cpus)))
    points.append((int(end), int(end_cpu)))
    out = []
    for ts, cpu in points:
        if out and out[-1][0] == cpu:
            continue
        if out:
            out[-1] = (out[-1][0], out[-1][1], ts)
        out.append((cpu, ts, ts))
    out[-1] = (out[-1][0], out[-1][1], int(end))
    return out


def coverage(log):
    """{cpu: [(from, to)]}: spans in which the log holds every arrival of
    that CPU; None for a log of every record (all of it).  A flight log
    holds, from each snapshot, its CPU's arrivals from the horizon (the
    start of the recording where the ring never wrapped) to the failure;
    calls likewise from the call horizon.  A log of every record that lost
    calls or what ran holds no span whole ({})."""
    if log.header.get("record") != "failures":
        lost = log.lost()
        if any(isinstance(lost.get(p), int) and lost[p] > 0 for p in HISTORY_PROBES):
            return {}
        return None
    start = int(log.header.get("started_ns", "0") or 0)
    snaps = log.of("snapshot")
    out = {}
    for s in snaps:
        frm = max(int(s["call_horizon"]) or start, int(s["arrival_horizon"]) or start)
        out.setdefault(int(s["cpu"]), []).append((frm, int(s["ts"])))
    return out


def covered(spans, cpus, begin, end):
    """Whether every CPU's history holds [begin, end]."""
    if spans is None:
        return True
    return all(any(f <= begin and end <= t for f, t in spans.get(c, ())) for c in cpus)


def computation(events, group_ts, group_cpus, verdict):
    """The Computation of one failure: its span, CPUs, calls and what ran
    inside it."""
    begin = int(min(group_ts)) if len(group_ts) else int(verdict["ts"])
    cpus = sorted({int(c) for c in group_cpus} | {int(verdict["cpu"])})
    spans = where(group_ts, group_cpus, int(verdict["ts"]), int(verdict["cpu"]))
    idx = events.inside(spans, int(verdict["tid"]))
    return Computation(
        begin=begin, end=int(verdict["ts"]), cpus=cpus, calls=len(group_ts), where=spans,
        inside=[Ran(ts=int(events.ts[i]), cpu=int(events.cpu[i]), what=events.what[i],
                    name=events.names[events.ident[i]], detail=events.detail[i])
                for i in idx])


def nesting(name):
    """Where an identity's kind sits in NESTING (innermost 0; unknown last)."""
    what = name.split(" ", 1)[0]
    return NESTING.index(what) if what in NESTING else len(NESTING)


def fisher_p(nf, n_fail, ng, n_good):
    """One-sided Fisher exact p that an identity inside nf of n_fail
    failing and ng of n_good good computations runs inside failing ones
    more often; None without a good computation."""
    if not n_good:
        return None
    return float(stats.hypergeom.sf(nf - 1, n_fail + n_good, nf + ng, n_fail))


def rank(failing, good, names):
    """Suspects from the identity sets of the failing and the good
    computations: by failing share minus good share, those inside every
    failing one first among equals, innermost first, then by name."""
    n_fail, n_good = len(failing), len(good)
    counts_f, counts_g = {}, {}
    for s in failing:
        for i in s:
            counts_f[i] = counts_f.get(i, 0) + 1
    for s in good:
        for i in s:
            counts_g[i] = counts_g.get(i, 0) + 1
    out = []
    for i, nf in counts_f.items():
        ng = counts_g.get(i, 0)
        out.append(Suspect(name=names[i], failing=nf, failing_share=nf / n_fail, good=ng,
                           good_share=ng / n_good if n_good else None,
                           p=fisher_p(nf, n_fail, ng, n_good)))
    out.sort(key=lambda s: (-(s.failing_share - (s.good_share or 0.0)), s.failing < n_fail,
                            nesting(s.name), s.name))
    return out


def diagnose(failure, suspects, good, whole=True):
    """The Diagnosis of one failure given the suspects ranked for its kind
    and whether the log holds its whole computation."""
    mine = {r.name for r in failure.computation.inside}
    named = [s for s in suspects if s.name in mine]
    if failure.attributed:
        kind, named = "window", []
    elif not whole:
        kind = "not covered"
    elif named and named[0].p is not None and named[0].p < ALPHA:
        kind = "interference"
    elif mine:
        kind = "undecided"
    else:
        kind = "nothing"
    b = failure.block
    remains = None
    if kind == "nothing":
        remains = ("another CPU, a device, or the bytes themselves; "
                   + (f"the block came in on CPU {b.cpu} "
                      f"{b.latency_ns / 1e6:.3f} ms before the verdict"
                      + (" (another CPU)" if b.cross_cpu else "") if b
                      else "no block completion of its block in the log"))
    return Diagnosis(kind=kind, words=WORDS[kind], suspects=named, good_computations=good,
                     remains=remains)
