"""The flight recorder's rules (analysis/flight.py) on synthetic logs with
known answers (host only): a full log cut down to what `--record
failures` keeps gives the same attributions, block completions included,
and a failure whose history the rings did not reach back over is never
called covered.  The guest side (tests/test_flight_guest.py) runs the
BPF rings themselves."""

import json

import pytest


from analysis import chkwinlog
from analysis import correlate
from analysis import flight
from analysis import fsgeom
from analysis import summary
from analysis import synthlog


def answers(c):
    """What an attribution says, per failure, in the order of the verdicts."""
    return [(f.kind, f.ino, f.cpu, f.ts, f.attributed, f.group_calls,
             f.call, [a.ts for a in f.window_arrivals], f.block)
            for f in c.failures]


@pytest.fixture(scope="module", params=[dict(seed=7), dict(seed=8, dirs=3),
                                        dict(seed=9, verify="absent"),
                                        dict(seed=10, sample_hz=20000)],
                ids=["inode", "metadata", "iget-only", "sampler"])
def full(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("flight")
    s = synthlog.generate(igets=3000, k=4, m=2, **request.param)
    s.write(tmp / "log.bin")
    (tmp / "geo.json").write_text(json.dumps(synthlog.GEOMETRY))
    geo = fsgeom.from_json(tmp / "geo.json")
    log = chkwinlog.read(tmp / "log.bin")
    return log, geo, correlate.Correlation(log, geo)


def test_cut_log_gives_the_full_logs_attributions(full):
    log, geo, c = full
    cut = flight.cut(log, 256)
    cc = correlate.Correlation(cut, geo)
    assert answers(cc) == answers(c)
    assert c.attributed() >= 4 and len(c.failures) >= 6
    assert all(f.history_covered for f in cc.failures)
    assert all(f.history_covered is None for f in c.failures)
    # One snapshot per failing record; far from every record kept.
    assert len(cut.rows("snapshot")) == len(c.failing) + (
        0 if c.source == "iget" else sum(log.field("iget", "err", log.rows("iget")) == -74))
    assert len(cut) < len(log) / 4


@pytest.mark.parametrize("history", [2, 3, 4, 6, 8])
def test_covered_is_never_claimed_for_a_history_the_rings_lost(full, history):
    log, geo, c = full
    cc = correlate.Correlation(flight.cut(log, history), geo)
    for mine, want in zip(answers(cc), answers(c)):
        covered = cc.failures[answers(cc).index(mine)].history_covered
        assert not covered or mine == want, (history, mine, want)


def test_snapshots_send_each_record_once(full):
    log, _, _ = full
    cut = flight.cut(log, 64)
    heads = cut.heads()
    body = heads[heads["type"] != chkwinlog.TYPE_IDS["snapshot"]]
    keys = set(zip(body["type"], body["cpu"], body["ts"]))
    assert len(keys) == len(body)
    snaps = cut.of("snapshot")
    assert (snaps["calls"] + snaps["arrivals"] + snaps["blocks"]).sum() == len(body)
    assert set(snaps["trigger"]) <= {chkwinlog.TYPE_IDS["verify"], chkwinlog.TYPE_IDS["iget"]}


def test_cut_needs_a_full_log(full):
    log, _, _ = full
    with pytest.raises(ValueError):
        flight.cut(flight.cut(log, 16), 16)


def test_a_flight_logs_totals_come_from_its_counters(full, tmp_path):
    """A flight log holds the snapshots' records only: how many calls had a
    window arrival, and the arrivals by class, are the trailer's counters
    (what the BPF side counted), not its records."""
    log, geo, c = full
    cut = flight.cut(log, 16)
    trailer = synthlog.trailer_for(cut.header, cut.records, 3_000_000_000)
    trailer.update({"count.chksum_window": 1234, "count.irq.window": 7,
                    "count.sample.window": 5, "count.irq.kernel": 99999})
    synthlog.write(tmp_path / "flight.bin", cut.header, cut.records, trailer)
    flog = chkwinlog.read(tmp_path / "flight.bin")
    cc = correlate.Correlation(flog, geo)
    assert cc.window_totals() == (1234, 12)
    assert c.window_totals() == (len(c.window_calls), int(c.arrivals.window.sum()))
    s = summary.summarize(flog, tmp_path / "flight.bin", cc)
    assert s["record"] == "failures" and s["window_hit_calls"] == 1234
    assert s["classes"]["irq"]["window"] == 7 and s["classes"]["irq"]["kernel"] == 99999


def test_a_missing_counter_is_an_error_and_a_cut_flight_log_has_no_totals(full, tmp_path):
    """Counters are read by name: one the trailer lacks (renamed on the C
    side, or another version's log) is an error, never a silent 0; a flight
    log cut before its trailer has no totals (None), not zero."""
    log, geo, _ = full
    cut = flight.cut(log, 16)
    trailer = synthlog.trailer_for(cut.header, cut.records, 3_000_000_000)
    del trailer["count.chksum_window"]
    synthlog.write(tmp_path / "flight.bin", cut.header, cut.records, trailer)
    flog = chkwinlog.read(tmp_path / "flight.bin")
    with pytest.raises(chkwinlog.LogError, match="no count.chksum_window"):
        correlate.Correlation(flog, geo).window_totals()
    flog.trailer = None
    assert correlate.Correlation(flog, geo).window_totals() == (None, None)
    assert flog.counter("irq.window") is None
