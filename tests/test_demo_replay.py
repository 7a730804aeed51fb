"""make demo RR_BOOTS=1 RR_EXACT=all, short: the first boot of each
counting condition and every exact-window boot are recorded for replay,
and no other; every failure of theirs is walked after the last round, and
the report opens with one walked failure and shows the walks as replay's
attributions.

One flavour, two boots of each condition, 10 guest seconds: the verdicts
of so small a run are not what this checks (tests/test_demo.py does).
Recorded 10-s gcc49-exact boots of the walker failed 3 to 8 times, 5.9 on
average (bench/RESULTS.md, this test); recording lets idle time follow
the host's clock (sleep=on), so the count varies with the host's load.
Two such boots both without a failure would be p < 1e-4 were they
Poisson; the test needs one."""


import pytest

from tests import boots

from analysis import walks
from analysis.documents import BootStatus

pytestmark = pytest.mark.guest

ARGS = ["--flavours", "unpatched", "--boot-seconds", "10", "--boots", "2",
        "--record-seconds", "0", "--no-controls", "--seed", "11", "--jobs", str(boots.slots()),
        "--rr-boots", "1", "--rr-exact", "all"]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return boots.demo(tmp_path_factory.mktemp("demo-rr"), ARGS)


def test_the_boots_the_flags_name_are_recorded_and_only_they(demo):
    _, top, doc = demo
    conditions = {c["name"]: c for c in doc["conditions"]}
    recorded = set()
    for b in doc["boots"]:
        c = conditions[b["condition"]]
        first = b["dir"] == f"{c['name']}-1"
        named = c["kind"] == "counting" and (first or c["window"] == "gcc49-exact")
        assert b["record_replay"] is named, b
        assert (top / b["dir"] / "replay.json").is_file() is named
        status = BootStatus.read(top / b["dir"] / "status.json")
        assert status.clock["sleep"] is named
        recorded |= {b["dir"]} if named else set()
    assert recorded == {"unpatched-gcc49-exact-1", "unpatched-gcc49-exact-2",
                        "unpatched-off-1"}


def test_every_failure_of_a_recorded_boot_is_walked_into_the_report(demo):
    proc, top, doc = demo
    recorded = [b for b in doc["boots"] if b["record_replay"] and b["failures_total"]]
    assert recorded and {b["condition"] for b in recorded} == {"unpatched-gcc49-exact"}
    walked = walks.of_boots(top, [b["dir"] for b in doc["boots"]])
    assert [boot for boot, _ in walked] == [b["dir"] for b in recorded]
    for b, (_, w) in zip(recorded, walked):
        assert w["walked"] == w["explained"] == w["in_window"] == b["failures_total"]
        assert f"demo: {b['dir']}: walk: {w['explained']} of {w['walked']}" in proc.stdout
    html = (top / "report.html").read_text()
    assert "Failures walked by replay" in html
    assert html.count("<td>replay</td>") == sum(w["walked"] for _, w in walked)
    assert "ext4_chksum_gcc49+0x74" in html
    # It opens with one walked failure, its timeline and its story.
    assert html.index("A failure walked to its cause") < html.index("<h2>Decision</h2>")
    assert (top / "walk.png").stat().st_size > 0
    assert "interrupt pc ext4_chksum_gcc49+0x74" in html and "pt_regs.x" in html
