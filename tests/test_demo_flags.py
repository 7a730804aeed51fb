"""guest/lab_demo.py's flags: what it refuses, in one line and before any
boot (no guest, no kernel: the checks come first)."""

import json
import subprocess

from common import PY, REPO

from analysis import documents


def test_bad_flags_are_one_line_errors(tmp_path):
    for bad in (["--flavours", "nosuch"], ["--margin", "2"], ["--widths", "0"],
                ["--smp", "2"], ["--clock", "wall"], ["--shift", "11"], ["--jobs", "0"],
                ["--power", "1"], ["--power", "0.95"], ["--engine", "pbs"],
                ["--partition", "short"], ["--retries", "-1"], ["--passes", "0"],
                ["--clock", "host", "--passes", "5"], ["--time-limit", "0"],
                ["--plan-from", str(tmp_path / "nosuch")],
                ["--clock", "host", "--plan-from", str(REPO)],
                ["--clock", "host", "--rr-exact", "1"], ["--rr-exact", "maybe"],
                ["--rr-exact", "-1"]):
        proc = subprocess.run([PY, str(REPO / "guest/lab_demo.py"), *bad,
                               "--results", str(tmp_path)], capture_output=True, text=True)
        assert proc.returncode == 2, bad
        assert proc.stderr.strip().splitlines()[-1].startswith("usage:") is False
        assert "error:" in proc.stderr.strip().splitlines()[-1]


def test_plan_from_a_run_that_cannot_give_a_spread(tmp_path):
    """--plan-from needs an icount run with replicated boots; a damaged,
    host-clock or other version's record is refused in one line, before any
    boot."""
    run = tmp_path / "run"
    run.mkdir()
    host = {"version": documents.VERSION, "seed": 1, "conditions": [], "boots": [],
            "settings": {"clock": "host", "boot_seconds": 30, "record_seconds": 0,
                         "margin": 0.1, "smp": 2, "sample_hz": 0, "workload": "inode-load"}}
    for text, why in (("{", "not an experiment record"),
                      (json.dumps(host), "not an icount run"),
                      (json.dumps(dict(host, version=2)), "a record of version 2")):
        (run / "experiment.json").write_text(text)
        proc = subprocess.run([PY, str(REPO / "guest/lab_demo.py"), "--plan-from", str(run),
                               "--results", str(tmp_path / "results")],
                              capture_output=True, text=True)
        assert proc.returncode == 2 and why in proc.stderr.splitlines()[-1], proc.stderr
        assert not (tmp_path / "results").exists()
