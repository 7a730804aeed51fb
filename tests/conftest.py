"""How the suite shares the machine's cores (pytest-xdist, --dist
loadgroup; tests/run).  A test runs in the group its module names with
pytest.mark.xdist_group, or else in its module's own group: one worker
runs a group's tests one after another, so a module fixture that boots
once boots once, and modules that share a process-wide cache of boots
(tests/boots.py) name one group.

xdist hands out groups in the order they are collected, a worker taking
the next one when it is down to its last two tests, so the groups start
longest first, by what their tests took the last time each ran on this
machine (test-durations.json in the cache, a time per test), else on the
machine that wrote tests/durations.json (the same form, committed, so
that a first run from an empty cache sorts too): the demo starts first,
not last.  A test never timed counts nothing."""

import json
import math
import pathlib

import pytest

from common.cache import cache_root
from common.jsonfile import write_json

DURATIONS = "test-durations.json"
COMMITTED = pathlib.Path(__file__).with_name("durations.json")
# The key under which the controller hands its reading to the workers:
# every worker must sort alike, or xdist stops on their differing lists.
WORKER_KEY = "chkwin_test_durations"
_group_of = {}
_seconds = {}


def durations_path():
    return cache_root() / DURATIONS


def read_durations(path):
    """{test id: seconds} in path; {} for a missing or damaged file."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(doc, dict):
        return {}
    return {k: v for k, v in doc.items()
            if isinstance(v, (int, float)) and math.isfinite(v) and v >= 0}


def pytest_configure(config):
    if hasattr(config, "workerinput"):
        config.chkwin_durations = config.workerinput.get(WORKER_KEY, {})
    else:
        config.chkwin_durations = read_durations(COMMITTED) | read_durations(durations_path())


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    node.workerinput[WORKER_KEY] = node.config.chkwin_durations


def group_of(item):
    return item.get_closest_marker("xdist_group").args[0]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    # Before xdist's own hook, which reads the mark into each test's id.
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
        _group_of[item.nodeid] = group_of(item)
    last = config.chkwin_durations
    cost, first = {}, {}
    for item in items:
        g = group_of(item)
        cost[g] = cost.get(g, 0) + last.get(item.nodeid, 0)
        first.setdefault(g, len(first))
    # A stable sort: tests keep their order within a group.
    items.sort(key=lambda item: (-cost[group_of(item)], first[group_of(item)]))


def pytest_runtest_logreport(report):
    # Under xdist the controller sees every report, its id ending in
    # '@group'; in one process the collection knew the id as it is.
    nodeid, at, _ = report.nodeid.rpartition("@")
    if report.nodeid in _group_of or not at:
        nodeid = report.nodeid
    _seconds[nodeid] = _seconds.get(nodeid, 0) + report.duration


def pytest_sessionfinish(session):
    # The controller (or the only process) writes; a test keeps its last
    # time until it runs again, so a run of a few tests leaves the others'.
    if hasattr(session.config, "workerinput") or not _seconds:
        return
    write_json(durations_path(), dict(read_durations(durations_path()), **{
        t: round(s, 2) for t, s in sorted(_seconds.items())}))
