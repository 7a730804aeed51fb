"""The windows file (docs/windows.md, analysis/windows.py): what it
accepts, every way it refuses a bad file in one line naming the line or
the window, and placing windows by symbols (adjacent windows are fine,
overlapping ones and ranges past a function's end are not)."""

import subprocess

import pytest

from common import REPO

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
def test_a_bad_file_is_one_line_naming_where(c_reader, symbols, tmp_path, text, msg):
    """Both readers refuse it with the same line."""
    with pytest.raises(WindowsError) as e:
        windows.parse(text)
    assert str(e.value).startswith(msg), str(e.value)
    assert "\n" not in str(e.value)
    assert both(c_reader, symbols, tmp_path, text) == (f"error: {e.value}",) * 2


# A kallsyms copy: f with an inner label (f_loop), g, h in module ext4, and
# the symbols that end them; z is data.
KALLSYMS = """\
0000000000001000 t f
0000000000001010 t f_loop
0000000000001040 T g
0000000000001080 T next
0000000000001080 d z
0000000000009000 t h\t[ext4]
0000000000009100 t h_end_of_ext4\t[ext4]
0000000000009200 t other\t[ext4]
0000000000009300 t dup
0000000000009400 t dup
0000000000009500 t last
"""


@pytest.fixture(scope="module")
def symbols(tmp_path_factory):
    path = tmp_path_factory.mktemp("syms") / "kallsyms"
    path.write_text(KALLSYMS)
    return path


@pytest.fixture(scope="module")
def c_reader(tmp_path_factory):
    """The loader's reader (loader/windows.c) alone: tests/c/windows_main.c."""
    out = tmp_path_factory.mktemp("windows")
    subprocess.run(["make", "-s", "-C", str(REPO / "loader"), f"OUT={out}", "windows"],
                   check=True)
    return out / "host/windows_main"


def both(c_reader, symbols, tmp_path, text):
    """(Python's answer, C's answer) for a windows file: the placed windows
    as "NAME FIRST LAST" lines, or the one-line error."""
    path = tmp_path / "w.windows"
    path.write_text(text)
    try:
        py = [f"{w.name} {first:#x} {last:#x}" for w, first, last in
              windows.place(windows.parse(text), windows.symbols_from(symbols))]
    except WindowsError as e:
        py = f"error: {e}"
    proc = subprocess.run([str(c_reader), str(path), str(symbols)], capture_output=True,
                          text=True)
    assert proc.returncode in (0, 1), proc.stderr
    c = proc.stdout.splitlines() if proc.returncode == 0 else \
        proc.stderr.strip().replace(f"{path}: ", "")
    return py, c


def test_place_sorts_and_takes_adjacent_windows(c_reader, symbols, tmp_path):
    py, c = both(c_reader, symbols, tmp_path,
                 "chkwin-windows 1\nb g g+0x4\na f+0x38 f+0x3c\nc ext4:h+0x10 ext4:h+0xfc\n"
                 "d f f+0x34\ne last+0x100 last+0x100\n")
    assert py == c == ["d 0x1000 0x1034", "a 0x1038 0x103c", "b 0x1040 0x1044",
                       "c 0x9010 0x90fc", "e 0x9600 0x9600"]


@pytest.mark.parametrize("line, msg", [
    ("a nosuch nosuch", "a: no symbol nosuch"),
    ("a nfs:h nfs:h", "a: module nfs is not loaded"),
    ("a ext4:f ext4:f", "a: no symbol f in module ext4"),
    ("a h h", "a: no symbol h"),
    ("a z z", "a: no symbol z"),
    ("a dup dup", "a: 2 text symbols are called dup"),
    ("a f+0x40 f+0x40", "a: f+0x40 is past the end of f (0x40 bytes)"),
    ("a ext4:h+0x200 ext4:h+0x200", "a: ext4:h+0x200 is past the end of h (0x200 bytes)"),
    ("a f+0x20 f+0x24 size=0x20", "a: LAST lies past the symbol's size 0x20"),
    ("a f f+0x40 size=0x100\nb g g", "windows a and b overlap"),
    ("a f+0x8 f+0x10\nb f+0x10 f+0x14", "windows a and b overlap"),
])
def test_place_refuses_what_it_cannot_place(c_reader, symbols, tmp_path, line, msg):
    py, c = both(c_reader, symbols, tmp_path, "chkwin-windows 1\n" + line + "\n")
    assert py == c, (py, c)
    assert py.startswith("error: ") and msg in py, py


def test_a_function_with_labels_ends_at_its_size_or_its_next_function(
        c_reader, symbols, tmp_path):
    """kallsyms lists f's label f_loop as a symbol: f ends at g, not at
    f_loop (the loader's rule for NAME_... labels); size= says it exactly."""
    py, c = both(c_reader, symbols, tmp_path, "chkwin-windows 1\na f+0x20 f+0x3c\n")
    assert py == c == ["a 0x1020 0x103c"]
    py, c = both(c_reader, symbols, tmp_path, "chkwin-windows 1\na f+0x20 f+0x24 size=0x28\n")
    assert py == c == ["a 0x1020 0x1024"]
