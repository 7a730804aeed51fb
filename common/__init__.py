"""What the lab (guest/host), the analysis, the benchmarks and the tests
share, imported by name from the repository's top."""

import pathlib

# This package sits at the top.
REPO = pathlib.Path(__file__).resolve().parent.parent
# Debian's python3, the one that sees numpy, scipy and pytest: every
# command and child process runs under it.
PY = "/usr/bin/python3"
