"""Reader of the windows file, version 1 (docs/windows.md): named ranges of
kernel instructions, by symbol, in which an interrupt does harm.

    ws = windows.read("lab.windows")
    ws[0].name, ws[0].first, ws[0].last      # Locations
    windows.place(ws, windows.symbols_from("System.map"))   # [(window, first, last)]
"""

import re
from dataclasses import dataclass, field

MAGIC = "chkwin-windows 1"
MAX_WINDOWS = 4096
MAX_LINE = 1024
_NAME = re.compile(r"[A-Za-z0-9_.+:-]{1,127}")
_LOCATION = re.compile(r"(?:([A-Za-z0-9_]{1,55}):)?([A-Za-z0-9_.$]{1,127})"
                       r"(?:\+0x([0-9a-fA-F]{1,8}))?")
_BELOW = re.compile(r"(-?[0-9]{1,10})(?:\.\.(-?[0-9]{1,10}))?")
_SIZE = re.compile(r"0x[0-9a-fA-F]{1,8}")
KEYS = ("size", "release", "access", "below_sp")


class WindowsError(Exception):
    """A file that is not a windows file: one line, naming the line."""


@dataclass(frozen=True)
class Location:
    module: str | None
    symbol: str
    offset: int

    def __str__(self):
        return (f"{self.module}:" if self.module else "") + f"{self.symbol}+{self.offset:#x}"


@dataclass(frozen=True)
class Window:
    name: str
    first: Location
    last: Location
    why: dict = field(default_factory=dict, compare=False)

    def extent(self, start, next_symbol):
        """End (exclusive) of the window's symbol placed at start: its size
        when the file gives one (a function may hold labels kallsyms lists
        as symbols), else the next symbol's address."""
        return start + int(self.why["size"], 16) if "size" in self.why else next_symbol


def location(text):
    """A Location, or None if text is not one."""
    m = _LOCATION.fullmatch(text)
    if not m:
        return None
    offset = int(m[3], 16) if m[3] else 0
    return None if offset % 4 else Location(m[1], m[2], offset)


def _window(fields):
    """A Window from a line's fields, or the reason it is none."""
    if len(fields) < 3:
        return "not NAME FIRST LAST [key=value...]"
    name, first, last = fields[0], location(fields[1]), location(fields[2])
    if not _NAME.fullmatch(name):
        return f"bad window name {name[:40]!r}"
    if first is None or last is None:
        bad = fields[1] if first is None else fields[2]
        return f"{name}: {bad[:60]!r} is not [MODULE:]SYMBOL[+0xOFF] with OFF a multiple of 4"
    if (first.module, first.symbol) != (last.module, last.symbol):
        return f"{name}: FIRST and LAST lie in different symbols"
    if first.offset > last.offset:
        return f"{name}: LAST comes before FIRST"
    why = {}
    for kv in fields[3:]:
        key, eq, value = kv.partition("=")
        if not eq or key not in KEYS:
            return f"{name}: unknown attribute {kv[:40]!r} (known: {', '.join(KEYS)})"
        if key in why:
            return f"{name}: {key} given twice"
        ok = {"below_sp": _BELOW.fullmatch, "size": _SIZE.fullmatch}.get(key, location)(value)
        if not ok:
            return f"{name}: bad {key} {value[:40]!r}"
        why[key] = value
    if "size" in why and last.offset >= int(why["size"], 16):
        return f"{name}: LAST lies past the symbol's size {why['size']}"
    return Window(name, first, last, why)


def parse(text):
    """[Window] of a windows file's text; WindowsError on the first bad line."""
    lines = text.split("\n")
    if lines[0] != MAGIC:
        raise WindowsError(f"line 1: not a windows file (want {MAGIC!r} first)")
    out, names = [], set()
    for n, line in enumerate(lines[1:], 2):
        if len(line) > MAX_LINE:
            raise WindowsError(f"line {n}: longer than {MAX_LINE} bytes")
        if not line or line.startswith("#"):
            continue
        w = _window(line.split(" "))
        if isinstance(w, str):
            raise WindowsError(f"line {n}: {w}")
        if w.name in names:
            raise WindowsError(f"line {n}: window {w.name} named twice")
        if len(out) == MAX_WINDOWS:
            raise WindowsError(f"line {n}: more than {MAX_WINDOWS} windows")
        names.add(w.name)
        out.append(w)
    return out


def read(path):
    try:
        with open(path, encoding="ascii") as f:
            return parse(f.read())
    except UnicodeDecodeError:
        raise WindowsError(f"{path}: not ASCII text") from None


def place(windows, symbols):
    """[(window, first, last)] addresses, sorted by first, of windows placed
    by symbols ({(module or None, name): [(start, next symbol)]}, as
    symbols_from() reads them); WindowsError for one it cannot place, one
    past its function's end, or two that overlap (loader/windows.c: the
    same rules and words)."""
    modules = {m for m, _ in symbols if m}
    out = []
    for w in windows:
        where = f" in module {w.first.module}" if w.first.module else ""
        if w.first.module and w.first.module not in modules:
            raise WindowsError(f"{w.name}: module {w.first.module} is not loaded")
        found = symbols.get((w.first.module, w.first.symbol), [])
        if len(found) > 1:
            raise WindowsError(f"{w.name}: {len(found)} text symbols are called "
                               f"{w.first.symbol}{where}")
        if not found:
            raise WindowsError(f"{w.name}: no symbol {w.first.symbol}{where}")
        start, next_symbol = found[0]
        end = w.extent(start, next_symbol)
        if start + w.last.offset >= end:
            raise WindowsError(f"{w.name}: {w.last} is past the end of {w.last.symbol} "
                               f"({end - start:#x} bytes)")
        out.append((w, start + w.first.offset, start + w.last.offset))
    out.sort(key=lambda p: p[1])
    for (a, _, a_last), (b, b_first, _) in zip(out, out[1:]):
        if b_first <= a_last:
            raise WindowsError(f"windows {a.name} and {b.name} overlap")
    return out


def symbols_from(path):
    """The text symbols of a /proc/kallsyms copy or a System.map, as place()
    takes them: each ends where the next symbol above it begins that is not
    one of its own labels (NAME_...), as the loader reads kallsyms."""
    syms = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3:
                module = parts[3].strip("[]") if len(parts) > 3 else None
                syms.append((int(parts[0], 16), parts[1], parts[2], module))
    syms.sort(key=lambda s: s[0])
    out = {}
    for i, (addr, kind, name, module) in enumerate(syms):
        if kind not in "tTwW":
            continue
        end = next((a for a, _, other, _ in syms[i + 1:]
                    if a > addr and not other.startswith(name + "_")), 1 << 64)
        out.setdefault((module, name), []).append((addr, end))
    return out


def instruction_windows(symbols, name, tag):
    """Windows-file lines watching each instruction of the core kernel's
    function name on its own (TAG.0x0, TAG.0x4, ...: adjacent windows, so
    that the inclusive ends are tested), placed by symbols (symbols_from)."""
    (start, end), = symbols[(None, name)]
    return [f"{tag}.{off:#x} {name}+{off:#x} {name}+{off:#x}"
            for off in range(0, end - start, 4)]


# msr daifclr, #3: unmasks IRQs and FIQs.
MSR_DAIFCLR_3 = 0xd50343ff
# The idle path's functions and the tags idle_windows gives their instructions.
IDLE_FUNCTIONS = {"cpu_do_idle": "idle", "arch_cpu_idle": "arch", "default_idle_call": "call"}


def after_unmask(image, symbols, name):
    """Offsets in the core kernel's function name of each instruction just
    after an msr daifclr, #3, read from the kernel's Image (loaded at
    _text) and placed by symbols (symbols_from).  An idle CPU leaves wfi
    with interrupts masked and takes them there."""
    text = min(addr for addr, _ in symbols[(None, "_text")])
    (start, end), = symbols[(None, name)]
    with open(image, "rb") as f:
        f.seek(start - text)
        code = f.read(end - start)
    words = [int.from_bytes(code[i:i + 4], "little") for i in range(0, len(code) - 3, 4)]
    return [4 * i + 4 for i, w in enumerate(words) if w == MSR_DAIFCLR_3]


def idle_windows(symbols):
    """A windows file's text over a kernel's idle path, placed by its own
    symbols (symbols_from): cpu_do_idle, arch_cpu_idle and
    default_idle_call one instruction a window, do_idle whole.
    Where a kernel has no window of its own, this is where most interrupts
    of an idle CPU land: where the idle path unmasks them after wfi (6.1
    in arch_cpu_idle, 6.12 in default_idle_call)."""
    lines = ["chkwin-windows 1"]
    for name, tag in IDLE_FUNCTIONS.items():
        lines += instruction_windows(symbols, name, tag)
    (start, end), = symbols[(None, "do_idle")]
    lines.append(f"do_idle do_idle do_idle+{end - start - 4:#x}")
    return "\n".join(lines) + "\n"
