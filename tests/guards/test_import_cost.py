"""The plugin loads in every pytest run: importing it must stay cheap and the core pytest-free."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("yaml", "numpy", "tabulate")

CORE_MODULES = [
    "pytest_retrieval",
    "pytest_retrieval.errors",
    "pytest_retrieval.scoring.metrics",
    "pytest_retrieval.scoring.evaluate",
    "pytest_retrieval.formats.trec",
    "pytest_retrieval.cli",
]


def run_python(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_importing_the_plugin_imports_neither_yaml_numpy_nor_tabulate() -> None:
    out = run_python(
        "import sys, json\n"
        "import pytest_retrieval.plugin\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    )
    assert json.loads(out) == []


def test_the_check_would_notice_a_heavy_import() -> None:
    # The same probe, with yaml imported on purpose, must report it: the test above can fail.
    out = run_python(
        "import sys, json\nimport pytest_retrieval.plugin, yaml\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    )
    assert json.loads(out) == ["yaml"]


@pytest.mark.parametrize("module", CORE_MODULES)
def test_core_modules_import_with_pytest_blocked(module: str) -> None:
    out = run_python(
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'pytest' or name.startswith(('_pytest', 'pytest.')):\n"
        "            raise ImportError('pytest is blocked: ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        f"import {module}\n"
        "print('ok')\n"
    )
    assert out.strip() == "ok"
