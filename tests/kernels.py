"""Helpers the tests share: run the repo's scripts, find built kernels."""

import json
import pathlib
import subprocess

REPO = pathlib.Path(__file__).resolve().parent.parent
PY = "/usr/bin/python3"


def kbuild(*flavours, env=None, check=True):
    """Run guest/kbuild.py --json; return (report dict, CompletedProcess)."""
    args = [PY, str(REPO / "guest/kbuild.py"), "--json"]
    for flavour in flavours:
        args += ["--flavour", flavour]
    proc = subprocess.run(args, capture_output=True, text=True, env=env)
    if check:
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout), proc
    return None, proc


def kernel_dir(flavour):
    report, _ = kbuild(flavour)
    return pathlib.Path(report[flavour]["dir"])
