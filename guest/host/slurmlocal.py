#!/usr/bin/python3
"""A private single-node Slurm on this machine, for the tests and for
`make demo ENGINE=slurm` where no cluster exists.

Everything lives in one directory (--dir): its own munge key, socket and
munged, slurm.conf and cgroup.conf, state and spool, the daemons' logs and
a pids file.  Ports are picked free, so two such clusters (a test beside a
demo) do not meet.  No systemd: munged runs as the munge user, slurmctld
-D and slurmd -D as root (SlurmUser=root), and `stop` ends exactly the
processes whose pids `start` recorded.  Accounting is off (no slurmdbd):
the engine reads task states from squeue and scontrol.

  guest/slurm_local.py start --dir D   prints SLURM_CONF=D/slurm.conf
  guest/slurm_local.py stop --dir D
"""

import argparse
import json
import os
import pathlib
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import time

from common.errors import die

PIDS = "pids.json"
PARTITION = "chkwin"
# Seconds the node gets to register with the controller and turn idle.
READY_SECONDS = 60


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def memory_mb():
    for line in pathlib.Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    return 1024


def slurm_conf(top, host, cpus):
    """slurm.conf of one node, `host`, with `cpus` CPUs: consumable cores
    (select/linear would run one job a node), no cgroup task plugin (it
    wants systemd), a node that rejoins by itself after a restart."""
    return "\n".join([
        "ClusterName=chkwin",
        f"SlurmctldHost={host}(127.0.0.1)",
        f"SlurmctldPort={free_port()}",
        f"SlurmdPort={free_port()}",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={top / 'munge' / 'munge.socket'}",
        "SlurmUser=root",
        "SlurmdUser=root",
        f"StateSaveLocation={top / 'state'}",
        f"SlurmdSpoolDir={top / 'spool'}",
        f"SlurmctldPidFile={top / 'slurmctld.pid'}",
        f"SlurmdPidFile={top / 'slurmd.pid'}",
        f"SlurmctldLogFile={top / 'slurmctld.log'}",
        f"SlurmdLogFile={top / 'slurmd.log'}",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "SchedulerType=sched/backfill",
        "MpiDefault=none",
        "ReturnToService=2",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "SlurmctldTimeout=30",
        "SlurmdTimeout=30",
        "MessageTimeout=5",
        f"NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mb()} "
        "State=UNKNOWN",
        f"PartitionName={PARTITION} Nodes={host} Default=YES MaxTime=INFINITE State=UP",
        ""])


def _munge(top):
    """The private munged: a key of its own, its socket under top/munge."""
    try:
        user = pwd.getpwnam("munge")
    except KeyError:
        die("no munge user: install munge (make deps)")
    if shutil.which("munged") is None or shutil.which("mungekey") is None:
        die("munged not found: install munge (make deps)")
    d = top / "munge"
    d.mkdir()
    d.chmod(0o755)          # clients must reach the socket; the key stays 0600
    key = d / "munge.key"
    subprocess.run(["mungekey", "--create", "--keyfile", str(key)], check=True,
                   capture_output=True)
    for path in (d, key):
        os.chown(path, user.pw_uid, user.pw_gid)
    cmd = ["munged", "--foreground", "--socket", str(d / "munge.socket"),
           "--key-file", str(key), "--pid-file", str(d / "munged.pid"),
           "--log-file", str(d / "munged.log"), "--seed-file", str(d / "munged.seed")]
    return subprocess.Popen(cmd, user=user.pw_uid, group=user.pw_gid,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=open(top / "munged.err", "wb"), start_new_session=True)


def _daemon(top, name, conf, *extra):
    return subprocess.Popen([name, "-D", "-f", str(conf), *extra],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=open(top / f"{name}.err", "wb"),
                            env={**os.environ, "SLURM_CONF": str(conf)},
                            start_new_session=True)


def _wait_idle(conf, procs, top):
    env = {**os.environ, "SLURM_CONF": str(conf)}
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        for name, proc in procs.items():
            if proc.poll() is not None:
                err = (top / f"{name}.err")
                why = (err.read_text(errors="replace").strip().splitlines()
                       or [f"exit {proc.returncode}"])[-1] if err.exists() else proc.returncode
                raise RuntimeError(f"{name} exited: {why} (logs in {top})")
        got = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True,
                             text=True, env=env)
        if got.returncode == 0 and got.stdout.strip() == "idle":
            return
        time.sleep(0.5)
    raise RuntimeError(f"the node did not turn idle within {READY_SECONDS} s "
                       f"(logs in {top})")


def start(top, cpus=None):
    """Start munged, slurmctld and slurmd with everything under top (made
    here; it must not exist or be empty).  Returns slurm.conf's path."""
    top = pathlib.Path(top).resolve()
    if top.exists() and any(top.iterdir()):
        die(f"--dir {top} exists and is not empty (a cluster of its own is there?)")
    for tool in ("slurmctld", "slurmd", "sinfo"):
        if shutil.which(tool) is None:
            die(f"{tool} not found: install slurm-wlm (make deps)")
    top.mkdir(parents=True, exist_ok=True)
    top.chmod(0o755)        # munged, as munge, reaches its own directory in it
    for parent in top.parents:
        if not parent.stat().st_mode & 0o001:
            die(f"munged (user munge) cannot reach {top}: {parent} is closed to "
                f"other users; pick a --dir under /tmp")
    for sub in ("state", "spool"):
        (top / sub).mkdir()
    host = socket.gethostname().split(".")[0]
    conf = top / "slurm.conf"
    conf.write_text(slurm_conf(top, host, cpus or os.cpu_count() or 1))
    # 22.05 loads a cgroup plugin even with task/none; cgroup/v2 wants systemd.
    (top / "cgroup.conf").write_text("CgroupPlugin=cgroup/v1\n")
    procs = {}
    try:
        procs["munged"] = _munge(top)
        _record(top, procs)
        socket_path = top / "munge" / "munge.socket"
        deadline = time.monotonic() + 10
        while not socket_path.exists():
            if procs["munged"].poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"munged did not start (logs in {top})")
            time.sleep(0.1)
        procs["slurmctld"] = _daemon(top, "slurmctld", conf)
        procs["slurmd"] = _daemon(top, "slurmd", conf, "-N", host)
        _record(top, procs)
        _wait_idle(conf, procs, top)
    except (RuntimeError, OSError, subprocess.CalledProcessError) as e:
        stop(top)
        die(f"the single-node Slurm did not start: {e}")
    return conf


def _record(top, procs):
    (top / PIDS).write_text(json.dumps({n: p.pid for n, p in procs.items()}) + "\n")


def _alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def stop(top):
    """End the daemons start() recorded in top, by their pids: SIGTERM,
    then SIGKILL to whatever still runs after ten seconds."""
    path = pathlib.Path(top) / PIDS
    if not path.exists():
        return
    pids = json.loads(path.read_text())
    # slurmd first: it would otherwise keep calling the stopped controller.
    order = [n for n in ("slurmd", "slurmctld", "munged") if n in pids]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for name in order:
            if _alive(pids[name]):
                os.kill(pids[name], sig)
        deadline = time.monotonic() + 10
        while any(_alive(pids[n]) for n in order) and time.monotonic() < deadline:
            _reap(pids[n] for n in order)
            time.sleep(0.1)
        if not any(_alive(pids[n]) for n in order):
            break
    path.unlink()


def _reap(pids):
    """Collect our own exited children (else they linger as zombies that
    kill(pid, 0) still finds)."""
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=["start", "stop"])
    ap.add_argument("--dir", type=pathlib.Path, required=True,
                    help="the cluster's directory: config, state, logs, pids")
    ap.add_argument("--cpus", type=int, help="the node's CPUs (default: this machine's)")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        die("a single-node Slurm runs its daemons as root (slurmd) and munge: "
            "run this as root")
    if args.action == "start":
        conf = start(args.dir, args.cpus)
        print(f"SLURM_CONF={conf}")
    else:
        stop(args.dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
