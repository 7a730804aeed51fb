"""Record and replay (guest/run.py --record-replay, guest/replay.py): a
recorded untraced boot replays to the same console and figures, a walk
takes a failure back to the interrupt that overwrote the checksum state
and to the load that read it, a window stackscan does not flag is found
all the same, state off the stack is followed to whatever wrote it (a
timer callback, another task, an hrtimer changing the checksummed bytes)
through the same code, and a replay log that is not the recording's is
refused before QEMU starts.

Sizing: untraced inode-loop boots at -icount shift=4, 10 guest seconds,
about 340,000 checksum calls.  The loop window of width 4 has 9 fatal
instruction boundaries; at about 1,020 timer arrivals a guest second and
16 ns an instruction the model predicts 1.5e-4 failures a call, about
50 a boot (gcc49-exact made 7 in such a boot, W = 1), so a boot without
one is out of the question.  gcc49-indirect has two fatal boundaries
(before the reload and before the load), about 10 a boot predicted.
The off-stack modes (patch 0005, their writers at their default periods)
failed 46 (percpu), 36 (shared) and 48 (buffer) times in such a boot
(seed 7, recorded, on the kernel of the commit that wrote this).
"""

import json
import pathlib
import re
import shutil
import subprocess

import pytest

from analysis.documents import BootStatus
from tests.boots import boot_many, icount_args
from common import PY, REPO
from common.digest import file_sha256
from tests.kernels import kernel_dir
from guest.host import testdisk

pytestmark = pytest.mark.guest

REPLAY = [PY, str(REPO / "guest/replay.py")]
SEED = 7
SECONDS = 10
LOOP_WIDTH = 4


def digests(run):
    """SHA-256 of every file a recording keeps: a replay must not touch one."""
    return {p.name: file_sha256(p)
            for p in sorted(run.iterdir()) if p.is_file()}


def replay(*args):
    return subprocess.run([*REPLAY, *map(str, args)], capture_output=True, text=True)


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    """A recorded loop-window boot and a recorded gcc49-indirect boot, the
    second on a copy of the test disk (the refusal test changes it)."""
    disk = tmp_path_factory.mktemp("disk") / "testdisk.img"
    shutil.copyfile(testdisk.build(), disk)
    loop = tmp_path_factory.mktemp("rec-loop")
    indirect = tmp_path_factory.mktemp("rec-indirect")
    runs = boot_many([
        (loop, "unpatched", "inode-loop", *icount_args(SEED, duration=SECONDS),
         "--record-replay", "--append",
         f"ext4.chksum_window=gcc49 ext4.chksum_window_width={LOOP_WIDTH}"),
        (indirect, "unpatched", "inode-loop", *icount_args(SEED, duration=SECONDS),
         "--record-replay", "--disk", str(disk), "--append",
         "ext4.chksum_window=gcc49-indirect")])
    for run in runs:
        assert run.proc.returncode == 0, run.proc.stderr + run.console[-2000:]
        assert run.status.checksum_failures_total > 0, run.status
        assert run.status.clock["record_replay"] is True
    return {"loop": runs[0], "indirect": runs[1], "disk": disk}


def test_recording_keeps_log_command_line_and_input_hashes(recordings):
    run = recordings["loop"].out
    meta = json.loads((run / "replay.json").read_text())
    assert meta["log"]["bytes"] == (run / "replay.bin").stat().st_size > 0
    assert {"kernel", "initramfs", "disk", "guest_files"} <= set(meta["inputs"])
    kernel = pathlib.Path(meta["inputs"]["kernel"]["path"])
    assert kernel.parent.name == meta["kernel_entry"] == recordings["loop"].status.kernel
    icount = meta["argv"][meta["argv"].index("-icount") + 1]
    assert f",rr=record,rrfile={run / 'replay.bin'}" in icount
    # Every block device behind blkreplay, its file never written.
    assert "driver=blkreplay,if=none,image=testdisk-direct,id=testdisk,readonly=on" \
        in meta["argv"]
    assert any(a.startswith("file=") and "id=testdisk-direct" in a and "snapshot=on" in a
               for a in meta["argv"])


def test_replay_reproduces_the_recording(recordings):
    run = recordings["loop"].out
    before = digests(run)
    proc = replay(run)
    assert proc.returncode == 0, proc.stderr
    assert "reproduced" in proc.stdout and proc.stderr == ""
    out = run / "replay-1"
    assert (out / "console.log").read_bytes() == (run / "console.log").read_bytes()
    status = BootStatus.read(out / "status.json")
    assert status.checksum_failures == recordings["loop"].status.checksum_failures
    assert status.checksum_calls == recordings["loop"].status.checksum_calls
    assert digests(run) == before


def failure_inodes(console):
    return [int(m) for m in re.findall(r"inode #(\d+): .*iget: checksum invalid", console)]


def symbol(kernel, name):
    for line in (kernel / "System.map").read_text().splitlines():
        addr, _, sym = line.split()
        if sym == name:
            return int(addr, 16)
    raise AssertionError(f"{name} not in System.map")


def walk_one(run, n=1):
    proc = replay(run, "--failure", n)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads((run / "walk-1" / "walk.json").read_text())
    assert doc["walked"] == doc["explained"] == 1
    return doc["walks"][0], proc.stdout


def test_walk_names_the_interrupted_instruction_and_the_overwritten_bytes(recordings):
    run = recordings["loop"]
    walk, text = walk_one(run.out)
    kernel = kernel_dir("unpatched")
    call, story = walk["call"], walk["story"]
    # The call's result is not the CRC32C of its bytes; the state the
    # checksum code stored was, and the load read something else.
    assert call["result"] != call["expected"] == story["stored_value"]
    assert story["read_value"] == call["result"] == story["overwrite"]["after"]
    assert story["stored"]["at"].startswith(("chksum_update+", "ext4_chksum_gcc49+"))
    # An exception entry wrote it: the interrupted pc lies in the loop
    # window, between its labels, and lab.windows names that window.
    irq = story["interrupt"]
    start = symbol(kernel, "ext4_chksum_gcc49_window_start")
    end = symbol(kernel, "ext4_chksum_gcc49_window_end")
    assert start <= irq["pc"] <= end, irq
    assert irq["elr_el1"] == irq["pc"]
    assert irq["window"] and irq["window"].startswith("ext4_chksum_gcc49+")
    assert re.fullmatch(r"pt_regs\.x\d+ \((low|high) half\)", irq["field"])
    assert story["overwrite"]["at"].startswith("el1h_64_irq+")
    # The load is the window's own, reading below its sp.
    assert story["load"]["pc"] == end and story["slot"] < story["load"]["sp"]
    assert walk["report"]["inode"] == failure_inodes(run.console)[0]
    assert f"in window {irq['window']}" in text


def test_walk_explains_a_window_stackscan_does_not_flag(recordings):
    """Every failure of the boot (--failure all: failures close together
    share the replay's stretches), each explained by an interrupt after
    the release and at the latest at the load, in no window stackscan
    found: the walk found it with nothing to go on but the failures."""
    run = recordings["indirect"]
    windows = (run.out / "lab.windows").read_text()
    assert "ext4_chksum_gcc49_indirect" not in windows
    proc = replay(run.out, "--failure", "all")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads((run.out / "walk-1" / "walk.json").read_text())
    inodes = failure_inodes(run.console)
    assert doc["walked"] == doc["explained"] == len(inodes) == doc["failures_recorded"]
    assert doc["in_window"] == 0
    assert [w["report"]["inode"] for w in doc["walks"]] == inodes
    load = symbol(kernel_dir("unpatched"), "ext4_chksum_gcc49_indirect_load")
    for w in doc["walks"]:
        story = w["story"]
        assert story["load"]["pc"] == load and story["load"]["at"].startswith(
            "ext4_chksum_gcc49_indirect+")
        assert story["slot"] < story["load"]["sp"]
        irq = story["interrupt"]
        assert load - 4 <= irq["pc"] <= load and irq["window"] is None
    assert proc.stdout.count("in no window stackscan found") == len(inodes)


# ext4.chksum_offstack mode: the writer's context, the callback that wrote
# (and what called it), the functions whose store it may be (the scrub
# corrupts through chksum_update() and, in some phases, its own store
# comes last: 53 and 1 of 54 percpu failures in bench/RESULTS.md's walk
# rows), the memory.
OFFSTACK = {
    "percpu": ("softirq", "timer callback", "ext4_chksum_percpu_scrub",
               ("chksum_update+", "ext4_chksum_percpu_scrub+"),
               "per-CPU ext4_chksum_percpu_desc+"),
    "shared": ("another task", "work item", "ext4_chksum_shared_scrub",
               ("chksum_update+", "ext4_chksum_shared_scrub+"), "heap"),
    "buffer": ("hard interrupt", "hrtimer callback", "ext4_chksum_buffer_flip",
               ("ext4_chksum_buffer_flip+",), "the checksummed bytes"),
}


@pytest.fixture(scope="module")
def offstack(tmp_path_factory):
    """A recorded boot of each off-stack mode."""
    outs = {m: tmp_path_factory.mktemp(f"rec-{m}") for m in OFFSTACK}
    runs = boot_many([(out, "unpatched", "inode-loop", *icount_args(SEED, duration=SECONDS),
                       "--record-replay", "--append", f"ext4.chksum_offstack={m}")
                      for m, out in outs.items()])
    for run in runs:
        assert run.proc.returncode == 0, run.proc.stderr + run.console[-2000:]
        assert run.status.checksum_failures_total > 0, run.status
    return dict(zip(OFFSTACK, runs))


@pytest.mark.parametrize("mode", OFFSTACK)
def test_walk_follows_state_off_the_stack_to_its_writer(offstack, mode):
    """No stack window is involved and stackscan flags none of these
    functions; the walk names the writer, its context and the memory from
    the wrong value alone, through the code that explains the stack
    windows."""
    kind, what, callback, store, memory = OFFSTACK[mode]
    run = offstack[mode]
    assert callback not in (run.out / "lab.windows").read_text()
    walk, text = walk_one(run.out)
    call, story = walk["call"], walk["story"]
    assert call["result"] != call["expected"]
    assert walk["report"]["inode"] == failure_inodes(run.console)[0]
    writer = story["writer"]
    assert writer["kind"] == "memory" and writer["at"].startswith(store), writer
    ctx = writer["context"]
    assert ctx["kind"] == kind, ctx
    assert ctx["callback"]["function"] == callback and ctx["callback"]["what"] == what, ctx
    assert writer["memory"].startswith(memory), writer
    # The chain starts at the result and ends at the load that read what
    # the writer left.
    assert story["chain"][0] == {"hop": "register", "reg": "x0", "value": call["result"]}
    assert story["chain"][-1]["hop"] == "load"
    assert story["chain"][-1]["step"] == story["load"]["step"]
    assert story["load"]["context"]["kind"] == "the call's own task"
    assert (story.get("interrupt") or {}).get("window") is None
    # The bytes at entry against the device's copy of the inode's record.
    device = story["inputs"]["device"]
    if call["length"] >= 8:
        assert device["checked"] and device["inode"] == walk["report"]["inode"]
        assert device["offset_in_inode"] is not None, device
    assert f"{what} {callback}" in text
    assert "note: the boot ran on one vCPU" in text
    if mode == "shared":
        assert ctx["task"]["comm"].startswith("kworker"), ctx
        assert "__cond_resched" in ctx["yielded_in"], ctx
    if mode == "buffer":
        # Put back before the return: only the bytes read during the call
        # tell, and the walk reports them against the bytes at entry.
        assert story["inputs"]["changed_by_return"] == []
        assert story["inputs"]["misread"]
        assert writer["before"] != writer["after"]


def test_a_log_that_is_not_the_recordings_is_refused_before_qemu(recordings, tmp_path):
    loop, indirect = recordings["loop"].out, recordings["indirect"].out
    cases = {}
    # Another boot's log.
    other = tmp_path / "other"
    shutil.copytree(loop, other, ignore=shutil.ignore_patterns("replay-*", "walk-*"))
    shutil.copyfile(indirect / "replay.bin", other / "replay.bin")
    cases["other"] = (other, "not this recording's replay log")
    # A log cut short.
    cut = tmp_path / "cut"
    shutil.copytree(loop, cut, ignore=shutil.ignore_patterns("replay-*", "walk-*"))
    data = (cut / "replay.bin").read_bytes()
    (cut / "replay.bin").write_bytes(data[:len(data) // 2])
    cases["cut"] = (cut, f"not this recording's replay log: {len(data) // 2} bytes "
                          f"where {len(data)} were recorded")
    # Another kernel: the recording names one whose bytes differ.
    kernel = tmp_path / "kernel"
    shutil.copytree(loop, kernel, ignore=shutil.ignore_patterns("replay-*", "walk-*"))
    meta = json.loads((kernel / "replay.json").read_text())
    patched = kernel_dir("patched") / "Image"
    meta["inputs"]["kernel"]["path"] = str(patched)
    (kernel / "replay.json").write_text(json.dumps(meta))
    cases["kernel"] = (kernel, "has changed since it was recorded")
    for name, (run, message) in cases.items():
        before = digests(run)
        proc = replay(run)
        assert proc.returncode == 1, (name, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1 and message in proc.stderr, \
            (name, proc.stderr)
        assert not list(run.glob("replay-*")), name
        assert digests(run) == before
    # Another disk: one byte of the recording's copy changed afterwards.
    disk = recordings["disk"]
    with open(disk, "r+b") as f:
        f.seek(4096)
        byte = f.read(1)
        f.seek(4096)
        f.write(bytes([byte[0] ^ 0xFF]))
    proc = replay(indirect)
    assert proc.returncode == 1
    assert f"disk {disk.resolve()} has changed" in proc.stderr
    assert not list(indirect.glob("replay-*"))


def test_a_stock_kernel_records_and_replays(tmp_path):
    """Debian's own 6.1 kernel (modules, no window, no vmlinux): recorded
    and replayed all the same; a walk needs the lab kernel's symbols."""
    out = tmp_path / "stock"
    [run] = boot_many([(out, "stock", "inode-loop", *icount_args(SEED, duration=SECONDS),
                        "--record-replay")])
    assert run.proc.returncode == 0, run.proc.stderr + run.console[-2000:]
    proc = replay(out)
    assert proc.returncode == 0, proc.stderr
    assert (out / "replay-1" / "console.log").read_bytes() == (out / "console.log").read_bytes()
    proc = replay(out, "--failure", "1")
    assert proc.returncode == 1
    assert "a walk needs a lab kernel's symbols and types" in proc.stderr
    assert not list(out.glob("walk-*"))
