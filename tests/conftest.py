"""Shared fixtures for the test suite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings as _hypothesis_settings
from ledger_helpers import CI_VARIABLES
from paths import SHARED
from plugin_helpers import RetrievalProject

# The suite sees a developer's environment wherever it runs: the CI provider's variables are
# removed for every test and every process it starts (pytest prints a failure's whole message
# in the short summary when CI is set, the plugin reads CI for its held-out notice and for the
# run ledger's commit facts). A test that means a CI sets its variables itself.
for _name in CI_VARIABLES:
    os.environ.pop(_name, None)

# Speed is measured in benchmarks/, never asserted: no Hypothesis example has a deadline (its
# default, 200 ms, failed property tests on a loaded CI machine with nothing wrong).

_hypothesis_settings.register_profile("pytest-retrieval", deadline=None)
_hypothesis_settings.load_profile("pytest-retrieval")


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """``../shared`` beside the repository: peer suites and datasets (never copied in)."""
    if not SHARED.is_dir():
        pytest.fail(f"{SHARED} is missing: the peer suites and datasets live beside the repository")
    return SHARED


@pytest.fixture(scope="session")
def trec_eval_dir(shared_dir: Path) -> Path:
    """trec_eval's own test files (qrels, runs and expected outputs)."""
    return shared_dir / "peer-suites" / "trec_eval"


@pytest.fixture
def retrieval_project(pytester: pytest.Pytester) -> RetrievalProject:
    """A user project (golden set, ini, conftest, tests) in a pytester folder; see
    ``plugin_helpers``."""
    return RetrievalProject(pytester)
