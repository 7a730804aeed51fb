"""make demo, short: guest/lab_demo.py end to end on one flavour.

Counting boots of 30 s (unpatched gcc49 three times, off until it has
made as many checksum calls) and one recorded gcc49 boot of 60 s with the
20 kHz sampler.  Untraced gcc49 boots gave 14 to 57 failures in 30 s, and
the window verdict divides them by the spread between the boots: three
boots (about 90 failures against none) decide it even at a dispersion of
14, which 14, 57 and 30 would give; two boots would not.  The recorded
boot runs the flight recorder, the demo's default (one such 60 s boot
gave 10 failures, one under `-R all` 3); the test asks that every logged
one follows a window interrupt, and that the report leads with the
decisions.
"""

import json
import re
import subprocess
import sys

import pytest

from kernels import PY, REPO

sys.path.insert(0, str(REPO / "guest"))
import kmsg  # noqa: E402

ARGS = ["--flavours", "unpatched", "--boot-seconds", "30", "--min-boots", "3",
        "--max-boots", "3", "--record-seconds", "60", "--no-controls", "--seed", "11"]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    results = tmp_path_factory.mktemp("demo-results")
    proc = subprocess.run([PY, str(REPO / "guest/lab_demo.py"), *ARGS,
                           "--results", str(results)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    top = (results / "latest").resolve()
    return proc, results, top, json.loads((top / "experiment.json").read_text())


def test_layout_latest_and_the_record_of_the_run(demo):
    proc, results, top, doc = demo
    assert top.parent == results.resolve() and top.is_dir()
    assert (top / "report.html").stat().st_size > 0
    assert doc["seed"] == 11
    names = [b["condition"] for b in doc["boots"]]
    assert names.count("unpatched-gcc49") == 3
    assert names.count("unpatched-gcc49-recorded") == 1
    assert names.count("unpatched-off") >= 1
    for b in doc["boots"]:
        status = json.loads((top / b["dir"] / "status.json").read_text())
        assert status["scenario_status"] == 0
        assert status["checksum_calls"] == b["calls"] > 0
    # Round 1 holds every condition once, in the seeded order.
    first = [b for b in doc["boots"] if b["round"] == 1]
    assert sorted(b["condition"] for b in first) == sorted(
        c["name"] for c in doc["conditions"])
    assert re.search(r"^demo: round 1: 3 boots", proc.stdout, re.M), proc.stdout


def test_the_window_verdict_is_decided(demo):
    proc = demo[0]
    line = next(ln for ln in proc.stdout.splitlines()
                if ln.startswith("verdict: the emulated window"))
    assert "differs (gcc49/off inf" in line, line


def test_recorded_failures_follow_a_window_interrupt(demo):
    proc, _, top, doc = demo
    line = next(ln for ln in proc.stdout.splitlines()
                if "in the recorded gcc49 boots follow" in ln)
    att, logged = map(int, re.search(r"verdict: (\d+) of (\d+) checksum failures", line).groups())
    assert att == logged, line
    rec = next(b for b in doc["boots"] if b["condition"] == "unpatched-gcc49-recorded")
    console = (top / rec["dir"] / "console.log").read_text(errors="replace")
    # Every kind the console reports is in the log, and only those.
    assert sum(kmsg.failures(console).values()) == logged


def test_report_leads_with_the_decision(demo):
    top = demo[2]
    md = (top / "report.md").read_text()
    assert md.index("## Decision") < md.index("## Conditions") < md.index("## Log 1")
    assert "TSO" in md
    assert str(top) not in md


def test_report_rebuilds_offline(demo, tmp_path):
    top = demo[2]
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-r", str(top), str(copy)], check=True)
    proc = subprocess.run([PY, str(REPO / "analysis/chkwin-analyze"), "report",
                           str(copy)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (copy / "report.html").stat().st_size > 0


def test_bad_flags_are_one_line_errors(tmp_path):
    for bad in (["--flavours", "nosuch"], ["--precision", "2"], ["--widths", "0"]):
        proc = subprocess.run([PY, str(REPO / "guest/lab_demo.py"), *bad,
                               "--results", str(tmp_path)], capture_output=True, text=True)
        assert proc.returncode == 2, bad
        assert proc.stderr.strip().splitlines()[-1].startswith("usage:") is False
        assert "error:" in proc.stderr.strip().splitlines()[-1]
