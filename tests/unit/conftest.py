"""Every test under tests/unit is a unit test (pure logic, no JVM): marked here, once."""

import os

import pytest


def pytest_collection_modifyitems(items):
    here = os.path.dirname(os.path.abspath(__file__))
    for item in items:
        if str(item.fspath).startswith(here) and item.get_closest_marker("spark") is None:
            item.add_marker(pytest.mark.unit)
