"""The verdicts' guarantee (analysis/guarantee.py): a verdict whose run the
calibration found outside it says so, with what the calibration measured
there; the control's check against the model and the forest plot rest on
the intervals without a flagged boot.  Host only."""

import dataclasses
import json

import numpy as np
import pytest

from analysis import calibration
from analysis import documents
from analysis import figures
from analysis import guarantee
from analysis import report
from analysis import verdict
from analysis.comparisons import against_model
from analysis.experiment import Results


def scenario(name, dispersion, aberrant, outside, covered=(0.8, 0.9)):
    return {"scenario": name, "what": f"{name}'s draw", "dispersion": dispersion,
            "aberrant": aberrant, "outside": outside,
            "covered": {"90": covered[0], "95": covered[1]}}


# As the calibration found it at the time of writing: every dispersion
# without an aberrant boot inside, with one only at dispersion 1.
CALIBRATED = guarantee.record(
    [scenario("poisson", 1, False, False), scenario("nb-3", 3, False, False),
     scenario("nb-5", 5, False, False), scenario("growing", None, False, False),
     scenario("aberrant-1", 1, True, False), scenario("aberrant-3", 3, True, True, (0.78, 0.88)),
     scenario("aberrant-5", 5, True, True, (0.70, 0.85))],
    "python3 -m bench.calibration_bench --sims 300", "abc1234")


def a_verdict(phi, flagged=False):
    """A verdict at dispersion phi, with one flagged boot if asked (and the
    verdict without it at the same dispersion)."""
    v = verdict.compare([(40, 1_000_000)] * 6, [(41, 1_000_000)] * 6, 0.10)
    v = dataclasses.replace(v, phi=phi)
    if not flagged:
        return v
    return dataclasses.replace(v, flagged=({"boot": "b-3"},), without=v)


@pytest.mark.parametrize("phi, flagged, says", [
    (1.0, False, None), (4.0, False, None), (5.5, False, None),
    (8.0, False, "beyond the calibrated runs (up to 5)"),
    (1.0, True, None), (1.5, True, None),
    (2.0, True, "aberrant-3"), (3.5, True, "aberrant-3"), (4.5, True, "aberrant-5"),
    (9.0, True, "beyond the calibrated runs (up to 5)")])
def test_a_run_is_placed_at_its_nearest_calibrated_dispersion(phi, flagged, says):
    got = guarantee.outside(a_verdict(phi, flagged), CALIBRATED)
    if says is None:
        assert got is None, got
        return
    assert got.startswith("outside the verdict's guarantee") and says in got, got
    assert "`python3 -m bench.calibration_bench --sims 300` at abc1234" in got, got
    if "aberrant-3" in says:
        assert "the intervals without it covered as little as 78.0% for 90% and 88.0% for 95%" \
            in got, got


def test_without_a_calibration_nothing_is_claimed():
    assert guarantee.outside(a_verdict(9.0, True), None) is None


def test_the_committed_calibration_is_whole():
    """guarantee.json as calibration_bench wrote it: every scenario, each
    outside one with the coverage it is quoted by, and the command and
    commit that measured it."""
    got = guarantee.load()
    assert got and {s["scenario"] for s in got["scenarios"]} == set(calibration.SCENARIOS)
    assert got["command"].startswith("python3 -m bench.calibration_bench") and got["commit"]
    for s in got["scenarios"]:
        assert s["dispersion"] == calibration.DISPERSION.get(s["scenario"])
        assert all(0 < s["covered"][level] <= 1 for level in ("90", "95")), s
        if s["outside"]:
            assert s["covered"]["90"] < 0.9 or s["covered"]["95"] < 0.95, s


def test_an_aberrant_boot_at_high_dispersion_is_said_to_be_outside(tmp_path):
    """A demo built as the demo builds it at dispersion 5 with its third
    unpatched A/A boot at four times its mean: where the verdict flags a
    boot and its dispersion places it where the committed calibration
    found the intervals short, the verdict line, verdicts.json and the
    forest plot's label say it is outside the guarantee."""
    for seed in range(20):
        demo = calibration.Demo("aberrant-5", 1.0, np.random.default_rng(seed))
        demo.run(aberrant=(0, 3))
        res = Results(demo.doc)
        aa = next(c for c in res.comparisons if c["key"] == "flavour")
        if aa["verdict"].flagged and aa["verdict"].outside:
            break
    else:
        pytest.fail("no seed of 20 gave a flagged A/A boot outside the guarantee")
    (tmp_path / "experiment.json").write_text(json.dumps(demo.doc.to_json()))
    lines = dict(report.write_experiment(tmp_path, documents.load(tmp_path)))
    assert "outside the verdict's guarantee: dispersion" in lines["flavour"], lines["flavour"]
    got = json.loads((tmp_path / "verdicts.json").read_text())
    row = next(c for c in got["comparisons"] if c["key"] == "flavour")
    assert row["flagged"] and row["outside_guarantee"].startswith("outside the verdict's")
    assert (tmp_path / "comparisons.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "boots.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_figures_draw_the_flagged_boot(tmp_path):
    """The forest plot's row of a comparison with a flagged boot is labelled
    with the intervals without it and names it, and the per-boot figure
    marks that boot and no other; a record without failures draws no
    per-boot figure."""
    demo = calibration.Demo("poisson", 1.10, np.random.default_rng(177))
    demo.run(aberrant=(0, 3))
    res = Results(demo.doc)
    labels = figures.forest(res.comparisons, 0.10, tmp_path / "forest.png")
    aa = next(c for c in res.comparisons if c["key"] == "flavour")
    shown = aa["verdict"].without
    row = next(label for label in labels if label.startswith(aa["label"]))
    assert "without unpatched-gcc49-w16-3 (dotted: with)" in row, row
    assert f"{shown.ratio:.3g}, 90% CI {shown.ci90[0]:.3g}-" in row, row
    assert figures.per_boot(res, tmp_path / "boots.png") == ["unpatched-gcc49-w16-3"]
    for path in ("forest.png", "boots.png"):
        assert (tmp_path / path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for b in demo.doc.boots:
        b.failures_total = 0
    assert figures.per_boot(Results(demo.doc), tmp_path / "none.png") is None
    assert not (tmp_path / "none.png").exists()


def test_the_controls_model_check_holds_only_both_ways():
    """Measured / predicted agrees on every boot but not without the flagged
    one: the check says undecided and keeps both."""
    near = verdict.compare([(300, 1_000_000)] * 8, [(100, 1_000_000)] * 8, 0.10)
    far = verdict.compare([(360, 1_000_000)] * 8, [(100, 1_000_000)] * 8, 0.10)
    assert against_model(near, 3.0)["kind"] == "agrees"
    assert against_model(far, 3.0)["kind"] == "differs"
    both = dataclasses.replace(near, flagged=({"boot": "b-1"},), without=far)
    got = against_model(both, 3.0)
    assert got["kind"] == "undecided" and got["without"]["kind"] == "differs", got
    assert not got["within_margin"]
