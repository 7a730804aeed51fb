"""Walk a recorded boot's checksum failures back to their cause, by
replaying it under QEMU's gdb stub (guest/replay.py RUN --failure N|all).

The walk knows ext4, not the window: a failure is an ext4 error report
with EFSBADCRC, the call that went wrong is the last ext4_chksum() before
it whose result is not the CRC32C of its bytes, and the word it read the
wrong result from is found by value on the stack below that call.  From
there a watch on that word, over a third replay of the call alone, shows
every write and read of it: the checksum code storing the right state,
the last write before the read (in the 2021 bug: an exception entry
saving a register over the released frame, whose saved pc is the
interrupted instruction) and the load that read it back.  Nothing tells
the walk where the window is; the run's windows file only names it
afterwards.  Three replays serve any number of failures (one pass each:
failures, calls, watches), and one or two more where a failure's call
lies further back than the first reach; each runs from the start of the
recording, and each is checked to be a prefix of the recording's console.
"""

import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from analysis import windows as windows_file
from common.cache import quietly
from common.errors import die
from guest.host import kernelwindows
from guest.host import recordreplay
from guest.host.resultsdir import write_json

GDB = "gdb-multiarch"
GDB_SIDE = pathlib.Path(__file__).with_name("gdbwalk.py")
ERROR_FUNCTIONS = ("__ext4_error_inode", "__ext4_error")
CHKSUM_FUNCTION = "ext4_chksum"
# Instructions before a failure searched for the call that went wrong,
# first the short reach, then each ten times longer (a preempted or long
# interrupted call may lie further back).
REACHES = (200_000, 2_000_000, 20_000_000)
# Stack bytes below the call's sp searched for the word holding the
# wrong result: the descriptor lies in the call's own frames, within
# this of its sp on entry.
STACK_SCAN_BYTES = 1024
SOCKET_WAIT = 30


def console_is_prefix(run, passdir):
    """Whether the pass's console (cut short when gdb let go) is the
    start of the recorded one: the replay followed the recording."""
    recorded = (run / "console.log").read_bytes()
    replayed = (passdir / "console.log").read_bytes() \
        if (passdir / "console.log").exists() else b""
    return recorded.startswith(replayed)


def run_pass(run, meta, out, kind, job, name=None):
    """One replay of run under gdb, running gdbwalk.py's pass kind in
    out/pass-<name>; its findings (dict).  QEMU and gdb are stopped by
    their own pids whatever happens."""
    name = name or kind
    passdir = out / f"pass-{name}"
    passdir.mkdir()
    # A Unix socket's path has at most 107 bytes: not in a deep run directory.
    sockdir = pathlib.Path(tempfile.mkdtemp(prefix="chkwin-gdb-"))
    sock = sockdir / "gdb.sock"
    argv = recordreplay.replay_argv(meta, run, passdir) + [
        "-gdb", f"unix:{sock},server=on,wait=off", "-S"]
    job = {**job, "pass": kind, "socket": str(sock)}
    (passdir / "job.json").write_text(json.dumps(job, indent=1) + "\n")
    result = passdir / "result.json"
    vmlinux = vmlinux_of(meta)
    env = {**os.environ, "CHKWIN_WALK_JOB": str(passdir / "job.json"),
           "CHKWIN_WALK_OUT": str(result)}
    start = time.monotonic()
    with open(passdir / "qemu.log", "wb") as qlog, open(passdir / "gdb.log", "wb") as glog:
        qemu = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=qlog, stderr=qlog)
        gdb = None
        try:
            # gdb must not connect before QEMU listens (it would get
            # "Remote replied unexpectedly to 'vMustReplyEmpty'").
            deadline = time.monotonic() + SOCKET_WAIT
            while not sock.exists():
                if qemu.poll() is not None or time.monotonic() > deadline:
                    die(f"walk: QEMU did not open its gdb socket "
                        f"({last_line(passdir / 'qemu.log') or 'no message'})")
                time.sleep(0.05)
            gdb = subprocess.Popen(
                [GDB, "-batch", "-nx", "-ex", "set auto-load off", str(vmlinux),
                 "-x", str(GDB_SIDE)], stdin=subprocess.DEVNULL, stdout=glog,
                stderr=glog, env=env)
            try:
                gdb.wait(timeout=meta["timeout"] * 4)
            except subprocess.TimeoutExpired:
                die(f"walk: the {name} pass did not finish in {meta['timeout'] * 4} s "
                    f"(gdb log: {passdir / 'gdb.log'})")
        except FileNotFoundError as e:
            die(f"walk: {e.filename} not found: install gdb-multiarch and "
                "qemu-system-arm (make deps)")
        finally:
            for proc in (gdb, qemu):
                if proc is not None and proc.poll() is None:
                    proc.send_signal(signal.SIGKILL)
                    proc.wait()
            shutil.rmtree(sockdir, ignore_errors=True)
    if not result.is_file():
        die(f"walk: the {name} pass found nothing: "
            f"{last_line(passdir / 'gdb.log') or 'gdb said nothing'} "
            f"(gdb log: {passdir / 'gdb.log'})")
    if not console_is_prefix(run, passdir):
        die(f"walk: the {name} pass's replay diverged from the recording "
            f"(console: {passdir / 'console.log'})")
    found = json.loads(result.read_text())
    found["wall_seconds"] = round(time.monotonic() - start, 1)
    return found


def last_line(path):
    lines = path.read_text(errors="replace").strip().splitlines() if path.exists() else []
    return lines[-1] if lines else ""


def find_bad_calls(run, meta, out, failures):
    """{failure number: the last call before it whose result is wrong},
    searching REACHES instructions back, longer where none is found."""
    found, pending = {}, list(failures)
    for i, reach in enumerate(REACHES):
        if not pending:
            break
        targets = [{"failure": n, "icount": f["icount"], "after": f["after"],
                    "from": max(0, f["icount"] - reach)} for n, f in pending]
        res = run_pass(run, meta, out, "calls",
                       {"targets": targets, "chksum_function": CHKSUM_FUNCTION,
                        "stack_scan_bytes": STACK_SCAN_BYTES}, f"calls-{i + 1}")
        by_number = {t["failure"]: t["calls"] for t in res["targets"]}
        still = []
        for n, f in pending:
            bad = [c for c in by_number.get(n, []) if c["bad"]]
            if bad:
                found[n] = {**bad[-1], "reach": reach,
                            "calls_searched": len(by_number[n])}
            else:
                still.append((n, f))
        pending = still
    return found


def explained(watch, call, layout, placed):
    return bool(watch and "hits" in watch
                and mechanism(call, watch["hits"], layout, placed)["explained"])


def pt_regs_field(offset, layout):
    """The pt_regs member at offset, e.g. 'x13' or 'pc'."""
    named = {layout["sp"]: "sp", layout["pc"]: "pc", layout["pstate"]: "pstate"}
    word = offset - offset % 8
    half = "low" if offset % 8 == 0 else "high"
    if word in named:
        return f"pt_regs.{named[word]} ({half} half)"
    if 0 <= word < 8 * 31:
        return f"pt_regs.x{word // 8} ({half} half)"
    return f"pt_regs+{offset:#x}"


def window_of(pc, placed):
    for window, first, last in placed:
        if first <= pc <= last:
            return window.name
    return None


def mechanism(call, hits, layout, placed):
    """The story of one failure from its bad call and the watch of the
    words that held its result: the read of the wrong result below the
    reader's sp, the write of the right state into that word before it,
    and the writes between the two; the exception frame of the first of
    those that has one is the interrupt."""
    wrong = call["result"]
    # The class of bug: a read of a word below the reader's own sp.  Reads
    # above it are handlers reading their own frames.
    reads = [h for h in hits if h["kind"] == "read" and h["after"] == wrong
             and h["addr"] < h["sp"]]
    if not reads:
        return {"explained": False,
                "why": "no word the call stored into was overwritten with the "
                       "wrong result and read back below the reader's sp"}
    load = reads[-1]
    writes = [h for h in hits if h["kind"] == "write" and h["addr"] == load["addr"]
              and h["icount"] <= load["icount"]]
    right = [i for i, w in enumerate(writes) if w["after"] == call["expected"]]
    kept = [i for i, w in enumerate(writes) if w["after"] != wrong]
    at = (right or kept or [None])[-1]
    if at is None or at == len(writes) - 1:
        return {"explained": False, "load": load,
                "why": "the word read back was not written over a value the call stored"}
    stored, overwrites = writes[at], writes[at + 1:]
    overwrite = overwrites[-1]
    story = {"explained": overwrite["after"] == wrong, "slot": load["addr"],
             "load": load, "stored": stored, "overwrites": overwrites,
             "overwrite": overwrite, "stored_value": stored["after"],
             "read_value": wrong, "expected": call["expected"],
             "stored_is_expected": stored["after"] == call["expected"]}
    # An exception frame whose saved pc is not the exception's return
    # address is not the frame of the exception that wrote the word.
    entry = next((w for w in overwrites if w.get("frame")
                  and w["frame"]["pc"] == w.get("elr_el1")), None)
    if entry:
        frame = entry["frame"]
        story["interrupt"] = {
            "pc": frame["pc"], "at": frame.get("at"), "insn": frame.get("insn"),
            "sp": frame["sp"], "pstate": frame["pstate"],
            "frame_base": frame["base"], "elr_el1": entry["elr_el1"],
            "entry_write": entry,
            "field": pt_regs_field(load["addr"] - frame["base"], layout),
            "window": window_of(frame["pc"], placed)}
    return story


def placed_windows(run, meta):
    """The windows the run watched (its lab.windows) or, for a boot that
    watched none, those stackscan finds in the recorded kernel, placed by
    its System.map; [] where neither exists (a stock kernel)."""
    kdir = recordreplay.kernel_dir(meta)
    path = run / "lab.windows"
    if not path.is_file():
        if not (kdir / "vmlinux").is_file():
            return []
        with quietly():
            path = kernelwindows.cached_scan(kdir / "vmlinux") / "windows"
    try:
        return windows_file.place(windows_file.read(path),
                                  windows_file.symbols_from(kdir / "System.map"))
    except windows_file.WindowsError as e:
        die(f"{path}: {e}")


def story_text(n, failure, call, story):
    lines = [f"failure {n}: {failure.get('message')!r} ({failure['function']} from "
             f"{failure.get('reported_by')}), inode {failure.get('inode')}, "
             f"reported at instruction {failure['icount']:,}"]
    if call is None:
        lines.append("  no ext4_chksum() call returned a wrong CRC32C in the "
                     f"{REACHES[-1]:,} instructions before the report")
        return "\n".join(lines)
    lines.append(f"  call      ext4_chksum(crc={call['crc']:#010x}, {call['length']} bytes "
                 f"at {call['address']:#x}) at {call['entry_icount']:,}, sp {call['sp']:#x}: "
                 f"returned {call['result']:#010x}, the CRC32C of its bytes is "
                 f"{call['expected']:#010x}")
    if not story.get("explained"):
        lines.append(f"  unexplained: {story.get('why', 'the last write is not the wrong value')}")
        return "\n".join(lines)
    if story["stored"]:
        s = story["stored"]
        lines.append(f"  stored    {story['stored_value']:#010x} at {story['slot']:#x} "
                     f"by {s['at']} ({s['insn']}) at {s['icount']:,}")
    irq = story.get("interrupt")
    if irq:
        win = f"in window {irq['window']}" if irq["window"] else "in no window stackscan found"
        lines.append(f"  interrupt pc {irq['at']} ({irq['insn']}), sp {irq['sp']:#x}, "
                     f"pstate {irq['pstate']:#x}: {win}; frame at {irq['frame_base']:#x}")
    for o in story["overwrites"]:
        what = irq["field"] if irq and o is irq["entry_write"] else f"{story['slot']:#x}"
        by = "" if o.get("exact", True) else " or an instruction since the last stop"
        lines.append(f"  overwrite {o['at']} ({o['insn']}){by} wrote {what}: "
                     f"{o['before']:#010x} -> {o['after']:#010x} at {o['icount']:,}")
    ld = story["load"]
    lines.append(f"  load      {ld['at']} ({ld['insn']}) read {ld['after']:#010x} "
                 f"at {ld['icount']:,}, sp {ld['sp']:#x} (the word is "
                 f"{ld['sp'] - story['slot']} bytes below it)")
    return "\n".join(lines)


def vmlinux_of(meta):
    """The recorded kernel's vmlinux, whose symbols and DWARF the walk
    reads; dies with one line where there is none (a stock kernel)."""
    vmlinux = recordreplay.kernel_dir(meta) / "vmlinux"
    if not vmlinux.is_file():
        die(f"walk: no vmlinux beside the recording's kernel ({vmlinux}): "
            "a walk needs a lab kernel's symbols and types")
    return vmlinux


def main(run, meta, which, out):
    status = json.loads((run / "status.json").read_text())
    limit = None if which == "all" else which
    found = run_pass(run, meta, out, "failures",
                     {"limit": limit, "error_functions": list(ERROR_FUNCTIONS)})
    failures = found["failures"]
    if which != "all" and len(failures) < which:
        die(f"walk: the recording has {len(failures)} checksum failure"
            f"{'s' if len(failures) != 1 else ''}; there is no failure {which}")
    # A failure's call came after the previous failure was reported.
    for before, f in zip([0] + [f["icount"] for f in failures], failures):
        f["after"] = before
    chosen = list(enumerate(failures, 1))
    if which != "all":
        chosen = chosen[which - 1:which]
    calls = find_bad_calls(run, meta, out, chosen)
    # One watch a call, however many failures it fed.
    unique = {c["entry_icount"]: c for c in calls.values()}
    targets = [{"entry_icount": e, "sp": c["sp"], "lr": c["lr"], "result": c["result"],
                "words": c["holding_result"]} for e, c in sorted(unique.items())]
    watched = run_pass(run, meta, out, "slots", {"targets": targets}) if targets \
        else {"targets": [], "pt_regs": None}
    watch_of = {t["entry_icount"]: t for t in watched["targets"]}
    placed = placed_windows(run, meta)
    # Where the words holding the wrong result at the call's return do not
    # tell (code after the load, a tracer's handler say, wrote over the
    # word before the call returned), watch every word of the call's stack.
    wide = [{**t, "words": [t["sp"] - STACK_SCAN_BYTES + i
                            for i in range(0, STACK_SCAN_BYTES, 4)]}
            for t in targets if not explained(watch_of.get(t["entry_icount"]),
                                              unique[t["entry_icount"]],
                                              watched["pt_regs"], placed)]
    if wide:
        again = run_pass(run, meta, out, "slots", {"targets": wide}, "slots-wide")
        watch_of.update({t["entry_icount"]: t for t in again["targets"]
                         if explained(t, unique[t["entry_icount"]], again["pt_regs"],
                                      placed)})
    walks = []
    for n, failure in chosen:
        call = calls.get(n)
        story = None
        if call is not None:
            watch = watch_of.get(call["entry_icount"],
                                 {"error": "the replay ended before the call's watch"})
            story = {"explained": False, "why": watch["error"]} if "error" in watch \
                else mechanism(call, watch["hits"], watched["pt_regs"], placed)
        walks.append({"failure": n, "report": failure, "call": call, "story": story,
                      "text": story_text(n, failure, call, story)})
    doc = {"run": str(run.resolve()), "failures_recorded": status["checksum_failures_total"],
           "failures_reported": len(failures) if which == "all" else None,
           "walked": len(walks),
           "explained": sum(1 for w in walks if w["story"] and w["story"]["explained"]),
           "in_window": sum(1 for w in walks if w["story"] and w["story"].get("interrupt")
                            and w["story"]["interrupt"]["window"]),
           "walks": walks}
    write_json(out / "walk.json", doc, indent=1)
    for w in walks:
        print(w["text"])
    print(f"walk: {doc['explained']} of {doc['walked']} failures explained, "
          f"{doc['in_window']} by an interrupt in a window stackscan found "
          f"({out / 'walk.json'})")
    if which == "all" and len(failures) != status["checksum_failures_total"]:
        print(f"walk: error: the replay reported {len(failures)} checksum failures "
              f"with EFSBADCRC, the recording's console "
              f"{status['checksum_failures_total']}", file=sys.stderr)
        return 1
    return 0 if doc["explained"] == doc["walked"] else 1
