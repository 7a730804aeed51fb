"""Where chkwin keeps big build products, and how their cache keys are made.

Everything large (kernel trees, kernels, initramfs, disk images) lives under
one directory outside the repository, ~/.cache/chkwin unless CHKWIN_CACHE
says otherwise.  Each product sits in a file or directory named by a hash
of its inputs, so unchanged inputs find the old product and changed ones
miss.  cached() is the one way a product gets there: locked, built aside,
renamed into place.  A builder's command line prints where its product
is; another command calls the builder's function for it, quietly().
"""

import argparse
import contextlib
import fcntl
import hashlib
import lzma
import os
import pathlib
import shutil

from common.errors import OneLineError, die
from common.progress import heartbeat, log, quiet


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


def builder_main(build, doc, option, what):
    """The command line of a builder that takes no settings: build (a hit
    costs a hash of the inputs) and, with option, print the product's
    path, which is all its stdout carries."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument(option, action="store_true",
                    help=f"print {what} on stdout (built first on a cache miss)")
    args = ap.parse_args()
    path = build()
    if getattr(args, option.lstrip("-").replace("-", "_")):
        print(path)


@contextlib.contextmanager
def one_line():
    """For a command that calls builders in the block: what one raises on
    bad ground (a cache it cannot write, a tool that is missing, a damaged
    file it left in its tree) is one line, as every other failure of
    theirs is."""
    try:
        yield
    except (OSError, OneLineError) as e:
        die(str(e))
    except (ValueError, lzma.LZMAError) as e:
        die(f"{type(e).__name__}: {e}")


@contextlib.contextmanager
def quietly():
    """one_line(), and the builders' progress and cache lines held back
    (the command reports its own outcome; each builder's own command shows
    them)."""
    with quiet(), one_line():
        yield


@contextlib.contextmanager
def locked(path, what):
    """Hold an exclusive flock on path for the block.  Another process that
    holds it is building the same thing: say so, then wait for it."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(what, f"waiting for another build to finish ({path})")
            with heartbeat(what, lambda: f"still waiting for the other build ({path})"):
                fcntl.flock(f, fcntl.LOCK_EX)
        yield


def _remove(path):
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def cached(entry, make, what, ready=None, lock=None):
    """Return (entry, "hit" or "built"): the cache entry at path `entry` (a
    file or a directory), made by make(tmp) on a miss.

    make(tmp) must create tmp, a fresh path beside entry, as the entry's
    whole content; it is renamed into place only when make returns, so a
    failed or killed build is never a hit.  ready(entry) says whether the
    entry is complete (default: it exists).  The build holds an exclusive
    lock (lock, default entry's own lock file) from the second check to
    the rename: a concurrent request for the same entry waits, then hits.
    A lock shared by several entries (a kernel tree that every key of a
    flavour builds in) is passed as lock."""
    entry = pathlib.Path(entry)
    ready = ready or (lambda p: p.exists())
    if ready(entry):
        log(what, f"cache hit {entry}")
        return entry, "hit"
    entry.parent.mkdir(parents=True, exist_ok=True)
    with locked(lock or entry.parent / f".{entry.name}.lock", what):
        if ready(entry):
            log(what, f"cache hit {entry} (built meanwhile by another process)")
            return entry, "hit"
        tmp = entry.parent / f".tmp-{entry.name}-{os.getpid()}"
        _remove(tmp)
        try:
            make(tmp)
            if not tmp.exists():
                die(f"the build of {entry.name} produced nothing")
            _remove(entry)
            os.replace(tmp, entry)
        except BaseException:
            _remove(tmp)
            raise
    log(what, f"built {entry}")
    return entry, "built"
