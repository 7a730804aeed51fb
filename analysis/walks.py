"""Failures walked by replay (guest/replay.py --failure all), as the report
shows them: each boot's latest walk.json, and one row per failure.

A walk's attribution comes from a replay of an untraced boot under QEMU's
gdb stub, not from a tracer inside the boot: the call whose result was
not the CRC32C of its bytes, the write that put the wrong value over the
state it had stored, the exception frame of that write (the interrupted
pc) and the load that read it back (guest/host/walk.py).
"""

import json
import pathlib

SOURCE = ("replay: each failure of a boot recorded with QEMU's record/replay, "
          "walked under the gdb stub with no tracer in the boot")


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


def rows(walked):
    """The report's table: a row per walked failure."""
    table = [["boot", "failure", "message", "inode", "call (bytes)",
              "interrupted at", "window", "overwritten by", "state", "read back by",
              "source"]]
    for boot, doc in walked:
        for w in doc["walks"]:
            story, call, report = w["story"] or {}, w["call"], w["report"]
            irq = story.get("interrupt") or {}
            table.append([
                boot, w["failure"], report.get("message") or "-", report.get("inode"),
                f"{call['length']} at {call['address']:#x}" if call else "none found",
                f"{irq['at']} ({irq['insn']})" if irq else "-",
                irq.get("window") or ("none stackscan found" if irq else "-"),
                overwritten_by(story, irq) if story.get("explained") else story.get("why", "-"),
                f"{story['stored_value']:#010x} -> {story['read_value']:#010x}"
                if story.get("explained") else "-",
                story["load"]["at"] if story.get("explained") else "-",
                "replay"])
    return table


def overwritten_by(story, irq):
    """The exception entry's write and the pt_regs member, and how many
    writes followed it before the load."""
    first = irq["entry_write"] if irq else story["overwrites"][0]
    text = f"{first['at']}: {irq['field']}" if irq else first["at"]
    later = len(story["overwrites"]) - 1 - story["overwrites"].index(first)
    return text + (f", then {later} more write{'s' if later > 1 else ''}" if later else "")


def totals(walked):
    """(failures walked, explained, by an interrupt in a window)."""
    return (sum(d["walked"] for _, d in walked), sum(d["explained"] for _, d in walked),
            sum(d["in_window"] for _, d in walked))
