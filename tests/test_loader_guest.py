"""chkwin inside the guest: what it records matches what the kernel did.

Each run is guest/run.py with the record scenario: chkwin streams its log
to the chkwin.log port while the inode workload runs, then gets SIGINT.
The logs are decoded on the host with the loader's own reader.

The gcc49 runs (guest.recorded_gcc49, shared with the analysis tests)
and the off and fallback runs boot on instruction time, 30 guest seconds
each; nothing may be lost in any of them.  The exact-listing
run stays on the host clock with two CPUs and the 20 kHz sampler: it is
the multi-threaded TCG control and the recorder's multi-CPU smoke test.
"""

import bisect
import collections
import json
import random
import re

import pytest

from tests.decoded import Decoded, decode, finish
from tests.boots import assert_nothing_lost, boot, icount_args, recorded_gcc49
from tests.kernels import IRQ_KPROBE_MODE

from analysis import declared
from guest.host import loaderbuild

# Two-vCPU guests on the host clock (the hostclock mark); the
# recorded gcc49 boots of tests/boots.py shared with the other modules of
# its group, in one process.
pytestmark = [pytest.mark.guest, pytest.mark.hostclock,
              pytest.mark.xdist_group("recorded-gcc49")]

FAILURE_RE = re.compile(r"inode #(\d+): comm \S+: iget: checksum invalid")
CLASSES = {"window", "chksum", "kernel", "user"}
# The plans guest/scenarios/loader-plan prints: both -m modes, three
# --irq-pc choices, three record modes.
DRY_RUNS = 8


@pytest.fixture(scope="module")
def reader():
    return loaderbuild.build() / "host" / "chkwin"


TALLIED = ("class", "caller", "err", "ipi")


class Log(Decoded):
    """Counts per record type, a tally of the few-valued fields, and only
    the records `keep` picks."""

    def __init__(self, reader, path, keep=lambda r: False):
        self.counts = collections.Counter()
        self.tally = collections.defaultdict(collections.Counter)
        self.kept = []
        self.keep = keep
        super().__init__(reader, path)

    def record(self, r):
        self.counts[r["type"]] += 1
        for field in TALLIED:
            if field in r:
                self.tally[r["type"], field][r[field]] += 1
        if self.keep(r):
            self.kept.append(r)

    def of(self, kind):
        return [r for r in self.kept if r["type"] == kind]


IPI_FROM = declared.RAN.index("ipi_from")


def for_failures(r):
    """What tracing a failure needs: the verdicts, the window-hit calls and
    the window interrupts, and any interrupt without a pc (the rest is
    millions of records)."""
    return (r["type"] == "verify" or (r["type"] == "chksum" and r["flags"] & 0x02)
            or (r["type"] == "irq" and (r["class"] == "window" or r["pc"] == "0x0")))


def ipis(r):
    """The IPIs taken and the records of their senders."""
    return (r["type"] == "irq" and r["ipi"]) or (r["type"] == "ran" and r["what"] == IPI_FROM)


def record(tmp_path_factory, flavour, window, clock, loader_opts=""):
    """A recorded boot; clock: run.py's clock flags."""
    out = tmp_path_factory.mktemp(f"{flavour}-{window}")
    workload = "inode-loop" if "icount" in clock else "inode-load"
    append = f"ext4.chksum_window={window} chkwin.workload={workload}"
    if loader_opts:
        append += f" chkwin.loader={loader_opts}"
    run = boot(out, flavour, "record", *clock, "--append", append)
    assert run.proc.returncode == 0, run.proc.stderr + run.console[-3000:]
    assert run.fields("chkwin-status") == ["0"], run.console[-3000:]
    return run


@pytest.fixture(scope="module", params=["unpatched", "patched"])
def gcc49_run(request, tmp_path_factory, reader):
    run = recorded_gcc49(tmp_path_factory, request.param)
    return run, Log(reader, run.out / "log.bin", for_failures)


def test_attaches_in_tracepoint_mode_and_loses_nothing(gcc49_run):
    run, log = gcc49_run
    assert log.status["status"] == "complete", log.status
    assert log.header["flavour"] == run.status.flavour
    assert log.header["mode.chksum"] == "tp_btf"
    assert log.header["mode.verify"] == "tp_btf"
    assert log.header["mode.irq"] == "tp_btf+irq_regs"
    assert log.header["chksum_window"] == "gcc49"
    assert log.header["sample_hz"] == "0"
    assert log.trailer["ending"] == "signal"
    # No sampler, no flight recorder: those counters say so, not 0.
    assert_nothing_lost(log.trailer, {"sample", "snapshot"})
    assert log.trailer["count.sample.window"] == log.trailer["count.snapshot"] == "not-attached"
    for kind in ("chksum", "verify", "iget", "irq"):
        assert int(log.trailer[f"records.{kind}"]) > 0, kind
        assert int(log.trailer[f"records.{kind}"]) == log.counts[kind], kind


def test_closing_record_agrees_with_the_log(gcc49_run):
    """The JSON closing line scripts parse (status.json keeps it) says what
    the log's trailer says."""
    run, log = gcc49_run
    result = run.status.chkwin
    assert result, run.console[-3000:]
    assert result["ending"] == log.trailer["ending"]
    assert result["checksum_calls"] == int(log.trailer["count.chksum"]) > 0
    assert result["window_hits"] == int(log.trailer["count.chksum_window"])
    assert result["records"] == sum(log.counts.values())
    assert result["irq_arrivals"] == sum(int(v) for k, v in log.trailer.items()
                                         if k.startswith("count.irq.")) > 0
    # Not attached: null, not 0.
    assert result["sampler_ticks"] is None and result["snapshots"] is None
    assert result["lost"] == 0
    assert result["log"].startswith("/dev/vport")


def test_every_kernel_failure_is_in_the_log_with_its_window_hit(gcc49_run):
    run, log = gcc49_run
    printed = {int(m) for m in FAILURE_RE.findall(run.console)}
    assert printed, "the gcc49 run produced no checksum failure to check"
    bad = [v for v in log.of("verify") if v["flags"] & 0x10]
    assert printed <= {v["ino"] for v in bad}
    hits = sorted(log.of("chksum"), key=lambda r: r["ts"])
    verdicts = log.of("verify")
    windows = [i for i in log.of("irq") if i["class"] == "window"]
    for v in bad:
        if v["ino"] not in printed:
            continue
        # The verdict's computation: the calls on its CPU since the verdict
        # before it (two seed calls and the inode's pieces).
        prev = max((u["ts"] for u in verdicts
                    if u["cpu"] == v["cpu"] and u["ts"] < v["ts"]), default=0)
        hit = [c for c in hits if c["cpu"] == v["cpu"]
               and prev < c["ts"] and c["end_ns"] <= v["ts"]]
        assert hit, f"inode {v['ino']}: no window-hit call before the verdict"
        c = hit[-1]
        assert any(w["cpu"] == v["cpu"] and c["ts"] <= w["ts"] <= c["end_ns"]
                   for w in windows), f"inode {v['ino']}: no window irq"


def test_window_irqs_counts_each_calls_window_arrivals(gcc49_run):
    """chksum's window_irqs (a field added to the record table alone, read
    from the log's record.1 line): every window-hit call has at least one,
    and together they are every window arrival the kernel counted."""
    _, log = gcc49_run
    assert "window_irqs:u16@" in log.header["record.1"]
    hit = [c for c in log.of("chksum") if c["flags"] & 0x02]
    assert hit and all(c["window_irqs"] >= 1 for c in hit)
    assert sum(c["window_irqs"] for c in hit) == int(log.trailer["count.irq.window"])


def test_every_interrupt_has_a_class(gcc49_run):
    _, log = gcc49_run
    assert log.counts["irq"]
    assert set(log.tally["irq", "class"]) <= CLASSES
    assert not [i for i in log.of("irq") if i["pc"] == "0x0"]


def test_live_summary_lines_are_json(gcc49_run):
    run, _ = gcc49_run
    lines = [ln for ln in run.console.splitlines() if ln.startswith('{"time"')]
    assert len(lines) >= 10
    for ln in lines:
        summary = json.loads(ln)
        assert set(summary["irq_per_s"]) >= CLASSES


@pytest.mark.parametrize("flavour", ["unpatched", "patched"])
def test_window_off_has_no_window_arrivals(flavour, tmp_path_factory, reader):
    run = record(tmp_path_factory, flavour, "off", icount_args(7))
    log = Log(reader, run.out / "log.bin")
    assert log.status["status"] == "complete"
    assert log.counts["irq"] > 1000
    assert "window" not in log.tally["irq", "class"]
    assert log.trailer["count.irq.window"] == "0"
    assert log.header["sample_hz"] == "0"
    assert_nothing_lost(log.trailer, {"sample", "snapshot"})
    assert not FAILURE_RE.search(run.console)


def test_exact_listing_has_no_window_arrivals_under_multithreaded_tcg(
        tmp_path_factory, reader):
    """gcc49-exact: mov sp, x29 directly followed by the load.  TCG takes
    interrupts only at block starts, and none falls between the two, so
    even with the 20 kHz sampler no arrival lands in the window, while
    arrivals elsewhere in the same function do.  The two CPUs send each
    other IPIs, and each taken has its sender's record."""
    run = record(tmp_path_factory, "unpatched", "gcc49-exact", ["--duration", "45"],
                 "-F,20000")
    log = Log(reader, run.out / "log.bin", keep=ipis)
    assert log.status["status"] == "complete"
    assert log.header["chksum_window"] == "gcc49-exact"
    # The lab's windows file (stackscan's findings): both emulated windows.
    watched = {log.header[f"watch.{n}"].split()[0] for n in (0, 1)}
    assert watched == {"ext4_chksum_gcc49+0x60", "ext4_chksum_gcc49+0x74"}
    assert "watch.2" not in log.header and "window" not in log.header
    assert log.trailer["count.watch.irq.ext4_chksum_gcc49+0x74"] == "0"
    assert int(log.trailer["count.chksum"]) > 100_000
    assert log.trailer["count.irq.window"] == "0"
    assert log.trailer["count.sample.window"] == "0"
    assert log.trailer["count.chksum_window"] == "0"
    assert int(log.trailer["count.sample.chksum"]) > 0
    assert run.status.checksum_failures_total == 0
    # Two CPUs send each other IPIs: ipi_entry counts each one and names
    # its kind in the arrival's record (unless the ring had no room for it).
    named = sum(n for kind, n in log.tally["irq", "ipi"].items() if kind)
    assert 0 < named <= int(log.trailer["count.ipi"]) <= named + int(log.trailer["lost.irq"])
    assert_every_ipi_follows_its_senders_record(log)


def assert_every_ipi_follows_its_senders_record(log):
    """An IPI taken on a CPU follows an ipi_from record that ipi_raise wrote
    for that CPU on the sender: of its kind, from one of the guest's two
    CPUs (a CPU may send itself one: irq_work), in the 100 ms before it
    arrived (a few taken before the recording began may have none)."""
    sent = log.of("ran")
    taken = [r for r in log.of("irq") if r["ipi"]]
    assert taken and sent, (len(taken), len(sent))
    assert {r["arg"] for r in sent} <= {0, 1}
    raised = collections.defaultdict(list)      # (cpu, kind): when, sorted
    for r in sent:
        raised[r["cpu"], r["comm"]].append(r["ts"])
    for stamps in raised.values():
        stamps.sort()

    def sender_before(irq):
        for (cpu, kind), stamps in raised.items():
            if cpu == irq["cpu"] and kind.startswith(irq["ipi"]):
                i = bisect.bisect_right(stamps, irq["ts"])
                if i and irq["ts"] - stamps[i - 1] <= 100_000_000:
                    return True
        return False
    unpaired = [r for r in taken if not sender_before(r)]
    assert len(unpaired) <= max(2, len(taken) // 100), (len(unpaired), len(taken), unpaired[:3])


def test_fallback_mode_records_checksums_and_igets(tmp_path_factory, reader):
    run = record(tmp_path_factory, "unpatched", "off", icount_args(8), "-m,fallback,-v")
    log = Log(reader, run.out / "log.bin", keep=lambda r: r["type"] == "irq" and r["sp"] == "0x0")
    assert log.status["status"] == "complete"
    assert log.header["mode.chksum"] == "kprobe:chksum_update"
    assert log.header["mode.iget"] == "kprobe+kretprobe"
    # As on Debian's 6.1: no __irq_regs, the regs from a kprobe.
    assert log.header["mode.irq"] == IRQ_KPROBE_MODE
    assert "chkwin: chksum   kprobe:chksum_update" in run.console
    assert log.counts["chksum"] > 1000
    # The caller kind comes from the stack there: every call is inside a
    # known ext4 checksum helper, inode and seed calls among them.
    assert log.header["caller_source"] == "stack"
    callers = set(log.tally["chksum", "caller"])
    assert 0xffff not in callers and {3, 4} <= callers, callers
    assert log.counts["iget"] > 1000 and set(log.tally["iget", "err"]) == {0}
    assert set(log.tally["irq", "class"]) <= CLASSES
    # The checksum kprobes fill much of the one vCPU's time, and arrivals
    # inside their handlers find no regs kept: the stack gave their pc, and
    # they alone lack an sp.
    assert 0 < int(log.trailer["count.irq_pc_stack"]) == len(log.kept)


# The hooks of what ran inside the computations, and their programs.
# The hooks that feed ran records and their programs (bpf/chkwin.h's tables).
RAN_HOOKS = {p.hook: p.name for p in declared.PROGRAMS
             if next(h for h in declared.HOOKS if h.name == p.hook).probe == "ran"}


def test_dry_run_prints_the_plan_and_attaches_nothing(tmp_path):
    run = boot(tmp_path, "unpatched", "loader-plan")
    assert run.proc.returncode == 0, run.console[-2000:]
    for probe in ("chksum", "verify", "iget", "irq", "ipi", "softirq", "block", *RAN_HOOKS):
        assert re.search(rf"^chkwin: {probe} +\S", run.console, re.M), probe
    assert "kprobe:chksum_update" in run.console     # the fallback plan
    assert run.fields("dry-run-log") == ["absent"]
    # The lab passed its kernel's windows, and every plan watches them.
    assert len(re.findall(r"^chkwin: watch\.0 +ext4_chksum_gcc49\+0x60 0x", run.console,
                          re.M)) == DRY_RUNS
    assert "windows  none" not in run.console
    # Each way to the interrupted pc when asked for, whatever -m says; the
    # kprobe's programs attach before the entry that reads what they keep
    # (and so detach after it), the kretprobe first.
    forced = {part.split("\n", 1)[0]: part for part in
              run.console.split("dry-run-record: ")[0].split("dry-run-irq-pc: ")[1:]}
    irq = {how: re.search(r"^chkwin: irq +(.*)$", part, re.M).group(1)
           for how, part in forced.items()}
    assert irq == {"-m fallback --irq-pc irq_regs": "tp_btf+irq_regs",
                   "--irq-pc kprobe": IRQ_KPROBE_MODE, "--irq-pc stack": "tp_btf+stack"}
    order = re.search(r"^chkwin: programs (.*) \(", forced["--irq-pc kprobe"], re.M).group(1)
    order = [p for p in order.split() if p.startswith("irq_")]
    assert order[:3] == ["irq_regs_kretprobe", "irq_regs_kprobe", "irq_entry_saved"], order
    # What each record mode attaches: -R failures leaves out what would
    # only feed counters (block issues; iget results, which the verdict
    # tracepoint sees first), -R counts what only feeds ran records, and
    # each says so.
    programs = {}
    for part in run.console.split("dry-run-record: ")[1:]:
        mode = part.split()[0]
        programs[mode] = set(re.search(r"^chkwin: programs (.*) \(\d+ attached under -R "
                                       + mode + r"\)$", part, re.M).group(1).split())
        iget = re.search(r"^chkwin: iget +(.*)$", part, re.M).group(1)
        assert iget.startswith("not-attached") == (mode == "failures"), part
        for hook in RAN_HOOKS:
            found = re.search(rf"^chkwin: {hook} +(.*)$", part, re.M).group(1)
            assert found == ("tp_btf" if mode != "counts" else
                             "not-attached (-R counts keeps no ran records)"), part
    assert programs["all"] - programs["counts"] == set(RAN_HOOKS.values())
    assert programs["all"] - programs["failures"] == {"block_rq_issue", "iget_entry",
                                                      "iget_return"}
    assert {"chksum_end_tp", "irq_exit", "block_rq_complete", "softirq_entry",
            "softirq_exit"} <= programs["failures"]
    # One program an event: the irq entry reads the pc one way or another.
    for chosen in programs.values():
        assert len(chosen & {"irq_entry_regs", "irq_entry_saved", "irq_entry_stack"}) == 1
    # Every plan loads programs of bpf/chkwin.h's table only, and for each
    # hook some of its own exactly where the plan attaches it.
    by_hook = collections.defaultdict(set)
    for prog in declared.PROGRAMS:
        by_hook[prog.hook].add(prog.name)
    # Each plan's lines, then the programs it chose.
    parts = re.split(r"^chkwin: programs (.*) \(\d+ attached under .*$", run.console,
                     flags=re.M)
    assert len(parts) // 2 == DRY_RUNS, len(parts)
    for part, printed in zip(parts[0::2], parts[1::2]):
        chosen = set(printed.split())
        assert chosen <= {prog.name for prog in declared.PROGRAMS}, chosen
        for h in declared.HOOKS:
            mode = re.search(rf"^chkwin: {h.name} +(.*)$", part, re.M).group(1)
            attached = declared.hook_attached({f"mode.{h.name}": mode}, h.name)
            assert bool(chosen & by_hook[h.name]) == attached, (h.name, mode, sorted(chosen))


def test_without_the_lab_windows_no_window_is_watched(tmp_path):
    run = boot(tmp_path, "unpatched", "loader-plan", "--no-lab-windows")
    assert run.proc.returncode == 0, run.console[-2000:]
    assert run.status.lab_windows is False
    assert not (run.out / "lab.windows").exists()
    assert "chkwin: watch." not in run.console
    assert run.console.count("chkwin: windows  none watched") == DRY_RUNS


def test_cut_and_damaged_logs(gcc49_run, reader, tmp_path):
    run, _ = gcc49_run
    data = (run.out / "log.bin").read_bytes()
    rng = random.Random(2021)
    path = tmp_path / "cut.bin"
    for cut in sorted(rng.sample(range(200, len(data)), 5)):
        path.write_bytes(data[:cut])
        whole, proc = decode(reader, run.out / "log.bin"), decode(reader, path)
        records, last = 0, {}
        for line in proc.stdout:
            full_line = next(whole.stdout)
            if line == full_line:
                records += '"type"' in line
                continue
            # Only the status line may differ; the whole log has the first
            # record the cut one lacks in its place.
            last, following = json.loads(line), json.loads(full_line)
            assert "type" not in last, f"cut at {cut}: record {records} differs"
        stderr = finish(proc)
        finish(whole)
        assert proc.returncode == 3, stderr
        assert last["status"] == "truncated" and last["records"] == records
        assert "truncated" in stderr and stderr.count("\n") == 1
        # Every record wholly before the cut was returned.
        assert "pos" not in following or following["pos"] + 64 > cut, following
    damaged = bytearray(data)
    spot = len(data) // 2
    damaged[spot] ^= 0xff
    path.write_bytes(bytes(damaged))
    proc = decode(reader, path)
    line = ""
    for line in proc.stdout:
        pass
    finish(proc)
    status = json.loads(line)
    assert proc.returncode == 1
    assert status["status"] == "corrupt"
    assert 0 < status["offset"] <= spot
