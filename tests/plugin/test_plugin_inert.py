"""Installed but unused, the plugin is registered and silent."""

from __future__ import annotations

import json
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


def test_without_a_golden_set_there_is_no_header_line_and_no_section(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\n")
    pytester.makepyfile("def test_ok():\n    assert True\n\ndef test_fails():\n    assert 1 == 2\n")
    result = pytester.runpytest("-rA")
    result.assert_outcomes(passed=1, failed=1)
    # Not even on failures: no "retrieval: golden set ..." header, no sections.
    result.stdout.no_fnmatch_line("retrieval:*")
    result.stdout.no_fnmatch_line("*= retrieval*")
    result.stdout.no_fnmatch_line("*pytest-retrieval*")


def test_a_plain_run_imports_neither_yaml_numpy_nor_tabulate(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only our plugin is loaded (no autoload), so another plugin's imports cannot hide ours.
    pytester.makeconftest(
        "import json, sys\n"
        "def pytest_sessionfinish(session):\n"
        "    heavy = [m for m in ('yaml', 'numpy', 'tabulate') if m in sys.modules]\n"
        "    loaded = session.config.pluginmanager.hasplugin('pytest_retrieval.plugin')\n"
        "    with open('probe.json', 'w') as out:\n"
        "        json.dump({'heavy': heavy, 'loaded': loaded}, out)\n"
    )
    pytester.makepyfile("def test_ok():\n    assert True\n")
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    result = pytester.runpytest_subprocess(
        "-p", "pytest_retrieval.plugin", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1)
    probe = json.loads((pytester.path / "probe.json").read_text(encoding="utf-8"))
    assert probe == {"heavy": [], "loaded": True}


def test_gates_and_fixtures_without_a_golden_set_say_how_to_configure_one(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        "from pytest_retrieval.gates.gate import assert_recall_at, recall_at\n"
        "def test_gate():\n    assert_recall_at(3) >= 0.5\n"
        "def test_score():\n    assert recall_at(3) >= 0.5\n"
        "def test_fixture(golden_set):\n    pass\n"
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=2, errors=1)
    result.stdout.fnmatch_lines(
        [
            "E *pytest_retrieval.gates.GateUsageError: no retrieval session is active: gates "
            "work in tests run by pytest with the pytest-retrieval plugin and a golden set "
            "configured (retrieval_golden = PATH in your pytest configuration, or "
            "--retrieval-golden PATH)",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of test_fixture*",
            "pytest-retrieval has no golden set: set retrieval_golden = PATH in your pytest "
            "configuration (e.g. [[]tool.pytest.ini_options] in pyproject.toml) or pass "
            "--retrieval-golden PATH",
        ]
    )
