"""One log format: the C definition (bpf/chkwin.h, the loader's names and
checks), analysis/chkwinlog.py and docs/log-format.md must agree, field
by field and name by name.  tests/c/layout.c prints the C side."""

import json
import re
import subprocess

import numpy as np
import pytest

from tests.kernels import REPO

from analysis import chkwinlog

SIZES = {"u1": 1, "<u2": 2, "<u4": 4, "<i4": 4, "<u8": 8, "S14": 14}
DOC_TYPES = {"u8": 1, "u16": 2, "u32": 4, "s32": 4, "u64": 8}


@pytest.fixture(scope="module")
def c_side(tmp_path_factory):
    out = tmp_path_factory.mktemp("layout")
    subprocess.run(["make", "-s", "-C", str(REPO / "loader"), f"OUT={out}", "layout"],
                   check=True)
    return json.loads(subprocess.run([str(out / "host/layout")], capture_output=True,
                                     text=True, check=True).stdout)


def test_constants_and_names_agree(c_side):
    assert c_side["rec_size"] == chkwinlog.REC_SIZE
    assert c_side["version"] == chkwinlog.VERSION
    assert c_side["max_cpus"] == chkwinlog.MAX_CPUS
    assert c_side["max_span"] == chkwinlog.MAX_SPAN
    assert c_side["hist_slots"] == chkwinlog.HIST_SLOTS
    assert c_side["caller_unknown"] == chkwinlog.CALLER_UNKNOWN
    assert c_side["func_none"] == chkwinlog.FUNC_NONE
    assert c_side["flags"] == [chkwinlog.F_IN_CHKSUM, chkwinlog.F_WINDOW_HIT,
                               chkwinlog.F_HANDLED, chkwinlog.F_COMPLETE,
                               chkwinlog.F_MISMATCH, chkwinlog.F_METADATA]
    assert c_side["types"] == [chkwinlog.TYPES[n] for n in sorted(chkwinlog.TYPES)]
    assert sorted(chkwinlog.TYPES) == list(range(1, len(c_side["types"]) + 1))
    assert c_side["classes"] == chkwinlog.CLASSES
    assert c_side["probes"] == chkwinlog.PROBES


def test_record_layouts_agree(c_side):
    head = [(n, o, SIZES[f]) for n, f, o in chkwinlog.HEAD_FIELDS]
    assert [tuple(x) for x in c_side["head"]] == [(n, o, s) for n, o, s in head]
    assert set(c_side["payloads"]) == set(chkwinlog.PAYLOADS)
    for kind, fields in chkwinlog.PAYLOADS.items():
        mine = [(n, o, SIZES[f]) for n, f, o in fields]
        assert [tuple(x) for x in c_side["payloads"][kind]] == mine, kind
        assert all(o + s <= c_side["rec_size"] - c_side["head_size"] for _, o, s in mine)


def test_the_document_agrees():
    """docs/log-format.md's record table: type numbers, names, and each
    field's offset and size as chkwinlog has them."""
    doc = (REPO / "docs/log-format.md").read_text()
    rows = re.findall(r"^\| (\d) \| `(\w+)` \| (.*) \|$", doc, re.M)
    # The record table's rows give fields; the class table's rows do not.
    classes = [(int(n), name) for n, name, text in rows if not re.match(r"0 u", text)]
    rows = [r for r in rows if re.match(r"0 u", r[2])]
    assert classes == list(enumerate(chkwinlog.CLASSES))
    assert {int(n): name for n, name, _ in rows} == chkwinlog.TYPES
    for _, name, text in rows:
        found = [(f, int(o), DOC_TYPES.get(t) or int(re.match(r"char\[(\d+)\]", t)[1]))
                 for o, t, f in re.findall(r"(\d+) (u8|u16|u32|s32|u64|char\[\d+\]) `(\w+)`",
                                           text)]
        want = [(n, o, SIZES[f]) for n, f, o in chkwinlog.PAYLOADS[name]]
        assert found == want, name
    assert f"# chkwin event log, version {chkwinlog.VERSION}" in doc


def test_dtypes_cover_the_record():
    for kind, dt in chkwinlog.DTYPES.items():
        assert dt.itemsize == chkwinlog.REC_SIZE, kind
        assert np.zeros(1, dt)[0]["type"] == 0
