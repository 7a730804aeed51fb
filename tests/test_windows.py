"""The windows file (docs/windows.md, analysis/windows.py): what it
accepts, every way it refuses a bad file in one line naming the line or
the window, and placing windows by symbols (adjacent windows are fine,
overlapping ones and ranges past a function's end are not)."""

import pytest

from analysis import windows
from analysis.windows import Location, WindowsError

GOOD = """chkwin-windows 1
# a comment, then an empty line

w1 f+0x8 f+0x10 size=0x20 release=f+0x4 access=f+0x10 below_sp=8..16
w2 f+0x14 f+0x14
ext4:w3 ext4:g g+0x0 unused=1
"""


def test_a_good_file():
    text = GOOD.replace(" unused=1", "").replace("ext4:w3 ext4:g g+0x0", "ext4:w3 ext4:g ext4:g")
    ws = windows.parse(text)
    assert [w.name for w in ws] == ["w1", "w2", "ext4:w3"]
    assert ws[0].first == Location(None, "f", 8) and ws[0].last == Location(None, "f", 0x10)
    assert ws[0].why == {"size": "0x20", "release": "f+0x4", "access": "f+0x10",
                         "below_sp": "8..16"}
    assert ws[2].first == ws[2].last == Location("ext4", "g", 0)
    assert str(ws[2].first) == "ext4:g+0x0"
    assert windows.location(str(ws[0].first)) == ws[0].first


@pytest.mark.parametrize("text, msg", [
    ("", "line 1: not a windows file"),
    ("chkwin-windows 2\n", "line 1: not a windows file"),
    ("chkwin-windows 1\nw1 f+0x8\n", "line 2: not NAME FIRST LAST"),
    ("chkwin-windows 1\nw/1 f f\n", "line 2: bad window name"),
    ("chkwin-windows 1\nw1 f+0x6 f+0x8\n", "line 2: w1: 'f+0x6' is not"),
    ("chkwin-windows 1\nw1 f+8 f+0x8\n", "line 2: w1: 'f+8' is not"),
    ("chkwin-windows 1\nw1 f g\n", "line 2: w1: FIRST and LAST lie in different symbols"),
    ("chkwin-windows 1\nw1 m:f f\n", "line 2: w1: FIRST and LAST lie in different symbols"),
    ("chkwin-windows 1\nw1 f+0x8 f+0x4\n", "line 2: w1: LAST comes before FIRST"),
    ("chkwin-windows 1\nw1 f f unused=1\n", "line 2: w1: unknown attribute 'unused=1'"),
    ("chkwin-windows 1\nw1 f f size=0x8 size=0x8\n", "line 2: w1: size given twice"),
    ("chkwin-windows 1\nw1 f f below_sp=x\n", "line 2: w1: bad below_sp 'x'"),
    ("chkwin-windows 1\nw1 f f+0x8 size=0x8\n", "line 2: w1: LAST lies past the symbol's size"),
    ("chkwin-windows 1\nw1 f f\nw1 g g\n", "line 3: window w1 named twice"),
    ("chkwin-windows 1\nw1  f f\n", "line 2: w1: '' is not"),
    ("chkwin-windows 1\n" + "#" * 1025 + "\n", "line 2: longer than 1024 bytes"),
    ("chkwin-windows 1\n" + "".join(f"w{n} f f\n" for n in range(4097)),
     "line 4098: more than 4096 windows"),
])
def test_a_bad_file_is_one_line_naming_where(text, msg):
    with pytest.raises(WindowsError) as e:
        windows.parse(text)
    assert str(e.value).startswith(msg), str(e.value)
    assert "\n" not in str(e.value)


SYMBOLS = {(None, "f"): (0x1000, 0x1040), (None, "g"): (0x1040, 0x1080),
           ("ext4", "h"): (0x9000, 0x9100)}


def test_place_sorts_and_takes_adjacent_windows():
    ws = windows.parse("chkwin-windows 1\nb g g+0x4\na f+0x38 f+0x3c\nc ext4:h+0x10 ext4:h+0x10\n"
                       "d f f+0x34\n")
    placed = windows.place(ws, SYMBOLS)
    assert [(w.name, first, last) for w, first, last in placed] == [
        ("d", 0x1000, 0x1034), ("a", 0x1038, 0x103c), ("b", 0x1040, 0x1044),
        ("c", 0x9010, 0x9010)]


@pytest.mark.parametrize("line, msg", [
    ("a nosuch nosuch", "a: no symbol nosuch"),
    ("a nfs:h nfs:h", "a: no symbol h in module nfs"),
    ("a f+0x40 f+0x40", "a: f+0x40 is past the end of f (0x40 bytes)"),
    ("a f f+0x40 size=0x100\nb g g", "windows a and b overlap"),
    ("a f+0x8 f+0x10\nb f+0x10 f+0x14", "windows a and b overlap"),
])
def test_place_refuses_what_it_cannot_place(line, msg):
    with pytest.raises(WindowsError, match=msg.replace("+", r"\+").replace("(", r"\(")
                       .replace(")", r"\)")):
        windows.place(windows.parse("chkwin-windows 1\n" + line + "\n"), SYMBOLS)


def test_a_function_with_labels_ends_at_its_size():
    """kallsyms lists a label inside a function as a symbol: size= (which
    stackscan writes) says where the function really ends."""
    labelled = dict(SYMBOLS)
    labelled[(None, "f")] = (0x1000, 0x1010)
    ws = windows.parse("chkwin-windows 1\na f+0x20 f+0x24\n")
    with pytest.raises(WindowsError, match="past the end of f"):
        windows.place(ws, labelled)
    ws = windows.parse("chkwin-windows 1\na f+0x20 f+0x24 size=0x40\n")
    assert windows.place(ws, labelled)[0][1:] == (0x1020, 0x1024)
