"""What Debian's package database says of this machine."""

import subprocess

from common.errors import die


def installed_version(package):
    """The installed version of a Debian package; a one-line error
    naming make deps when dpkg does not have it installed."""
    try:
        # A line an architecture when a package is installed for several.
        proc = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Status} ${Version}\n",
                               package], capture_output=True, text=True)
    except FileNotFoundError:
        die("dpkg-query not found: chkwin needs Debian's dpkg")
    first = proc.stdout.splitlines()[0] if proc.stdout.strip() else ""
    status, _, version = first.partition(" ")
    if proc.returncode != 0 or status != "installed" or not version:
        die(f"{package} is not installed (make deps)")
    return version
