#!/usr/bin/python3
"""Record and replay: what recording costs, whether it changes what the lab
measures, whether replays repeat, and how many failures the walk explains.

Untraced inode-loop boots on the unpatched lab kernel at -icount shift=4:
  cost and rates  loop width 16, --seeds phase seeds, each boot once
                  unrecorded (the lab's sleep=off) and once recorded
                  (sleep=on, rr=record), two at a time; rate per call of
                  the two against each other (analysis/verdict.compare,
                  margin --margin) and against the model's prediction;
                  every recording replayed once, the first three times.
  walks           every failure of recorded gcc49-exact boots (--exact-seeds,
                  two at a time until they hold 20 failures), of one width-1 and one
                  width-16 boot, of one gcc49-indirect boot (the window
                  stackscan does not flag) and of one boot of each off-stack
                  mode (patch 0005), walked by guest/replay.py: explained, the
                  writers named, the walk's wall time per failure.
  tracer          one recorded boot under the loader (-R failures, loop
                  width 4): the walk's interrupted pc for each failure
                  against the flight recorder's window arrival.
"""

import argparse
import concurrent.futures
import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

from analysis import chkwinlog
from analysis import correlate
from analysis import model
from analysis import verdict
from analysis import walks
from analysis.documents import BootStatus
from guest.host import bootrunner
from bench.section import print_section
from common import PY, REPO
from common.digest import file_sha256

SHIFT = 4


def boot(out, seed, seconds, append, record, scenario="inode-loop"):
    """One of the bench's boots, for boots()."""
    flags = ["--flavour", "unpatched", "--scenario", scenario, "--clock", "icount",
             "--shift", str(SHIFT), "--phase-seed", str(seed), "--duration", str(seconds),
             "--append", append]
    return bootrunner.Boot(out, flags + (["--record-replay"] if record else []))


def boots(specs):
    """The boots of specs (boot()'s arguments), two at a time through the
    lab's boot runner; their BootStatus records in order."""
    return bootrunner.statuses([boot(*spec) for spec in specs], 2)


def replay(run, *extra):
    proc = subprocess.run([PY, str(REPO / "guest/replay.py"), str(run), *extra],
                          capture_output=True, text=True)
    return proc


def replays(runs):
    """guest/replay.py of each run, two at a time: the processes."""
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        return list(ex.map(replay, runs))


def predicted(status, window, width):
    return model.per_call(window, width, status.interrupts, SHIFT) * status.checksum_calls


def cost_and_rates(top, seeds, seconds, margin):
    append = "ext4.chksum_window=gcc49 ext4.chksum_window_width=16"
    specs = []
    for s in seeds:
        specs += [(top / f"plain-{s}", s, seconds, append, False),
                  (top / f"rec-{s}", s, seconds, append, True)]
    statuses = boots(specs)
    plain, rec = statuses[0::2], statuses[1::2]
    metas = [json.loads((top / f"rec-{s}" / "replay.json").read_text()) for s in seeds]
    again = replays([top / f"rec-{s}" for s in seeds] + [top / f"rec-{seeds[0]}"] * 2)
    reproduced = sum(p.returncode == 0 for p in again[:len(seeds)])
    for p in again[len(seeds):]:
        if p.returncode != 0:
            sys.exit(f"replay_bench: error: a repeated replay: {p.stderr.strip()}")
    first = top / f"rec-{seeds[0]}"
    same = {(file_sha256(d / "console.log"), json.dumps(
        {k: v for k, v in BootStatus.read(d / "status.json").to_json().items()
         if k not in ("wall_seconds", "replay_of")}, sort_keys=True))
        for d in sorted(first.glob("replay-*"))}
    replay_walls = [json.loads((d / "verdict.json").read_text())["wall_seconds"]
                    for s in seeds for d in sorted((top / f"rec-{s}").glob("replay-*"))[:1]]
    a = [(r.checksum_failures_total, r.checksum_calls) for r in rec]
    b = [(p.checksum_failures_total, p.checksum_calls) for p in plain]
    v = verdict.compare(a, b, margin=margin, names=("recorded", "unrecorded"))
    rows = []
    for name, runs in (("unrecorded", plain), ("recorded", rec)):
        k = sum(r["checksum_failures_total"] for r in runs)
        n = sum(r["checksum_calls"] for r in runs)
        pred = sum(predicted(r, "gcc49", 16) for r in runs)
        ratio, (lo, hi) = model.ratio_to_model(k, pred)
        rows.append((f"{name}: failures / calls, width 16, {len(runs)} boots",
                     f"{k} / {n:,} = {k / n:.3g} a call; model {pred:.0f} "
                     f"(measured/predicted {ratio:.2f}, 95% CI {lo:.2f}-{hi:.2f})"))
        rows.append((f"{name}: wall seconds a boot ({seconds} guest s)",
                     " ".join(f"{r['wall_seconds']:.1f}" for r in runs)))
    rows += [
        ("recorded against unrecorded, rate per call", v.text),
        ("replay log bytes a guest second",
         " ".join(f"{m['log_bytes_per_guest_second']:,}" for m in metas)),
        ("replay wall seconds (recorded in)",
         " ".join(f"{w:.1f} ({m['wall_seconds']:.1f})" for w, m in zip(replay_walls, metas))),
        ("replays that reproduced their recording",
         f"{reproduced} of {len(seeds)} (console byte for byte, failures, calls, uptime)"),
        (f"three replays of {first.name}: distinct (console, status) outcomes", len(same))]
    return rows


def walk(run):
    """guest/replay.py RUN --failure all: its walk document, with the
    walk's wall seconds."""
    start = time.monotonic()
    proc = replay(run, "--failure", "all")
    doc = walks.latest(run)
    if doc is None:
        sys.exit(f"replay_bench: error: walk of {run.name}: "
                 f"{(proc.stderr.strip().splitlines() or ['no walk.json'])[-1]}")
    return {**doc, "wall_seconds": time.monotonic() - start}


# Recorded once each beside the exact window: the loop widths, the window
# stackscan does not flag, and the off-stack cases of patch 0005.
SINGLES = {"width 1": "ext4.chksum_window=gcc49",
           "width 16": "ext4.chksum_window=gcc49 ext4.chksum_window_width=16",
           "gcc49-indirect": "ext4.chksum_window=gcc49-indirect",
           "offstack percpu": "ext4.chksum_offstack=percpu",
           "offstack shared": "ext4.chksum_offstack=shared",
           "offstack buffer": "ext4.chksum_offstack=buffer"}


def writers(docs):
    """'N x <context>' for the writers the walks named."""
    named = {}
    for d in docs:
        for w in d["walks"]:
            writer = (w["story"] or {}).get("writer")
            if writer:
                context = re.split(r", (?:in the shadow|run while)",
                                   walks.context_text(writer["context"]))[0]
                key = f"{writer['at'].split('+')[0]} in {context}"
                named[key] = named.get(key, 0) + 1
    return "; ".join(f"{n} x {k}" for k, n in sorted(named.items(), key=lambda x: -x[1]))


def walk_rows(top, exact_seeds, seconds, least=20):
    """Recorded gcc49-exact boots, two at a time, until they hold at
    least `least` failures (or the seeds run out), then the others."""
    runs, failures = [], 0
    for pair in (exact_seeds[i:i + 2] for i in range(0, len(exact_seeds), 2)):
        if failures >= least:
            break
        statuses = boots([(top / f"exact-{s}", s, seconds,
                           "ext4.chksum_window=gcc49-exact", True) for s in pair])
        runs += [top / f"exact-{s}" for s in pair]
        failures += sum(st.checksum_failures_total for st in statuses)
    exact = [walk(r) for r in runs]
    boots([(top / name.replace(" ", "-"), exact_seeds[0], seconds, append, True)
           for name, append in SINGLES.items()])
    walked = {"gcc49-exact": exact}
    walked.update({name: [walk(top / name.replace(" ", "-"))] for name in SINGLES})
    rows = []
    for name, docs in walked.items():
        failures = sum(d["failures_recorded"] for d in docs)
        n = sum(d["walked"] for d in docs)
        explained = sum(d["explained"] for d in docs)
        in_window = sum(d["in_window"] for d in docs)
        wall = sum(d["wall_seconds"] for d in docs)
        where = sorted({w["story"]["interrupt"]["at"] for d in docs for w in d["walks"]
                        if w["story"] and w["story"].get("interrupt")
                        and w["story"]["interrupt"]["window"]})
        rows.append((f"{name}: failures walked to their writer ({len(docs)} boots)",
                     f"{explained} of {n} explained ({failures} on the consoles), "
                     f"{in_window} by an interrupt in a window stackscan found"
                     + (f" (interrupted at {', '.join(where)})" if where else "")
                     + f"; writers: {writers(docs) or '-'}; walk {wall:.0f} s wall, "
                     f"{wall / max(n, 1):.1f} s a failure"))
    return rows


def tracer_rows(top, seed, seconds):
    run = top / "traced"
    boots([(run, seed, seconds, "ext4.chksum_window=gcc49 ext4.chksum_window_width=4 "
            "chkwin.workload=inode-loop chkwin.loader=-R,failures", True, "record")])
    doc = walk(run)
    log = chkwinlog.read(run / "log.bin")
    corr = correlate.Correlation(log)
    traced = {}
    for f in corr.failures:
        pcs = [w.pc for w in f.window_arrivals]
        traced.setdefault(f.ino, []).append(pcs)
    agree = disagree = untraced = 0
    for w in doc["walks"]:
        irq = (w["story"] or {}).get("interrupt")
        pcs = traced.get(w["report"].get("inode"), [])
        if not pcs:
            untraced += 1
        elif irq and any(irq["pc"] in p for p in pcs):
            agree += 1
        else:
            disagree += 1
    return [("tracer against replay, one recorded boot under -R failures (width 4)",
             f"{doc['walked']} failures walked, {doc['explained']} explained; the flight "
             f"recorder attributed {corr.attributed()} of {len(corr.failures)}; same "
             f"interrupted pc {agree}, different {disagree}, no tracer record {untraced}")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="11,12,13,14,15,16,17,18")
    ap.add_argument("--exact-seeds", default="21,22,23,24,25,26,27,28")
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--margin", type=float, default=0.10)
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    exact_seeds = [int(s) for s in args.exact_seeds.split(",")]
    # Kept when a step fails (its one-line error names what to look at).
    top = pathlib.Path(tempfile.mkdtemp(prefix="replay-bench-"))
    rows = cost_and_rates(top, seeds, args.seconds, args.margin)
    wrows = walk_rows(top, exact_seeds, args.seconds)
    rows += wrows + tracer_rows(top, seeds[0], args.seconds)
    shutil.rmtree(top)
    print_section(
        "Record and replay",
        "Untraced inode-loop boots of the unpatched lab kernel, -icount shift=4, "
        f"{args.seconds} guest seconds each, two at a time: the same phase seeds "
        "unrecorded (sleep=off, the lab's setting) and recorded (sleep=on, rr=record: "
        "QEMU 7.2's record mode hangs at the first disk read with sleep=off); the model "
        "predicts W x lambda x 16 ns a call from each boot's own interrupt counts. "
        "Walks: guest/replay.py RUN --failure all over recorded boots.", rows)


if __name__ == "__main__":
    main()
