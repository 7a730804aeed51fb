"""The guest's console protocol, host side.

guest/scenarios/_console.sh declares the tags of the lines a guest prints
for the host (guest/init's status, checksum calls and /proc blocks) and
the shell functions that print them.  This module reads the tags from
there, so a tag is written once, and parses those lines out of a console
log.
"""

import re

from common import REPO
from common.errors import OneLineError

DECLARATION = REPO / "guest" / "scenarios" / "_console.sh"
NEEDED = ("STATUS", "CALLS", "PROC_BEGIN", "PROC_END")
_ASSIGNMENT = re.compile(r"^CHKWIN_TAG_([A-Z_]+)=([A-Z][A-Z-]*)$", re.M)


class ProtocolError(OneLineError):
    """_console.sh does not declare the tags this reader needs."""


def read_tags(path=DECLARATION):
    """{name: tag} of path's CHKWIN_TAG_NAME=TAG lines."""
    try:
        tags = dict(_ASSIGNMENT.findall(path.read_text()))
    except (OSError, UnicodeDecodeError) as e:
        raise ProtocolError(f"{path}: cannot read the console tags: "
                            f"{getattr(e, 'strerror', None) or e}") from e
    missing = [name for name in NEEDED if name not in tags]
    if missing:
        raise ProtocolError(f"{path}: no CHKWIN_TAG_{missing[0]}=TAG line (one "
                            "unquoted assignment a line, nothing after it)")
    return tags


TAGS = read_tags()
STATUS_TAG = TAGS["STATUS"]
_STATUS = re.compile(rf"^{re.escape(STATUS_TAG)} (\d+)\s*$", re.M)
_CALLS = re.compile(rf"^{re.escape(TAGS['CALLS'])} (\d+)\s*$", re.M)
_PROC = re.compile(rf"^{re.escape(TAGS['PROC_BEGIN'])} (\w+)\s*\n(.*?)"
                   rf"^{re.escape(TAGS['PROC_END'])} \1\s*$", re.M | re.S)


def status_line(code):
    """The line console_status prints (what the results port holds)."""
    return f"{STATUS_TAG} {code}\n"


def _last_number(line, text):
    found = line.findall(text)
    return int(found[-1]) if found else None


def last_status(text):
    """The last status line's code, or None when the guest printed none."""
    return _last_number(_STATUS, text)


def last_calls(text):
    """The last checksum-calls line's count, or None (a kernel without the
    debug patch's counter prints none)."""
    return _last_number(_CALLS, text)


def proc_blocks(text):
    """{label: body} of every complete /proc block; a later block of the
    same label wins, and a block cut before its end line is not one."""
    return {label: body for label, body in _PROC.findall(text)}
