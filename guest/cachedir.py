"""Where chkwin keeps big build products, and how their cache keys are made.

Everything large (kernel trees, kernels, initramfs, disk images) lives under
one directory outside the repository, ~/.cache/chkwin unless CHKWIN_CACHE
says otherwise.  Each product sits in a directory named by a hash of its
inputs, so unchanged inputs find the old product and changed ones miss.
"""

import hashlib
import os
import pathlib
import subprocess
import sys


def cache_root():
    """The cache directory, created on first use."""
    root = os.environ.get("CHKWIN_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "chkwin")
    path = pathlib.Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


class Key:
    """Accumulates named inputs into a short, stable hex digest."""

    def __init__(self, kind):
        self._h = hashlib.sha256()
        self.add("kind", kind)

    def add(self, name, value):
        if isinstance(value, str):
            value = value.encode()
        self._h.update(name.encode() + b"\0" + str(len(value)).encode()
                       + b"\0" + value)
        return self

    def add_file(self, path):
        path = pathlib.Path(path)
        return self.add("file:" + path.name, path.read_bytes())

    def hexdigest(self):
        return self._h.hexdigest()[:16]


def die(msg):
    """One line on stderr, exit status 1: the project's error convention."""
    print(f"{pathlib.Path(sys.argv[0]).name}: error: {msg}", file=sys.stderr)
    sys.exit(1)


def run_or_die(cmd, what, **kw):
    """Run cmd in text mode; if it cannot start or fails, die naming what
    failed and its last line of output.  stdout is captured unless the
    caller redirects it; the CompletedProcess is returned."""
    kw.setdefault("stdout", subprocess.PIPE)
    try:
        proc = subprocess.run(cmd, stderr=subprocess.PIPE, text=True, **kw)
    except FileNotFoundError:
        die(f"{what}: {cmd[0]} not found")
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout or "").strip().splitlines()
        die(f"{what} failed (exit {proc.returncode}): "
            f"{lines[-1] if lines else 'no message'}")
    return proc
