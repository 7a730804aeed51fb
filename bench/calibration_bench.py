#!/usr/bin/python3
"""The demo's answers, calibrated: whole demos simulated as experiment.json
documents under every scenario and true A/A ratio, planned and analysed by
the demo's own functions (analysis/calibration.py; tests/test_calibration.py
asserts the goals on fewer of them), and the power of the model check
against a model 5% off; the scenarios outside the guarantee go to
analysis/guarantee.json, which the verdicts quote."""

import argparse

from bench.results import commit
from bench.section import command, print_section
from analysis import calibration
from analysis import guarantee
from common.jsonfile import write_json

# The model error whose detection the model check's power is shown for.
MODEL_BIAS = 1.05


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=calibration.SIMS,
                    help="simulated demos a scenario and true ratio")
    ap.add_argument("--scenarios", default=",".join(calibration.SCENARIOS),
                    help="comma-separated scenarios (default: all)")
    args = ap.parse_args()
    if args.sims < 100:
        ap.error("--sims: at least 100")
    names = args.scenarios.split(",")
    unknown = [n for n in names if n not in calibration.SCENARIOS]
    if unknown:
        ap.error(f"--scenarios: unknown {', '.join(unknown)}")
    rows, tallies = [], []
    for scenario in names:
        for ratio in calibration.RATIOS:
            t = calibration.run(scenario, ratio, args.sims)
            tallies.append(t)
            what = calibration.SCENARIOS[scenario][0]
            for _, _, key, share, goal in calibration.table([t])[1:]:
                rows.append((f"{scenario} ({what}), A/A ratio {ratio:g}: {key}",
                             f"{share}; goal {goal}"))
    # Pooled over the ratios, where a scenario's shortfall is plainer.
    for scenario, _, key, share, goal in calibration.table(
            calibration.by_scenario(tallies))[1:]:
        if "covered" in key:
            rows.append((f"{scenario}, every A/A ratio pooled: {key}", f"{share}; goal {goal}"))
    rows.append(("scenarios outside the verdict's guarantee (an interval, pooled over the "
                 "ratios, covering less than its goal)",
                 ", ".join(calibration.outside(tallies)) or "none"))
    for scenario, ratio, boots, needed, capped in calibration.plan_rows(tallies)[1:]:
        rows.append((f"{scenario}, A/A ratio {ratio}: A/A boots a flavour planned, after the "
                     f"look, run (medians); planning.needed at the true dispersion; plans at "
                     f"the cap of {calibration.MAX_BOOTS}",
                     f"{boots}; {needed}; {capped}"))
    for scenario in ("poisson", "nb-3"):
        for key, (hits, n) in sorted(calibration.model_power(scenario, MODEL_BIAS,
                                                             args.sims).items()):
            rows.append((f"{scenario}: the model check against a model {MODEL_BIAS - 1:.0%} "
                         f"low, {key} (power)", calibration.share_ci(hits, n)))
    if set(names) == set(calibration.SCENARIOS):
        write_json(guarantee.PATH, guarantee.record(
            calibration.guarantee_scenarios(tallies), command(), commit()), indent=1)
    intro = (calibration.__doc__.split("\n\n", 1)[1].strip().replace("\n", " ")
             + f" Here: {args.sims} simulated demos a scenario and true ratio.")
    print_section("Calibration of the verdicts", intro, rows)


if __name__ == "__main__":
    main()
