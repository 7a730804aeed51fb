"""Which interrupt corrupted which checksum.

Arrivals (irq and sample records) are placed in the checksum call running
on their CPU at that moment.  A failure (a verify mismatch of any metadata
kind, or iget's -EFSBADCRC when the verify probe is absent) is traced back
to the calls that computed it: the calls of the same task since its
previous verdict whose caller kind feeds this verdict's kind.  An inode
verdict is fed by EXT4_CHKSUM_SEED and EXT4_CHKSUM_INODE calls (a corrupted
i_csum_seed fails the inode just as surely: 5 of the 6 failures of the
first real gcc49 run were seed calls), any other verdict by calls of its
own kind (a directory block by EXT4_CHKSUM_DIR calls, ...).  The failure
is attributed when one of those calls had a window arrival on its CPU.

The converse: every call with a window arrival is followed to the next
verdict of its task.  If that verdict is of a kind the call feeds, it
failed or matched; otherwise the result was never verified (it was stored,
or fed nothing this log sees).  Records come in commit order, so everything
is sorted by ts.
"""

import dataclasses

import numpy as np

from analysis import chkwinlog
from analysis import flight
from analysis import fsgeom
from analysis import interference
from analysis.documents import Arrival, Call, Completion, Failure
from analysis.chkwinlog import CALLER_UNKNOWN, F_COMPLETE, F_METADATA, F_MISMATCH

WINDOW_CLASS = chkwinlog.CLASSES.index("window")
EFSBADCRC = -74
INODE_CALLERS = ("EXT4_CHKSUM_SEED", "EXT4_CHKSUM_INODE")
INODE_KIND = -1  # a verdict's kind: the feeding caller id, or this for an inode
OUTCOMES = ("failed", "matched", "not verified")


def kind_name(caller_names, kind):
    """A verdict kind as a short name: inode, dir, extent, bitmap, ..."""
    if kind == INODE_KIND:
        return "inode"
    name = caller_names.get(int(kind), str(int(kind)))
    return name.removeprefix("EXT4_CHKSUM_").lower()


def table(log, kind, names, where=None):
    """The named fields of one record type, sorted by ts, plus "row" (the
    record's index in the log).  Gathered field by field: a 10-million
    record log cannot afford a second copy of whole 64-byte records."""
    rows = log.rows(kind)
    if where is not None:
        rows = rows[where(rows)]
    ts = log.field(kind, "ts", rows)
    order = np.argsort(ts, kind="stable")
    rows = rows[order]
    dt = log.dtype(kind)
    out = np.empty(len(rows), [("row", "<u4"), ("ts", "<u8")]
                   + [(n, dt.fields[n][0]) for n in names])
    out["row"], out["ts"] = rows, ts[order]
    del ts, order
    for n in names:
        out[n] = log.field(kind, n, rows)
    return out


def record(log, kind, row):
    """One whole record, for the few (failures) that are reported in full."""
    return log.records[row:row + 1].view(log.dtype(kind)).reshape(-1)[0]


class Arrivals:
    """Every irq/sample arrival that fell inside a checksum call, as
    parallel arrays (one entry per arrival)."""

    def __init__(self, log, calls):
        parts = []
        for source in ("irq", "sample"):
            recs = table(log, source, ["cpu"])
            idx = _containing_call(calls, recs)
            inside = idx >= 0
            recs, idx = recs[inside], idx[inside]
            # Only the few arrivals inside calls get the rest of their fields.
            full = np.empty(len(recs), [("ts", "<u8"), ("cpu", "<u2"), ("class", "u1"),
                                        ("func", "u1"), ("offset", "<u2"), ("pc", "<u8")])
            full["ts"], full["cpu"] = recs["ts"], recs["cpu"]
            for name in ("class", "func", "offset", "pc"):
                full[name] = log.field(source, name, recs["row"])
            parts.append((source, full, idx))
        self.source = np.concatenate(
            [np.full(len(r), s, "U6") for s, r, _ in parts]) if parts else np.zeros(0, "U6")
        cat = (lambda f: np.concatenate([r[f] for _, r, _ in parts])
               if parts else np.zeros(0))
        self.call = np.concatenate([i for _, _, i in parts]) if parts else np.zeros(0, int)
        self.ts = cat("ts").astype(np.int64)
        self.cpu = cat("cpu")
        self.cls = cat("class")
        self.func = cat("func")
        self.offset = cat("offset")
        self.pc = cat("pc")
        begin = calls["ts"][self.call].astype(np.int64)
        span = calls["end_ns"][self.call].astype(np.int64) - begin
        self.offset_ns = self.ts - begin
        self.position = np.where(span > 0, self.offset_ns / np.maximum(span, 1), 0.0)
        self.window = self.cls == WINDOW_CLASS

    def __len__(self):
        return len(self.ts)


def _containing_call(calls, recs):
    """Index into calls (ts-sorted) of the call running on the record's CPU
    when it arrived, or -1."""
    out = np.full(len(recs), -1, np.int64)
    for cpu in np.unique(recs["cpu"]):
        on = np.nonzero(calls["cpu"] == cpu)[0]
        mine = np.nonzero(recs["cpu"] == cpu)[0]
        if not len(on):
            continue
        ts = recs["ts"][mine]
        pos = np.searchsorted(calls["ts"][on], ts, "right") - 1
        ok = pos >= 0
        hit = on[np.where(ok, pos, 0)]
        ok &= ts <= calls["end_ns"][hit]
        out[mine[ok]] = hit[ok]
    return out


def verdicts(log):
    """(records, source) of the checksum failures in the log, by ts: verify
    mismatches of every kind, or iget's when the verify probe is absent."""
    if chkwinlog.hook_attached(log.header, "verify"):
        kind, bad = "verify", lambda r: (log.field("verify", "flags", r) & F_MISMATCH) != 0
    else:
        kind, bad = "iget", lambda r: log.field("iget", "err", r) == EFSBADCRC
    rows = table(log, kind, [], bad)["row"]
    return [record(log, kind, r) for r in rows], kind


def verdict_kind(rec, source):
    """The kind of one verdict record (a metadata caller id, or INODE_KIND)."""
    if source == "verify" and rec["flags"] & F_METADATA:
        return int(rec["caller"])
    return INODE_KIND


class LoadError(Exception):
    """A log that cannot be analysed, said in one line."""


def load(path, geometry=None, image=None, warn=None):
    """(log, Correlation) of the log at path, with the test disk's geometry
    from geometry, image or beside the log (fsgeom.find); LoadError when
    it cannot be had.  warn(line) hears of a truncated log, whose records
    before the end are analysed."""
    try:
        log = chkwinlog.read(path)
    except chkwinlog.LogError as e:
        raise LoadError(f"{path}: corrupt log: {e}") from None
    except OSError as e:
        raise LoadError(f"{path}: {e.strerror}") from None
    if log.status == "truncated" and warn:
        warn(f"{path}: truncated ({log.reason}); analysing the records before the end")
    try:
        geo = fsgeom.find(path, geometry, image)
    except fsgeom.GeometryError as e:
        raise LoadError(str(e)) from None
    try:
        return log, Correlation(log, geo)
    except chkwinlog.LogError as e:
        raise LoadError(f"{path}: cannot analyse: {e}") from None


class Correlation:
    def __init__(self, log, geometry=None):
        log.check_analysable()
        self.log = log
        self.geometry = geometry
        self.calls = table(log, "chksum", ["end_ns", "cpu", "tid", "caller", "seed", "result"])
        self.arrivals = Arrivals(log, self.calls)
        self.window_calls = np.unique(self.arrivals.call[self.arrivals.window])
        self.failing, self.source = verdicts(log)
        self.caller_names = log.callers()
        self._inode_callers = np.array(
            [n for n, name in self.caller_names.items() if name in INODE_CALLERS]
            + [CALLER_UNKNOWN], np.int64)
        # Every call, by task and (stable sort of ts-sorted calls) by ts, so a
        # task's calls are one searchsorted away.
        self._task_calls = np.argsort(self.calls["tid"], kind="stable").astype(np.uint32)
        self._task_call_tids = self.calls["tid"][self._task_calls]
        self._marks = self._verdict_marks()
        self.completions = table(
            log, "block", ["cpu", "sector", "nr_sectors", "dev"],
            lambda r: (log.field("block", "flags", r) & F_COMPLETE) != 0)
        self.events = interference.Events(log)
        self.failures = self._diagnosed([self._failure(v) for v in self.failing])
        self.window_outcomes = [self._outcome(int(i)) for i in self.window_calls]

    def _verdict_marks(self):
        """Every verdict (verify and iget records): tid, ts, kind and whether
        it failed, sorted by task and ts."""
        v = table(self.log, "verify", ["tid", "cpu", "flags", "caller"])
        n = len(v)
        marks = np.empty(n + len(self.log.rows("iget")),
                         [("tid", "<u4"), ("ts", "<u8"), ("cpu", "<u2"), ("kind", "<i4"),
                          ("bad", "?")])
        marks["tid"][:n], marks["ts"][:n], marks["cpu"][:n] = v["tid"], v["ts"], v["cpu"]
        marks["kind"][:n] = np.where(v["flags"] & F_METADATA, v["caller"], INODE_KIND)
        marks["bad"][:n] = (v["flags"] & F_MISMATCH) != 0
        del v
        g = table(self.log, "iget", ["tid", "cpu", "err"])
        marks["tid"][n:], marks["ts"][n:], marks["cpu"][n:] = g["tid"], g["ts"], g["cpu"]
        marks["kind"][n:] = INODE_KIND
        marks["bad"][n:] = g["err"] == EFSBADCRC
        del g
        marks.sort(order=["tid", "ts"], kind="stable")
        return marks

    def _feeds(self, callers, kind):
        """Which of the calls' caller ids feed a verdict of this kind."""
        callers = callers.astype(np.int64)
        if kind == INODE_KIND:
            return np.isin(callers, self._inode_callers)
        return callers == kind

    def _task_slice(self, sorted_tids, tid):
        return (np.searchsorted(sorted_tids, tid, "left"),
                np.searchsorted(sorted_tids, tid, "right"))

    def _group(self, v, kind):
        """Calls of v's task that feed its kind, ended by v.ts and began after
        the task's previous verdict (verify or iget record); and that
        verdict's ts (0: none)."""
        tid, ts = v["tid"], v["ts"]
        lo, hi = self._task_slice(self._marks["tid"], tid)
        k = lo + np.searchsorted(self._marks["ts"][lo:hi], ts, "left") - 1
        prev = int(self._marks["ts"][k]) if k >= lo else 0
        lo, hi = self._task_slice(self._task_call_tids, tid)
        mine = self._task_calls[lo:hi]
        begin = self.calls["ts"][mine]
        group = mine[np.searchsorted(begin, prev, "right"):np.searchsorted(begin, ts, "right")]
        group = group[self.calls["end_ns"][group] <= ts]
        return group[self._feeds(self.calls["caller"][group], kind)], prev

    def _chain(self, group):
        """The calls of a group that chain into its last one, each call's
        seed the result of the one before (the seed calls of an iget, then
        the inode's): what computed this object's checksum, without the
        write-side calls of other objects the task made since its previous
        verdict, which feed no verdict.  A corruption inside a call keeps
        the chain (the next call starts from the wrong result)."""
        if not len(group):
            return group
        seeds, results = self.calls["seed"][group], self.calls["result"][group]
        keep, want = [len(group) - 1], seeds[-1]
        for j in range(len(group) - 2, -1, -1):
            if results[j] == want:
                keep.append(j)
                want = seeds[j]
        return group[keep[::-1]]

    def _outcome(self, call):
        """What became of one window-hit call's result: (outcome, the kind
        of verdict it fed or None)."""
        tid, end = self.calls["tid"][call], self.calls["end_ns"][call]
        lo, hi = self._task_slice(self._marks["tid"], tid)
        k = lo + np.searchsorted(self._marks["ts"][lo:hi], end, "left")
        caller = self.calls["caller"][call:call + 1]
        if k < hi and self._feeds(caller, int(self._marks["kind"][k]))[0]:
            kind = kind_name(self.caller_names, int(self._marks["kind"][k]))
            return ("failed" if self._marks["bad"][k] else "matched"), kind
        return "not verified", None

    def outcomes_by_caller(self):
        """{caller name: {outcome: window-hit calls}}."""
        out = {}
        for i, (outcome, _) in zip(self.window_calls, self.window_outcomes):
            name = kind_name(self.caller_names, int(self.calls["caller"][i]))
            mine = out.setdefault(name, dict.fromkeys(OUTCOMES, 0))
            mine[outcome] += 1
        return out

    def _failure(self, v):
        kind = verdict_kind(v, self.source)
        group, prev = self._group(v, kind)
        a = self.arrivals
        in_group = np.isin(a.call, group)
        hits = np.nonzero(in_group & a.window)[0]
        if len(hits):
            call = int(a.call[hits[np.argmax(self.calls["ts"][a.call[hits]])]])
        else:
            call = int(group[-1]) if len(group) else None
        c = record(self.log, "chksum", self.calls["row"][call]) if call is not None else None
        metadata = kind != INODE_KIND
        sector, block = self._block(v) if not metadata else (None, None)
        chain = self._chain(group)
        return Failure(
            kind=kind_name(self.caller_names, kind),
            ino=int(v["ino"]), dev=int(v["dev"]), ts=int(v["ts"]),
            meta_block=int(v["block"]) if metadata else None,
            cpu=int(v["cpu"]), tid=int(v["tid"]), source=self.source,
            stored=int(v["stored"]) if self.source == "verify" else None,
            computed=int(v["computed"]) if self.source == "verify" else None,
            group_calls=len(group),
            attributed=bool(len(hits)),
            history_covered=flight.covered(self.log, int(v["cpu"]), int(v["ts"]), prev),
            call=None if c is None else Call(
                ts=int(c["ts"]), end_ns=int(c["end_ns"]), cpu=int(c["cpu"]),
                caller=self.caller_names.get(int(c["caller"]), str(c["caller"])),
                length=int(c["length"]), seed=int(c["seed"]),
                result=int(c["result"]), irqs=int(c["irqs"])),
            window_arrivals=[self.arrival(i) for i in hits if a.call[i] == call],
            block_sector=sector, block=block,
            computation=interference.computation(
                self.events, self.calls["ts"][chain], self.calls["cpu"][chain], v),
            diagnosis=None)

    def _diagnosed(self, failures):
        """The failures with their diagnoses: what ran inside the failing
        computations of each verdict kind that no window explains and the
        log's history holds whole, ranked against the good computations of
        that kind it holds whole."""
        spans = interference.coverage(self.log)
        ev = self.events
        whole = [self._whole(f, spans) for f in failures]
        suspects, good = {}, {}
        for kind in {f.kind for f in failures if not f.attributed}:
            failing = [ev.identities(f.computation.where, f.tid)
                       for f, w in zip(failures, whole)
                       if f.kind == kind and not f.attributed and w]
            good[kind] = self._good_computations(kind, spans)
            suspects[kind] = interference.rank(failing, good[kind], ev.names)
        return [dataclasses.replace(f, diagnosis=interference.diagnose(
            f, suspects.get(f.kind, []), len(good.get(f.kind, ())), w))
            for f, w in zip(failures, whole)]

    @staticmethod
    def _whole(f, spans):
        """Whether the log holds a failure's whole computation: its calls
        back to the task's previous verdict (history_covered: the calls
        ring may have lost the first of them, and the group shrinks to what
        is left), at least one call, and what ran on each of its CPUs over
        its span."""
        c = f.computation
        return (f.history_covered is not False and c.calls > 0
                and interference.covered(spans, c.cpus, c.begin, c.end))

    def _good_computations(self, kind, spans):
        """The identity sets of the computations of this verdict kind that
        matched and whose span the log's history covers."""
        m = self._marks
        want = np.nonzero(~m["bad"])[0]
        out = []
        for k in want:
            mark = m[k]
            if kind_name(self.caller_names, int(mark["kind"])) != kind:
                continue
            group, prev = self._group(mark, int(mark["kind"]))
            group = self._chain(group)
            if not len(group) or (spans is not None and not prev):
                continue
            begin, end = int(self.calls["ts"][group].min()), int(mark["ts"])
            cpus = sorted({int(c) for c in self.calls["cpu"][group]} | {int(mark["cpu"])})
            # From the previous verdict: a ring that lost the group's first
            # calls would leave a shorter group that looks covered.
            if interference.covered(spans, cpus, prev if spans is not None else begin, end):
                out.append(self.events.identities(
                    interference.where(self.calls["ts"][group], self.calls["cpu"][group],
                                       end, int(mark["cpu"])), int(mark["tid"])))
        return out

    def by_kind(self):
        """{kind: (failures, attributed)}."""
        out = {}
        for f in self.failures:
            n, a = out.get(f.kind, (0, 0))
            out[f.kind] = (n + 1, a + f.attributed)
        return out

    def diagnoses(self):
        """{diagnosis kind: failures}, and each interference failure's first
        suspect counted under "first suspects"."""
        out = {}
        for f in self.failures:
            out[f.diagnosis.kind] = out.get(f.diagnosis.kind, 0) + 1
            if f.diagnosis.suspects:
                first = out.setdefault("first suspects", {})
                name = f.diagnosis.suspects[0].name
                first[name] = first.get(name, 0) + 1
        return out

    def arrival(self, i):
        a = self.arrivals
        return Arrival(source=str(a.source[i]), ts=int(a.ts[i]), cpu=int(a.cpu[i]),
                       offset_ns=int(a.offset_ns[i]), position=float(a.position[i]),
                       pc=int(a.pc[i]), func=int(a.func[i]), offset=int(a.offset[i]))

    def _block(self, v):
        """(sector, Completion): the sector of v's inode-table block and the
        latest completion that brought it in; None for what is unknown."""
        if self.geometry is None:
            return None, None
        where = self.geometry.inode_sectors(v["ino"])
        if where is None:
            return None, None
        sector, count = where
        c = self.completions
        ok = ((c["dev"] == v["dev"]) & (c["sector"] <= sector)
              & (c["sector"] + c["nr_sectors"] >= sector + count) & (c["ts"] <= v["ts"]))
        idx = np.nonzero(ok)[0]
        if not len(idx):
            return sector, None
        b = c[idx[-1]]
        return sector, Completion(
            ts=int(b["ts"]), cpu=int(b["cpu"]), sector=int(b["sector"]),
            nr_sectors=int(b["nr_sectors"]), latency_ns=int(v["ts"] - b["ts"]),
            cross_cpu=bool(b["cpu"] != v["cpu"]))

    def window_totals(self):
        """(calls with a window arrival, window arrivals) of the whole run.
        A flight log (record=failures) has only its snapshots' records, so
        these come from its trailer's counters (None without a trailer)."""
        if self.log.header.get("record") == "failures":
            if self.log.trailer is None:
                return None, None
            # Arrivals from the sources this run attached (the sampler is
            # usually left out); a run that attached neither knows nothing.
            counted = [self.log.counter(f"{kind}.window")
                       for kind in ("irq", "sample") if self.log.attached(f"{kind}.window")]
            return (self.log.counter("chksum_window"), sum(counted) if counted else None)
        return int(len(self.window_calls)), int(np.count_nonzero(self.arrivals.window))

    def attributed(self):
        return sum(f.attributed for f in self.failures)

    def latencies_ns(self):
        return [f.block.latency_ns for f in self.failures if f.block]
