"""The Debian root filesystem (guest/rootfs.py) and the peers in it.

Built once (cached outside the repo), then booted on the unpatched lab
kernel with the tools disk: it must be Debian, have bpftrace and perf,
and both must really count the lab's checksum tracepoint while the
inode loop runs.  The root disk is attached with snapshot=on, so the
cached image must come out of the boot unchanged.
"""

import json
import subprocess

import pytest

from tests.boots import boot
from common import PY, REPO
from common.digest import file_sha256

# Boots two-vCPU guests on the host clock: the hostclock mark.
pytestmark = [pytest.mark.guest, pytest.mark.hostclock]

DURATION = "8"


def rootfs_json():
    proc = subprocess.run([PY, str(REPO / "guest/rootfs.py"), "--json"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc


@pytest.fixture(scope="module")
def rootfs():
    report, _ = rootfs_json()
    return report


@pytest.fixture(scope="module")
def peers_run(tmp_path_factory, rootfs):
    image = f"{rootfs['dir']}/rootfs.img"
    before = file_sha256(image)
    run = boot(tmp_path_factory.mktemp("peers-check"), "unpatched", "peers-check",
               "--root", "debian", "--duration", DURATION)
    run.image_unchanged = file_sha256(image) == before
    return run


def test_rootfs_has_the_peers(rootfs):
    packages = dict(line.split(" ", 1) for line in
                    open(f"{rootfs['dir']}/packages.txt").read().splitlines())
    for name in ("bpftrace", "linux-perf", "rt-tests", "libc6"):
        assert name in packages, f"{name} not installed"
    assert rootfs["suite"] == "bookworm"


def test_rootfs_second_call_is_a_cache_hit(rootfs):
    report, proc = rootfs_json()
    assert report["dir"] == rootfs["dir"]
    assert "cache hit" in proc.stderr


def test_debian_root_boots_and_runs_the_peers(peers_run):
    assert peers_run.proc.returncode == 0, \
        peers_run.proc.stderr + peers_run.console[-3000:]
    assert peers_run.status.root == "debian"
    assert peers_run.fields("os") == ["Debian GNU/Linux 12 (bookworm)"]
    assert peers_run.fields("bpftrace")[0].startswith("bpftrace v0.17")
    assert peers_run.fields("perf")[0].startswith("perf version 6.1")
    # Both peers saw checksum calls on the lab's tracepoint.
    assert int(peers_run.fields("bpftrace-calls")[0]) > 0
    assert int(peers_run.fields("perf-calls")[0]) > 0


def test_debian_root_disk_unchanged_by_a_boot(peers_run):
    assert peers_run.proc.returncode == 0, peers_run.proc.stderr
    assert peers_run.image_unchanged


def test_missing_root_disk_is_one_line_error(tmp_path):
    run = boot(tmp_path / "out", "unpatched", "lab-check", "--root", "debian",
               "--rootfs", str(tmp_path / "nothing.img"))
    assert run.proc.returncode == 1
    lines = run.proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "root disk" in lines[0] and "does not exist" in lines[0]


def test_debian_root_refuses_the_stock_kernel(tmp_path):
    run = boot(tmp_path / "out", "stock", "lab-check", "--root", "debian")
    assert run.proc.returncode == 1
    assert "needs a lab kernel" in run.proc.stderr
    assert not (tmp_path / "out").exists()
