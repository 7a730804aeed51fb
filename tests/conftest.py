"""How the suite shares the machine's cores (pytest-xdist, --dist
loadgroup; tests/run).  A test runs in the group its module names with
pytest.mark.xdist_group, or else in its module's own group: one worker
runs a group's tests one after another, so a module fixture that boots
once boots once, and modules that share a process-wide cache of boots
(tests/boots.py) name one group."""

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    # Before xdist's own hook, which reads the mark into each test's id.
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
