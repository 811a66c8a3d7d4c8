"""The held-out Scope (gates.Scope): the one home of the held-out policy and its wording, and
the session, the reports and the artifact reading it."""

from __future__ import annotations

from typing import NoReturn

import pytest

from pytest_retrieval.gates.gate import Selection
from pytest_retrieval.golden.model import GoldenSet, Query
from pytest_retrieval.golden.scope import SEALED_REASON, Scope
from pytest_retrieval.report.html import render_html
from pytest_retrieval.report.markdown import render_markdown
from pytest_retrieval.session.session import RetrievalSession
from pytest_retrieval.settings.resolve import Settings

TUNE = Query("t1", "refunds", ["doc-a"], split="tune")
HELD = Query("h1", "returns", ["doc-b"], split="exam")

SEALED = Scope("exam")
AGGREGATES = Scope("exam", unsealed=True)
DETAILS = Scope("exam", unsealed=True, details=True)


@pytest.mark.parametrize(
    ("scope", "scorable", "redacted", "sealed"),
    [
        # Sealed: never scored; a selection naming it is sealed (its details would be hidden).
        (SEALED, False, True, True),
        # Unsealed: scored, aggregates only.
        (AGGREGATES, True, True, False),
        # Unsealed with details: scored, shown.
        (DETAILS, True, False, False),
    ],
)
def test_the_policy_of_each_state_for_a_held_out_query(
    scope: Scope, scorable: bool, redacted: bool, sealed: bool
) -> None:
    assert scope.scorable(HELD) is scorable
    assert scope.redacted(HELD) is redacted
    assert scope.hides("exam") is redacted
    assert scope.sealed("exam") is sealed
    # Never visible, whatever the seal: the fixtures and the baseline rows leave it out.
    assert scope.visible(HELD) is False
    # A query of another split is scorable, visible and shown in every state.
    assert (scope.scorable(TUNE), scope.visible(TUNE), scope.redacted(TUNE)) == (True, True, False)
    assert scope.sealed("tune") is False
    assert scope.sealed(None) is False


def test_details_without_unsealing_show_nothing() -> None:
    # --retrieval-heldout-details alone: the split stays sealed, its details hidden.
    scope = Scope("exam", unsealed=False, details=True)
    assert scope.shows_details is False
    assert scope.redacted(HELD) is True
    assert scope.to_dict() == {"split": "exam", "scored": False, "details": False}


def test_the_scope_comes_from_the_three_settings() -> None:
    settings = Settings(heldout_split="exam", heldout=True, heldout_details=True)
    assert Scope.from_settings(settings) == DETAILS
    assert Scope.from_settings(Settings()) == Scope("heldout")


@pytest.mark.parametrize(
    ("scope", "words"),
    [
        (SEALED, "held-out split 'exam' sealed"),
        (AGGREGATES, "held-out split 'exam' scored (aggregates only)"),
        (DETAILS, "held-out split 'exam' scored with details"),
    ],
)
def test_one_wording_of_each_state_read_back_from_the_artifact(scope: Scope, words: str) -> None:
    assert scope.describe(repr(scope.heldout)) == words
    assert Scope.from_dict(scope.to_dict()) == scope


def test_an_artifact_without_a_heldout_block_reads_as_the_default_sealed_split() -> None:
    assert Scope.from_dict({}) == Scope("heldout")
    assert Scope.from_dict({}).describe("heldout") == "held-out split heldout sealed"


def _artifact(scope: Scope) -> dict[str, object]:
    return {"golden": {"name": "g", "queries": 2}, "heldout": scope.to_dict(), "results": []}


@pytest.mark.parametrize("scope", [SEALED, AGGREGATES, DETAILS])
def test_the_markdown_and_html_reports_say_the_scope_in_its_words(scope: Scope) -> None:
    words = scope.describe("exam")
    assert words in render_markdown(_artifact(scope))
    assert words in render_html(_artifact(scope))


def _session(settings: Settings) -> RetrievalSession:
    golden = GoldenSet((TUNE, HELD), heldout_split="exam")

    def sealed(reason: str) -> NoReturn:
        raise LookupError(reason)

    return RetrievalSession(settings=settings, golden=golden, on_sealed=sealed)


def test_a_session_applies_its_scope_to_the_golden_set() -> None:
    sealed = _session(Settings(heldout_split="exam"))
    assert sealed.scope == SEALED
    assert [q.id for q in sealed.scorable_queries()] == ["t1"]
    assert [q.id for q in sealed.visible_golden()] == ["t1"]
    with pytest.raises(LookupError, match="^" + SEALED_REASON + "$"):
        sealed.select(Selection(split="exam"))
    unsealed = _session(Settings(heldout_split="exam", heldout=True))
    assert [q.id for q in unsealed.scorable_queries()] == ["t1", "h1"]
    assert [q.id for q in unsealed.visible_golden()] == ["t1"]
    assert [q.id for q in unsealed.select(Selection(split="exam"))] == ["h1"]
    assert [q.id for q in unsealed.select(Selection())] == ["t1"]  # overall leaves it out
