"""The analysis's records as declared types, each with one to_json and one
from_json: a checksum failure as analysis/correlate.py finds it
(`chkwin-analyze correlate` prints them)."""

import dataclasses
from dataclasses import dataclass


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
class Failure:
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

    def to_json(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, d):
        return cls(**dict(d, call=None if d["call"] is None else Call(**d["call"]),
                          window_arrivals=[Arrival(**a) for a in d["window_arrivals"]],
                          block=None if d["block"] is None else Completion(**d["block"])))

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
                int(b.cross_cpu) if b else ""]


FAILURE_CSV = ["ino", "kind", "meta_block", "dev", "ts", "cpu", "tid", "source",
               "attributed", "group_calls",
               "call_caller", "call_ts", "call_end_ns", "window_arrival_ts",
               "window_arrival_offset_ns", "window_arrival_position",
               "block_sector", "block_ts", "block_cpu", "latency_ns", "cross_cpu"]
