"""The one way chkwin takes a file's SHA-256: the recordings' manifests,
the test disk's metadata and the tests that check a file was not touched."""

import hashlib


def file_sha256(path):
    """Hex SHA-256 of the file at path, read in blocks (disk images are GBs)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()
