"""A new directory for one run's results, never one an earlier run made."""

import time

from guest.host.cachedir import die


def new_run_dir(results, prefix=""):
    """results/<prefix><timestamp>, made now (a -N suffix if that exists)."""
    stamp = prefix + time.strftime("%Y%m%d-%H%M%S")
    for n in range(100):
        top = results / (stamp if n == 0 else f"{stamp}-{n}")
        try:
            top.mkdir(parents=True)
            return top
        except FileExistsError:
            continue
    die(f"cannot make a new directory under {results}")
