#!/usr/bin/python3
"""The verdicts' calibration: coverage of the 95% interval, false
differences and false equivalences of verdict.compare on experiments of
the demo's A/A design simulated from negative binomial boots
(analysis/calibration.py; tests/test_calibration.py asserts the goals)."""

import argparse
import pathlib

from bench.section import print_section

REPO = pathlib.Path(__file__).resolve().parent.parent
from analysis import calibration


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=calibration.SIMS,
                    help="simulated experiments a point")
    args = ap.parse_args()
    if args.sims < 100:
        ap.error("--sims: at least 100")
    boots = calibration.design_boots()
    rows = []
    for p in calibration.grid(boots, args.sims):
        rows.append((f"dispersion {p.phi:g}, true ratio {p.ratio:g}",
                     f"95% interval covers {p.share('covered') * 100:.1f}%; differs "
                     f"{p.share('differs') * 100:.1f}%, equivalent "
                     f"{p.share('equivalent') * 100:.1f}% (Monte Carlo SE of 5%: "
                     f"{p.mc_se() * 100:.2f} points)"))
    intro = (f"{calibration.__doc__.split(chr(10) + chr(10), 1)[1].strip()} Here: "
             f"{boots} boots a condition, {calibration.PER_BOOT} failures a boot, margin "
             f"+-{calibration.MARGIN * 100:.0f}%, {args.sims} simulations a point.")
    print_section("Calibration of the verdicts", intro.replace("\n", " "), rows)


if __name__ == "__main__":
    main()
