"""Where a command writes its results: a new directory for one run, never
one an earlier run made, or an --out that holds nothing yet."""

import time

from common.errors import OneLineError, die


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


def check_out_dir(path):
    """OneLineError unless path is free for a command's output (new, or an
    empty directory): nothing already recorded there is overwritten."""
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise OneLineError(f"--out {path} exists and is not an empty directory")


def empty_out_dir(path):
    """path, checked by check_out_dir and made."""
    check_out_dir(path)
    path.mkdir(parents=True, exist_ok=True)
    return path



def new_dir(run, prefix):
    """run/<prefix>-<n>, the first n free, made (two at once get two
    directories)."""
    n = 1
    while True:
        path = run / f"{prefix}-{n}"
        try:
            path.mkdir()
            return path
        except FileExistsError:
            n += 1
