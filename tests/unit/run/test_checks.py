"""The short-ranking rule (runchecks.short_rankings) and the Unicode-normalisation id check
(runchecks.normalisation_mismatch), on hand-made rankings."""

from __future__ import annotations

from pytest_retrieval.run.checks import normalisation_mismatch
from pytest_retrieval.run.shortrankings import short_rankings


def ranks(*lengths: int) -> list[tuple[str, ...]]:
    return [tuple(f"d{i}" for i in range(n)) for n in lengths]


def test_a_retriever_that_ignores_the_depth_is_reported_with_its_flat_cutoffs() -> None:
    found = short_rankings("retriever", ranks(4, 4, 4), cutoffs=(1, 5, 10), depth=10)
    assert found is not None
    assert (found.longest, found.short, found.queries, found.flat) == (4, 3, 3, (5, 10))


def test_chunks_collapsing_into_fewer_documents_are_not_reported() -> None:
    # One ranking is full length (the depth reaches the retriever); the median, 45, is more than
    # half of the 50 asked for.
    assert short_rankings("retriever", ranks(50, 45, 44, 46), cutoffs=(10, 50), depth=50) is None


def test_rankings_mostly_far_shorter_than_asked_are_reported_even_with_one_full() -> None:
    found = short_rankings("retriever", ranks(50, 10, 12, 8), cutoffs=(10, 50), depth=50)
    assert found is not None
    assert found.median == 11
    assert found.flat == ()  # the longest reaches 50: no cutoff is flat


def test_long_enough_rankings_are_not_reported() -> None:
    assert short_rankings("retriever", ranks(10, 10), cutoffs=(5, 10), depth=10) is None


CAFE_NFC = "caf\u00e9"  # é as one code point
CAFE_NFD = "cafe\u0301"  # e + combining acute accent: the same on screen


def test_ids_that_differ_only_in_unicode_normalisation_stop_the_run_showing_both() -> None:
    rankings = {"q1": ["menu", CAFE_NFD], "q2": ["menu"]}
    stop = normalisation_mismatch(rankings, {CAFE_NFC, "menu"}, what="judged", stage="retriever")
    assert stop is not None
    assert stop.status == "refused"
    assert (
        "1 returned id(s) [retriever] differ from judged ids only in their Unicode" in stop.reason
    )
    # Escaped, so the two strings look different in the log, as they are.
    assert "returned 'cafe\\u0301', judged 'caf\\xe9'" in stop.reason
    # The fix apart from the reason (the artifact records both), and both in the shown text.
    assert stop.fix is not None
    assert 'unicodedata.normalize("NFC", doc_id)' in stop.fix
    assert "unicodedata.normalize" not in stop.reason
    assert stop.text.endswith(stop.fix)


def test_the_normalisation_check_works_both_ways_and_ignores_ids_that_match() -> None:
    # The golden set decomposed, the index composed.
    stop = normalisation_mismatch({"q": [CAFE_NFC]}, {CAFE_NFD}, what="judged", stage="s")
    assert stop is not None
    assert "returned 'caf\\xe9', judged 'cafe\\u0301'" in stop.reason
    # The same form on both sides, ASCII ids, and unrelated non-ASCII ids are fine.
    assert normalisation_mismatch({"q": [CAFE_NFD]}, {CAFE_NFD}, what="judged", stage="s") is None
    assert normalisation_mismatch({"q": ["cafe"]}, {CAFE_NFC}, what="judged", stage="s") is None
    assert (
        normalisation_mismatch({"q": ["na\u00efve"]}, {CAFE_NFC}, what="judged", stage="s") is None
    )


def test_an_equivalent_that_composes_to_ascii_is_caught_both_ways() -> None:
    kelvin = "\u212a-100"  # KELVIN SIGN: NFC makes it the letter K
    stop = normalisation_mismatch({"q": [kelvin]}, {"K-100"}, what="judged", stage="s")
    assert stop is not None
    assert "returned '\\u212a-100', judged 'K-100'" in stop.reason
    stop = normalisation_mismatch({"q": ["K-100"]}, {kelvin}, what="judged", stage="s")
    assert stop is not None
    assert "returned 'K-100', judged '\\u212a-100'" in stop.reason
    # Only NFKC-equivalent ("fi" ligature, fullwidth letters): different ids, not flagged.
    assert normalisation_mismatch({"q": ["\ufb01le"]}, {"file"}, what="j", stage="s") is None
    assert normalisation_mismatch({"q": ["\uff21BC"]}, {"ABC"}, what="j", stage="s") is None


def test_ids_spelled_otherwise_are_paired_with_the_judged_id_they_name() -> None:
    from pytest_retrieval.run.checks import spelling_pairs

    rankings = {
        "q1": ["REFUND-POLICY", " sso-setup ", "docs/guides/Invoices.md", "C:\\kb\\okta.html"],
        "q2": ["refund-policy-v2", "billing", "release-1.3"],
        "q3": ["data_export", "Team Seats", "api--rate_limits"],
    }
    known = {"refund-policy", "sso-setup", "invoices", "okta", "billing", "release-1.2"}
    known |= {"data-export", "team-seats", "api-rate-limits"}
    assert spelling_pairs(rankings, known) == {
        "REFUND-POLICY": "refund-policy",  # case
        " sso-setup ": "sso-setup",  # white space
        "docs/guides/Invoices.md": "invoices",  # a path, a file extension, case
        "C:\\kb\\okta.html": "okta",  # a Windows path
        "data_export": "data-export",  # separators: an underscore,
        "Team Seats": "team-seats",  # a space (and case),
        "api--rate_limits": "api-rate-limits",  # a run of them
    }  # "billing" matches as given; "-v2" and "1.3" name other documents


def test_a_small_run_whose_ids_never_match_but_for_their_spelling_is_refused() -> None:
    from pytest_retrieval.run.checks import id_match, id_mismatch

    # Three queries (too few for the share rule), no ranking holds a judged id: without the
    # spelling check a bad retriever and wrongly spelled ids look alike, so only the second
    # is refused.
    known = {"refund-policy", "sso-setup", "invoices"}
    unrelated = {"q1": ["shipping"], "q2": ["faq"], "q3": ["pricing"]}
    found = id_match(unrelated, known)
    assert found is not None
    assert (found.matching, found.refused, found.spelling) == (0, False, {})
    upper = {"q1": ["SHIPPING", "REFUND-POLICY"], "q2": ["SSO-SETUP"], "q3": ["FAQ"]}
    stop = id_mismatch(upper, known, what="judged", stage="retriever")
    assert stop is not None
    assert stop.status == "refused"
    assert stop.reason.splitlines() == [
        "the returned ids do not match the golden set's: 0 of 3 rankings [retriever] hold an id "
        "of a judged document, but 2 returned id(s) equal judged ids once case, separators (-, "
        "_, white space), a path or a file extension is ignored, so every metric would be 0 for "
        "a reason that is not retrieval quality:",
        "  returned 'REFUND-POLICY', judged 'refund-policy'",
        "  returned 'SSO-SETUP', judged 'sso-setup'",
    ]
    assert stop.fix is not None
    assert stop.fix.startswith("return ids spelled as the golden set spells them")
    # One ranking holds a judged id, two hold one spelled otherwise: more rankings would match
    # if the ids were spelled as the golden set spells them than match now, so the spelling is
    # the cause (the one-word ids of a doc map that changes separators still match).
    partly = {**upper, "q3": ["invoices"]}
    stop = id_mismatch(partly, known, what="judged", stage="retriever")
    assert stop is not None
    assert stop.reason.splitlines()[0] == (
        "the returned ids do not match the golden set's: 1 of 3 rankings [retriever] hold an id "
        "of a judged document, but 2 returned id(s) equal judged ids once case, separators (-, "
        "_, white space), a path or a file extension is ignored, so the metrics would be near 0 "
        "for a reason that is not retrieval quality:"
    )
    # A stray variant beside rankings that match as given is not the explanation: a small
    # set's retriever may be merely bad; not refused.
    stray = {"q1": ["refund-policy"], "q2": ["sso-setup"], "q3": ["INVOICES"]}
    assert id_mismatch(stray, known, what="judged", stage="retriever") is None
