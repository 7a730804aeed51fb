"""The flight recorder (`chkwin --record failures`), replayed on a full log.

bpf/flight.bpf.h keeps, per CPU, a ring of the last K checksum calls and
verdicts (chksum, verify, iget records) and one of the last K arrivals
(irq, sample, softirq, ran), and one ring of the last K block completions for all CPUs.
A verify mismatch or an iget returning -EFSBADCRC is pushed into its ring,
then snapshots it: a snapshot record, then whatever that CPU's two rings
and the blocks ring hold that no earlier snapshot sent.  cut() does the
same to the records of a full (`--record all`) log, so that what the
flight recorder keeps can be compared with everything: the attributions
from cut(log, K) must equal those from log.  It is also where the ring
rules are written down for the analysis; docs/log-format.md has them for
people.
"""

import numpy as np

from analysis import chkwinlog
from analysis.chkwinlog import F_COMPLETE, F_MISMATCH, RINGS

EFSBADCRC = -74
BLOCKS = (-1, 2)     # the ring key of the shared blocks ring


def _pushed(log):
    """When each record went into its ring: a checksum call, an irq and a
    softirq when they ended (their ts is when they began), the rest at ts.  Per
    CPU this is the order the BPF side pushes in, whatever order the file
    has (a synthetic log's, or commit order across CPUs)."""
    at = log.heads()["ts"].astype(np.int64)
    for kind in ("chksum", "irq", "softirq"):
        rows = log.rows(kind)
        at[rows] = log.field(kind, "end_ns", rows)
    return at


def _rings(log, at):
    """{ring key: rows of that ring in push order}: (cpu, 0) calls,
    (cpu, 1) arrivals, BLOCKS the completions of every CPU."""
    heads = log.heads()
    rings = {}
    for n, kinds in enumerate(RINGS.values()):
        types = [log.layout.type_ids.get(k, -1) for k in kinds]
        rows = np.nonzero(np.isin(heads["type"], types))[0]
        if n == 2:
            rings[BLOCKS] = rows[(log.field("block", "flags", rows) & F_COMPLETE) != 0]
            continue
        for cpu in np.unique(heads["cpu"][rows]):
            rings[(int(cpu), n)] = rows[heads["cpu"][rows] == cpu]
    return {k: rows[np.argsort(at[rows], kind="stable")] for k, rows in rings.items()}


def _triggers(log, at):
    """Rows that make a snapshot, in push order: verify mismatches and
    iget -EFSBADCRC."""
    v = log.rows("verify")
    v = v[(log.field("verify", "flags", v) & F_MISMATCH) != 0]
    g = log.rows("iget")
    g = g[log.field("iget", "err", g) == EFSBADCRC]
    rows = np.concatenate([v, g])
    return rows[np.argsort(at[rows], kind="stable")]


def cut(log, history):
    """The log `--record failures` with rings of `history` records would
    have written for the run `log` recorded in full: its header with
    record=failures and history=K, no trailer."""
    if log.header.get("record", "all") not in ("all", "on"):
        raise ValueError("cut() needs a log of every record (record=all)")
    heads, at = log.heads(), _pushed(log)
    rings = _rings(log, at)
    pushed = {k: at[rows] for k, rows in rings.items()}
    sent = dict.fromkeys(rings, 0)      # per ring: records before this were sent
    out = []
    for row in _triggers(log, at):
        cpu = int(heads["cpu"][row])
        snap = np.zeros(1, log.dtype("snapshot"))
        snap["type"], snap["cpu"] = log.layout.type_ids["snapshot"], cpu
        snap["tid"], snap["ts"] = heads["tid"][row], heads["ts"][row]
        snap["history"], snap["trigger"] = history, heads["type"][row]
        parts, evicted = [], 0
        for name, k in zip(RINGS, ((cpu, 0), (cpu, 1), BLOCKS)):
            if k not in rings:
                continue
            head = int(np.searchsorted(pushed[k], at[row], "right"))
            oldest = max(head - history, 0)
            start = max(sent[k], oldest)
            if k != BLOCKS:
                evicted += start - sent[k]
                if oldest:
                    snap[name[:-1] + "_horizon"] = heads["ts"][rings[k][oldest]]
            snap[name] = head - start
            parts.append(rings[k][start:head])
            sent[k] = max(sent[k], head)
        snap["evicted"] = evicted
        out.append(snap.view(np.uint8).reshape(1, -1))
        out.extend(log.records[p] for p in parts)
    records = np.concatenate(out) if out else np.zeros((0, chkwinlog.REC_SIZE), np.uint8)
    # The functions' names stay with the records that name them.
    symbols = {k: v for k, v in (log.trailer or {}).items() if k.startswith("sym.")}
    header = dict(log.header, record="failures", history=str(history), **symbols)
    return chkwinlog.Log(header, None, records, "complete", 0, "cut down", chkwinlog.VERSION,
                         log.layout)


def covered(log, cpu, ts, since):
    """Whether a flight log holds a failure's history from `since` on: the
    snapshot of the failing record (same CPU and ts) has both horizons at
    or before it (a horizon of 0: the ring never wrapped).  Correlation
    asks from the task's previous verdict, after which the failure's group
    of calls began (0 when the log has none: not covered unless the rings
    never wrapped); from the failing call's begin, it asks whether K
    covered that call.  None for a log of every record."""
    if log.header.get("record") != "failures":
        return None
    snaps = log.rows("snapshot")
    mine = snaps[(log.field("snapshot", "cpu", snaps) == cpu)
                 & (log.field("snapshot", "ts", snaps) == ts)]
    if not len(mine):
        return False
    return all(int(log.field("snapshot", h, mine[:1])[0]) <= since
               for h in ("call_horizon", "arrival_horizon"))
