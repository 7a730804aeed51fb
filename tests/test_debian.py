"""common/debian.py: the installed version of a Debian package, or one
line naming make deps."""

import os
import subprocess

from common import PY, REPO
from common.debian import installed_version


def test_an_installed_package_gives_dpkgs_version():
    proc = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "dpkg"],
                          capture_output=True, text=True, check=True)
    assert installed_version("dpkg") == proc.stdout


def test_a_package_not_installed_is_one_line_naming_make_deps():
    proc = subprocess.run([PY, "-c", "from common.debian import installed_version; "
                           "installed_version('chkwin-no-such-package')"],
                          capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert "chkwin-no-such-package is not installed (make deps)" in proc.stderr
