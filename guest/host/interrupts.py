"""Interrupt counts and CPU time around a scenario, from the console.

guest/init prints /proc/uptime, /proc/interrupts and the cpu line of
/proc/stat as a block (console_proc, guest/scenarios/_console.sh), once
before the scenario and once after.  The difference is what the failure
model needs: how many interrupts arrived, of which kind, in how many guest
seconds, and how much of that time the CPUs were idle or in interrupt
handlers (hardirq and softirq time is exact on the lab kernels,
CONFIG_IRQ_TIME_ACCOUNTING; elsewhere it is tick samples).  What is
left, task time, is where the checksum window can run.

Kinds: "timer" is the arch_timer line, the virtual-clock interrupts
(periodic tick, hrtimers, the perf sampler); under icount they land at an
exact instruction.  "ipi" are the IPI lines; "device" is every other
numbered line (virtio, serial), raised by QEMU's other threads and taken
where a translation block starts.
"""

from guest.host import console_lines

USER_HZ = 100       # /proc/stat's unit on arm64


def _snapshot(text):
    """{'uptime': s, 'idle': s, 'irq': s, 'timer': n, 'device': n, 'ipi': n,
    'cpus': n} of one block."""
    lines = text.splitlines()
    up = lines[0].split()
    snap = {"uptime": float(up[0]), "timer": 0, "device": 0, "ipi": 0}
    ncpu = len(lines[1].split())
    for line in lines[2:]:
        fields = line.split()
        if not fields:
            continue
        if fields[0] == "cpu":
            # idle and iowait: the CPUs executed nothing in either.
            snap["idle"] = (int(fields[4]) + int(fields[5])) / USER_HZ
            snap["irq"] = (int(fields[6]) + int(fields[7])) / USER_HZ
            continue
        name = fields[0].rstrip(":")
        counts = [int(f) for f in fields[1:1 + ncpu] if f.isdigit()]
        if name.startswith("IPI"):
            snap["ipi"] += sum(counts)
        elif name.isdigit():
            kind = "timer" if fields[-1] == "arch_timer" else "device"
            snap[kind] += sum(counts)
    if "idle" not in snap:
        raise ValueError("no cpu line from /proc/stat")
    snap["cpus"] = ncpu
    return snap


def around_scenario(console_text):
    """Counts over the scenario ({'seconds', 'idle_seconds', 'irq_seconds',
    'task_seconds', 'timer', 'device', 'ipi', 'cpus'}; seconds of every
    CPU together but 'seconds', the uptime), or None when the console lacks
    a whole before and after block (a guest that died, an older init)."""
    blocks = console_lines.proc_blocks(console_text)
    if "before" not in blocks or "after" not in blocks:
        return None
    try:
        a, b = _snapshot(blocks["before"]), _snapshot(blocks["after"])
    except (ValueError, IndexError):
        return None
    seconds = b["uptime"] - a["uptime"]
    idle = b["idle"] - a["idle"]
    irq = b["irq"] - a["irq"]
    return {"seconds": round(seconds, 2), "idle_seconds": round(idle, 2),
            "irq_seconds": round(irq, 2),
            "task_seconds": round(seconds * a["cpus"] - idle - irq, 2),
            "timer": b["timer"] - a["timer"], "device": b["device"] - a["device"],
            "ipi": b["ipi"] - a["ipi"], "cpus": a["cpus"]}
