#!/usr/bin/python3
"""Build stackscan (analysis/stackscan, C with capstone) into the cache.

The binary goes to $CHKWIN_CACHE/stackscan/<key>/stackscan, the key
covering this directory's sources, the loader's JSON string writer it
shares, and the compiler's and capstone's versions, so an unchanged tree
is a cache hit.

    /usr/bin/python3 analysis/stackscan/build.py [--print-path]
"""

import pathlib

from common import REPO
from common.cache import builder_main, Key, cache_root, cached
from common.debian import installed_version
from common.errors import die, run_or_die
from common.progress import tool_output

HERE = pathlib.Path(__file__).resolve().parent
# Sources from elsewhere that the Makefile compiles in (its SHARED).
SHARED = [REPO / "loader" / name for name in ("jsonstr.c", "jsonstr.h")]


def build():
    """Return the path of the binary, building on a cache miss."""
    key = Key("stackscan")
    key.add("gcc", run_or_die(["gcc", "--version"], "gcc --version").stdout)
    key.add("capstone", installed_version("libcapstone-dev"))
    for path in sorted(p for p in HERE.iterdir()
                       if p.suffix in (".c", ".h") or p.name == "Makefile"):
        key.add("path:" + path.name, path.read_bytes())
    for path in SHARED:
        key.add("shared:" + path.name, path.read_bytes())

    def make_stackscan(tmp):
        tmp.mkdir()
        run_or_die(["make", "-s", "-C", str(HERE), f"OUT={tmp}"],
                   "building stackscan (make -C analysis/stackscan)",
                   stdout=tool_output())
        if not (tmp / "stackscan").is_file():
            die("make -C analysis/stackscan produced no stackscan")

    outdir, _ = cached(cache_root() / "stackscan" / key.hexdigest(),
                       make_stackscan, "stackscan",
                       ready=lambda d: (d / "stackscan").is_file())
    return outdir / "stackscan"


def main():
    builder_main(build, __doc__, "--print-path", "the binary's path")


if __name__ == "__main__":
    main()
