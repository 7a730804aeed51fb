"""Failures walked by replay (guest/replay.py --failure all): each boot's
latest walk.json, which an experiment's report shows (analysis/tables.py,
analysis/prose.py).

A walk's attribution comes from a replay of an untraced boot under QEMU's
gdb stub, not from a tracer inside the boot: the call whose result was
not the CRC32C of its bytes, the write that put the wrong value over the
state it had stored, the exception frame of that write (the interrupted
pc) and the load that read it back (guest/host/walk.py).
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


def of_boots(top, dirs):
    """[(boot dir, walk doc)] of the boots that were walked, of dirs (the
    boots' directories in top, in run order)."""
    out = []
    for d in dirs:
        doc = latest(pathlib.Path(top) / d)
        if doc is not None:
            out.append((d, doc))
    return out
