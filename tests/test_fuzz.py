"""Both log readers against a seeded mutation fuzzer (tests/fuzzlog.py):
no traceback, crash or time-out, memory bounded (2 GiB address space),
and the C and Python readers agree on every variant: status, offset and
record count."""

import json
import subprocess

from common import PY, REPO

COUNT = 2500


def test_fuzzed_logs_never_crash_and_both_readers_agree():
    proc = subprocess.run([PY, "-m", "tests.fuzzlog", "--count", str(COUNT),
                           "--seed", "11", "--report-every", "60"],
                          capture_output=True, text=True, timeout=900, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout)
    assert found["variants"] == COUNT
    assert found["python_failures"] == []
    assert found["c_failures"] == []
    assert found["disagreements"] == []
    # The corpus reaches every verdict, and the full report ran on some.
    assert all(found["statuses"].get(s, 0) > 20 for s in ("complete", "truncated", "corrupt"))
    assert found["reports"] >= 5
