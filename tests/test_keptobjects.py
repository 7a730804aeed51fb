"""guest/host/keptobjects.py's judgement of a header change: which
changes it can vouch for (no line moves, every changed statement named in
the witnesses with its instruction words), and the committed witnesses
file as kbuild reads it.  The build that keeps objects is checked on the
real kernels in tests/test_kbuild.py."""

import pathlib

import pytest

from common import REPO
from guest.host import keptobjects

IO_H = "arch/arm64/include/asm/io.h"
MACRO = (b"#define __io_ar(v)\t\\\n({\t\\\n\tunsigned long tmp;\t\\\n\t%s\t\\\n"
         b"\tasm volatile(\"eor %%0, %%1, %%1\");\t\\\n})\n#define LATER __LINE__\n")
WITNESSES = {(IO_H, "dma_rmb();"): {bytes.fromhex("bf3103d5")},
             (IO_H, "rmb();"): {bytes.fromhex("9f3d03d5")}}


def test_the_committed_witnesses_name_the_barriers_of_both_flavours():
    table = keptobjects.read_witnesses(REPO / "kernel-patches" / keptobjects.WITNESSES)
    assert table == WITNESSES


@pytest.mark.parametrize("old, new", [
    (b"dma_rmb();", b"rmb();\t/* dsb ld */"),
    (b"rmb();\t/* dsb ld */", b"dma_rmb();"),
])
def test_a_named_statement_changed_in_place_is_vouched_for(old, new):
    """The barrier patch either way; an object holding either barrier is
    left to make (it may predate an earlier rewrite of the header)."""
    changes = {IO_H: (MACRO % old, MACRO % new)}
    assert keptobjects.header_words(changes, WITNESSES) == {
        IO_H: {bytes.fromhex("bf3103d5"), bytes.fromhex("9f3d03d5")}}


@pytest.mark.parametrize("new", [
    # One line more: __LINE__ below it moves.
    MACRO % b"/* dsb ld */\t\\\n\trmb();",
    # A statement the witnesses do not name.
    MACRO % b"dsb(sy);",
])
def test_a_moved_line_or_an_unnamed_statement_is_left_to_make(new):
    changes = {IO_H: (MACRO % b"dma_rmb();", new)}
    assert keptobjects.header_words(changes, WITNESSES) == {}


def test_a_new_or_deleted_file_is_left_to_make():
    assert keptobjects.header_words({IO_H: (None, MACRO % b"rmb();")}, WITNESSES) == {}
    assert keptobjects.header_words({IO_H: (MACRO % b"rmb();", None)}, WITNESSES) == {}


def test_a_damaged_witnesses_file_is_refused_with_its_line(tmp_path):
    bad = tmp_path / "witnesses"
    bad.write_text("# header, statement, words\narch/x.h rmb(); zz\n")
    with pytest.raises(ValueError, match=r"witnesses:2: not"):
        keptobjects.read_witnesses(bad)
    bad.write_text("arch/x.h\trmb();\tzz\n")
    with pytest.raises(ValueError, match=r"witnesses:1: not"):
        keptobjects.read_witnesses(bad)


def test_prerequisites_are_the_cmd_files_paths(tmp_path):
    (tmp_path / "fs").mkdir()
    cmd = tmp_path / "fs" / ".a.o.cmd"
    cmd.write_text("cmd_fs/a.o := gcc -c -o fs/a.o fs/a.c\n\nsource_fs/a.o := fs/a.c\n\n"
                   "deps_fs/a.o := \\\n  include/linux/x.h \\\n"
                   "    $(wildcard include/config/FOO) \\\n  arch/arm64/include/asm/io.h \\\n\n"
                   "fs/a.o: $(deps_fs/a.o)\n\n$(deps_fs/a.o):\n")
    got = {str(p.relative_to(tmp_path)) for p in
           keptobjects.prerequisites(cmd, tmp_path)}
    assert {"fs/a.c", "include/linux/x.h", "include/config/FOO", IO_H} <= got
    assert not any(p.startswith("$") or p.endswith(":") for p in got)
