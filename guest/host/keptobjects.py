"""Which objects of a kernel tree a header change cannot alter, so that
make need not compile them again (guest/host/kbuild.py).

A flavour's tree starts as a copy of a built sibling's, and make rebuilds
every object that includes a header the series changes: the barrier patch
touches arch/arm64/include/asm/io.h, which 604 of 936 objects include, but
only a few of them ever expand the changed line.  An object is kept (its
time stamp set after every prerequisite's) when all of these hold:

- each changed header's change keeps its line count in every hunk, so no
  line of it moves (line numbers reach the code through __LINE__ and the
  debug information);
- every changed line, before and after, is a statement
  kernel-patches/witnesses names with the instruction words every
  expansion of it compiles to (an asm volatile barrier cannot be
  dropped), and the object holds none of the words named for that
  header: it never expanded the lines, nor will it the lines that
  replace them in place;
- nothing else the object depends on (its source, another header, a
  config option's stamp) is newer than the object, and its command line
  is unchanged (make still compares that itself).

Anything else is left to make, which rebuilds it.
"""

import difflib
import os
import re

WITNESSES = "witnesses"
WILDCARD = re.compile(r"\$\(wildcard (\S+?)\)")


def read_witnesses(path):
    """{(header, statement): {instruction word as little-endian bytes}}
    from a witnesses file: tab-separated header, statement, hex words."""
    table = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        try:
            header, statement, words = fields
            table[(header, statement)] = {int(w, 16).to_bytes(4, "little")
                                          for w in words.split()}
        except ValueError:
            raise ValueError(f"{path}:{n}: not 'header<TAB>statement<TAB>hex words'")
    return table


def changed_lines(old, new):
    """[(old line, new line)] of the lines that differ when every hunk of
    old -> new keeps its line count; None when one moves a line."""
    a, b = old.decode(errors="replace").splitlines(), new.decode(errors="replace").splitlines()
    pairs = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if tag != "replace" or i2 - i1 != j2 - j1:
            return None
        pairs += zip(a[i1:i2], b[j1:j2])
    return pairs


def statement_of(line):
    """A line of a macro body as the witnesses name it: without the
    continuation backslash, a trailing comment and the indentation."""
    return re.sub(r"/\*.*?\*/", "", line.rstrip().rstrip("\\")).strip()


def header_words(changes, witnesses):
    """{header: words any object expanding its changed lines contains} for
    each changed file whose change moves no line and touches only named
    statements (the others cannot be judged: an object depending on one
    is left to make).  changes: {path: (old bytes, new bytes or None)}."""
    words = {}
    for header, (old, new) in changes.items():
        pairs = changed_lines(old, new) if old is not None and new is not None else None
        if not pairs or not all((header, statement_of(line)) in witnesses
                                for pair in pairs for line in pair):
            continue
        # Every named statement's words, not only the old side's: an
        # object may predate the tree's last rewrite of the header (a
        # build cut short), compiled against any of them.
        words[header] = set().union(*(w for (h, _), w in witnesses.items() if h == header))
    return words


def cmd_file_of(obj):
    """Where kbuild keeps the command and prerequisites obj was built
    with: .<name>.cmd beside it."""
    return obj.with_name(f".{obj.name}.cmd")


def prerequisites(cmd_file, tree):
    """The paths a .cmd file names (its source, the headers it read, the
    config options' stamps it tested, and words of its command line that
    name no file)."""
    text = WILDCARD.sub(r"\1", cmd_file.read_text(errors="replace"))
    return [tree / token for token in text.split()
            if "/" in token and not token.startswith(("$", "cmd_", "savedcmd_", "source_",
                                                       "deps_"))
            and not token.endswith(":")]


def keep(tree, changes, witnesses):
    """Stamp as up to date every object of tree that changes (the headers
    just rewritten: {path relative to tree: (old bytes, new bytes)})
    cannot alter; the number kept."""
    words = header_words(changes, witnesses)
    if not words:
        return 0
    words = {tree / h: w for h, w in words.items()}
    stamps = {}

    def stamp(path):
        """mtime in ns, 0 for a path that does not exist (cached: the
        objects share most of their headers)."""
        if path not in stamps:
            try:
                stamps[path] = path.stat().st_mtime_ns
            except OSError:
                stamps[path] = 0
        return stamps[path]
    kept = 0
    for obj in tree.rglob("*.o"):
        cmd_file = cmd_file_of(obj)
        if not cmd_file.is_file() or not obj.is_file():
            continue
        built = obj.stat().st_mtime_ns
        newer = {p for p in prerequisites(cmd_file, tree) if stamp(p) > built}
        if not newer or not newer <= words.keys():
            continue
        code = obj.read_bytes()
        if any(w in code for h in newer for w in words[h]):
            continue
        os.utime(obj)
        kept += 1
    return kept
