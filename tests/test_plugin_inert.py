"""Installed but unused, the plugin is registered and silent."""

from __future__ import annotations

from importlib.metadata import entry_points

import pytest


def test_the_plugin_is_registered_under_the_pytest11_entry_point() -> None:
    found = [ep for ep in entry_points(group="pytest11") if ep.name == "retrieval"]
    assert [ep.value for ep in found] == ["pytest_retrieval.plugin"]


def test_a_plain_run_loads_the_plugin_and_prints_nothing_of_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_ok():\n    assert True\n")
    pytester.makeconftest(
        "def pytest_configure(config):\n    assert config.pluginmanager.hasplugin('retrieval')\n"
    )
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1)
    # pytest itself lists installed plugins ("plugins: ..., retrieval-0.1.0"); nothing else may
    # mention us.
    ours = [
        line for line in result.outlines if "retrieval" in line and not line.startswith("plugins:")
    ]
    assert ours == []
