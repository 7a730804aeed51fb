"""analysis/ on synthetic logs with known answers (host only, no guest)."""

import json
import re
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from common import PY, REPO

from analysis import chkwinlog
from analysis import compare
from analysis import correlate
from analysis import fsgeom
from analysis import heatmap
from analysis import poisson
from analysis import synthlog
from analysis.documents import Failure

ANALYZE = REPO / "analysis" / "chkwin-analyze"
K, M = 5, 3


def analyze(*args):
    return subprocess.run([PY, str(ANALYZE), *map(str, args)],
                          capture_output=True, text=True)


@pytest.fixture(scope="module")
def geometry(tmp_path_factory):
    path = tmp_path_factory.mktemp("geo") / "disk.json"
    path.write_text(json.dumps(synthlog.GEOMETRY))
    return path


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    s = synthlog.generate(igets=4000, k=K, m=M, seed=7)
    path = tmp_path_factory.mktemp("synth") / "log.bin"
    s.write(path)
    return s, path


def correlation(path, geometry):
    return correlate.Correlation(chkwinlog.read(path), fsgeom.from_json(geometry))


# --- correlate -------------------------------------------------------------

def test_synthetic_log_reads_back_complete(synth):
    s, path = synth
    log = chkwinlog.read(path)
    assert log.status == "complete"
    assert len(log) == len(s.records)


@pytest.mark.parametrize("verify", ["tp_btf", "absent"])
def test_correlate_finds_exactly_the_window_failures(tmp_path, geometry, verify):
    s = synthlog.generate(igets=4000, k=K, m=M, seed=11, verify=verify)
    s.write(tmp_path / "log.bin")
    corr = correlation(tmp_path / "log.bin", geometry)
    assert corr.source == ("verify" if verify == "tp_btf" else "iget")
    got = {f.ino: f for f in corr.failures}
    want = {e["ino"]: e for e in s.expected}
    assert set(got) == set(want)
    assert {i for i, f in got.items() if f.attributed} == \
        {i for i, e in want.items() if e["attributed"]}
    assert corr.attributed() == K
    for ino, e in want.items():
        f = got[ino]
        assert f.cpu == e["cpu"]
        if e["attributed"]:
            assert f.call.caller == e["caller"]
            assert len(f.window_arrivals) == 1
            assert f.window_arrivals[0].cpu == e["cpu"]
            assert 0 < f.window_arrivals[0].position < 1
        else:
            # The window arrival on the other CPU at that moment is not its own.
            assert f.window_arrivals == []
        assert f.block.ts == e["block_ts"], ino
        assert f.block.cross_cpu == (e["block_cpu"] != e["cpu"])
        assert f.block.latency_ns == e["ts"] - e["block_ts"]


def test_metadata_failures_are_tied_to_their_calls(tmp_path, geometry):
    """Directory-block verdicts (metadata records) are failures of their
    own kind, tied to the EXT4_CHKSUM_DIR call that had the window
    arrival; and every window-hit call says what became of its result."""
    dirs = 3
    s = synthlog.generate(igets=3000, k=K, m=M, seed=13, dirs=dirs)
    s.write(tmp_path / "log.bin")
    corr = correlation(tmp_path / "log.bin", geometry)
    kinds = {}
    for f in corr.failures:
        kinds.setdefault(f.kind, []).append(f)
    assert set(kinds) == {"inode", "dir"}
    assert len(kinds["inode"]) == K + M and len(kinds["dir"]) == dirs
    want = sorted(e["meta_block"] for e in s.expected if e["kind"] == "dir")
    assert sorted(f.meta_block for f in kinds["dir"]) == want
    for f in kinds["dir"]:
        assert f.attributed and f.call.caller == "EXT4_CHKSUM_DIR"
        assert f.group_calls == 1 and len(f.window_arrivals) == 1
        assert f.call.result == f.computed
        assert f.block is None
    assert corr.by_kind() == {"inode": (K + M, K), "dir": (dirs, dirs)}
    assert corr.outcomes_by_caller() == s.outcomes
    assert s.outcomes["dir"] == {"failed": dirs, "matched": 1, "not verified": 0}
    assert s.outcomes["bitmap"] == {"failed": 0, "matched": 0, "not verified": 1}


def test_correlate_cli_json_and_csv(synth, geometry):
    s, path = synth
    proc = analyze("correlate", path, "--geometry", geometry)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    assert res["attributed"] == K and len(res["failures"]) == K + M
    # The JSON reads back as the failures it was written from.
    corr = correlation(path, geometry)
    assert [Failure.from_json(f) for f in res["failures"]] == corr.failures
    proc = analyze("correlate", path, "--geometry", geometry, "-f", "csv")
    lines = proc.stdout.splitlines()
    assert len(lines) == 1 + K + M and lines[0].startswith("ino,")
    assert lines[1:] == [",".join(map(str, f.csv_row())) for f in corr.failures]
    proc = analyze("correlate", path, "--arrivals", "-f", "csv")
    rows = proc.stdout.splitlines()
    assert proc.returncode == 0 and len(rows) > 1000
    # K window hits that failed, and M decoys on the other CPU that did not.
    assert sum(",window," in r for r in rows) == K + M


def test_arrivals_are_placed_in_their_call(synth, geometry):
    _, path = synth
    corr = correlation(path, geometry)
    a, calls = corr.arrivals, corr.calls
    assert len(a) > 0
    assert (calls["cpu"][a.call] == a.cpu).all()
    assert (calls["ts"][a.call] <= a.ts).all() and (a.ts <= calls["end_ns"][a.call]).all()
    assert ((0 <= a.position) & (a.position <= 1)).all()


def test_without_geometry_blocks_are_unknown(synth):
    _, path = synth
    corr = correlate.Correlation(chkwinlog.read(path))
    assert all(f.block is None for f in corr.failures)
    assert corr.attributed() == K


# --- fs geometry -----------------------------------------------------------

@pytest.mark.parametrize("opts", [["-b", "4096", "-g", "4096", "-O", "64bit,metadata_csum"],
                                  ["-b", "1024", "-O", "^64bit,metadata_csum"]])
def test_geometry_from_image_matches_dumpe2fs(tmp_path, opts):
    mke2fs = shutil.which("mke2fs", path="/usr/sbin:/sbin:/usr/bin")
    if not mke2fs:
        pytest.skip("e2fsprogs not installed")
    img = tmp_path / "fs.img"
    subprocess.run([mke2fs, "-q", "-F", "-t", "ext4", *opts, str(img), "48M"],
                   check=True, capture_output=True)
    dump = subprocess.run([shutil.which("dumpe2fs", path="/usr/sbin:/sbin"), str(img)],
                          capture_output=True, text=True).stdout
    tables = [int(t) for t in re.findall(r"Inode table at (\d+)-", dump)]
    geo = fsgeom.from_image(img)
    assert len(tables) > 1 and geo.inode_tables == tables
    ipg = int(re.search(r"Inodes per group:\s+(\d+)", dump).group(1))
    assert geo.inodes_per_group == ipg
    # First inode of group 1 is at the start of group 1's table.
    assert geo.inode_block(ipg + 1) == tables[1]
    assert geo.inode_sectors(ipg + 1) == (tables[1] * geo.block_size // 512,
                                          geo.block_size // 512)


def test_geometry_of_a_run_comes_from_its_cmdline(tmp_path, geometry):
    img = tmp_path / "disk.img"
    img.write_bytes(b"")
    shutil.copy(geometry, img.with_suffix(".json"))
    (tmp_path / "cmdline.txt").write_text(f"qemu -drive file={img},if=none,id=t\n")
    geo = fsgeom.find(tmp_path / "log.bin")
    assert geo.inode_tables == synthlog.GEOMETRY["inode_tables"]


# --- intervals -------------------------------------------------------------

@pytest.mark.parametrize("k,lo,hi", [(0, 0.0, 3.689), (1, 0.0253, 5.572),
                                     (10, 4.795, 18.39), (100, 81.36, 121.63)])
def test_garwood_intervals(k, lo, hi):
    got = poisson.poisson_ci(k)
    assert got[0] == pytest.approx(lo, abs=5e-4 * max(1, lo))
    assert got[1] == pytest.approx(hi, rel=2e-4)


def test_clopper_pearson_and_rate_ratio():
    assert poisson.binom_ci(3, 10) == pytest.approx((0.06674, 0.65245), abs=1e-4)
    assert poisson.binom_ci(0, 10)[1] == pytest.approx(0.30850, abs=1e-4)
    ratio, lo, hi = poisson.rate_ratio(10, 1e6, 10, 1e6)
    # binom_ci(10, 20) = 0.27196 .. 0.72804, mapped by p / (1 - p).
    assert (ratio, lo, hi) == pytest.approx((1.0, 0.37355, 2.67700), rel=1e-3)
    ratio, lo, hi = poisson.rate_ratio(4, 2e6, 6, 1e6)
    assert ratio == pytest.approx(1 / 3) and lo < ratio < hi
    assert poisson.rate_ratio(0, 1, 0, 1)[0] is None


def test_compare_verdict_is_computed(tmp_path, geometry):
    rows = []
    for n, (flavour, window, k) in enumerate([("unpatched", "gcc49", 12),
                                              ("patched", "gcc49", 10),
                                              ("unpatched", "off", 0)]):
        s = synthlog.generate(igets=3000, k=k, m=0, seed=20 + n, flavour=flavour,
                              window=window)
        path = tmp_path / f"{n}.bin"
        s.write(path)
        rows.append(compare.row(path, chkwinlog.read(path), correlation(path, geometry)))
    assert [r["failures"] for r in rows] == [12, 10, 0]
    assert [sum(k for k, _ in r["slices"]) for r in rows] == [12, 10, 0]
    assert all(len(r["slices"]) == compare.SLICES for r in rows)
    assert rows[0]["ci"][0] < rows[0]["per_million"] < rows[0]["ci"][1]
    v = compare.verdict(rows)
    assert v.startswith("22 of 22 failures follow an interrupt in the stack-release window")
    # 10 against 12 failures is no evidence either way: undecided, with what
    # would decide; the spread is what the logs' own slices show.
    assert "barrier flavour: undecided: " in v
    assert "more log slices (10 a log) a condition" in v
    assert "window: differs (gcc49/off inf" in v
    assert "the spread is within logs: spread between boots" in v
    proc = analyze("compare", tmp_path / "0.bin", tmp_path / "1.bin",
                   "--geometry", geometry)
    assert proc.returncode == 0, proc.stderr
    assert "verdict: 22 of 22 failures" in proc.stdout


def test_five_failures_against_none_are_undecided(tmp_path, geometry):
    """One gcc49 log with 5 failures against one with none, equal calls:
    the exact interval of 5 of 5 includes a ratio of 1, and time slices
    that agree better than Poisson (estimate below 1) cannot narrow it."""
    for n, (window, k) in enumerate([("gcc49", 5), ("gcc49", 0)]):
        synthlog.generate(igets=3000, k=k, m=0, seed=40 + n, window=window,
                          flavour=("unpatched", "patched")[n]).write(tmp_path / f"{n}.bin")
    proc = analyze("compare", tmp_path / "0.bin", tmp_path / "1.bin", "--geometry", geometry)
    assert proc.returncode == 0, proc.stderr
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("verdict: "))
    assert "barrier flavour: undecided: more log slices (10 a log) needed, too few failures" \
        in line and "patched/unpatched 0, 95% CI 0-1." in line, line


# --- heat maps and report --------------------------------------------------

def png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_heatmaps_are_valid_png_and_svg(synth, geometry, tmp_path):
    s, path = synth
    log = chkwinlog.read(path)
    corr = correlation(path, geometry)
    res = heatmap.write_all(log, corr, tmp_path)
    assert sum(res["window_column"].values()) == K + M
    width, height = heatmap.size_px(2)
    for stem in ("offset", "position"):
        assert png_size(tmp_path / f"{stem}.png") == (width, height)
        root = ET.parse(tmp_path / f"{stem}.svg").getroot()
        assert root.tag.endswith("svg")
        assert float(root.get("width").rstrip("pt")) == pytest.approx(width * 0.72)
        assert float(root.get("height").rstrip("pt")) == pytest.approx(height * 0.72)
    lines = (tmp_path / "arrivals.txt").read_text().splitlines()
    assert len(lines) == len(corr.arrivals)
    t, lat = lines[0].split()
    assert float(t) >= 0 and int(lat) >= 0


def test_function_heatmaps_count_the_arrivals_in_their_range(synth, geometry, tmp_path):
    """--function: a checksum function of the header, and any function of a
    System.map, each a figure whose counts are the arrivals (interrupts and
    ticks) with a pc in its range; a name nothing places is one line."""
    _, path = synth
    log = chkwinlog.read(path)
    pcs = np.concatenate([log.of(kind)["pc"] for kind in ("irq", "sample")])
    name, start, end = synthlog.FUNC1
    # A System.map that places a made-up function over its second half.
    half = start + (end - start) // 8 * 4
    sysmap = tmp_path / "System.map"
    sysmap.write_text(f"{start:016x} T firsthalf\n{half:016x} T secondhalf\n"
                      f"{end:016x} T after\n")
    proc = analyze("heatmap", path, "--geometry", geometry, "-o", tmp_path / "hm",
                   "--function", name, "--function", "secondhalf", "--symbols", sysmap)
    assert proc.returncode == 0, proc.stderr
    counts = [sum(int(n) for n in re.findall(r": (\d+)", line.split("by CPU:")[1]))
              for line in proc.stdout.splitlines()]
    assert counts == [int(np.count_nonzero((pcs >= start) & (pcs < end))),
                      int(np.count_nonzero((pcs >= half) & (pcs < end)))]
    assert counts[0] > counts[1] > 0
    assert png_size(tmp_path / "hm" / f"function-{name}.png") == heatmap.size_px(2)
    assert "nosuch: no text symbols of that name" in one_line_error(analyze(
        "heatmap", path, "--geometry", geometry, "-o", tmp_path / "hm",
        "--function", "nosuch", "--symbols", sysmap))
    assert "give --symbols" in one_line_error(analyze(
        "heatmap", path, "--geometry", geometry, "--function", "firsthalf"))


def test_report_is_self_contained_and_escaped(tmp_path, geometry):
    s = synthlog.generate(igets=1500, k=2, m=1, seed=3)
    s.header["kernel_release"] = "<script>alert(1)</script>"
    path = tmp_path / "log.bin"
    s.write(path)
    proc = analyze("report", tmp_path / "rep", path, "--geometry", geometry)
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "rep" / "report.html").read_text()
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert page.count('src="data:image/png;base64,') == 3
    assert 'src="http' not in page and "src='" not in page
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "2 of 3 failures follow an interrupt" in md


# --- bad input -------------------------------------------------------------

def one_line_error(proc):
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("chkwin-analyze: error: "), proc.stderr
    return lines[0]


@pytest.mark.parametrize("cmd", ["summary", "correlate", "heatmap", "compare"])
def test_wrong_magic(tmp_path, cmd):
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"NOTALOG\0" + bytes(64))
    assert "no magic" in one_line_error(analyze(cmd, bad))


def test_newer_version_missing_and_empty(synth, tmp_path):
    _, path = synth
    data = bytearray(path.read_bytes())
    newer = chkwinlog.VERSION + 1
    data[8:10] = struct.pack("<H", newer)
    (tmp_path / "newer.bin").write_bytes(data)
    assert f"unsupported log version {newer}" in one_line_error(
        analyze("summary", tmp_path / "newer.bin"))
    assert "No such file" in one_line_error(analyze("summary", tmp_path / "none.bin"))
    (tmp_path / "empty.bin").write_bytes(b"")
    assert "empty file" in one_line_error(analyze("correlate", tmp_path / "empty.bin"))


@pytest.mark.parametrize("version", [1, 2, 3])
def test_older_versions_still_read(tmp_path, geometry, version):
    """A log in the first format (no header CRC, a CRC per chunk), the
    second (no snapshot records) or the third (no record layout in the
    header) gives the same records and the same answers as the same run in
    the current one."""
    s = synthlog.generate(igets=1500, k=2, m=1, seed=3)
    s.write(tmp_path / "old.bin", version=version)
    s.write(tmp_path / "now.bin")
    old, now = chkwinlog.read(tmp_path / "old.bin"), chkwinlog.read(tmp_path / "now.bin")
    assert (old.version, now.version) == (version, chkwinlog.VERSION)
    assert old.status == now.status == "complete"
    assert (old.records == now.records).all()
    assert old.header == {k: v for k, v in now.header.items() if not k.startswith("record.")}
    c1, c2 = (correlation(tmp_path / f"{n}.bin", geometry) for n in ("old", "now"))
    assert c1.failures == c2.failures and c1.attributed() == 2


def test_corrupt_chunk_names_the_offset(synth, tmp_path):
    _, path = synth
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    (tmp_path / "c.bin").write_bytes(data)
    assert re.search(r"at byte \d+", one_line_error(analyze("correlate", tmp_path / "c.bin")))


def test_bad_geometry_file(synth, tmp_path):
    _, path = synth
    (tmp_path / "g.json").write_text("{}")
    one_line_error(analyze("correlate", path, "--geometry", tmp_path / "g.json"))
    one_line_error(analyze("correlate", path, "--image", tmp_path / "g.json"))


def test_truncated_log_is_a_flagged_partial_analysis(synth, geometry, tmp_path):
    s, path = synth
    data = path.read_bytes()
    cut = tmp_path / "cut.bin"
    cut.write_bytes(data[:len(data) * 2 // 3 + 13])
    for cmd in ("summary", "correlate", "compare"):
        proc = analyze(cmd, cut, "--geometry", geometry)
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr
        assert "truncated" in proc.stdout, cmd
        assert proc.stderr.startswith("chkwin-analyze: warning: ")
    res = json.loads(analyze("correlate", cut, "--geometry", geometry).stdout)
    assert res["truncated"] is True
    early = [e for e in s.expected if e["ts"] < min(f["ts"] for f in res["failures"]) + 1] \
        if res["failures"] else []
    assert {f["ino"] for f in res["failures"]} <= {e["ino"] for e in s.expected}
    assert early
    # Cut inside the file header: a one-line error, not a partial analysis.
    (tmp_path / "head.bin").write_bytes(data[:12])
    one_line_error(analyze("summary", tmp_path / "head.bin"))
