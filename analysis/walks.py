"""Failures walked by replay (guest/replay.py --failure all): each boot's
latest walk.json, which an experiment's report shows (analysis/tables.py,
analysis/prose.py).

A walk's attribution comes from a replay of an untraced boot under QEMU's
gdb stub, not from a tracer inside the boot: the call whose result was
not the CRC32C of its bytes, the chain from that result back to where
the value crossed from another context, the write that put it there, its
context (an interrupt, a softirq, another task, or no writer on this
CPU) and the load that read it (guest/host/walk.py,
guest/host/provenance.py).  This file also words a story's parts, for
the walk's own output and the report.
"""

import json
import pathlib

def latest(run):
    """The newest walk.json of a boot's directory that walked every
    failure (--failure all), else the newest of any; None when there is
    none."""
    numbered = []
    for path in pathlib.Path(run).glob("walk-*/walk.json"):
        suffix = path.parent.name.removeprefix("walk-")
        if suffix.isdigit():
            numbered.append((int(suffix), path))
    docs = [json.loads(path.read_text()) for _, path in sorted(numbered)]
    every = [d for d in docs if d["failures_reported"] is not None]
    return (every or docs or [None])[-1]


def first_explained(walked):
    """(boot, walk) of the first failure walked to a writer, of
    [(boot, walk doc)]; None when none was."""
    for boot, doc in walked:
        for w in doc["walks"]:
            if w["story"] and w["story"].get("explained") and w["story"].get("writer"):
                return boot, w
    return None


def of_boots(top, dirs):
    """[(boot dir, walk doc)] of the boots that were walked, of dirs (the
    boots' directories in top, in run order)."""
    out = []
    for d in dirs:
        doc = latest(pathlib.Path(top) / d)
        if doc is not None:
            out.append((d, doc))
    return out


def hexval(value):
    """A value in hex, or '?' where the trace did not know it."""
    return "?" if value is None else f"{value:#x}"


def context_text(ctx):
    """'a softirq: timer callback ext4_chksum_percpu_scrub (via call_timer_fn)'."""
    text = {"hard interrupt": "a hard interrupt", "softirq": "a softirq"}.get(
        ctx["kind"], ctx["kind"])
    task = ctx.get("task")
    if task and task.get("comm"):
        text += f" {task['comm']} (pid {task['pid']})"
    cb = ctx.get("callback")
    if cb:
        text += f": {cb['what']} {cb['function']} (via {cb['via']})"
    irq = ctx.get("interrupted")
    if irq:
        text += f", in the shadow of an interrupt at {irq['at']}"
    if ctx.get("yielded_in"):
        text += f", run while the call yielded ({' > '.join(ctx['yielded_in'])})"
    return text


def hop_text(h):
    value = hexval(h.get("value"))
    if h["hop"] == "elided":
        return f"... {h['count']} more computed in the same function"
    if h["hop"] == "register":
        return f"{h['reg']} = {value}"
    where = f"{h['at']} ({h['insn']}) at {h['icount']:,}"
    if h["hop"] == "load":
        return f"loaded by {where} from {h['address']:#x}, {h['memory']}"
    if h["hop"] == "store":
        return f"stored by {where} into {h['address']:#x}, {h['memory']}"
    return f"{h['hop']} by {where}"


def collapsed(chain):
    """The chain with each run of computed hops in one function shown as
    its last and first hop (a CRC loop is dozens)."""
    out, i = [], 0
    while i < len(chain):
        j = i
        while j + 2 < len(chain) and chain[j]["hop"] == "computed" and \
                chain[j + 2]["hop"] == "computed" and \
                chain[j + 2]["at"].split("+")[0] == chain[i]["at"].split("+")[0]:
            j += 2
        if j > i + 2:
            out += [chain[i], {"hop": "elided", "count": (j - i) // 2 - 1}, chain[j]]
        else:
            out += chain[i:j + 1]
        i = j + 1
    return out
