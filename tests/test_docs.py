"""The README keeps up with the code: every setting documented, a two-command Quickstart."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_retrieval.settings import OPTIONS

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("option", OPTIONS, ids=lambda o: o.name)
def test_every_setting_is_documented_in_the_readme(option: object) -> None:
    name = option.flag_name if option.flag_only else option.ini  # type: ignore[attr-defined]
    assert f"`{name}" in README, f"{name} is missing from the README's settings table"


def test_the_quickstart_is_exactly_two_commands() -> None:
    section = README.split("## Quickstart", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, flags=re.S)
    assert block is not None
    commands = [line for line in block.group(1).splitlines() if line.strip()]
    assert len(commands) == 2
    assert "example_project" in commands[0]
    assert "pytest" in commands[1]
