"""The test disk is reproducible, valid ext4 with metadata_csum, read-only."""

import json
import os
import pathlib
import subprocess
import time

from common import PY, REPO
from common.digest import file_sha256


def build(cache, *args, umask=0o022):
    proc = subprocess.run([PY, str(REPO / "guest/testdisk.py"), "--print-path",
                           *args], capture_output=True, text=True,
                          env=dict(os.environ, CHKWIN_CACHE=str(cache)),
                          preexec_fn=lambda: os.umask(umask))
    assert proc.returncode == 0, proc.stderr
    return pathlib.Path(proc.stdout.strip()), proc.stderr


def test_same_parameters_give_identical_bytes(tmp_path):
    a, _ = build(tmp_path / "a", "--files", "300")
    # Another second and another umask: host ctimes and modes must not leak in.
    time.sleep(1.1)
    b, _ = build(tmp_path / "b", "--files", "300", umask=0o002)
    assert file_sha256(a) == file_sha256(b)
    c, _ = build(tmp_path / "c", "--files", "300", "--seed", "7")
    assert file_sha256(c) != file_sha256(a)


def test_image_is_valid_checksummed_and_read_only(tmp_path):
    image, err = build(tmp_path, "--files", "300", "--dirs", "9")
    assert "built" in err
    fsck = subprocess.run(["e2fsck", "-fn", str(image)], capture_output=True,
                          text=True)
    assert fsck.returncode == 0, fsck.stdout
    header = subprocess.run(["dumpe2fs", "-h", str(image)], capture_output=True,
                            text=True).stdout
    assert "metadata_csum" in header
    assert "c4c4c4c4-2021-0105-a72a-000000000001" in header
    assert image.stat().st_mode & 0o777 == 0o444
    meta = json.loads(image.with_suffix(".json").read_text())
    assert meta["sha256"] == file_sha256(image)
    assert meta["inode_size"] == 256 and meta["inode_tables"]
    listing = subprocess.run(["debugfs", "-R", "ls -p /d000/d000", str(image)],
                             capture_output=True, text=True).stdout
    files = [ln for ln in listing.splitlines() if "/f0" in ln]
    assert len(files) == 300 // 9 + 1
    _, again = build(tmp_path, "--files", "300", "--dirs", "9")
    assert "cache hit" in again
