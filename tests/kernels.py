"""Helpers the tests share: run the repo's scripts, find built kernels."""

import json
import pathlib
import subprocess

from common import PY, REPO

# mode.irq where the interrupted regs come from a kprobe (loader/needs.c's
# chkwin_irq_pc_modes); spelled out here so that a change to it fails a test.
IRQ_KPROBE_MODE = "tp_btf+kprobe+kretprobe:do_interrupt_handler"


def kbuild_args(*flavours):
    args = [PY, str(REPO / "guest/kbuild.py"), "--json"]
    for flavour in flavours:
        args += ["--flavour", flavour]
    return args


def kbuild(*flavours, env=None, check=True):
    """Run guest/kbuild.py --json; return (report dict, CompletedProcess)."""
    proc = subprocess.run(kbuild_args(*flavours), capture_output=True,
                          text=True, env=env)
    if check:
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout), proc
    return None, proc


def kernel_dir(flavour):
    report, _ = kbuild(flavour)
    return pathlib.Path(report[flavour]["dir"])


def run_together(args, env, n=2):
    """Start n copies of the command at once; their CompletedProcesses."""
    procs = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) for _ in range(n)]
    done = []
    for p in procs:
        out, err = p.communicate()
        done.append(subprocess.CompletedProcess(args, p.returncode, out, err))
    return done
