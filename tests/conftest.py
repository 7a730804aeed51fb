"""How the suite shares the machine's cores (pytest-xdist, --dist
loadgroup; tests/run).  A test runs in the group its module names with
pytest.mark.xdist_group, or else in its module's own group: one worker
runs a group's tests one after another, so a module fixture that boots
once boots once, and modules that share a process-wide cache of boots
(tests/boots.py) name one group.

xdist hands groups to workers in the order they are collected, so the
groups start longest first, by what each took the last time the suite
ran on this machine (test-durations.json in the cache): the last worker
to finish then finishes a short group, not the demo.  A group never timed
keeps its place after the timed ones."""

import collections
import json

import pytest

from common.cache import cache_root
from common.jsonfile import write_json

DURATIONS = "test-durations.json"
_group_of = {}
_seconds = collections.Counter()


def durations_path():
    return cache_root() / DURATIONS


def last_durations():
    try:
        doc = json.loads(durations_path().read_text())
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def group_of(item):
    return item.get_closest_marker("xdist_group").args[0]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    # Before xdist's own hook, which reads the mark into each test's id.
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
        _group_of[item.nodeid] = group_of(item)
    last = last_durations()
    # A stable sort: tests keep their order within a group.
    first = {}
    for item in items:
        first.setdefault(group_of(item), len(first))
    items.sort(key=lambda item: (-float(last.get(group_of(item), 0) or 0),
                                 first[group_of(item)]))


def pytest_runtest_logreport(report):
    # Under xdist the controller sees every report, with the group after
    # the '@' of its id; in one process, the collection named it.
    nodeid, _, group = report.nodeid.partition("@")
    group = group or _group_of.get(nodeid)
    if group:
        _seconds[group] += report.duration


def pytest_sessionfinish(session):
    # Workers report to the controller, which writes once; a group keeps
    # its last time until it runs again, so a run of a few modules leaves
    # the others' times alone.
    if hasattr(session.config, "workerinput") or not _seconds:
        return
    write_json(durations_path(), dict(last_durations(), **{
        g: round(s, 1) for g, s in sorted(_seconds.items())}))
