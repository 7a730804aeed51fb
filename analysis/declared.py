"""What bpf/chkwin.h declares once about interrupt classes, probes, hooks
and counters (its CHKWIN_*_TABLE X-macros), read from the header itself,
so that the analysis names and counts what the loader does.

    declared.CLASSES        ["window", ..., "unknown"]: enum chkwin_class
    declared.RAN            ["irq", "hrtimer", ...]: enum chkwin_ran_kind, a ran
                            record's what
    declared.PROBES         ["chksum", ..., "snapshot"]: lost.PROBE
    declared.HOOKS          [Hook(name, probe, help)]: mode.NAME, --no-NAME
    declared.RINGS          {"calls": ("chksum", ...), ...}: the record types each
                            flight recorder ring keeps, CHKWIN_RECORDS
    declared.FLAGS          {"IN_CHKSUM": 0x01, ...}: CHKWIN_F_*, a record's flags
    declared.PROGRAMS       [Program(name, hook, ways)]: which BPF program serves
                            which hook in which ways (CHKWIN_WAY_* names without
                            the prefix), CHKWIN_PROGRAM_TABLE
    declared.COUNTERS       [(key, needs)] in enum chkwin_counter order: the
                            trailer's count.NAME and lost.PROBE keys and the
                            CHKWIN_NEED_* names (without the prefix) each needs
    declared.not_attached(header)   the keys a run of that header leaves
                            not-attached, by loader/needs.c's rule

The tree ships the header; one that cannot be read raises
DeclarationError with a one-line message.
"""

import collections
import pathlib
import re

from common import REPO
from common.errors import OneLineError

HEADER = REPO / "bpf" / "chkwin.h"

# A trailer's count.NAME or lost.NAME whose hooks the run left out
# (loader/names.h): not a zero, nothing was there to count.  A mode.HOOK
# starting with it: the record mode needs nothing from the hook.
NOT_ATTACHED = "not-attached"

# enum chkwin_need's conditions (the needs that are neither a probe nor a
# hook), as a log's header shows whether the plan met them.
CONDITIONS = {
    "FAILURES": lambda h: h.get("record") == "failures",
    "NOT_FAILURES": lambda h: h.get("record") != "failures",
    # mode.irq names the way to the interrupted regs (chkwin_irq_pc_modes).
    "IRQ_PC_KPROBE": lambda h: "kprobe" in h.get("mode.irq", "").split(":")[0].split("+"),
}

Hook = collections.namedtuple("Hook", "name probe help")
Program = collections.namedtuple("Program", "name hook ways")


class DeclarationError(OneLineError):
    """bpf/chkwin.h does not hold the tables as this reader knows them."""


def hook_attached(header, hook):
    """Whether the plan attached hook (its mode.HOOK is neither off nor
    absent nor not-attached, nor missing from the header)."""
    mode = header.get(f"mode.{hook}", "absent")
    return mode not in ("off", "absent") and not mode.startswith(NOT_ATTACHED)


# C as the preprocessor sees it after line splicing: string literals kept,
# comments one space.
_LEXEME = re.compile(r'"(?:\\.|[^"\\\n])*"|/\*.*?\*/|//[^\n]*', re.S)
# A table's body: strings, parentheses, commas and the rest.
_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|[(),]|[^"(),]+')


def _source(text):
    text = text.replace("\\\n", "")
    return _LEXEME.sub(lambda m: m[0] if m[0].startswith('"') else " ", text)


def _entries(body):
    """[(name, [argument, ...])] of a table's body NAME(...) NAME(...), or
    None if it is not that."""
    entries, depth, name, args, arg = [], 0, None, [], ""
    for tok in _TOKEN.findall(body):
        if depth == 0:
            if tok == "(" and name:
                depth, args, arg = 1, [], ""
            elif tok.strip() and (name or not re.fullmatch(r"\s*\w+\s*", tok)):
                return None
            else:
                name = tok.strip() or name
            continue
        if tok == "(":
            depth += 1
        elif tok == ")":
            depth -= 1
        if depth == 1 and tok == ",":
            args.append(arg.strip())
            arg = ""
        elif depth == 0:
            entries.append((name, args + [arg.strip()]))
            name = None
        else:
            arg += tok
    return entries if depth == 0 and name is None else None


class Declared:
    """The tables of one chkwin.h."""

    def __init__(self, path):
        self.path = path
        try:
            src = _source(pathlib.Path(path).read_text())
        except OSError as e:
            raise DeclarationError(f"{path}: cannot read the declarations: "
                                   f"{e.strerror}") from None
        classes = self._table(src, "CHKWIN_CLASS_TABLE", 2)
        probes = self._table(src, "CHKWIN_PROBE_TABLE", 3)
        hooks = self._table(src, "CHKWIN_HOOK_TABLE", 4)
        self._probes = {NAME: name for NAME, name, _ in probes}
        self._hooks = {NAME: name for NAME, name, _, _ in hooks}
        self.conditions = self._conditions(src)
        self.CLASSES = [name for _, name in classes]
        self.RAN = [name for _, name in self._table(src, "CHKWIN_RAN_TABLE", 2)]
        self.PROBES = list(self._probes.values())
        self.HOOKS = [Hook(name, self._probe(probe, name), self._help(help_, name))
                      for _, name, probe, help_ in hooks]
        # In enum chkwin_ring's order, which is the rings' numbering.
        m = re.search(r"enum chkwin_ring \{(.*?)\};", src, re.S)
        rings = re.findall(r"\bCHKWIN_RING_(\w+)\s*,", m[1]) if m else []
        if not rings:
            self._fail("no enum chkwin_ring")
        self.RINGS = {ring.lower(): () for ring in rings}
        for _, name, ring in self._table(src, "CHKWIN_RECORDS", 3):
            if ring != "NONE" and ring not in rings:
                self._fail(f"record {name} goes to ring {ring}, which is no CHKWIN_RING_*")
            if ring != "NONE":
                self.RINGS[ring.lower()] += (name,)
        self.FLAGS = {m[1]: int(m[2], 0) for m in re.finditer(
            r"^[ \t]*#[ \t]*define[ \t]+CHKWIN_F_(\w+)[ \t]+(0x[0-9a-fA-F]+|\d+)\b", src, re.M)}
        if not self.FLAGS:
            self._fail("no CHKWIN_F_* flags")
        ways = self._ways(src)
        self.PROGRAMS = [Program(prog, self._hook(HOOK, prog), self._way_set(expr, ways, prog))
                         for prog, HOOK, expr in self._table(src, "CHKWIN_PROGRAM_TABLE", 3)]
        # What attaching a hook meets: itself and the probe it feeds.
        self._gives = {name: frozenset([f"HOOK_{NAME}", probe])
                       for NAME, name, probe, _ in hooks}
        # A probe no hook feeds is attached where the plan meets all of alone.
        self._alone = {NAME: self._needs(alone, name) for NAME, name, alone in probes}
        self.COUNTERS = [(f"count.{name}", self._needs(needs, name))
                         for _, name, needs in self._table(src, "CHKWIN_COUNTER_TABLE", 3)]
        for _, group, needs in self._table(src, "CHKWIN_CLASS_COUNTS", 3):
            self.COUNTERS += [(f"count.{group}.{c}", self._needs(needs, group))
                              for c in self.CLASSES]
        self.COUNTERS += [(f"lost.{name}", frozenset([NAME]))
                          for NAME, name in self._probes.items()]

    def _fail(self, what):
        raise DeclarationError(f"{self.path}: cannot read the declarations: {what}")

    def _table(self, src, macro, arity):
        """The argument lists of a table's entries."""
        m = re.search(rf"^[ \t]*#[ \t]*define[ \t]+{macro}\((\w+)\)(.*)$", src, re.M)
        if not m:
            self._fail(f"no {macro}(X) table")
        entries = _entries(m[2])
        if not entries:
            self._fail(f"{macro} is not a list of {m[1]}(...) entries")
        for name, args in entries:
            if name != m[1] or len(args) != arity or not all(args):
                self._fail(f"{macro}: {name}({', '.join(args)}) is not {m[1]}() of "
                           f"{arity} arguments")
        return [args for _, args in entries]

    def _conditions(self, src):
        m = re.search(r"enum chkwin_need \{(.*?)\};", src, re.S)
        if not m:
            self._fail("no enum chkwin_need")
        found = set(re.findall(r"\bCHKWIN_NEED_(\w+)\s*=", m[1]))
        if found != set(CONDITIONS):
            self._fail(f"enum chkwin_need's conditions are {sorted(found)}, "
                       f"this reader knows {sorted(CONDITIONS)}")
        return found

    def _ways(self, src):
        m = re.search(r"enum chkwin_way \{(.*?)\};", src, re.S)
        if not m:
            self._fail("no enum chkwin_way")
        return set(re.findall(r"\bCHKWIN_WAY_(\w+)\s*=", m[1]))

    def _hook(self, NAME, of):
        if NAME not in self._hooks:
            self._fail(f"program {of} serves {NAME}, which is no hook")
        return self._hooks[NAME]

    def _way_set(self, expr, ways, of):
        got = set()
        for word in expr.split("|"):
            m = re.fullmatch(r"\s*CHKWIN_WAY_(\w+)\s*", word)
            if not m or m[1] not in ways:
                self._fail(f"program {of} serves in '{word.strip()}', which is no CHKWIN_WAY_*")
            got.add(m[1])
        return frozenset(got)

    def _probe(self, NAME, of):
        if NAME not in self._probes:
            self._fail(f"hook {of} feeds {NAME}, which is no probe")
        return self._probes[NAME]

    def _help(self, text, of):
        if text == "NULL":
            return None
        if not re.fullmatch(r'"[^"\\]*"', text):
            self._fail(f"hook {of}: its help is neither a plain string nor NULL")
        return text[1:-1]

    def _needs(self, expr, of):
        """The CHKWIN_NEED_* names (without the prefix) of a needs expression."""
        if expr == "0":
            return frozenset()
        needs = set()
        for word in expr.split("|"):
            m = re.fullmatch(r"\s*CHKWIN_NEED_(\w+)\s*", word)
            if not m or not (m[1] in self._probes or m[1] in self.conditions or
                             (m[1].startswith("HOOK_") and m[1][5:] in self._hooks)):
                self._fail(f"{of} needs '{word.strip()}', which is no CHKWIN_NEED_*")
            needs.add(m[1])
        return frozenset(needs)

    def met(self, header):
        """The needs a run meets, as its header says (loader/needs.c's
        chkwin_plan_needs from the plan)."""
        have = {c for c in self.conditions if CONDITIONS[c](header)}
        for name, gives in self._gives.items():
            if hook_attached(header, name):
                have |= gives
        return have | {NAME for NAME, alone in self._alone.items() if alone and alone <= have}

    def not_attached(self, header):
        """The trailer keys (count.NAME, lost.PROBE) a run with this header
        writes as not-attached."""
        have = self.met(header)
        return {key for key, needs in self.COUNTERS if not needs <= have}


DECLARED = Declared(HEADER)
CLASSES, RAN, PROBES, HOOKS, COUNTERS, PROGRAMS, RINGS, FLAGS = (
    DECLARED.CLASSES, DECLARED.RAN, DECLARED.PROBES, DECLARED.HOOKS, DECLARED.COUNTERS,
    DECLARED.PROGRAMS, DECLARED.RINGS, DECLARED.FLAGS)
not_attached = DECLARED.not_attached
