"""guest/prepare.py: the lab's products built side by side."""

import os
import subprocess

import pytest

from common import PY, REPO
from guest.host import prepare

PREPARE = [PY, str(REPO / "guest/prepare.py")]


@pytest.mark.guest
def test_a_second_prepare_finds_every_product_the_first_made():
    """Whatever the first run had to build (nothing, after make test's
    build phase), the second finds every product of `all` in its
    builder's cache entry, and reports each by name."""
    for _ in range(2):
        proc = subprocess.run(PREPARE + ["--what", "all"], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
    assert ": built " not in proc.stderr, proc.stderr
    for name in prepare.products("all"):
        assert f"prepare: {name}: " in proc.stderr, proc.stderr


@pytest.mark.guest
def test_a_failing_builder_is_named_and_the_others_products_stay(tmp_path):
    """With no kernel source the kernels fail, and with them what needs a
    kernel (the loader, the initramfs that carries it); the test disk,
    which needs none, is built all the same and stays in the cache."""
    cache = tmp_path / "cache"
    env = dict(os.environ, CHKWIN_CACHE=str(cache),
               CHKWIN_KERNEL_SOURCE=str(tmp_path / "no-such-source.tar.xz"))
    proc = subprocess.run(PREPARE + ["--what", "lab"], capture_output=True, text=True,
                          env=env)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("prepare.py: error: ") and "kernels" in last, last
    assert "test disk" not in last, last
    assert "no-such-source.tar.xz is missing" in proc.stderr
    assert [p for p in (cache / "disks").iterdir() if p.name.startswith("testdisk-")]
    assert not list(cache.rglob(".tmp-*"))


def test_an_unknown_product_set_is_refused_in_one_line():
    proc = subprocess.run(PREPARE + ["--what", "everything"], capture_output=True,
                          text=True)
    assert proc.returncode == 2
    assert "invalid choice: 'everything'" in proc.stderr
