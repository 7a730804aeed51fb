#!/usr/bin/python3
"""The demo's answers, calibrated: whole demos simulated as experiment.json
documents under every scenario, planned and analysed by the demo's own
functions (analysis/calibration.py; tests/test_calibration.py asserts the
goals on fewer of them)."""

import argparse

from bench.section import print_section
from analysis import calibration


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=calibration.SIMS,
                    help="simulated demos a scenario and true ratio")
    args = ap.parse_args()
    if args.sims < 100:
        ap.error("--sims: at least 100")
    rows = []
    for scenario, (what, *_) in calibration.SCENARIOS.items():
        for ratio in calibration.RATIOS:
            t = calibration.run(scenario, ratio, args.sims)
            for _, _, _, key, share, goal in calibration.table([t])[1:]:
                rows.append((f"{scenario} ({what}), A/A ratio {ratio:g}: {key}",
                             f"{share}; goal {goal}"))
            planned, final = calibration.median_boots(t)
            rows.append((f"{scenario}, A/A ratio {ratio:g}: A/A boots a flavour",
                         f"planned {planned}, after the blinded look {final} (medians)"))
    intro = (calibration.__doc__.split("\n\n", 1)[1].strip().replace("\n", " ")
             + f" Here: {args.sims} simulated demos a scenario and true ratio.")
    print_section("Calibration of the verdicts", intro, rows)


if __name__ == "__main__":
    main()
