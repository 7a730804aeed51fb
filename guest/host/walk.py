"""Walk a recorded boot's checksum failures back to their cause, by
replaying it under QEMU's gdb stub (guest/replay.py RUN --failure N|all).

The walk knows ext4, not the window: a failure is an ext4 error report
with EFSBADCRC, and the call that went wrong is the last ext4_chksum()
before it whose result is not the CRC32C of its bytes.  A third replay
single-steps that call from its first instruction to its return, in
whatever context the CPU runs meanwhile (gdbwalk.py's trace pass), and
provenance.py follows the wrong result backwards through that trace to
the instruction that wrote it, wherever the value lived.  Nothing tells
the walk where the window is; the run's windows file only names it
afterwards.  Three replays serve any number of failures (one pass each:
failures, calls, trace), and one or two more where a failure's call lies
further back than the first reach; each runs from the start of the
recording, and each is checked to be a prefix of the recording's console.
"""

import dataclasses
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from analysis import fsgeom
from analysis.documents import BootStatus
from analysis import walks as walk_doc
from analysis import windows as windows_file
from common.cache import quietly
from common.errors import OneLineError
from common.jsonfile import write_json
from common.progress import final_line
from guest.host import kernelwindows
from guest.host import provenance
from guest.host import recordreplay
from guest.host.resultsdir import new_dir

GDB = "gdb-multiarch"
GDB_SIDE = pathlib.Path(__file__).with_name("gdbwalk.py")
ERROR_FUNCTIONS = ("__ext4_error_inode", "__ext4_error")
CHKSUM_FUNCTION = "ext4_chksum"
# Instructions before a failure searched for the call that went wrong,
# first the short reach, then each ten times longer (a preempted or long
# interrupted call may lie further back).
REACHES = (200_000, 2_000_000, 20_000_000)
# Instructions a traced call may take, interrupts and other tasks
# included, before its trace is cut (about 10 minutes of stepping).
STEP_LIMIT = 400_000
# Wall seconds a traced call may take beyond the replay (one of the inode
# loop takes a few; a long one to STEP_LIMIT, minutes).
TRACE_SECONDS = 60
SOCKET_WAIT = 30
DEVICE_MIN_BYTES = 8


class WalkError(OneLineError):
    """A walk that could not finish: a pass failed, or the recording
    cannot be walked."""


@dataclasses.dataclass
class WalkSummary:
    """What a walk of a recording's failures came to (walk.json, at path,
    holds every walk); error says in one line why the walk failed (path
    None) or disagrees with the recording."""
    path: pathlib.Path | None = None
    walked: int = 0
    explained: int = 0
    in_window: int = 0
    texts: list = dataclasses.field(default_factory=list)  # each walk in words
    one_cpu: bool = False
    error: str | None = None

    def line(self):
        return (f"walk: {self.explained} of {self.walked} failures explained, "
                f"{self.in_window} by an interrupt in a window stackscan found "
                f"({self.path})")


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
                    raise WalkError(f"walk: QEMU did not open its gdb socket "
                        f"({final_line(passdir / 'qemu.log') or 'no message'})")
                time.sleep(0.05)
            gdb = subprocess.Popen(
                [GDB, "-batch", "-nx", "-ex", "set auto-load off", str(vmlinux),
                 "-x", str(GDB_SIDE)], stdin=subprocess.DEVNULL, stdout=glog,
                stderr=glog, env=env)
            # A replay of the whole boot, and for a trace pass the
            # stepping of each traced call on top.
            limit = meta["timeout"] * 4 + TRACE_SECONDS * len(job.get("targets", [])) \
                * (kind == "trace")
            try:
                gdb.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                raise WalkError(f"walk: the {name} pass did not finish in {limit} s "
                    f"(gdb log: {passdir / 'gdb.log'})")
        except FileNotFoundError as e:
            raise WalkError(f"walk: {e.filename} not found: install gdb-multiarch and "
                "qemu-system-arm (make deps)")
        finally:
            for proc in (gdb, qemu):
                if proc is not None and proc.poll() is None:
                    proc.send_signal(signal.SIGKILL)
                    proc.wait()
            shutil.rmtree(sockdir, ignore_errors=True)
    if not result.is_file():
        raise WalkError(f"walk: the {name} pass found nothing: "
            f"{final_line(passdir / 'gdb.log') or 'gdb said nothing'} "
            f"(gdb log: {passdir / 'gdb.log'})")
    if not console_is_prefix(run, passdir):
        raise WalkError(f"walk: the {name} pass's replay diverged from the recording "
            f"(console: {passdir / 'console.log'})")
    found = json.loads(result.read_text())
    found["wall_seconds"] = round(time.monotonic() - start, 1)
    return found


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
                       {"targets": targets, "chksum_function": CHKSUM_FUNCTION},
                       f"calls-{i + 1}")
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
        raise WalkError(f"{path}: {e}")


def device_text(device):
    if not device.get("checked"):
        return ""
    if device["offset_in_inode"] is None:
        return (f"; not bytes of inode {device['inode']}'s record on the disk "
                "(computed by the caller, or another structure)")
    return (f"; as the disk holds them (inode {device['inode']}'s record, "
            f"offset {device['offset_in_inode']})")


def story_text(n, failure, call, story, one_cpu):
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
    inputs = story.get("inputs")
    if inputs:
        changed = inputs["changed_by_return"]
        lines.append(f"  inputs    seed {inputs['seed']:#010x} as passed; bytes at return "
                     + ("as at entry" if not changed else
                        f"differ from entry at offsets {changed[:8]}")
                     + (f"; the computation read {len(inputs['misread'])} byte(s) that "
                        f"differ from entry (first at offset {inputs['misread'][0]['offset']})"
                        if inputs["misread"] else "")
                     + device_text(inputs.get("device") or {}))
    for h in walk_doc.collapsed(story.get("chain", [])):
        lines.append(f"  <-        {walk_doc.hop_text(h)}")
    if not story.get("explained"):
        lines.append(f"  unexplained: {story.get('why', 'no trace')}"
                     + ("; the boot had one vCPU: a writer on another CPU is not in "
                        "its replay" if one_cpu else ""))
        for lf in story.get("leaves", [])[:6]:
            lines.append(f"  depends on {lf['memory']}"
                         + (f" ({lf['address']:#x}, read by {lf['read_by']})"
                            if "address" in lf else ""))
        return "\n".join(lines)
    w = story["writer"]
    if w["kind"] == "no cpu writer":
        lines.append(f"  writer    none on this CPU: the checksummed bytes at {w['address']:#x} "
                     f"changed after the call's entry with no store in its trace "
                     f"(another CPU or a device{'; one vCPU here: a device' if one_cpu else ''})")
        return "\n".join(lines)
    lines.append(f"  writer    {w['at']} ({w['insn']}) at {w['icount']:,} in "
                 f"{walk_doc.context_text(w['context'])}")
    if w["kind"] == "memory":
        lines.append(f"  wrote     {w['address']:#x} ({w['memory']}): "
                     f"{walk_doc.hexval(w['before'])} -> {walk_doc.hexval(w['after'])}")
    if story.get("stored"):
        s = story["stored"]
        lines.append(f"  stored    {walk_doc.hexval(story['stored_value'])} at {story['slot']:#x} "
                     f"by {s['at']} ({s['insn']}) at {s['icount']:,}")
    irq = story.get("interrupt")
    if irq:
        win = f"in window {irq['window']}" if irq["window"] else "in no window stackscan found"
        field = f"; wrote {irq['field']}" if irq["field"] else ""
        lines.append(f"  interrupt pc {irq['at']} ({irq['insn']}), sp {irq['sp']:#x}, "
                     f"pstate {irq['pstate']:#x}: {win}; frame at {irq['frame_base']:#x}"
                     f"{field}")
    if story.get("load"):
        ld = story["load"]
        below = ld["sp"] - story["slot"]
        on_stack = story["memory"] == "the calling task's stack"
        lines.append(f"  load      {ld['at']} ({ld['insn']}) read {walk_doc.hexval(ld['after'])} "
                     f"at {ld['icount']:,}, sp {ld['sp']:#x}"
                     + (f" (the word is {below} bytes below it)" if on_stack and below > 0
                        else ""))
    return "\n".join(lines)


def device_copy(meta, ino, entry_hex):
    """Whether the call's bytes at entry are what the device holds: found in
    the failing inode's on-disk record of the recorded disk (its offset
    there), or not (None: bytes the caller computed, or another
    structure); unchecked without an inode or a disk, or for fewer than
    DEVICE_MIN_BYTES bytes."""
    disk = meta["inputs"].get("disk", {}).get("path")
    # Fewer bytes than this match too many places of a record to say.
    if ino is None or disk is None or len(entry_hex) < 2 * DEVICE_MIN_BYTES:
        return {"checked": False}
    try:
        geo = fsgeom.from_image(disk)
        block = geo.inode_block(ino)
        if block is None:
            return {"checked": False}
        index = (ino - 1) % geo.inodes_per_group
        offset = block * geo.block_size + index * geo.inode_size % geo.block_size
        with open(disk, "rb") as f:
            f.seek(offset)
            record = f.read(geo.inode_size)
    except (fsgeom.GeometryError, OSError):
        return {"checked": False}
    at = record.find(bytes.fromhex(entry_hex))
    return {"checked": True, "inode": ino, "disk_offset": offset,
            "offset_in_inode": at if at >= 0 else None}


def vcpus(meta):
    """The recorded boot's vCPUs (QEMU 7.2 records only one)."""
    argv = meta["argv"]
    if "-smp" not in argv:
        return 1
    return int(argv[argv.index("-smp") + 1].split(",")[0].removeprefix("cpus="))


def vmlinux_of(meta):
    """The recorded kernel's vmlinux, whose symbols and DWARF the walk
    reads; dies with one line where there is none (a stock kernel)."""
    vmlinux = recordreplay.kernel_dir(meta) / "vmlinux"
    if not vmlinux.is_file():
        raise WalkError(f"walk: no vmlinux beside the recording's kernel ({vmlinux}): "
            "a walk needs a lab kernel's symbols and types")
    return vmlinux


def walk_failures(run, meta, which, out):
    """Walk the recording run's failure which (from 1), or "all", into out:
    its WalkSummary; WalkError when the walk cannot finish."""
    status = BootStatus.read(run / "status.json")
    limit = None if which == "all" else which
    found = run_pass(run, meta, out, "failures",
                     {"limit": limit, "error_functions": list(ERROR_FUNCTIONS)})
    failures = found["failures"]
    if which != "all" and len(failures) < which:
        raise WalkError(f"walk: the recording has {len(failures)} checksum failure"
            f"{'s' if len(failures) != 1 else ''}; there is no failure {which}")
    # A failure's call came after the previous failure was reported.
    for before, f in zip([0] + [f["icount"] for f in failures], failures):
        f["after"] = before
    chosen = list(enumerate(failures, 1))
    if which != "all":
        chosen = chosen[which - 1:which]
    calls = find_bad_calls(run, meta, out, chosen)
    # One trace a call, however many failures it fed.
    unique = {c["entry_icount"]: c for c in calls.values()}
    targets = [{"entry_icount": e, "sp": c["sp"], "lr": c["lr"], "address": c["address"],
                "length": c["length"]} for e, c in sorted(unique.items())]
    traced = run_pass(run, meta, out, "trace", {"targets": targets,
                                                 "step_limit": STEP_LIMIT}) \
        if targets else {"targets": [], "pt_regs": None}
    trace_of = {t["entry_icount"]: t for t in traced["targets"]}
    placed = placed_windows(run, meta)
    kdir = recordreplay.kernel_dir(meta)
    symbols = provenance.Symbols(kdir / "System.map", kdir / "config")
    one_cpu = vcpus(meta) == 1
    walks = []
    for n, failure in chosen:
        call = calls.get(n)
        story = None
        if call is not None:
            trace = trace_of.get(call["entry_icount"],
                                 {"error": "the replay ended before the call's trace"})
            story = {"explained": False, "why": trace["error"]} if "error" in trace \
                else provenance.explain(trace, call, symbols, traced["pt_regs"], placed)
            if "inputs" in story:
                story["inputs"]["device"] = device_copy(meta, failure.get("inode"),
                                                        story["inputs"]["bytes_at_entry"])
        walks.append({"failure": n, "report": failure, "call": call, "story": story,
                      "text": story_text(n, failure, call, story or {}, one_cpu)})
    doc = {"run": str(run.resolve()), "failures_recorded": status.checksum_failures_total,
           "vcpus": vcpus(meta),
           "failures_reported": len(failures) if which == "all" else None,
           "walked": len(walks),
           "explained": sum(1 for w in walks if w["story"] and w["story"]["explained"]),
           # An interrupt in a window whose entry wrote the wrong value
           # into its own frame: the 2021 mechanism, not merely an
           # interrupt that happened to arrive there.
           "in_window": sum(1 for w in walks if w["story"] and w["story"].get("interrupt")
                            and w["story"]["interrupt"]["window"]
                            and w["story"]["interrupt"]["field"]),
           "walks": walks}
    write_json(out / "walk.json", doc, indent=1)
    summary = WalkSummary(path=out / "walk.json", walked=doc["walked"],
                          explained=doc["explained"], in_window=doc["in_window"],
                          texts=[w["text"] for w in walks], one_cpu=one_cpu)
    if which == "all" and len(failures) != status.checksum_failures_total:
        summary.error = (f"the replay reported {len(failures)} checksum failures "
                         f"with EFSBADCRC, the recording's console "
                         f"{status.checksum_failures_total}")
    return summary


def walk_recording(run):
    """Every failure of the recorded boot in directory run walked, into a
    new run/walk-<n>: its WalkSummary, whose error says why when the walk
    failed (a failing walk is that walk's outcome, never its caller's end)."""
    try:
        meta = recordreplay.load(run)
        vmlinux_of(meta)
        return walk_failures(run, meta, "all", new_dir(run, "walk"))
    except OneLineError as e:
        return WalkSummary(error=str(e))
    except SystemExit as e:
        # A builder's die() has said why on stderr.
        return WalkSummary(error=f"stopped (exit {e.code}; its reason is on stderr)")


def main(run, meta, which, out):
    """guest/replay.py --failure: the walk, in words on stdout."""
    summary = walk_failures(run, meta, which, out)
    for text in summary.texts:
        print(text)
    if summary.one_cpu:
        print("note: the boot ran on one vCPU (QEMU 7.2 records no more): a writer on "
              "another CPU cannot appear in its replay")
    print(summary.line())
    if summary.error:
        print(f"walk: error: {summary.error}", file=sys.stderr)
        return 1
    return 0 if summary.explained == summary.walked else 1
