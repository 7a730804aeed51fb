"""Markers of the test suite."""


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "guest: boots a QEMU guest or needs the lab's kernels, loader or "
        "root filesystem (make test runs these after make kernels; make test-host "
        "runs the rest)")
