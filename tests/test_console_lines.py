"""The guest's console protocol: the shell functions guest/init prints
with, run by the host's /bin/sh, and the host's readers of their lines."""

import os
import shutil
import subprocess

import pytest

from common import REPO
from guest.host import console_lines
from guest.host import interrupts


def shell(script):
    """What script prints after sourcing the protocol's declaration."""
    return subprocess.run(["/bin/sh", "-c", f'. "$1"; {script}', "sh",
                           str(console_lines.DECLARATION)],
                          check=True, capture_output=True, text=True).stdout


@pytest.mark.skipif(not os.access("/proc/interrupts", os.R_OK),
                    reason="console_proc reads /proc/interrupts, unreadable here")
def test_what_the_shell_prints_the_host_reads():
    text = shell("console_status 3; console_proc before; echo noise; "
                 "console_calls 12; console_proc after; console_status 0")
    assert console_lines.last_status(text) == 0
    assert console_lines.last_calls(text) == 12
    assert sorted(console_lines.proc_blocks(text)) == ["after", "before"]
    # This machine's /proc read as a guest's: a whole before and after.
    counts = interrupts.around_scenario(text)
    assert counts is not None and counts["cpus"] >= 1


def test_the_status_line_is_what_console_status_prints():
    assert shell("console_status 0") == console_lines.status_line(0)


def test_a_damaged_line_is_not_read():
    """A status line without a number does not replace the last good one,
    and a /proc block cut before its end line is not a block."""
    text = shell("console_status 2; console_proc after")
    cut = text[:text.rindex(console_lines.TAGS["PROC_END"])]
    damaged = cut + f"{console_lines.STATUS_TAG} x\n"
    assert console_lines.last_status(damaged) == 2
    assert console_lines.proc_blocks(damaged) == {}
    assert console_lines.last_calls(damaged) is None


def test_no_tag_is_written_outside_its_declaration():
    """guest/init prints through _console.sh's functions; a literal tag
    elsewhere would be a second declaration."""
    others = [p for p in (REPO / "guest").rglob("*")
              if p.is_file() and p != console_lines.DECLARATION
              and "__pycache__" not in p.parts]
    for path in others:
        text = path.read_text(errors="replace")
        for tag in console_lines.TAGS.values():
            assert tag not in text, f"{path} writes {tag}"


@pytest.mark.parametrize("damage", ["CHKWIN_TAG_CALLS", "CHKWIN_TAG_STATUS"])
def test_a_declaration_without_a_tag_is_one_line(tmp_path, damage):
    copy = tmp_path / "_console.sh"
    shutil.copyfile(console_lines.DECLARATION, copy)
    text = copy.read_text()
    copy.write_text("\n".join(ln for ln in text.splitlines()
                              if not ln.startswith(damage + "=")))
    with pytest.raises(console_lines.ProtocolError) as e:
        console_lines.read_tags(copy)
    assert f"no {damage}=TAG line" in str(e.value) and "\n" not in str(e.value)


def test_an_unreadable_declaration_is_one_line(tmp_path):
    with pytest.raises(console_lines.ProtocolError) as e:
        console_lines.read_tags(tmp_path / "missing.sh")
    assert "cannot read the console tags" in str(e.value)
    assert "\n" not in str(e.value)
