"""The analysis's records as declared types, each with one to_json and one
from_json: an experiment's record (experiment.json: its conditions, every
boot's result, the boots lost, its settings and plan), which
guest/host/lab_demo.py writes as its run goes and analysis/experiment.py
reads; a boot's own status (status.json), which guest/host/run.py's boot()
returns and writes and the lab reads; and a checksum failure as
analysis/correlate.py finds it (`chkwin-analyze correlate` prints them).

experiment.json carries VERSION; a record of none was written before
records had one, in the layout of version 1, and is read as that (results
already recorded stay readable); another version is refused in one line.
status.json carries BOOT_VERSION likewise; one without a version was
written before it had one, and what it lacks takes its field's default."""

import dataclasses
import json
import pathlib
from dataclasses import dataclass, field

from common.errors import OneLineError
from common.jsonfile import write_json

VERSION = 1


class ExperimentError(Exception):
    pass


class BootStatusError(OneLineError):
    pass


class Record:
    """A record whose JSON is its fields, a key each (nested records too)."""
    # Fields of one kind of record only, which the others' JSON leaves out.
    omitted_when_none = ()

    def to_json(self):
        d = dataclasses.asdict(self)
        for k in self.omitted_when_none:
            if d[k] is None:
                del d[k]
        return d

    @classmethod
    def from_json(cls, d):
        return cls(**d)


@dataclass(kw_only=True)
class Condition(Record):
    """One condition of the experiment (analysis/design.py); its name is
    its boots' directory prefix."""
    name: str
    flavour: str
    window: str
    width: int
    singlestep: bool
    kind: str
    clock: str = "host"
    sample_hz: int | None = None    # the sampler rate of a rate-dose condition
    omitted_when_none = ("sample_hz",)


@dataclass(kw_only=True)
class Boot(Record):
    """A finished boot's result."""
    condition: str
    round: int
    slot: int
    dir: str
    guest_seconds: float
    wall_seconds: float
    calls: int                      # ext4.chksum_calls
    kernel: str | None = None
    failures: dict                  # the console's checksum failures by kind
    failures_total: int
    clock: dict | None = None       # run.py's status.json clock
    phase_seed: int | None = None
    interrupts: dict | None = None  # guest/host/interrupts.py's counts
    record_replay: bool = False
    host: str | None = None
    attempts: int = 1
    arrivals_per_s: float | None = None    # rate boots: the dose
    omitted_when_none = ("arrivals_per_s",)

    @classmethod
    def from_json(cls, d):
        b = cls(**d)
        int(b.calls), int(b.failures_total)     # numbers, or the record is damaged
        return b


@dataclass(kw_only=True)
class Missing(Record):
    """A boot lost on every attempt (its task killed)."""
    condition: str
    dir: str
    round: int
    slot: int
    phase_seed: int | None
    attempts: int
    reason: str


@dataclass(kw_only=True)
class Settings(Record):
    """How the run was made and planned: guest/lab_demo.py's flags, and the
    plan as it was fixed (plan_*: analysis/planning.py's dictionaries)."""
    engine: str | None = None
    engine_detail: str | None = None
    retries: int | None = None
    clock: str = "host"
    shift: int | None = None
    window: str = "gcc49"           # the counting window (design.primary_window)
    jobs: int | None = None
    boots: int | None = None
    aa_width: int | None = None
    power: float = 0.95
    aa_boots: int | None = None
    max_aa_boots: int | None = None
    plan_dispersion: dict | None = None
    plan_comparisons: list | None = None
    plan_power_range: list | None = None
    plan_reestimated: dict | None = None
    loop_instructions: int | None = None
    boot_seconds: float
    passes: int | None = None
    singlestep_seconds: float | None = None
    record_seconds: float
    record: str | None = None
    plan: dict | None = None        # {condition: boots}
    margin: float
    budget_minutes: float | None = None
    dose_boots: int | None = None
    rates: list | None = None
    smp: int
    mem: int | None = None
    sample_hz: int
    windows: dict = field(default_factory=dict)    # {flavour: window names}
    workload: str


BOOT_VERSION = 2


@dataclass(kw_only=True)
class BootStatus(Record):
    """status.json: what a boot booted (None in a replay's, whose recording
    says) and what its console said of it.  Version 2 added version and
    reason."""
    version: int = BOOT_VERSION
    flavour: str | None = None
    kernel: str | None = None       # the kernel's cache entry: two builds of a flavour apart
    stock_package: str | None = None
    root: str | None = None
    scenario: str | None = None
    duration: int | None = None
    append: str | None = None
    lab_windows: bool | None = None
    singlestep: bool | None = None
    smp: int | None = None
    clock: dict | None = None       # guest/host/run.py's clock_settings()
    phase_seed: int | None = None
    passes: int | None = None
    replay_of: str | None = None    # a replay's: the recorded boot's directory
    ending: str                     # exited, hang or panic
    qemu_exit: int | None = None
    scenario_status: int | None = None
    wall_seconds: float | None = None
    guest_uptime: float | None = None
    checksum_invalid: int = 0       # inode failures, as the first status.json had them
    checksum_failures: dict = field(default_factory=dict)  # by kind (guest/host/kmsg.py)
    checksum_failures_total: int = 0
    checksum_calls: int | None = None
    interrupts: dict | None = None  # guest/host/interrupts.py's counts
    chkwin: dict | None = None      # chkwin's closing record, as the console had it
    reason: str | None = None       # why the boot failed, one line; None when it did not
    omitted_when_none = ("replay_of", "reason")

    # What a boot whose version-less status.json predates a field had.
    UNVERSIONED_BOOT = {"root": "initramfs", "append": "", "lab_windows": False,
                        "singlestep": False, "clock": {"kind": "host"}}

    @classmethod
    def from_json(cls, d):
        version = d.get("version")
        if version is None:
            # Before versions, fields came one by one: keep the ones declared,
            # and give a boot (not a replay) what it had before the others.
            names = {f.name for f in dataclasses.fields(cls)}
            d = {k: v for k, v in d.items() if k in names}
            if "replay_of" not in d:
                d = {**cls.UNVERSIONED_BOOT, **d}
            d.setdefault("checksum_failures", {"inode": d.get("checksum_invalid", 0)})
            d.setdefault("checksum_failures_total", sum(d["checksum_failures"].values()))
            d["version"] = 1
        elif version != BOOT_VERSION:
            raise BootStatusError(f"a status of version {version!r}; "
                                  f"this lab reads version {BOOT_VERSION}")
        return cls(**d)

    @classmethod
    def read(cls, path):
        """The status in file path; BootStatusError, one line, when it
        cannot be read."""
        try:
            return cls.from_json(json.loads(pathlib.Path(path).read_text()))
        except OSError as e:
            raise BootStatusError(f"{path}: {e.strerror}") from None
        except BootStatusError as e:
            raise BootStatusError(f"{path}: {e}") from None
        except (ValueError, TypeError, AttributeError) as e:
            raise BootStatusError(f"{path}: not a boot's status ({e!r})") from None

    def write(self, path):
        write_json(path, self.to_json())


@dataclass(kw_only=True)
class ExperimentDoc:
    """experiment.json: the conditions in the report's order, every boot in
    the order it finished, the boots lost, the settings."""
    version: int = VERSION
    seed: int | list[int]           # a list: runs pooled (pool)
    conditions: list[Condition]
    boots: list[Boot]
    missing: list[Missing] = field(default_factory=list)
    settings: Settings

    def to_json(self):
        return {"version": self.version, "seed": self.seed,
                "conditions": [c.to_json() for c in self.conditions],
                "boots": [b.to_json() for b in self.boots],
                "missing": [m.to_json() for m in self.missing],
                "settings": self.settings.to_json()}

    @classmethod
    def from_json(cls, d):
        version = d.get("version", 1)
        if version != VERSION:
            raise ExperimentError(f"a record of version {version!r}; "
                                  f"this analysis reads version {VERSION}")
        doc = cls(seed=d["seed"], conditions=[Condition.from_json(c) for c in d["conditions"]],
                  boots=[Boot.from_json(b) for b in d["boots"]],
                  missing=[Missing.from_json(m) for m in d.get("missing") or []],
                  settings=Settings.from_json(d["settings"]))
        names = {c.name for c in doc.conditions}
        for b in doc.boots:
            if b.condition not in names:
                raise ExperimentError(f"boot {b.dir} names an unknown condition "
                                      f"{b.condition!r}")
        return doc

    def boots_of(self, name):
        """A condition's boots, in the order they ran."""
        return [b for b in self.boots if b.condition == name]

    def counts(self, name):
        """[(failures, calls)] of a condition's boots: what verdict.py pools."""
        return [(b.failures_total, b.calls) for b in self.boots_of(name)]

    def select(self, **want):
        """The conditions whose fields have the values wanted."""
        return [c for c in self.conditions
                if all(getattr(c, k) == v for k, v in want.items())]

    def recorded_logs(self):
        """log.bin of every recorded boot, relative to the experiment's
        directory, in the experiment's order of conditions."""
        return [f"{b.dir}/log.bin" for c in self.select(kind="recorded")
                for b in self.boots_of(c.name)]


def load(top):
    """The record of the run in directory top; ExperimentError, one line,
    when it cannot be read."""
    path = pathlib.Path(top) / "experiment.json"
    try:
        return ExperimentDoc.from_json(json.loads(path.read_text()))
    except OSError as e:
        raise ExperimentError(f"{path}: {e.strerror}") from None
    except ExperimentError as e:
        raise ExperimentError(f"{path}: {e}") from None
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise ExperimentError(f"{path}: not an experiment record ({e!r})") from None


# Settings that may differ between runs pooled as one: how a run was
# scheduled and sized, not what its boots measured.
POOL_MAY_DIFFER = ("jobs", "engine", "engine_detail", "retries", "budget_minutes", "boots",
                   "plan", "aa_boots", "max_aa_boots", "power", "plan_dispersion",
                   "plan_comparisons", "plan_power_range", "plan_reestimated")


def differences(doc, first):
    """What in doc's settings and kernels differs from first's."""
    out = [f"{k} {getattr(first.settings, k)!r} against {getattr(doc.settings, k)!r}"
           for k in sorted(f.name for f in dataclasses.fields(Settings))
           if k not in POOL_MAY_DIFFER
           and getattr(doc.settings, k) != getattr(first.settings, k)]
    kernels = [sorted({b.kernel for b in d.boots} - {None}) for d in (first, doc)]
    if kernels[0] != kernels[1]:
        out.append(f"kernels {', '.join(kernels[0]) or 'unrecorded'} against "
                   f"{', '.join(kernels[1]) or 'unrecorded'}")
    return out


def pool(docs, names, allow_different=False):
    """(record, differences): several runs of one experiment as one record,
    with the same conditions, every run's boots and lost boots (their
    directories prefixed by the run's), the first run's settings and
    every run's seed; and what the runs' measuring settings and kernels do
    not share.  Runs with other conditions do not pool; runs with other
    settings or kernels only with allow_different."""
    first = docs[0]
    runs = [pathlib.Path(n).resolve() for n in names]
    if len(set(runs)) != len(runs):
        raise ExperimentError("a run is named twice")
    found = []
    for doc, name in zip(docs[1:], names[1:]):
        if doc.conditions != first.conditions:
            raise ExperimentError(f"{name}: not the conditions of {names[0]}")
        found += [f"{name}: {d}" for d in differences(doc, first)]
    if found and not allow_different:
        raise ExperimentError(f"runs measured differently ({'; '.join(found)}); "
                              "--allow-different pools them anyway")
    boots, missing = ([dataclasses.replace(b, dir=f"{pathlib.Path(name).name}/{b.dir}")
                       for doc, name in zip(docs, names) for b in getattr(doc, key)]
                      for key in ("boots", "missing"))
    return dataclasses.replace(first, boots=boots, missing=missing,
                               seed=[d.seed for d in docs]), found


@dataclass
class Call:
    """The checksum call a failure is traced to (its chksum record)."""
    ts: int
    end_ns: int
    cpu: int
    caller: str
    length: int
    seed: int
    result: int
    irqs: int


@dataclass
class Arrival:
    """An interrupt arrival inside a checksum call."""
    source: str
    ts: int
    cpu: int
    offset_ns: int
    position: float
    pc: int
    func: int
    offset: int


@dataclass
class Completion:
    """The block completion that brought a failing inode's table block in."""
    ts: int
    cpu: int
    sector: int
    nr_sectors: int
    latency_ns: int
    cross_cpu: bool


@dataclass
class Ran:
    """Something that ran inside a failing computation (analysis/interference.py):
    what (irq, softirq, hrtimer, timer, tasklet, work, switch), its
    identity ("timer ext4_chksum_percpu_scrub") and what else its record says."""
    ts: int
    cpu: int
    what: str
    name: str
    detail: str


@dataclass
class Computation:
    """A failure's whole computation: from its group's first call to the
    verdict, on the CPUs its calls and verdict ran on."""
    begin: int
    end: int
    cpus: list[int]
    calls: int
    inside: list[Ran]
    # (cpu, begin, end): where the task was, each CPU while it was there
    where: list[tuple[int, int, int]] = field(default_factory=list)

    @classmethod
    def from_json(cls, d):
        return cls(**dict(d, inside=[Ran(**r) for r in d["inside"]],
                          where=[tuple(w) for w in d.get("where", ())]))


@dataclass
class Suspect:
    """An identity that ran inside failing computations: in how many (and
    what share) of the failing ones of its kind, and of the good ones the
    log covers (None: no good one)."""
    name: str
    failing: int
    failing_share: float
    good: int
    good_share: float | None
    p: float | None = None      # one-sided Fisher exact, failing against good


@dataclass
class Diagnosis:
    """Why a failure failed, as far as the log can say (analysis/
    interference.py): window, interference (suspects ranked, first the
    likeliest), undecided (what ran, none accused), nothing (then remains
    says what is left) or not covered."""
    kind: str
    words: str
    suspects: list[Suspect]
    good_computations: int
    remains: str | None

    @classmethod
    def from_json(cls, d):
        return cls(**dict(d, suspects=[Suspect(**x) for x in d["suspects"]]))


@dataclass
class Failure(Record):
    """A checksum verdict that failed, traced back to the calls that fed
    it (analysis/correlate.py); the fields in the order the JSON has them."""
    kind: str
    ino: int
    dev: int
    ts: int
    meta_block: int | None      # the metadata block; None for an inode
    cpu: int
    tid: int
    source: str                 # the record the verdict came from: verify or iget
    stored: int | None          # verify records only
    computed: int | None
    group_calls: int
    attributed: bool
    history_covered: bool | None    # flight logs only
    call: Call | None
    window_arrivals: list[Arrival]
    block_sector: int | None
    block: Completion | None
    computation: Computation | None     # None in JSON from before it was kept
    diagnosis: Diagnosis | None     # None until ranked together, or from older JSON

    @classmethod
    def from_json(cls, d):
        return cls(**dict(d, call=None if d["call"] is None else Call(**d["call"]),
                          window_arrivals=[Arrival(**a) for a in d["window_arrivals"]],
                          block=None if d["block"] is None else Completion(**d["block"]),
                          computation=None if d.get("computation") is None
                          else Computation.from_json(d["computation"]),
                          diagnosis=None if d.get("diagnosis") is None
                          else Diagnosis.from_json(d["diagnosis"])))

    def csv_row(self):
        """The failure flattened to FAILURE_CSV's columns: its first window
        arrival only, "" for what it lacks."""
        w = self.window_arrivals[0] if self.window_arrivals else None
        c, b = self.call, self.block
        return [self.ino, self.kind, "" if self.meta_block is None else self.meta_block,
                self.dev, self.ts, self.cpu, self.tid, self.source,
                int(self.attributed), self.group_calls, c.caller if c else "",
                c.ts if c else "", c.end_ns if c else "", w.ts if w else "",
                w.offset_ns if w else "", w.position if w else "",
                "" if self.block_sector is None else self.block_sector,
                b.ts if b else "", b.cpu if b else "", b.latency_ns if b else "",
                int(b.cross_cpu) if b else "",
                self.diagnosis.kind if self.diagnosis else "",
                self.diagnosis.suspects[0].name
                if self.diagnosis and self.diagnosis.suspects else ""]


FAILURE_CSV = ["ino", "kind", "meta_block", "dev", "ts", "cpu", "tid", "source",
               "attributed", "group_calls",
               "call_caller", "call_ts", "call_end_ns", "window_arrival_ts",
               "window_arrival_offset_ns", "window_arrival_position",
               "block_sector", "block_ts", "block_cpu", "latency_ns", "cross_cpu",
               "diagnosis", "first_suspect"]
