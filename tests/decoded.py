"""A log as the loader's reader (`chkwin --read -f json`) prints it,
streamed: a long log is millions of records, and as Python dicts all at
once they take gigabytes (7 GB for one 180 s log)."""

import json
import subprocess


def decode(reader, path):
    """The reader on path; its stdout gives one JSON line at a time."""
    return subprocess.Popen([str(reader), "--read", str(path), "-f", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc):
    """Stops reading; the reader's stderr once it has exited."""
    proc.stdout.close()
    stderr = proc.stderr.read()
    proc.wait()
    return stderr


class Decoded:
    """A base for one pass over a log: header, trailer, the last line (the
    status) and the reader's stderr and exit status, with each record
    handed to record()."""

    def __init__(self, reader, path):
        self.header = self.trailer = None
        self.status = {}
        proc = decode(reader, path)
        for line in proc.stdout:
            x = json.loads(line)
            if "type" in x:
                self.record(x)
            elif "header" in x:
                self.header = x["header"]
            elif "trailer" in x:
                self.trailer = x["trailer"]
            self.status = x
        self.stderr = finish(proc)
        self.returncode = proc.returncode

    def record(self, r):
        raise NotImplementedError
