"""One log format: the C definition (bpf/chkwin.h, the loader's names and
checks), analysis/chkwinlog.py and docs/log-format.md must agree, field
by field and name by name.  tests/c/layout.c prints the C side, and
tests/c/plan_lines.c what the loader writes of every plan, which
analysis/declared.py's reading of bpf/chkwin.h must predict."""

import json
import re
import subprocess

import numpy as np
import pytest

from common import PY, REPO

from analysis import chkwinlog
from analysis import declared
from analysis import logjson
from analysis import synthlog
from tests import fuzzlog

SIZES = {"u1": 1, "<u2": 2, "<u4": 4, "<i4": 4, "<u8": 8, "S14": 14}
DOC_TYPES = {"u8": 1, "u16": 2, "u32": 4, "s32": 4, "u64": 8}


def host_tool(tmp_path_factory, target):
    """stdout of a host tool tests/c builds (make -C loader TARGET)."""
    out = tmp_path_factory.mktemp(target)
    subprocess.run(["make", "-s", "-C", str(REPO / "loader"), f"OUT={out}", target],
                   check=True)
    return subprocess.run([str(out / "host" / target)], capture_output=True, text=True,
                          check=True).stdout


@pytest.fixture(scope="module")
def c_side(tmp_path_factory):
    return json.loads(host_tool(tmp_path_factory, "layout"))


@pytest.fixture(scope="module")
def plan_lines(tmp_path_factory):
    return [json.loads(line) for line in host_tool(tmp_path_factory, "plan_lines").splitlines()]


def test_constants_and_names_agree(c_side):
    assert c_side["rec_size"] == chkwinlog.REC_SIZE
    assert c_side["version"] == chkwinlog.VERSION
    assert c_side["max_cpus"] == chkwinlog.MAX_CPUS
    assert c_side["max_span"] == chkwinlog.MAX_SPAN
    assert c_side["hist_slots"] == chkwinlog.HIST_SLOTS
    assert c_side["max_lines"] == chkwinlog.MAX_LINES
    assert c_side["max_watched"] == chkwinlog.MAX_WATCHED
    assert c_side["caller_unknown"] == chkwinlog.CALLER_UNKNOWN
    assert c_side["func_none"] == chkwinlog.FUNC_NONE
    assert c_side["not_attached"] == chkwinlog.NOT_ATTACHED
    assert c_side["flags"] == [chkwinlog.F_IN_CHKSUM, chkwinlog.F_WINDOW_HIT,
                               chkwinlog.F_HANDLED, chkwinlog.F_COMPLETE,
                               chkwinlog.F_MISMATCH, chkwinlog.F_METADATA]
    assert c_side["types"] == [chkwinlog.TYPES[n] for n in sorted(chkwinlog.TYPES)]
    assert sorted(chkwinlog.TYPES) == list(range(1, len(c_side["types"]) + 1))
    assert c_side["classes"] == chkwinlog.CLASSES
    assert c_side["probes"] == chkwinlog.PROBES


def test_the_declarations_agree(plan_lines):
    """bpf/chkwin.h's hook, probe, class and counter tables as the loader
    compiles them and as analysis/declared.py reads them: the same names,
    and for every plan the planner can make (each hook attached or not,
    each record mode, each way to the interrupted pc) the trailer has the
    counters declared.COUNTERS lists, lost.PROBE first, and says
    not-attached exactly where declared.not_attached predicts from the
    header."""
    names, plans = plan_lines[0], plan_lines[1:]
    assert names == {"hooks": [h.name for h in declared.HOOKS],
                     "probes": declared.PROBES, "classes": declared.CLASSES}
    keys = [key for key, _ in declared.COUNTERS]
    order = [k for k in keys if k.startswith("lost.")] + \
        [k for k in keys if k.startswith("count.")]
    assert len(plans) > 2000
    for plan in plans:
        header = dict(line.split("=", 1) for line in plan["header"])
        trailer = [line.split("=", 1) for line in plan["trailer"]]
        assert [key for key, _ in trailer] == order
        assert {key for key, v in trailer if v == chkwinlog.NOT_ATTACHED} == \
            declared.not_attached(header), header


@pytest.mark.parametrize("edit, why", [
    (("C(IGET, iget, CHKWIN_NEED_IGET)", "C(IGET, iget)"),
     "CHKWIN_COUNTER_TABLE: C(IGET, iget) is not C() of 3 arguments"),
    (("CHKWIN_NEED_IGET)", "CHKWIN_NEED_IGETS)"), "iget needs 'CHKWIN_NEED_IGETS'"),
    (("#define CHKWIN_HOOK_TABLE(H)", "#define CHKWIN_HOOKS_TABLE(H)"),
     "no CHKWIN_HOOK_TABLE(X) table"),
    (("H(IPI, ipi, IRQ,", "H(IPI, ipi, IRQS,"), "hook ipi feeds IRQS, which is no probe"),
    (("CHKWIN_NEED_NOT_FAILURES =", "CHKWIN_NEED_NOT_FAIL ="),
     "enum chkwin_need's conditions are"),
    (("C(CHKSUM, chksum, CHKWIN_NEED_CHKSUM)", "C(CHKSUM, chksum, CHKWIN_NEED_CHKSUM"),
     "CHKWIN_COUNTER_TABLE is not a list of C(...) entries"),
    (("P(verify_tp, VERIFY,", "P(verify_tp, VERIFIES,"),
     "program verify_tp serves VERIFIES, which is no hook"),
    (("P(sample, SAMPLE, CHKWIN_WAY_PERF_EVENT)", "P(sample, SAMPLE, CHKWIN_WAY_PERF)"),
     "program sample serves in 'CHKWIN_WAY_PERF', which is no CHKWIN_WAY_*"),
    (("R(BLOCK, block, BLOCKS)", "R(BLOCK, block, BLOCK)"),
     "record block goes to ring BLOCK, which is no CHKWIN_RING_*"),
])
def test_a_table_that_cannot_be_read_is_one_line(tmp_path, edit, why):
    """analysis/declared.py refuses a chkwin.h it cannot read in one line
    that names the file and the table."""
    text = declared.HEADER.read_text()
    assert edit[0] in text
    (tmp_path / "chkwin.h").write_text(text.replace(edit[0], edit[1], 1))
    with pytest.raises(declared.DeclarationError) as e:
        declared.Declared(tmp_path / "chkwin.h")
    assert "\n" not in str(e.value) and str(e.value).startswith(f"{tmp_path}/chkwin.h: ")
    assert why in str(e.value), e.value


def test_every_bpf_program_has_its_line_in_the_program_table():
    """The programs of bpf/chkwin.bpf.c and CHKWIN_PROGRAM_TABLE's lines are
    the same set, so that the loader (which refuses a program without a
    line, and fails to build on a line without a program) and the tests
    read which program serves which hook from the table."""
    source = (REPO / "bpf" / "chkwin.bpf.c").read_text()
    found = set(re.findall(r'^SEC\("[^"]+"\)\s*\nint (?:BPF_\w+\()?(\w+)', source, re.M))
    named = [p.name for p in declared.PROGRAMS]
    assert len(named) == len(set(named))
    assert found == set(named), (found ^ set(named))


def test_flags_and_rings_are_read_from_the_header():
    """The analysis's record flags and flight recorder rings are bpf/chkwin.h's:
    the flags its #defines, the rings enum chkwin_ring's in order, each with
    the record types CHKWIN_RECORDS sends it."""
    text = declared.HEADER.read_text()
    for name, value in declared.FLAGS.items():
        assert re.search(rf"#define CHKWIN_F_{name}\s+0x{value:02x}\b", text), name
    assert list(chkwinlog.RINGS) == ["calls", "arrivals", "blocks"]
    assert chkwinlog.RINGS["blocks"] == ("block",)
    assert set(chkwinlog.RINGS["calls"]) == {"chksum", "verify", "iget"}
    assert "snapshot" not in {t for kinds in chkwinlog.RINGS.values() for t in kinds}


def test_record_layouts_agree(c_side):
    """The record.N lines the loader writes, parsed as chkwinlog parses a
    log's header, give the offsets and sizes the compiler gave the record
    table; the fixed layout of older logs is the same on both sides."""
    head = [(n, o, SIZES[f]) for n, f, o in chkwinlog.HEAD_FIELDS]
    assert [tuple(x) for x in c_side["head"]] == [(n, o, s) for n, o, s in head]
    layout = {}
    for line in c_side["schema"]:
        key, _, value = line.partition("=")
        assert key.startswith("record.")
        assert chkwinlog.schema_line(layout, int(key[7:]), value.encode()) is None, line
    compiled = {kind: {f[0]: (f[1], f[2]) for f in fields if f[0] != "pad"}
                for kind, fields in c_side["payloads"].items() if kind}
    assert {name: {f[0]: (f[3], f[2]) for f in fields}
            for name, fields in layout.values()} == compiled
    assert [name for _, (name, _) in sorted(layout.items())] == c_side["types"]
    assert [line.encode() for line in c_side["legacy"]] == chkwinlog.LEGACY
    for kind, fields in c_side["payloads"].items():
        assert all(o + s <= c_side["rec_size"] - c_side["head_size"] for _, o, s in fields)


def test_a_field_added_to_the_table_is_read_from_the_header(tmp_path):
    """What adding a field costs a reader: nothing.  A version 4 log whose
    header declares an extra chksum field is read with it, by its code."""
    s = synthlog.generate(igets=200, k=1, m=0, seed=4)
    for n, line in enumerate(chkwinlog.LEGACY, 1):
        s.header[f"record.{n}"] = line.decode()
    s.header["record.1"] += " cycles:x32@28"
    s.records[s.records[:, 0] == 1, 16 + 28] = 0xab
    s.write(tmp_path / "wider.bin")
    log = chkwinlog.read(tmp_path / "wider.bin")
    assert [f[0] for f in log.layout.fields["chksum"]][-1] == "cycles"
    assert set(log.of("chksum")["cycles"]) == {0xab}
    first = next(ln for ln in logjson.record_lines(log) if '"type":"chksum"' in ln)
    assert first.endswith(',"cycles":"0xab"}'), first
    # The loader's own reader, unchanged, prints the same.
    reader = fuzzlog.build_reader(tmp_path / "reader")
    proc = subprocess.run([str(reader), str(tmp_path / "wider.bin")], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == list(logjson.lines(log))


def test_the_document_agrees():
    """docs/log-format.md's table of the fixed layout (versions 1-3, and
    what this loader writes in its record.N lines, the types added since
    included): type numbers, names, and each field's offset and size as
    chkwinlog has them."""
    doc = (REPO / "docs/log-format.md").read_text()
    rows = re.findall(r"^\| (\d) \| `(\w+)` \| (.*) \|$", doc, re.M)
    # The record table's rows give fields; the class table's rows do not.
    classes = [(int(n), name) for n, name, text in rows if not re.match(r"0 u", text)]
    rows = [r for r in rows if re.match(r"0 u", r[2])]
    assert classes == list(enumerate(chkwinlog.CLASSES))
    legacy = chkwinlog.current_layout()
    assert {int(n): name for n, name, _ in rows} == {n: t[0] for n, t in legacy.items()}
    for n, name, text in rows:
        found = [(f, int(o), DOC_TYPES.get(t) or int(re.match(r"char\[(\d+)\]", t)[1]))
                 for o, t, f in re.findall(r"(\d+) (u8|u16|u32|s32|u64|char\[\d+\]) `(\w+)`",
                                           text)]
        want = [(f[0], f[3], f[2]) for f in legacy[int(n)][1]]
        assert [x for x in found if x[0] != "pad"] == want, name
    ran = re.findall(r"^\| `(\w+)` \| (\d) \| ", doc, re.M)
    assert [(int(n), name) for name, n in ran] == list(enumerate(chkwinlog.RAN))
    assert f"# chkwin event log, version {chkwinlog.VERSION}" in doc


def test_dtypes_cover_the_record():
    for kind, dt in chkwinlog.DTYPES.items():
        assert dt.itemsize == chkwinlog.REC_SIZE, kind
        assert np.zeros(1, dt)[0]["type"] == 0


def test_a_layout_the_analysis_cannot_use_is_read_but_refused(tmp_path):
    """A log whose irq records lack a field the analysis needs still reads
    (its records as its layout says), and chkwin-analyze refuses it in
    one line."""
    s = synthlog.generate(igets=200, k=1, m=0, seed=4)
    for n, line in enumerate(chkwinlog.LEGACY, 1):
        s.header[f"record.{n}"] = line.decode()
    s.header["record.4"] = "irq pc:x64@0 sp:x64@8 end_ns:u64@16 irq:u32@24"
    s.write(tmp_path / "narrow.bin")
    log = chkwinlog.read(tmp_path / "narrow.bin")
    assert log.status == "complete" and len(log.of("irq")) > 0
    proc = subprocess.run([PY, str(REPO / "analysis/chkwin-analyze"), "summary",
                           str(tmp_path / "narrow.bin")], capture_output=True, text=True)
    assert proc.returncode != 0 and proc.stderr.count("\n") == 1, proc.stderr
    assert "its irq records have no offset field of code u16" in proc.stderr


def test_a_counter_the_run_left_out_is_not_attached_never_zero(tmp_path):
    """A run without the sampler: its trailer says count.sample.NAME and
    lost.sample are not-attached, both readers take the log whole, the
    analysis says "not attached" where it shows them and refuses to read
    one as a number; records.TYPE is always a number."""
    s = synthlog.generate(igets=200, k=1, m=0, seed=4)
    assert s.header["mode.sample"] == "off"
    s.write(tmp_path / "nosampler.bin")
    log = chkwinlog.read(tmp_path / "nosampler.bin")
    assert log.status == "complete"
    assert log.trailer["count.sample.window"] == chkwinlog.NOT_ATTACHED
    assert not log.attached("sample.window") and log.attached("irq.window")
    assert log.lost()["sample"] == chkwinlog.NOT_ATTACHED and log.lost()["irq"] == 0
    with pytest.raises(chkwinlog.LogError, match="count.sample.window is not-attached"):
        log.counter("sample.window")
    reader = fuzzlog.build_reader(tmp_path / "reader")
    proc = subprocess.run([str(reader), str(tmp_path / "nosampler.bin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == list(logjson.lines(log))
    proc = subprocess.run([PY, str(REPO / "analysis/chkwin-analyze"), "summary",
                           str(tmp_path / "nosampler.bin")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "sample classes: not attached" in proc.stdout
    assert "sample=not-attached" in proc.stdout
    # records.TYPE counts what was written: never not-attached.
    raw = (tmp_path / "nosampler.bin").read_bytes()
    parts = fuzzlog.Parts(bytearray(raw))
    bad = parts.trailer.replace(b"records.sample=0", b"records.sample=not-attached")
    (tmp_path / "bad.bin").write_bytes(parts.join(trailer=bad.rstrip(b"\0")))
    with pytest.raises(chkwinlog.LogError, match="records.sample"):
        chkwinlog.read(tmp_path / "bad.bin")
    proc = subprocess.run([str(reader), str(tmp_path / "bad.bin")],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and "records.sample" in proc.stdout.splitlines()[-1]


def test_counters_vary_in_number(tmp_path):
    """A trailer may carry counters this reader has never heard of (one per
    watched window, say): both readers take them as they come, by name."""
    s = synthlog.generate(igets=200, k=1, m=0, seed=5)
    trailer = synthlog.trailer_for(s.header, s.records, 3_000_000_000)
    trailer.update({f"count.window.w{n}": n for n in range(40)})
    trailer["count.window.w7"] = chkwinlog.NOT_ATTACHED
    synthlog.write(tmp_path / "more.bin", s.header, s.records, trailer)
    log = chkwinlog.read(tmp_path / "more.bin")
    assert log.status == "complete"
    assert log.counter("window.w39") == 39 and not log.attached("window.w7")
    reader = fuzzlog.build_reader(tmp_path / "reader")
    proc = subprocess.run([str(reader), str(tmp_path / "more.bin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == list(logjson.lines(log))


def test_a_header_watching_4096_windows(tmp_path):
    """A header may name 4096 watched windows (watch.N): both readers take
    it, and both call a key given twice among them corrupt at the same
    line, the second one."""
    s = synthlog.generate(igets=100, k=1, m=0, seed=6)
    for n in range(chkwinlog.MAX_WATCHED):
        s.header[f"watch.{n}"] = f"w{n} {0x1000 + 8 * n:#x} {0x1004 + 8 * n:#x}"
    s.write(tmp_path / "many.bin")
    reader = fuzzlog.build_reader(tmp_path / "reader")
    log = chkwinlog.read(tmp_path / "many.bin")
    assert log.status == "complete" and log.header["watch.4095"].startswith("w4095 ")
    proc = subprocess.run([str(reader), str(tmp_path / "many.bin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.splitlines() == list(logjson.lines(log))
    raw = (tmp_path / "many.bin").read_bytes()
    parts = fuzzlog.Parts(bytearray(raw))
    text = parts.htext.rstrip(b"\0")
    second = text.index(b"watch.4000=")
    bad = text[:second] + b"watch.7=w7 0x1 0x2\n" + text[second:]
    (tmp_path / "dup.bin").write_bytes(parts.join(htext=bad + b"\0" * (-len(bad) % 8)))
    with pytest.raises(chkwinlog.LogError) as e:
        chkwinlog.read(tmp_path / "dup.bin")
    assert "key 'watch.7': duplicate key" in str(e.value)
    proc = subprocess.run([str(reader), str(tmp_path / "dup.bin")],
                          capture_output=True, text=True)
    last = json.loads(proc.stdout.splitlines()[-1])
    assert proc.returncode == 1 and last["status"] == "corrupt"
    assert last["offset"] == e.value.offset and "watch.7" in last["reason"]


def test_the_class_numbers_are_the_documented_ones():
    """Records carry a class as its number and no log names them, so the
    class table may only grow at its end: the numbers and names are the
    ones docs/log-format.md gives every log, old ones too."""
    doc = (REPO / "docs/log-format.md").read_text()
    table = doc.split("Interrupt classes", 1)[1].split("\n\n", 2)[1]
    documented = re.findall(r"^\| (\d+) \| `(\w+)` \|", table, re.M)
    assert [int(n) for n, _ in documented] == list(range(len(documented)))
    assert [name for _, name in documented] == chkwinlog.CLASSES
