"""The commands: each path a user runs is a link to entry.py, runs its
module with the repository's top on the module path, from any directory;
a link entry.py does not know is one line and exit 1."""

import os
import subprocess

import pytest

import entry
from common import PY, REPO


@pytest.mark.parametrize("command", sorted(entry.ENTRY_POINTS))
def test_every_command_is_a_link_that_runs_its_module(command, tmp_path):
    path = REPO / command
    assert path.is_symlink() and path.resolve() == REPO / "entry.py"
    proc = subprocess.run([PY, str(path), "--help"], capture_output=True, text=True,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"usage: {path.name}"), proc.stdout[:200]


def test_an_unknown_link_is_a_one_line_error(tmp_path):
    link = tmp_path / "nosuch.py"
    os.symlink(REPO / "entry.py", link)
    proc = subprocess.run([PY, str(link)], capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and "is not a chkwin command" in proc.stderr
