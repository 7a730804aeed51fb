"""Where a command writes its results: a new directory for one run, never
one an earlier run made, or an --out that holds nothing yet; JSON files
written whole."""

import json
import os
import pathlib
import time

from common.errors import die


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
    """A one-line error unless path is free for a command's output (new,
    or an empty directory): nothing already recorded there is overwritten."""
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        die(f"--out {path} exists and is not an empty directory")


def empty_out_dir(path):
    """path, checked by check_out_dir and made."""
    check_out_dir(path)
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_json(path, doc, indent=2):
    """Written aside and renamed: a reader never sees half a file."""
    path = pathlib.Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(doc, indent=indent) + "\n")
    os.replace(tmp, path)
