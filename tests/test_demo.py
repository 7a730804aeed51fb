"""make demo, short: guest/lab_demo.py end to end on one flavour, on the
icount clock (its default).

A pilot of two boots (the loop at width 16, which plans the run and
enters no verdict), then counting boots of 20 walker passes (about 28
guest seconds on a quiet host, at most 180: tests/boots.py's short_demo) (unpatched gcc49-exact, the positive
control (the loop of width 1) and off, four times each, as the plan printed
before the first counting boot says, with the power the model predicts) and one recorded gcc49-exact boot of 60 s under the flight
recorder, two boots at a time.  A 30 s gcc49-exact boot of the walker
fails 12 to 18 times (tests/test_icount.py), so four boots (about 60
failures against none) decide the window; the control's W = 3 against 1
makes its boots fail about three times as often (about 180), which the
verdict must call a difference.  Sizing: the verdicts pair boots by phase
seed, which leaves 3 degrees of freedom to the dispersion here; with t on
them the control's 95% interval excludes 1 unless the estimated
dispersion exceeds 5.4, p of about 0.001 for Poisson boots (three boots
would leave 2 and fail one run in nine).  The model's ratio is checked
against a 99.9% interval of the measured one: the report's 95% interval
misses it one run in twenty by design.  The
recorded boot made 21 and 29 failures in 60 s when this was written
(none is p < 1e-8); every logged one must follow a window interrupt, and
the report must lead with the decisions and show predicted against
measured.
"""

import re
import subprocess

import pytest

from tests import boots
from common import PY, REPO

from analysis import chkwinlog
from analysis import documents
from analysis import experiment
from guest.host import kmsg
from analysis import poisson
from analysis.documents import BootStatus

# The short demo of tests/boots.py is shared with the other module of its
# group, in one process.
pytestmark = [pytest.mark.guest, pytest.mark.xdist_group("short-demo")]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return boots.short_demo(tmp_path_factory)


def test_layout_latest_and_the_record_of_the_run(demo):
    proc, results, top, doc = demo
    assert top.parent == results.resolve() and top.is_dir()
    assert (top / "report.html").stat().st_size > 0
    assert doc["seed"] == 11
    assert doc["settings"]["clock"] == "icount" and doc["settings"]["shift"] == 4
    assert doc["settings"]["loop_instructions"] == 2
    names = [b["condition"] for b in doc["boots"]]
    assert names.count("unpatched-gcc49-exact") == 4
    assert names.count("unpatched-gcc49") == 4
    assert names.count("unpatched-gcc49-exact-recorded") == 1
    assert names.count("unpatched-off") == 4
    assert doc["settings"]["plan"] == {"unpatched-gcc49-exact": 4, "unpatched-off": 4,
                                       "unpatched-gcc49": 4,
                                       "unpatched-gcc49-w16-pilot": 2,
                                       "unpatched-gcc49-exact-recorded": 1}
    kinds = {c["name"]: c["kind"] for c in doc["conditions"]}
    for b in doc["boots"]:
        status = BootStatus.read(top / b["dir"] / "status.json")
        assert status.scenario_status == 0
        # The lab's windows go only to boots whose chkwin watches them.
        assert status.lab_windows == (kinds[b["condition"]] in ("recorded", "rate"))
        assert status.checksum_calls == b["calls"] > 0
        assert status.clock["kind"] == "icount" and status.smp == 1
        assert b["interrupts"]["timer"] > 0
    # The n-th boots of every condition share a phase seed (paired), and
    # the boots of one condition each have their own.
    seeds = {}
    for b in (b for b in doc["boots"] if not b["condition"].endswith("-pilot")):
        n = int(b["dir"].rsplit("-", 1)[1])
        seeds.setdefault(n, set()).add(b["phase_seed"])
    assert all(len(s) == 1 for s in seeds.values()), seeds
    assert len({next(iter(s)) for s in seeds.values()}) == len(seeds)
    # Round 1 is the whole pilot; round 2 holds every other condition once.
    assert [b["condition"] for b in doc["boots"] if b["round"] == 1] == \
        ["unpatched-gcc49-w16-pilot"] * 2
    second = [b for b in doc["boots"] if b["round"] == 2]
    assert sorted(b["condition"] for b in second) == sorted(
        c["name"] for c in doc["conditions"] if c["kind"] != "pilot")
    assert re.search(r"^demo: round 1 \(the pilot\): 2 boots", proc.stdout, re.M)
    # No look to wait for (one flavour, no A/A): the rest is one batch.
    assert re.search(r"^demo: rounds 2-5: 13 boots", proc.stdout, re.M), proc.stdout
    assert proc.stdout.index("demo: the plan, fixed before the first counting boot: "
                             "1 boot: unpatched-gcc49-exact-recorded; 4 boots: ") \
        < proc.stdout.index("demo: rounds 2-5")


def test_the_plan_predicts_each_comparison_and_its_power(demo):
    """From the pilot's calls and interrupts the model predicts failures a
    boot of every condition; the plan says with what power the planned
    boots reach each verdict, and the control's predicted failures are
    what its boots then make (99.9% interval, the prediction's own error
    aside)."""
    proc, doc = demo[0], demo[3]
    plan = {c["what"]: c for c in doc["settings"]["plan_comparisons"]}
    assert set(plan) == {"gcc49-exact/off", "width 1/gcc49-exact"}
    control = plan["width 1/gcc49-exact"]
    assert control["boots"] == 4 and control["verdict"] == "differs"
    # Its power is simulated at the pilot's own dispersion, here from two
    # boots (1 df: anywhere from 0 to about 10 for Poisson boots, 99.8% of
    # the time); four boots of a ratio of 3 keep at least 45% up to 10.
    assert 2.7 < control["ratio"] < 3.3 and 0.4 < control["power"] <= 1
    planned = doc["settings"]["plan_dispersion"]
    assert planned["source"] == "the pilot's boots, a rate per flavour" and planned["df"] == 1
    assert planned["phi"] >= 1 and planned["conf"] == 0.50
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("demo: the plan"))
    assert re.search(r"width 1/gcc49-exact: 4 boots a condition, [\d.]+ against [\d.]+ "
                     r"failures a boot \(the model, ratio 3(\.\d+)?\), [\d.]+% power to "
                     r"find it \"differs\"", line), line
    assert "the 50% upper bound of " in line, line
    ran = [b for b in doc["boots"] if b["condition"] == "unpatched-gcc49"]
    made = sum(b["failures_total"] for b in ran)
    lo, hi = poisson.poisson_ci(made, 0.999)
    assert lo <= control["per_boot"][0] * len(ran) <= hi, (made, control)


def test_the_window_verdict_is_decided(demo):
    proc = demo[0]
    line = next(ln for ln in proc.stdout.splitlines()
                if ln.startswith("verdict: the emulated window"))
    assert "differs (gcc49-exact/off inf" in line, line


def test_the_positive_control_differs_as_predicted(demo):
    proc, doc = demo[0], demo[3]
    line = next(ln for ln in proc.stdout.splitlines()
                if ln.startswith("verdict: positive control"))
    assert ": differs (width 1/gcc49-exact" in line, line
    assert "the model predicts" in line, line
    rows = {r["condition"]: r
            for r in experiment.Results(documents.ExperimentDoc.from_json(doc)).model_rows}
    a, b = rows["unpatched-gcc49"], rows["unpatched-gcc49-exact"]
    want = (a["predicted"] / a["calls"]) / (b["predicted"] / b["calls"])
    assert 2.7 < want < 3.3, want
    _, lo, hi = poisson.rate_ratio(a["measured"], a["calls"], b["measured"], b["calls"], 0.999)
    assert lo <= want <= hi, (want, lo, hi)


def test_recorded_failures_follow_a_window_interrupt(demo):
    proc, _, top, doc = demo
    line = next(ln for ln in proc.stdout.splitlines()
                if "in the recorded gcc49-exact boots follow" in ln)
    att, logged = map(int, re.search(r"verdict: (\d+) of (\d+) checksum failures", line).groups())
    assert att == logged, line
    assert logged > 0, line
    rec = next(b for b in doc["boots"] if b["condition"] == "unpatched-gcc49-exact-recorded")
    console = (top / rec["dir"] / "console.log").read_text(errors="replace")
    # Every kind the console reports is in the log, and only those.
    assert sum(kmsg.failures(console).values()) == logged
    # Attributed to the windows stackscan found, watched by name: the log
    # has no built-in window key, and the report says whose windows.
    log = chkwinlog.read(top / rec["dir"] / "log.bin")
    assert "window" not in log.header and "window.exact" not in log.header
    names = doc["settings"]["windows"]["unpatched"]
    assert len(names) == 2 and [n for n, _, _ in log.watched()] == names
    assert "windows stackscan found in their own kernel" in (top / "report.md").read_text()


def test_report_leads_with_the_decision(demo):
    top = demo[2]
    md = (top / "report.md").read_text()
    assert md.index("## Decision") < md.index("## Conditions") \
        < md.index("## Predicted against measured") < md.index("## Log 1")
    assert "A/A test" in md and "dispersion" in md
    assert str(top) not in md


def test_report_rebuilds_offline(demo, tmp_path):
    top = demo[2]
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-r", str(top), str(copy)], check=True)
    proc = subprocess.run([PY, str(REPO / "analysis/chkwin-analyze"), "report",
                           str(copy)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (copy / "report.html").stat().st_size > 0
