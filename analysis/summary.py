"""One log at a glance: kernel, flavour, how each probe attached, how long
it ran, what it recorded and lost, and whether the log is whole."""

from analysis import chkwinlog


UNKNOWN = "unknown (no window symbols in this kernel)"


def _known(value):
    """None (a figure this kernel cannot give) as text."""
    return UNKNOWN if value is None else value


def summarize(log, path, corr=None):
    log.check_analysable()
    h = log.header
    known = log.window_known()
    counts = {kind: len(log.of(kind)) for kind in log.layout.types.values()}
    secs = log.duration_s()
    # A flight log's records are its snapshots': classes come from the
    # counters, which saw every arrival.
    flight = h.get("record") == "failures" and log.trailer is not None
    irq_classes = {}
    for kind in ("irq", "sample"):
        if not chkwinlog.hook_attached(h, kind):
            irq_classes[kind] = chkwinlog.NOT_ATTACHED
            continue
        cls = log.of(kind)["class"]
        irq_classes[kind] = {name: log.counter(f"{kind}.{name}") if flight
                             else int((cls == n).sum())
                             for n, name in enumerate(chkwinlog.CLASSES)}
        if not known:
            irq_classes[kind]["window"] = None
    out = {
        "log": str(path), "status": log.status,
        "truncated": log.status == "truncated",
        "reason": log.reason if log.status == "truncated" else None,
        "kernel_release": h.get("kernel_release"), "flavour": h.get("flavour"),
        "kernel_kind": h.get("kernel_kind"), "window_known": known,
        "chksum_window": h.get("chksum_window"), "cpus": h.get("cpus"),
        "sample_hz": h.get("sample_hz"), "record": h.get("record", "all"),
        "modes": {k[5:]: v for k, v in h.items() if k.startswith("mode.")},
        "duration_s": round(secs, 3),
        "records": counts,
        "rates_per_s": {k: round(v / secs, 1) if secs else None
                        for k, v in counts.items()},
        "classes": irq_classes,
        "lost": log.lost(),
        "ending": (log.trailer or {}).get("ending"),
    }
    if corr is not None:
        out["failures"] = len(corr.failures)
        out["failures_attributed"] = corr.attributed() if known else None
        out["failures_by_kind"] = {k: n for k, (n, _) in corr.by_kind().items()}
        out["failure_source"] = corr.source
        out["window_hit_calls"] = corr.window_totals()[0] if known else None
        out["arrivals_in_calls"] = len(corr.arrivals)
    return out


def text(s):
    lines = [f"log: {s['log']}", f"status: {s['status']}"
             + (f" ({s['reason']})" if s["truncated"] else "")]
    for key in ("kernel_release", "flavour", "kernel_kind", "chksum_window",
                "cpus", "sample_hz", "record", "duration_s", "ending"):
        lines.append(f"{key}: {s[key]}")
    lines.append("modes: " + " ".join(f"{k}={v}" for k, v in s["modes"].items()))
    lines.append("records: " + " ".join(
        f"{k}={v} ({s['rates_per_s'][k]}/s)" for k, v in s["records"].items()))
    for kind, cls in s["classes"].items():
        lines.append(f"{kind} classes: " + ("not attached" if cls == chkwinlog.NOT_ATTACHED
                                             else " ".join(f"{k}={'unknown' if v is None else v}"
                                                           for k, v in cls.items())))
    lost = s["lost"]
    lines.append("lost: " + (" ".join(f"{k}={v}" for k, v in lost.items())
                             if lost else "unknown (no trailer)"))
    if "failures" in s:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(s["failures_by_kind"].items()))
        lines.append(f"failures ({s['failure_source']}): {s['failures']}"
                     + (f" ({kinds})" if kinds else "") + ", "
                     f"after a window interrupt: {_known(s['failures_attributed'])}; "
                     f"calls with a window arrival: {_known(s['window_hit_calls'])}")
    return "\n".join(lines) + "\n"
