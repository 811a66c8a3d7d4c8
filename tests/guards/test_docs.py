"""The docs keep up with the code: every setting documented in the guide's settings table
(docs/usage.md), a two-command Quickstart in the README, labelled and with the virtual
environment step before it."""

from __future__ import annotations

import re

import pytest
from paths import ROOT

from pytest_retrieval.settings.options import OPTIONS

README = (ROOT / "README.md").read_text(encoding="utf-8")
USAGE = (ROOT / "docs" / "usage.md").read_text(encoding="utf-8")
SETTINGS_TABLE = USAGE.split("## Settings", 1)[1].split("\n## ", 1)[0]


@pytest.mark.parametrize("option", OPTIONS, ids=lambda o: o.name)
def test_every_setting_is_documented_in_the_settings_table(option: object) -> None:
    name = option.flag_name if option.flag_only else option.ini  # type: ignore[attr-defined]
    assert f"`{name}" in SETTINGS_TABLE, f"{name} is missing from docs/usage.md's settings table"


def test_every_setting_has_one_row_in_the_settings_table() -> None:
    keys = re.findall(r"^\| `(retrieval_[a-z_]+)` \|", SETTINGS_TABLE, flags=re.M)
    assert keys, "no settings rows found"
    assert sorted(k for k in set(keys) if keys.count(k) > 1) == []


def test_the_settings_table_writes_flags_in_the_equals_form() -> None:
    # `--retrieval-golden PATH` (space form) makes pytest read an outside path as a test path.
    spaced = re.findall(r"`(--retrieval-[a-z-]+) [A-Z]", SETTINGS_TABLE)
    assert spaced == []


def test_the_quickstart_says_to_make_a_virtual_environment_first_and_labels_the_commands() -> None:
    section = README.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    assert section.index("python -m venv") < section.index("```bash")
    block = re.search(r"```bash\n(.*?)```", section, flags=re.S)
    assert block is not None
    first, second = (line for line in block.group(1).splitlines() if line.strip())
    assert first.endswith("# run the example")
    assert second.endswith("# run the test suite")


def test_the_quickstart_is_exactly_two_commands() -> None:
    section = README.split("## Quickstart", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, flags=re.S)
    assert block is not None
    commands = [line for line in block.group(1).splitlines() if line.strip()]
    assert len(commands) == 2
    assert "example_project" in commands[0]
    assert "pytest" in commands[1]
