"""JSON written whole: a reader never sees half a file."""

import json
import os
import pathlib


def write_json(path, doc, indent=2):
    """doc as path, written aside and renamed (aside under this process's
    id: two writers at once never write one file)."""
    path = pathlib.Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(doc, indent=indent) + "\n")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
