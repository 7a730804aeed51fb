"""Run guest/run.py from tests and read what it left behind."""

import json
import subprocess

from kernels import PY, REPO


class Run:
    def __init__(self, proc, out):
        self.proc = proc
        self.out = out
        self.console = (out / "console.log").read_text(errors="replace") \
            if (out / "console.log").exists() else ""
        self.status = json.loads((out / "status.json").read_text()) \
            if (out / "status.json").exists() else None

    def fields(self, key):
        """Values of 'key: value' lines the scenario printed."""
        prefix = key + ": "
        return [ln[len(prefix):].strip() for ln in self.console.splitlines()
                if ln.startswith(prefix)]


def boot(out, flavour, scenario, *extra):
    proc = subprocess.run([PY, str(REPO / "guest/run.py"), "--flavour", flavour,
                           "--scenario", scenario, "--out", str(out), *extra],
                          capture_output=True, text=True)
    return Run(proc, out)
