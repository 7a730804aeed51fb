"""The tables of an experiment's report, from the statistics of its record
(analysis/experiment.py's Results): each a list of rows, the first the
column heads, every cell text."""

from analysis import model
from analysis import walks
from analysis.design import PER
from analysis.verdict import interval


def condition_table(rows):
    """Results.condition_rows."""
    out = [["condition", "boots", "failures (per boot)", "by kind", "checksum calls",
            "per 1M calls (95% CI)", "per guest minute"]]
    for r in rows:
        if not r["boots"]:
            out.append([r["condition"], "0", "-", "-", "-", "-", "-"])
            continue
        out.append([r["condition"], str(r["boots"]),
                    f"{r['failures']} ({' '.join(map(str, r['per_boot']))})",
                    ", ".join(f"{k} {n}" for k, n in sorted(r["by_kind"].items()))
                    or "-", f"{r['calls']:,}",
                    f"{r['per_million']:.3g} ({interval(*r['ci'])})",
                    f"{r['per_minute']:.3g}"])
    return out


def model_table(rows):
    """Results.model_rows."""
    out = [["condition", "fatal boundaries W", "shift (ns a insn)",
            "lambda: timer / device irqs per task s", "checksum calls",
            "predicted failures", "measured", "measured / predicted (95% CI)"]]
    for r in rows:
        ratio = "-" if r["window"] == "off" else \
            f"{r['ratio']:.2f} ({interval(*r['ratio_ci'])})"
        out.append([r["condition"], str(r["W"]),
                    f"{r['shift']} ({2 ** r['shift']})",
                    f"{r['timer_per_s']:.0f} / {r['device_per_s']:.0f}", f"{r['calls']:,}",
                    f"{r['predicted']:.1f}", str(r["measured"]), ratio])
    return out


def hardware_table(res):
    """Results.hardware: the model extrapolated to a Cortex-A72."""
    s = res.doc.settings
    need, rows = res.hardware
    out = [["load (assumed checksum calls/s)", "interrupts/s", "mean time between failures",
            f"time to {need:,} failures (+-{s.margin * 100:.0f}% at "
            f"{s.power * 100:.0f}% power)"]]
    for what, lam, mtbf, decide in rows:
        out.append([what, str(lam), model.duration(mtbf), model.duration(decide)])
    return out


def decomposition_table(rows):
    """Results.decomposition: the recorded boots."""
    out = [["boot", "checksum calls", "calls with a window arrival per 1M (95% CI)",
            "failures (console)", "failures per window call (95% CI)",
            "window calls by caller: failed / matched / not verified",
            "console failures by kind",
            "log failures by kind: after a window irq / all", "lost records"]]
    for r in rows:
        mech = "-" if r["mechanism"] is None else \
            f"{r['mechanism']:.2f} ({interval(*r['mechanism_ci'])})"
        out.append([r["boot"], f"{r['calls']:,}",
                    f"{r['timing']:.3g} ({interval(*r['timing_ci'])}), "
                    f"{r['window_calls']} calls",
                    str(r["failures"]), mech,
                    (", ".join(f"{k} {o['failed']}/{o['matched']}/{o['not verified']}"
                               for k, o in sorted(r["window_outcomes"].items())) or "-")
                    + (" (in snapshots)" if r.get("record") == "failures" else ""),
                    ", ".join(f"{k} {n}" for k, n in sorted(r["failures_by_kind"].items()))
                    or "-",
                    ", ".join(f"{k} {a}/{n}" for k, (n, a) in sorted(r["logged_by_kind"].items()))
                    or "-", str(r["lost"])])
    return out


def walks_table(walked):
    """A row per failure walked by replay (analysis/walks.py): where the
    wrong value was written, by what, into which memory, and read back."""
    table = [["boot", "failure", "message", "inode", "call (bytes)", "written by",
              "context", "memory", "interrupted at", "window", "value", "read back by",
              "source"]]
    for boot, doc in walked:
        for w in doc["walks"]:
            story, call, report = w["story"] or {}, w["call"], w["report"]
            writer = story.get("writer") or {}
            irq = story.get("interrupt") or {}
            table.append([
                boot, w["failure"], report.get("message") or "-", report.get("inode"),
                f"{call['length']} at {call['address']:#x}" if call else "none found",
                (f"{writer['at']} ({writer['insn']})" if writer.get("at") else "-")
                if story.get("explained") else story.get("why", "-"),
                walks.context_text(writer["context"]) if writer else "-",
                writer.get("memory") or "-",
                f"{irq['at']} ({irq['insn']})" if irq else "-",
                irq.get("window") or ("none stackscan found" if irq else "-"),
                value_change(writer), (story.get("load") or {}).get("at", "-"), "replay"])
    return table


def value_change(writer):
    """'before -> after' of the writer's store, '?' where the trace did not
    know the bytes before it."""
    if writer.get("kind") != "memory":
        return "-"
    before = "?" if writer["before"] is None else f"{writer['before']:#x}"
    after = "?" if writer["after"] is None else f"{writer['after']:#x}"
    return f"{before} -> {after}"


def boots_table(doc):
    """Every boot of the record, in the order they ran."""
    return [["round.slot", "boot", "failures", "checksum calls", "wall s"]] + [
        [f"{b.round}.{b.slot}", b.dir, str(b.failures_total),
         f"{b.calls:,}", f"{b.wall_seconds:.0f}"] for b in doc.boots]


def boot_rates(doc):
    """Lines of every counting gcc49 boot, in the order they ran: round,
    slot, failures per million calls and calls per guest second (how fast
    the host let the guest run), for looking at order and host load."""
    lines = [f"{'boot':<40} {'round.slot':>10} {'failures':>8} {'per 1M calls':>12} "
             f"{'calls/s':>8}"]
    for b in doc.boots:
        c = next(c for c in doc.conditions if c.name == b.condition)
        if c.kind == "counting" and c.window == "gcc49" and not c.singlestep:
            lines.append(f"{b.dir:<40} {b.round:>7}.{b.slot:<2} "
                         f"{b.failures_total:>8} "
                         f"{b.failures_total / b.calls * PER:>12.2f} "
                         f"{b.calls / b.guest_seconds:>8.0f}")
    return lines
