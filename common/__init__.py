"""What the lab (guest/host), the analysis, the benchmarks and the tests
share, imported by name from the repository's top: REPO and PY here; the
one-line error and running a tool (common.errors), progress lines on
stderr (common.progress) and the build cache (common.cache)."""

import pathlib

# This package sits at the top.
REPO = pathlib.Path(__file__).resolve().parent.parent
# Debian's python3, the one that sees numpy, scipy and pytest: every
# command and child process runs under it.
PY = "/usr/bin/python3"
