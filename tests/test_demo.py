"""make demo, short: guest/lab_demo.py end to end on two cells.

unpatched-gcc49 for 240 s (the record scenario with the 20 kHz sampler
gives about 3 failures per 120 s, so about 6 expected and a run without
one is p ~ 0.0025) and unpatched-off for 120 s (none expected: no window).
The report must say so in its tables: every gcc49 failure follows a window
interrupt, the off cell has none; report.html exists and results/latest
points at the run.
"""

import json
import re
import subprocess

import pytest

from kernels import PY, REPO

CELLS = "unpatched-gcc49:240,unpatched-off:120"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    results = tmp_path_factory.mktemp("demo-results")
    proc = subprocess.run([PY, str(REPO / "guest/lab_demo.py"), "--cells", CELLS,
                           "--results", str(results)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    latest = results / "latest"
    return proc, results, latest.resolve()


def comparison(top):
    """The comparison table of report.md: {cell: {column: value}}."""
    md = (top / "report.md").read_text()
    section = md.split("## Comparison", 1)[1].split("\n## ", 1)[0]
    lines = [ln for ln in section.splitlines() if ln.startswith("|")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = {}
    for ln in lines[2:]:
        row = dict(zip(head, (c.strip() for c in ln.strip("|").split("|"))))
        rows[row["log"].split("/")[-2]] = row
    return rows


def failure_table(top, cell):
    """Rows of the Failures table in the cell's section of report.md."""
    md = (top / "report.md").read_text()
    section = re.search(rf"^## Log \d+: \S*/{cell}/log\.bin.*?(?=^## |\Z)", md,
                        re.M | re.S).group(0)
    table = section.split("### Failures", 1)[1]
    lines = [ln for ln in table.splitlines() if ln.startswith("|")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    return [dict(zip(head, (c.strip() for c in ln.strip("|").split("|"))))
            for ln in lines[2:]]


def test_layout_and_latest(demo):
    proc, results, top = demo
    assert top.parent == results.resolve() and top.is_dir()
    assert (top / "report.html").stat().st_size > 0
    assert f"report: {top / 'report.html'}" in proc.stdout.replace(
        str(results), str(results.resolve()))
    assert re.search(r"^verdict: .+", proc.stdout, re.M), proc.stdout
    for cell in ("unpatched-gcc49", "unpatched-off"):
        for name in ("console.log", "log.bin", "cmdline.txt", "status.json"):
            assert (top / cell / name).stat().st_size > 0, (cell, name)
        status = json.loads((top / cell / "status.json").read_text())
        assert status["scenario"] == "record" and status["scenario_status"] == 0
    # Progress: one line per cell with the time left.
    assert len(re.findall(r"^demo: \[\d/2\] .* left$", proc.stdout, re.M)) == 2


def test_gcc49_failures_all_follow_a_window_interrupt(demo):
    top = demo[2]
    row = comparison(top)["unpatched-gcc49"]
    assert row["window"] == "gcc49"
    fails = int(row["failures"])
    assert fails >= 1, row
    assert row["after window irq"] == f"{fails}/{fails}", row
    failures = failure_table(top, "unpatched-gcc49")
    assert len(failures) == fails
    for f in failures:
        assert f["window arrivals"] != "none", f
    console = (top / "unpatched-gcc49" / "console.log").read_text(errors="replace")
    assert console.count("iget: checksum invalid") == fails


def test_off_cell_has_none(demo):
    top = demo[2]
    row = comparison(top)["unpatched-off"]
    assert row["window"] == "off" and row["failures"] == "0", row
    assert failure_table(top, "unpatched-off") == []


def test_report_rebuilds_offline(demo, tmp_path):
    top = demo[2]
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-r", str(top), str(copy)], check=True)
    proc = subprocess.run([PY, str(REPO / "analysis/chkwin-analyze"), "report",
                           str(copy)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (copy / "report.html").stat().st_size > 0
