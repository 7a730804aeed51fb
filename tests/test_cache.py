"""The cache: concurrent requests for one entry build it once."""

import os
import pathlib

import pytest

from common import PY, REPO
from tests.kernels import kernel_dir, run_together

pytestmark = pytest.mark.guest


def test_two_initramfs_builds_at_once_build_each_entry_once(tmp_path):
    """A fresh cache that shares only the kernels and downloaded .debs of
    the real one: two initramfs builds started together each need the
    guest programs, the loader and the initramfs; each is built once, the
    other request waits for it and hits."""
    real = kernel_dir("unpatched").parent.parent
    cache = tmp_path / "cache"
    cache.mkdir()
    for shared in ("kernels", "debs"):
        (real / shared).mkdir(exist_ok=True)
        (cache / shared).symlink_to(real / shared)
    env = dict(os.environ, CHKWIN_CACHE=str(cache))
    procs = run_together([PY, str(REPO / "guest/initramfs.py"), "--print-path"], env)
    for proc in procs:
        assert proc.returncode == 0, proc.stderr
    paths = {proc.stdout.strip() for proc in procs}
    assert len(paths) == 1
    assert pathlib.Path(paths.pop()).stat().st_size > 0
    stderr = "".join(proc.stderr for proc in procs)
    for what in ("programs", "loader", "initramfs"):
        assert stderr.count(f"{what}: built ") == 1, stderr
        assert stderr.count(f"{what}: cache hit ") == 1, stderr
    assert "built meanwhile by another process" in stderr
    assert not list(cache.rglob(".tmp-*"))
