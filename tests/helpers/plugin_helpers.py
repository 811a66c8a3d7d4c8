"""A small user project for the plugin's pytester tests: golden set, ini, conftest, tests.

Every pytester test builds the same shape of project a team would write (see "Using it in your
repository" in the README): ``golden.yaml``, ``pytest.ini`` naming it, a ``conftest.py``
defining ``retriever_under_test`` and test files using the gate helpers.
:class:`ProjectFolder` writes those files: it is the suite's one project builder, which
:class:`RetrievalProject` runs under pytester, ``baseline_helpers.Project`` sets up for baselines
and ``ledger_helpers.GitProject`` makes a git repository.

The standard golden set below is small enough to score by hand. With :data:`RANKINGS` as the
retriever's answers (by query text), the per-query numbers every test derives from are:

=========  ===================================  =========================================
query      ranking (relevant marked *)           hand-computed
=========  ===================================  =========================================
refund     shipping, refund-policy*, contact     recall@1 0, recall@3 1, RR 1/2
sso        okta*, mfa, sso-setup*                recall@1 1/2, recall@3 1, RR 1
invoice    faq, pricing, contact                 recall@1 0, recall@3 0, RR 0
fax        invoices                              no relevant document: skipped in means
zebra-ho   export-data*                          (held-out) recall@1 1, recall@3 1, RR 1
=========  ===================================  =========================================
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any, TypeVar

import pytest

# Imported here, before any in-process pytester run, so that pytester's sys.modules snapshot keeps
# them. A run that imported yaml first would drop it afterwards, and a re-imported yaml no longer
# matches the node classes its C extension (_yaml, initialised once per process) builds, so every
# later load fails with a ConstructorError. The plugin's own modules would otherwise be imported
# (and assertion-rewritten: PYTHONDONTWRITEBYTECODE leaves no cache) again in every run.
import yaml  # noqa: F401

import pytest_retrieval.gates.gate
import pytest_retrieval.phases.finish
import pytest_retrieval.phases.items
import pytest_retrieval.phases.retrieve
import pytest_retrieval.plugin
import pytest_retrieval.report.artifact
import pytest_retrieval.report.terminal
import pytest_retrieval.scoring.stats
import pytest_retrieval.session.payload
import pytest_retrieval.session.session  # noqa: F401  (numpy, like _yaml, loads once per process)

#: Passed to every run: hypothesis' pytest plugin would import all of hypothesis (and have it
#: assertion-rewritten) in each in-process run; the user projects here never use it.
QUIET_PLUGINS = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")

# A distinctive held-out query: tests assert that its id and text never leak.
HELDOUT_ID = "zebra-ho"
HELDOUT_TEXT = "Quokka zebra heldout question"

GOLDEN = f"""\
version: 1
name: help-centre
queries:
  - id: refund
    text: How long is the refund window?
    relevant: [refund-policy]
    slices: [exact-lookup]
  - id: sso
    text: How do I set up SSO with Okta?
    relevant: {{sso-setup: 2, okta: 1}}
    slices: [multi-hop]
  - id: invoice
    text: Where do I download invoices?
    relevant: [invoices, billing]
    slices: [exact-lookup]
  - id: fax
    text: Can I send invoices by fax?
    relevant: []
    slices: [no-answer]
  - id: {HELDOUT_ID}
    text: {HELDOUT_TEXT}
    relevant: [export-data]
    split: heldout
"""

#: The retriever's answer to each query text.
RANKINGS: dict[str, list[str]] = {
    "How long is the refund window?": ["shipping", "refund-policy", "contact"],
    "How do I set up SSO with Okta?": ["okta", "mfa", "sso-setup"],
    "Where do I download invoices?": ["faq", "pricing", "contact"],
    "Can I send invoices by fax?": ["invoices"],
    HELDOUT_TEXT: ["export-data"],
}

#: conftest.py: a plain function retriever over RANKINGS; every call appends the query text to
#: calls.log (one line per call), so tests can count calls across processes.
CONFTEST = f"""\
import os
import pytest

RANKINGS = {RANKINGS!r}
CALLS = os.path.join(os.path.dirname(__file__), "calls.log")


def log_call(text):
    with open(CALLS, "a", encoding="utf-8") as out:
        out.write(text + "\\n")


@pytest.fixture(scope="session")
def retriever_under_test():
    def search(text, k):
        log_call(text)
        return RANKINGS[text][:k]

    return search
"""


def conftest_with(body: str) -> str:
    """A conftest.py with RANKINGS and log_call available, and ``body`` (dedented) after it."""
    head = CONFTEST.split("@pytest.fixture", 1)[0]
    return head + "\n" + textwrap.dedent(body)


def ini_text(settings: dict[str, str]) -> str:
    """``pytest.ini`` holding ``settings`` in order; a value with newlines as an indented block."""
    lines = ["[pytest]"]
    for key, value in settings.items():
        if "\n" in value:
            lines.append(f"{key} =")
            lines.extend(f"    {line}" for line in value.strip().splitlines())
        else:
            lines.append(f"{key} = {value}")
    return "\n".join(lines) + "\n"


P = TypeVar("P", bound="ProjectFolder")


class ProjectFolder:
    """A user project in a folder: golden set, ``pytest.ini``, conftest and tests.

    The one project builder of the suite: :class:`RetrievalProject` runs it under pytester,
    ``baseline_helpers.Project`` is its baseline variant, ``ledger_helpers.GitProject`` makes it
    a git repository run in subprocesses.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def write_ini(
        self,
        settings: dict[str, str] | None = None,
        *,
        golden: str | None = "golden.yaml",
        ks: str | None = "1,3",
    ) -> None:
        """Write pytest.ini: ``retrieval_golden`` and ``retrieval_ks`` (unless None) first, then
        ``settings`` (a key given in both keeps its place and takes the new value)."""
        merged: dict[str, str] = {}
        if golden is not None:
            merged["retrieval_golden"] = golden
        if ks is not None:
            merged["retrieval_ks"] = ks
        merged.update(settings or {})
        (self.path / "pytest.ini").write_text(ini_text(merged), encoding="utf-8")

    def write(
        self: P,
        *,
        golden: str | None = GOLDEN,
        ini: dict[str, str] | None = None,
        conftest: str | None = CONFTEST,
        tests: str | None = None,
        ks: str | None = "1,3",
    ) -> P:
        """Write golden.yaml, pytest.ini (golden + ks + ``ini``), conftest.py and tests."""
        if golden is not None:
            (self.path / "golden.yaml").write_text(golden, encoding="utf-8")
        self.write_ini(ini, golden=None if golden is None else "golden.yaml", ks=ks)
        if conftest is not None:
            (self.path / "conftest.py").write_text(conftest, encoding="utf-8")
        if tests is not None:
            self.tests(tests)
        return self

    def tests(self, source: str, name: str = "test_retrieval.py") -> Path:
        """Write a test file (dedented)."""
        path = self.path / name
        path.write_text(textwrap.dedent(source), encoding="utf-8")
        return path

    def calls(self) -> list[str]:
        """The query texts the retriever was called with, one per call."""
        log = self.path / "calls.log"
        if not log.exists():
            return []
        return log.read_text(encoding="utf-8").splitlines()

    def artifact(self, name: str = "out.json") -> dict[str, Any]:
        """The JSON artifact written with ``--retrieval-json name``."""
        data: dict[str, Any] = json.loads((self.path / name).read_text(encoding="utf-8"))
        return data


class RetrievalProject(ProjectFolder):
    """The project in a pytester folder, run with pytest in this process or a fresh one."""

    def __init__(self, pytester: pytest.Pytester) -> None:
        super().__init__(pytester.path)
        self.pytester = pytester

    def run(self, *args: str) -> pytest.RunResult:
        """pytest in this process (fast); no cache folder is written."""
        return self.pytester.runpytest(*QUIET_PLUGINS, *args)

    def run_subprocess(self, *args: str) -> pytest.RunResult:
        """pytest in a fresh interpreter (xdist, import isolation)."""
        return self.pytester.runpytest_subprocess(*QUIET_PLUGINS, *args)

    def run_xdist(self, *args: str) -> pytest.RunResult:
        """pytest under xdist with two workers, in a fresh interpreter."""
        return self.run_subprocess("-n", "2", *args)


def esc(patterns: list[str]) -> list[str]:
    """Patterns for ``fnmatch_lines`` with ``[`` taken literally (our messages end with
    ``[stage=... split=...]``, which fnmatch would read as a character class); ``*`` still
    matches anything."""
    return [pattern.replace("[", "[[]") for pattern in patterns]
