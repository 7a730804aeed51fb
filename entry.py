#!/usr/bin/python3
"""The command-line entry points: guest/run.py, analysis/chkwin-analyze and
the other commands are symbolic links to this file.  Python puts the
directory of a script, symbolic links resolved, first on the module path,
so every command runs with the repository's top on it and imports the
packages (analysis, guest.host, common, bench, tests) by their names; this
file calls main() of the module the command's path names (its exit status
is main()'s return value).

The commands stay one path each rather than subcommands of a single
chkwin-lab: the README, the Makefile, the Slurm job scripts and the docs
call them by those paths, and a command's name is what its usage and its
one-line errors begin with.  One link per command costs only this table,
and a new command is a link and a line in it."""

import importlib
import os
import sys

from common.errors import OneLineError, die

ENTRY_POINTS = {
    "analysis/chkwin-analyze": "analysis.cli",
    "analysis/stackscan/build.py": "analysis.stackscan.builder",
    "guest/boottask.py": "guest.host.boottask",
    "guest/initramfs.py": "guest.host.initramfs",
    "guest/kbuild.py": "guest.host.kbuild",
    "guest/kernelwindows.py": "guest.host.kernelwindows",
    "guest/lab_demo.py": "guest.host.lab_demo",
    "guest/lab_windows.py": "guest.host.lab_windows",
    "guest/loaderbuild.py": "guest.host.loaderbuild",
    "guest/prepare.py": "guest.host.prepare",
    "guest/replay.py": "guest.host.replay",
    "guest/rootfs.py": "guest.host.rootfs",
    "guest/run.py": "guest.host.run",
    "guest/slurm_local.py": "guest.host.slurmlocal",
    "guest/stockkernel.py": "guest.host.stockkernel",
    "guest/stocksymbols.py": "guest.host.stocksymbols",
    "guest/testdisk.py": "guest.host.testdisk",
    "guest/toolsdisk.py": "guest.host.toolsdisk",
}


def main():
    top = os.path.dirname(os.path.realpath(__file__))
    # The link's own directory, resolved, and its name: the command.
    invoked = os.path.join(os.path.realpath(os.path.dirname(sys.argv[0])),
                           os.path.basename(sys.argv[0]))
    command = os.path.relpath(invoked, top)
    module = ENTRY_POINTS.get(command)
    if module is None:
        sys.exit(f"entry.py: error: {command!r} is not a chkwin command "
                 f"(one of {', '.join(ENTRY_POINTS)})")
    try:
        sys.exit(importlib.import_module(module).main())
    except OneLineError as e:
        die(str(e))


if __name__ == "__main__":
    main()
