"""The experiment's analysis on a synthetic experiment.json (host only)."""

import json
import subprocess

import pytest

from common import PY, REPO

from analysis import decisions
from analysis import documents
from analysis import experiment
from analysis import planning
from analysis import prose
from analysis import report
from analysis.experiment import Results

M = 1_000_000


def cond(name, flavour, window, kind, width=1, singlestep=False):
    return {"name": name, "flavour": flavour, "window": window, "width": width,
            "singlestep": singlestep, "kind": kind}


def boot(name, n, failures, calls, rnd, slot=1, kernel=None):
    flavour = name.split("-")[0]
    return {"condition": name, "round": rnd, "slot": slot, "dir": f"{name}-{n}",
            "guest_seconds": 30, "wall_seconds": 40.0, "calls": calls,
            "failures": {"inode": failures}, "failures_total": failures,
            "kernel": kernel or f"{flavour}-0123456789abcdef"}


def doc(boots, conditions, **settings):
    s = {"boot_seconds": 30, "record_seconds": 0, "boots": 2, "plan": None,
         "margin": 0.25, "budget_minutes": 14, "dose_boots": 2,
         "smp": 2, "mem": 1024, "sample_hz": 0, "workload": "inode-load"}
    s.update(settings)
    return documents.ExperimentDoc.from_json({"version": documents.VERSION, "seed": 7,
                                              "conditions": conditions, "boots": boots,
                                              "settings": s})


CONDS = [cond("unpatched-gcc49", "unpatched", "gcc49", "counting"),
         cond("unpatched-off", "unpatched", "off", "counting"),
         cond("patched-gcc49", "patched", "gcc49", "counting"),
         cond("patched-off", "patched", "off", "counting")]


def balanced(per_boot_u, per_boot_p):
    boots = []
    for i, (u, p) in enumerate(zip(per_boot_u, per_boot_p), 1):
        boots += [boot("unpatched-gcc49", i, u, M, i), boot("patched-gcc49", i, p, M, i, 2)]
    boots += [boot("unpatched-off", 1, 0, 3 * M, 1, 3), boot("patched-off", 1, 0, 3 * M, 1, 4)]
    return boots


def test_window_differs_and_flavour_is_undecided_on_few_failures():
    d = doc(balanced([5, 3, 4, 6], [4, 6, 5, 3]), CONDS)
    lines = dict(decisions.verdicts(Results(d)))
    assert "differs (gcc49/off inf" in lines["window"]
    assert "undecided: " in lines["flavour"]
    assert "more boots a condition" in lines["flavour"] and "80% power" in lines["flavour"]


def test_flavour_equivalent_with_many_failures():
    d = doc(balanced([300, 310, 305, 298], [302, 296, 309, 301]), CONDS)
    lines = dict(decisions.verdicts(Results(d)))
    assert "equivalent within +-25%" in lines["flavour"], lines["flavour"]


def test_conditions_keep_the_experiment_order_and_pool_boots():
    d = doc(balanced([25, 8, 30], [14, 15, 18]), CONDS)
    rows = Results(d).condition_rows
    assert [r["condition"] for r in rows] == [c["name"] for c in CONDS]
    u = rows[0]
    assert u["failures"] == 63 and u["calls"] == 3 * M and u["boots"] == 3
    # Each condition's interval carries its own spread about its rate:
    # unpatched's 25, 8, 30 wide, patched's steady 14, 15, 18 floored at
    # Poisson.  The pooled one (rounds as blocks: 6 boots with failures, 2
    # condition terms and 2 for rounds 2 and 3 leave 2 df) lies between.
    own = Results(d).condition_spreads
    assert u["phi"] == own["unpatched-gcc49"].phi > 5
    assert own["patched-gcc49"].phi < 1 and rows[2]["phi"] == 1.0
    fit = Results(d).spread
    assert fit.df == 2 and 2 < fit.phi < 5
    assert u["ci"][0] < u["per_million"] < u["ci"][1]


def test_dose_fit_has_an_intercept_and_a_trend_test():
    conds = CONDS + [cond(f"unpatched-gcc49-w{w}", "unpatched", "gcc49", "dose", w)
                     for w in (2, 4, 8)]
    boots = balanced([10, 10], [10, 10])
    for w in (2, 4, 8):
        boots += [boot(f"unpatched-gcc49-w{w}", i, 10 * w, M, i) for i in (1, 2)]
    d = doc(boots, conds)
    dose = Results(d).dose("width")
    assert [p["x"] for p in dose["points"]] == [1, 2, 4, 8]
    assert abs(dose["slope"] - 10) < 1e-6 and abs(dose["intercept"]) < 1e-6
    assert dose["slope_ci"][0] > 0 and dose["r2"] > 0.99 and dose["df"] == 2
    lines = dict(decisions.verdicts(Results(d)))
    assert lines["dose"].startswith("failures per 1M calls rises with the window width")
    assert "t on 2 df" in lines["dose"]
    # The non-monotone widths of 117cf08 (14.1, 6.44, 3.96, 41.4, 73.8 per
    # million at 1-16): the intercept takes what a line through 0 forced
    # into the slope, and the trend must stand on the scatter.
    flat = balanced([14, 14], [10, 10])
    for w, k in ((2, 6), (4, 4), (8, 41)):
        flat += [boot(f"unpatched-gcc49-w{w}", i, k, M, i) for i in (1, 2)]
    fit = Results(doc(flat, conds)).dose("width")
    assert fit["intercept"] > 0 and fit["scale"] > 1
    assert fit["slope_ci"][0] < 0 < fit["slope_ci"][1]
    line = dict(decisions.verdicts(Results(doc(flat, conds))))["dose"]
    assert line.startswith("failures per 1M calls shows no decided trend against the window")
    # Each point with its own dispersion: a width whose boots spread widely
    # gets the wider interval, and less weight, than a steady one.
    wide = balanced([10, 10], [10, 10])
    for w, ks in ((2, (20, 21, 19)), (4, (10, 70, 40)), (8, (80, 81, 79))):
        wide += [boot(f"unpatched-gcc49-w{w}", i, k, M, i) for i, k in enumerate(ks, 1)]
    points = {p["x"]: p for p in Results(doc(wide, conds)).dose("width")["points"]}
    assert points[4]["phi"] > 10 and points[2]["phi"] == 1
    assert points[4]["ci"][1] - points[4]["ci"][0] > 3 * (points[8]["ci"][1] - points[8]["ci"][0])


def test_rate_dose_uses_the_measured_arrival_rate():
    """Rate conditions: x is the boots' measured arrivals per second (in
    thousands), weighted by guest seconds, not the sampler setting."""
    conds = CONDS[:2]
    boots = [b for b in balanced([10, 10], [10, 10]) if b["condition"] == "unpatched-gcc49"]
    for hz, per_s in ((0, 2000), (10000, 12000), (40000, 42000)):
        name = f"unpatched-gcc49-F{hz}"
        conds.append(dict(cond(name, "unpatched", "gcc49", "rate"), sample_hz=hz))
        for i, jitter in ((1, -100), (2, 100)):
            b = boot(name, i, per_s // 1000 * 3, M, i)
            b["arrivals_per_s"] = per_s + jitter
            boots.append(b)
    d = doc(boots, conds)
    fit = Results(d).dose("rate")
    assert [p["x"] for p in fit["points"]] == [2, 12, 42]
    assert abs(fit["slope"] - 3) < 1e-6 and fit["r2"] > 0.99
    assert Results(d).dose("width") is None
    lines = dict(decisions.verdicts(Results(d)))
    assert lines["rate-dose"].startswith(
        "failures per 1M calls rises with the interrupt rate: slope 3 per 1000 arrivals/s")


def test_report_leads_with_the_decision_and_escapes(tmp_path):
    d = doc(balanced([5, 3, 4, 6], [4, 6, 5, 3]), CONDS)
    d.boots[0].dir = "<script>x</script>[a](javascript:1)"
    (tmp_path / "experiment.json").write_text(json.dumps(d.to_json()))
    proc = subprocess.run([PY, str(REPO / "analysis/chkwin-analyze"), "report",
                           str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "verdict: the emulated window and the failures: differs" in proc.stdout
    md = (tmp_path / "report.md").read_text()
    assert md.index("## Decision") < md.index("## Conditions") < md.index("## Boots")
    assert "cannot show" in md and "A/A test" in md
    # The brackets are escaped, so no link can form.
    assert "<script>" not in md and "[a](javascript" not in md
    assert r"\[a\](javascript" in md
    html = (tmp_path / "report.html").read_text()
    assert "<script>" not in html
    assert str(tmp_path) not in md
    # In-process (as the demo asks for it): the same page and the verdicts
    # the command printed, as objects.
    found = report.write_experiment(tmp_path, d)
    assert (tmp_path / "report.md").read_text() == md
    assert [f"verdict: {v.text}" for v in found] == \
        [ln for ln in proc.stdout.splitlines() if ln.startswith("verdict: ")]
    assert [v.key for v in found] == ["window", "flavour", "dispersion"]


def test_a_damaged_experiment_record_is_one_line(tmp_path):
    (tmp_path / "experiment.json").write_text('{"seed": 1, "conditions": [')
    proc = subprocess.run([PY, str(REPO / "analysis/chkwin-analyze"), "report",
                           str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode != 0
    assert proc.stderr.count("\n") == 1 and "not an experiment record" in proc.stderr


def test_a_record_reads_back_as_it_was_written():
    """to_json and from_json of every record in experiment.json agree; a
    key of one kind of record (a rate condition's sampler, a rate boot's
    arrivals) is left out of the others'."""
    rate = dict(cond("unpatched-gcc49-F0", "unpatched", "gcc49", "rate"), sample_hz=0)
    b = boot(rate["name"], 1, 3, M, 1)
    b["arrivals_per_s"] = 2000.0
    lost = {"condition": "patched-off", "dir": "patched-off-2", "round": 2, "slot": 4,
            "phase_seed": None, "attempts": 3, "reason": "CANCELLED"}
    d = doc(balanced([5, 3], [4, 6]) + [b], CONDS + [rate], plan={"patched-off": 2})
    d.missing = [documents.Missing.from_json(lost)]
    text = d.to_json()
    assert list(text) == ["version", "seed", "conditions", "boots", "missing", "settings"]
    assert documents.ExperimentDoc.from_json(json.loads(json.dumps(text))) == d
    assert [("sample_hz" in c) for c in text["conditions"]] == [False] * 4 + [True]
    assert [("arrivals_per_s" in x) for x in text["boots"]] == [False] * 6 + [True]
    assert text["missing"] == [lost]


def test_a_record_of_another_version_is_one_line(tmp_path):
    """experiment.json carries its version: a record of another is refused
    in one line that says which; one without (written before records had
    one, in version 1's layout) is read as version 1."""
    d = doc(balanced([5, 3], [4, 6]), CONDS).to_json()
    (tmp_path / "experiment.json").write_text(json.dumps(dict(d, version=2)))
    proc = subprocess.run([PY, str(REPO / "analysis/chkwin-analyze"), "report",
                           str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert "a record of version 2" in proc.stderr and "reads version 1" in proc.stderr
    unversioned = {k: v for k, v in d.items() if k != "version"}
    assert documents.ExperimentDoc.from_json(unversioned) == documents.ExperimentDoc.from_json(d)


def test_pool_adds_the_boots_of_several_runs(tmp_path):
    runs = []
    for n, boots in enumerate((balanced([5, 3], [4, 6]), balanced([30, 28], [29, 31]))):
        top = tmp_path / f"run{n}"
        top.mkdir()
        (top / "experiment.json").write_text(json.dumps(doc(boots, CONDS).to_json()))
        runs.append(str(top))
    proc = subprocess.run([PY, str(REPO / "analysis/chkwin-analyze"), "pool", *runs],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "verdict: the emulated window and the failures: differs" in proc.stdout
    row = next(ln for ln in proc.stdout.splitlines() if ln.startswith("unpatched-gcc49"))
    assert row.split()[1] == "4" and row.split()[2] == "66"
    assert "run1/unpatched-gcc49-2" in proc.stdout
    twice = subprocess.run([PY, str(REPO / "analysis/chkwin-analyze"), "pool",
                            runs[0], runs[0]], capture_output=True, text=True)
    assert twice.returncode == 1 and "named twice" in twice.stderr
    other = doc([b for b in balanced([5], [4]) if b["condition"].startswith("un")],
                CONDS[:2])
    (tmp_path / "run2").mkdir()
    (tmp_path / "run2" / "experiment.json").write_text(json.dumps(other.to_json()))
    mixed = subprocess.run([PY, str(REPO / "analysis/chkwin-analyze"), "pool",
                            runs[0], str(tmp_path / "run2")], capture_output=True, text=True)
    assert mixed.returncode == 1 and "not the conditions of" in mixed.stderr


def test_pool_refuses_runs_measured_differently_unless_told(tmp_path):
    runs = []
    for n, (settings, kernel) in enumerate((({}, None), ({"boot_seconds": 60}, None),
                                            ({"jobs": 8, "budget_minutes": 30}, None),
                                            ({}, "unpatched-fedcba9876543210"))):
        boots = balanced([5, 3], [4, 6])
        if kernel:
            boots = [dict(b, kernel=kernel) if b["condition"].startswith("un") else b
                     for b in boots]
        top = tmp_path / f"run{n}"
        top.mkdir()
        (top / "experiment.json").write_text(json.dumps(doc(boots, CONDS, **settings).to_json()))
        runs.append(str(top))

    def pool(*which, allow=False):
        return subprocess.run([PY, str(REPO / "analysis/chkwin-analyze"), "pool",
                               *(runs[i] for i in which),
                               *(["--allow-different"] if allow else [])],
                              capture_output=True, text=True)
    longer = pool(0, 1)
    assert longer.returncode == 1 and longer.stderr.count("\n") == 1
    assert "boot_seconds 30 against 60" in longer.stderr and "--allow-different" in longer.stderr
    rebuilt = pool(0, 3)
    assert rebuilt.returncode == 1
    assert "kernels patched-0123456789abcdef, unpatched-0123456789abcdef against " \
        "patched-0123456789abcdef, unpatched-fedcba9876543210" in rebuilt.stderr
    # How a run was scheduled may differ.
    assert pool(0, 2).returncode == 0
    told = pool(0, 1, allow=True)
    assert told.returncode == 0, told.stderr
    assert "pooled despite a difference: " in told.stdout and "boot_seconds" in told.stdout
    assert "not for runs pooled until a verdict came" in told.stdout


def test_decomposition_of_a_recorded_boot_on_a_synthetic_log(tmp_path):
    """synthlog: k failing igets with a window arrival in one of their calls
    (seed and inode alternately), m failing without one, each of those m
    beside a window arrival in the other CPU's call, which did not fail."""
    from analysis import chkwinlog
    from analysis import correlate
    from analysis import fsgeom
    from analysis import synthlog
    k, m = 4, 2
    s = synthlog.generate(igets=3000, k=k, m=m, seed=5)
    path = tmp_path / "rec-1" / "log.bin"
    path.parent.mkdir()
    s.write(path)
    geo = tmp_path / "disk.json"
    geo.write_text(json.dumps(synthlog.GEOMETRY))
    log = chkwinlog.read(path)
    corr = correlate.Correlation(log, fsgeom.from_json(geo))
    calls = int(log.trailer["count.chksum"])
    rec = cond("unpatched-gcc49-recorded", "unpatched", "gcc49", "recorded")
    b = boot(rec["name"], 1, k, calls, 1)
    b["dir"] = "rec-1"
    d = doc([b], [rec])
    res = Results(d, {"rec-1": (log, corr)})
    (row,) = res.decomposition
    assert row["window_calls"] == k + m
    assert row["window_arrivals"] == k + m
    assert row["timing"] == (k + m) / calls * 1e6
    assert row["timing_ci"][0] < row["timing"] < row["timing_ci"][1]
    assert row["logged_failures"] == k + m and row["attributed"] == k
    assert row["mechanism"] == k / (k + m)
    # The converse: the m window calls beside the failures fed verdicts
    # that matched.
    assert row["window_outcomes"] == s.outcomes == {
        "seed": {"failed": k // 2, "matched": 0, "not verified": 0},
        "inode": {"failed": k // 2, "matched": m, "not verified": 0}}
    assert row["logged_by_kind"] == {"inode": (k + m, k)}
    # Window arrivals land on the load, as under TCG.
    assert synthlog.WINDOW[1] - synthlog.FUNC1[1] in row["gcc49_offsets"]
    lines = dict(decisions.verdicts(res))
    assert lines["attribution"].startswith(f"{k} of {k + m} checksum failures (inode {k + m})")
    assert lines["attribution"].endswith(f"{k} failed, {m} still matched and 0 were never "
                                         "verified")


def test_the_plan_line_says_whether_the_plan_ran_whole():
    plan = {c["name"]: 2 for c in CONDS}
    whole = doc(balanced([5, 3], [4, 6]) + balanced([1], [1])[2:], CONDS, plan=plan)
    line = prose.plan_line(whole)
    assert line.startswith("the plan, fixed before the first counting boot: 2 boots a ")
    assert line.endswith("every condition got its boots")
    short = doc([b for b in balanced([5, 3], [4, 6]) if b["dir"] != "patched-gcc49-2"],
                CONDS, plan=plan)
    assert prose.plan_line(short).endswith(
        "the budget cut it short: unpatched-off 1 of 2, patched-gcc49 1 of 2, "
        "patched-off 1 of 2")
    assert prose.plan_line(doc([], CONDS)).startswith("no plan recorded")


def test_the_plan_line_names_lost_boots_and_the_power_left():
    """A boot lost on every attempt is not a budget cut: the line names it
    with its reason, and each comparison short of its boots its power at
    what it got beside the plan's; pooling runs keeps every run's losses."""
    plan = {c["name"]: 2 for c in CONDS}
    lost = {"condition": "patched-gcc49", "dir": "patched-gcc49-2", "round": 2, "slot": 2,
            "phase_seed": None, "attempts": 3, "reason": "CANCELLED, exit 0:15"}
    d = doc([b for b in balanced([5, 3], [4, 6]) if b["dir"] != "patched-gcc49-2"]
            + balanced([1], [1])[2:], CONDS, plan=plan,
            plan_comparisons=[{"what": "patched/unpatched", "boots": 2,
                               "per_boot": [5.0, 5.0], "ratio": 1.0, "source": "the model",
                               "verdict": "differs", "power": 0.8,
                               "got": {"boots": 1, "planned": 2, "power": 0.0}}],
            plan_dispersion={"phi": 1.0, "df": 1, "estimate": 0.5, "conf": 0.8,
                             "source": "the pilot's boots, a rate per flavour"})
    d.missing = [documents.Missing.from_json(lost)]
    line = prose.plan_line(d)
    assert "the budget cut it short" not in line and "every condition got" not in line
    assert "1 boot lost on every attempt, missing from the verdicts: patched-gcc49-2 " \
        "(3 attempts: CANCELLED, exit 0:15)" in line, line
    assert line.endswith("the power with the boots the run got: patched/unpatched 0% at "
                         "1 of 2 boots a condition (planned 80% at 2)"), line
    pooled, _ = documents.pool([d, d], ["runs/a", "runs/b"], allow_different=True)
    assert [m.dir for m in pooled.missing] == ["a/patched-gcc49-2", "b/patched-gcc49-2"]


def test_a_new_run_plans_on_a_previous_runs_spread(tmp_path):
    """--plan-from: the dispersion a previous icount run's replicated boots
    show, named; under Poisson it plans at 1 and says so."""
    wide = doc(balanced([10, 40, 100, 25], [11, 80, 30, 24]), CONDS, clock="icount")
    run = tmp_path / "20261205-101010"
    run.mkdir()
    (run / "experiment.json").write_text(json.dumps(wide.to_json()))
    phi, df, source = experiment.dispersion_from(run)
    assert phi == pytest.approx(Results(wide).spread.phi) and phi > 5 and df == 3
    assert planning.dispersion_text(phi, df, source) == \
        f"{phi:.2f} (the spread of run 20261205-101010, on 3 df)"
    assert planning.dispersion_text(0.8, 3, source).startswith("1, at least Poisson")
    one = doc(balanced([10], [11]), CONDS, clock="icount")
    (run / "experiment.json").write_text(json.dumps(one.to_json()))
    with pytest.raises(ValueError, match="no condition has two boots"):
        experiment.dispersion_from(run)


def test_blocks_are_phase_seeds_when_boots_are_paired():
    """Paired boots (a phase seed each, shared across conditions): the
    seed is the block, and a spread every condition shares seed by seed
    is not counted as spread between boots; without seeds, rounds are."""
    u, p = [10, 40, 100, 25], [11, 38, 104, 24]
    paired = balanced(u, p)
    for b in paired:
        b["phase_seed"] = 1000 + int(b["dir"].rsplit("-", 1)[1])
    fit = Results(doc(paired, CONDS)).spread
    assert fit.df == 3 and fit.phi < 0.5
    rounds = balanced(u, p)
    assert Results(doc(rounds, CONDS)).spread.phi == pytest.approx(fit.phi)
    line = decisions.dispersion_line(Results(doc(paired, CONDS)))
    assert "within phase-seed pairs" in line
    # The same counts without blocks: all of it is spread between boots.
    assert experiment.verdict.fit(list(zip(u, [M] * 4)), list(zip(p, [M] * 4))).phi > 20


def test_the_exact_listing_controls_need_arrivals_and_failures():
    """-singlestep must show window arrivals and the failures they cause;
    multi-threaded TCG neither; anything else is flagged."""
    def rec(singlestep, arrivals, failures):
        return {"control": True, "singlestep": singlestep, "window_arrivals": arrivals,
                "window_calls": arrivals, "failures": failures, "calls": 10 ** 6,
                "gcc49_offsets": {}}
    d = doc(balanced([5, 3], [4, 6]), CONDS)
    flag = "NOT what the mechanism predicts"
    for singlestep, arrivals, failures, ok in ((True, 9, 9, True), (True, 9, 0, False),
                                               (True, 0, 0, False), (False, 0, 0, True),
                                               (False, 3, 0, False), (False, 0, 2, False)):
        key = "exact-singlestep" if singlestep else "exact-tcg"
        res = Results(d)
        # Only the controls' rows matter here.
        res.decomposition = [rec(singlestep, arrivals, failures)]
        line = dict(decisions.verdicts(res))[key]
        assert (flag not in line) == ok, (singlestep, arrivals, failures, line)


def test_each_comparison_uses_its_own_spread():
    """A wide A/A pair does not widen the window comparison, nor does a
    steady window pair narrow the A/A's; a comparison whose own boots
    give no degree of freedom borrows the pooled spread and says so."""
    conds = CONDS[:2] + [cond("unpatched-aa", "unpatched", "gcc49", "aa", width=16),
                         cond("patched-aa", "patched", "gcc49", "aa", width=16)]
    boots = []
    for i, (w, u, p) in enumerate(zip([40, 44, 38, 42], [500, 300, 650, 420],
                                      [380, 610, 470, 560]), 1):
        boots += [boot("unpatched-gcc49", i, w, M, i), boot("unpatched-aa", i, u, M, i, 2),
                  boot("patched-aa", i, p, M, i, 3)]
    boots.append(boot("unpatched-off", 1, 0, 4 * M, 1, 4))
    d = doc(boots, conds, window="gcc49", margin=0.10)
    found = {c["key"]: c["verdict"]
             for c in Results(d).comparisons}
    assert found["window"].df == 3 and found["window"].estimate < 1
    assert found["flavour"].df == 3 and found["flavour"].phi > 20
    assert "(its own boots, within rounds)" in found["flavour"].text
    assert found["flavour"].kind == "undecided"
    assert Results(d).spread.df == 6
    single = doc(boots[:3] + [boots[-1]], conds, window="gcc49", margin=0.10)
    w = next(c["verdict"] for c in Results(single).comparisons
             if c["key"] == "window")
    assert w.df == 0 and "Poisson assumed" in w.text


def test_one_dispersion_or_several():
    """Bartlett's test on Pearson chi-squares agrees with scipy's on
    normal samples (the same statistic), and the dispersion line says
    when conditions spread differently."""
    import numpy as np
    from scipy import stats
    from analysis import verdict
    rng = np.random.default_rng(3)
    samples = [rng.normal(0, sd, n) for sd, n in ((1, 5), (2, 8), (1.5, 4))]
    fits = [verdict.Fit(np.var(x, ddof=1), np.var(x, ddof=1) * (len(x) - 1), len(x) - 1)
            for x in samples]
    stat, df, pval = experiment.homogeneity(fits)
    ref = stats.bartlett(*samples)
    assert df == 2 and stat == pytest.approx(ref.statistic) and pval == pytest.approx(ref.pvalue)
    steady = [100, 96, 104, 99, 101, 98]
    wide = [100, 30, 170, 60, 150, 90]
    boots = [boot("unpatched-gcc49", i, a, M, i) for i, a in enumerate(steady, 1)] + \
        [boot("patched-gcc49", i, b, M, i, 2) for i, b in enumerate(wide, 1)]
    line = decisions.dispersion_line(Results(doc(boots, CONDS)))
    assert "they differ, so each comparison uses its own" in line, line
    same = [boot("patched-gcc49", i, a, M, i, 2)
            for i, a in enumerate([97, 103, 99, 105, 95, 100], 1)]
    line = decisions.dispersion_line(Results(doc(boots[:6] + same, CONDS)))
    assert "no evidence they differ" in line, line


IRQS = {"timer": 30_000, "device": 600, "idle_seconds": 0.0, "seconds": 30.0, "cpus": 1,
        "task_seconds": 30.0}


def icount_boot(name, n, failures, calls):
    b = boot(name, n, failures, calls, n)
    b.update(phase_seed=n, interrupts=IRQS, clock={"kind": "icount", "shift": 4})
    return b


MODEL_CONDS = [cond("unpatched-gcc49-exact", "unpatched", "gcc49-exact", "counting"),
               cond("patched-gcc49-exact", "patched", "gcc49-exact", "counting"),
               cond("unpatched-gcc49-w16", "unpatched", "gcc49", "aa", width=16),
               cond("patched-gcc49-w16", "patched", "gcc49", "aa", width=16)]


def test_the_model_is_checked_by_w_with_a_seed_counted_once():
    """Per call: W x 1,000/s x 16 ns, 16e-6 at W = 1 and 528e-6 at W = 33.
    Boots on the model agree within +-10% where there are enough failures
    (W = 33) and stay undecided where there are not (W = 1); 30% above it
    differs, and the goodness of fit says so.  A seed's effect shared by
    the pair (each seed's two boots alike, seeds far apart) is the spread
    of the seeds' sums, and widens the group's interval.  One boot a
    condition leaves no df: never "agrees"."""
    def boots(scale, shared=None):
        out = []
        for n in range(1, 7):
            for c, k in (("unpatched-gcc49-exact", 16), ("patched-gcc49-exact", 16)):
                out.append(icount_boot(c, n, k, 1_000_000))
            for c in ("unpatched-gcc49-w16", "patched-gcc49-w16"):
                k = shared[n - 1] if shared else round(528 * scale) + (n % 3) * 10 - 10
                out.append(icount_boot(c, n, k, 1_000_000))
        return out
    on = Results(doc(boots(1.0), MODEL_CONDS, shift=4)).model_check
    kinds = {g["W"]: g["kind"] for g in on["by_w"]}
    assert kinds == {1: "undecided", 33: "agrees"} and on["p"] > 0.05 and on["df"] == 2
    off = Results(doc(boots(1.3), MODEL_CONDS, shift=4)).model_check
    assert {g["W"]: g["kind"] for g in off["by_w"]}[33] == "differs" and off["p"] < 0.001
    shared = Results(doc(boots(1.0, [428, 628, 438, 618, 448, 608]), MODEL_CONDS,
                         shift=4)).model_check
    w33 = next(g for g in shared["by_w"] if g["W"] == 33)
    assert w33["phi"] > 30 and w33["df"] == 5 and w33["kind"] != "agrees"
    one = [b for b in boots(1.0) if b["dir"].endswith("-1")]
    single = Results(doc(one, MODEL_CONDS, shift=4)).model_check
    assert all(g["df"] == 0 and g["kind"] != "agrees" for g in single["by_w"])


def test_the_plan_line_says_its_bound_its_range_and_its_look():
    conds = CONDS[:2] + MODEL_CONDS[2:]
    plan = {c["name"]: 2 for c in CONDS[:2]} | {"unpatched-gcc49-w16": 12,
                                                "patched-gcc49-w16": 12}
    d = doc([], conds, plan=plan, max_aa_boots=40,
            plan_comparisons=[{"what": "unpatched/patched at width 16", "boots": 9,
                               "per_boot": [500.0, 500.0], "ratio": 1.0,
                               "source": "the pilot's, measured", "verdict": "equivalent",
                               "power": 0.91}],
            plan_dispersion={"phi": 2.1, "df": 3, "estimate": 0.7, "conf": 0.8,
                             "source": "the pilot's boots, a rate per flavour"},
            plan_power_range=[{"phi": 1, "needed": 7, "power": 0.95},
                              {"phi": 7, "needed": 52, "power": 0.2}],
            plan_reestimated={"at": 5, "phi": 3.2, "df": 5, "per_boot": 500.0,
                              "before": 9, "boots": 12})
    line = prose.plan_line(d)
    assert "at dispersion 2.10, the 80% upper bound of 0.70 on 3 df" in line, line
    assert "dispersion 7: 20% power at 9, 52 boots a flavour needed" in line, line
    assert "beyond 40 (--max-aa-boots) the run stops at the cap" in line, line
    assert "re-estimated at 5 boots a flavour (dispersion 3.20 about a rate per flavour, " \
        "within phase-seed pairs), 9 -> 12 boots a flavour" in line, line
    d.settings.plan_dispersion = dict(d.settings.plan_dispersion, estimate=None)
    assert "gave no spread to bound" in prose.plan_line(d)


def test_agreement_with_the_model_is_decided_as_equivalence():
    """A 95% interval that excludes 1 while the 90% lies inside +-10% is a
    difference smaller than the margin, said so, not a bare "disagrees";
    an interval that holds 1 and lies inside agrees; one that holds 1 and
    passes the margin is undecided, and nothing agrees on 0 df."""
    from analysis import decisions
    from analysis.verdict import agreement
    assert agreement((1.02, 1.06), (1.025, 1.055), 5) == ("differs", True)
    kind, inside = agreement((1.02, 1.06), (1.025, 1.055), 5)
    assert decisions.model_words({"kind": kind, "within_margin": inside}) == \
        "disagrees with the model, by less than +-10%"
    assert agreement((1.05, 1.3), (1.06, 1.25), 5) == ("differs", False)
    assert decisions.model_words({"kind": "differs", "within_margin": False}) == \
        "disagrees with the model"
    assert agreement((0.97, 1.06), (0.98, 1.05), 5) == ("agrees", True)
    assert agreement((0.9, 1.2), (0.92, 1.15), 5) == ("undecided", False)
    assert agreement((0.97, 1.06), (0.98, 1.05), 0) == ("undecided", False)


def test_one_aberrant_boot_is_named_and_cannot_make_equivalent_alone(tmp_path):
    """A demo's record built as the demo builds it (analysis/calibration.py's
    Demo: pilot, plan, look, the A/A's boots), its third unpatched A/A boot
    at four times its mean, written as experiment.json and reported.  At a
    true ratio of 1.10, the margin's edge, the look at four pairs could not
    yet single that boot out and read it as spread, which took the run to
    the cap of 40, and the boot pulls the pooled ratio towards 1: on every
    boot the A/A reads "equivalent"; without it, "differs".  The verdict
    names the boot (its condition, its phase seed), says what held with and
    without it, and declares neither; verdicts.json says the same, and the
    report's per-boot figure is drawn."""
    import numpy as np
    from analysis import calibration
    demo = calibration.Demo("poisson", 1.10, np.random.default_rng(177))
    plan = demo.run(aberrant=(0, 3))
    assert plan["aberrant"] == (0, True) and plan["run"] == 40, plan
    (tmp_path / "experiment.json").write_text(json.dumps(demo.doc.to_json()))
    lines = dict(report.write_experiment(tmp_path, documents.load(tmp_path)))
    line = lines["flavour"]
    assert "an aberrant boot flagged: unpatched-gcc49-w16-3 (unpatched-gcc49-w16, " \
        "phase seed 3)" in line, line
    assert "undecided: equivalent with this boot but not without it" in line, line
    assert "the intervals with this boot are outside the verdict's guarantee" in line, line
    got = json.loads((tmp_path / "verdicts.json").read_text())
    aa = next(c for c in got["comparisons"] if c["key"] == "flavour")
    assert aa["kind"] == "undecided" and not aa["within_margin"]
    assert [f["boot"] for f in aa["flagged"]] == ["unpatched-gcc49-w16-3"]
    assert aa["flagged"][0]["failures"] > 3 * aa["flagged"][0]["expected"]
    assert aa["without_flagged"]["kind"] == "differs"
    # No other comparison's boot is flagged, and the figure shows the boots.
    assert all(not c["flagged"] for c in got["comparisons"] if c["key"] != "flavour")
    assert (tmp_path / "boots.png").stat().st_size > 0
    assert "boots.png" in (tmp_path / "report.md").read_text()


def test_the_control_is_tested_against_the_models_ratio():
    """Width 1 (W = 3) against the listing (W = 1), 48e-6 against 16e-6 a
    call, six paired boots of 10 million calls: on the model, measured /
    predicted agrees within +-10% (two one-sided tests of the ratio
    against 3); 30% above it disagrees; with a tenth of the calls the
    interval still holds 1 but is too wide to agree, and says undecided."""
    conds = [cond("unpatched-gcc49-exact", "unpatched", "gcc49-exact", "counting"),
             cond("unpatched-off", "unpatched", "off", "counting"),
             cond("unpatched-gcc49", "unpatched", "gcc49", "control")]

    def line(scale, calls):
        boots = []
        for n in range(1, 7):
            jitter = (n % 3 - 1) * 0.02
            for name, per_call in (("unpatched-gcc49-exact", 16e-6),
                                   ("unpatched-gcc49", 48e-6 * scale)):
                boots.append(icount_boot(name, n, round(per_call * calls * (1 + jitter)),
                                         calls))
            boots.append(icount_boot("unpatched-off", n, 0, calls))
        res = Results(doc(boots, conds, shift=4, window="gcc49-exact", margin=0.10))
        return dict(decisions.verdicts(res))["control"]
    assert line(1.0, 10 * M).endswith("agrees within +-10%"), line(1.0, 10 * M)
    assert "the model predicts 3.00: measured/predicted 1 (90% CI " in line(1.0, 10 * M)
    assert line(1.3, 10 * M).endswith("disagrees with the model"), line(1.3, 10 * M)
    assert line(1.0, M).endswith("undecided within +-10%"), line(1.0, M)
