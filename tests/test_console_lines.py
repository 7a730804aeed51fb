"""The guest's console protocol: the shell functions guest/init prints
with, run by the host's /bin/sh, and the host's readers of their lines."""

import shutil
import subprocess

import pytest

from guest.host import console_lines
from guest.host import interrupts


def shell(script):
    """What script prints after sourcing the protocol's declaration."""
    return subprocess.run(["/bin/sh", "-c", f'. "$1"; {script}', "sh",
                           str(console_lines.DECLARATION)],
                          check=True, capture_output=True, text=True).stdout


def test_what_the_shell_prints_the_host_reads():
    text = shell("console_status 3; console_proc before; echo noise; "
                 "console_calls 12; console_proc after; console_status 0")
    assert console_lines.last_status(text) == 0
    assert console_lines.last_calls(text) == 12
    assert sorted(console_lines.proc_blocks(text)) == ["after", "before"]
    # This machine's /proc read as a guest's: a whole before and after.
    counts = interrupts.around_scenario(text)
    assert counts is not None and counts["cpus"] >= 1 and counts["seconds"] >= 0


def test_the_status_line_is_what_console_status_prints():
    assert shell("console_status 0") == console_lines.status_line(0)


def test_a_console_without_the_lines_reads_as_none():
    text = shell(f"console_proc before; echo '{console_lines.STATUS_TAG} x'")
    assert console_lines.last_status(text) is None
    assert console_lines.last_calls(text) is None
    assert interrupts.around_scenario(text) is None


@pytest.mark.parametrize("damage", ["CHKWIN_TAG_CALLS", "CHKWIN_TAG_STATUS"])
def test_a_declaration_without_a_tag_is_one_line(tmp_path, damage):
    copy = tmp_path / "_console.sh"
    shutil.copyfile(console_lines.DECLARATION, copy)
    text = copy.read_text()
    copy.write_text("\n".join(ln for ln in text.splitlines()
                              if not ln.startswith(damage + "=")))
    with pytest.raises(console_lines.ProtocolError) as e:
        console_lines.read_tags(copy)
    assert f"no {damage}= line" in str(e.value) and "\n" not in str(e.value)


def test_an_unreadable_declaration_is_one_line(tmp_path):
    with pytest.raises(console_lines.ProtocolError) as e:
        console_lines.read_tags(tmp_path / "missing.sh")
    assert "cannot read the console tags" in str(e.value)
