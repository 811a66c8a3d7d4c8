"""Checks of a run that make numbers meaningless when they fail, said loudly with the fix.

* **Short rankings** (:mod:`pytest_retrieval.run.shortrankings`, whose names are importable from
  here too): a ranking shorter than a cutoff scored, the knob that fills it.
* **Ids that never match**: when judged documents exist but (almost) no returned id is ever a
  judged id (chunk UUIDs, page contents returned as ids, a doc-id setting that was not picked
  up), every metric is 0 for a reason that is not retrieval quality. :func:`id_mismatch` stops the
  run with examples of both kinds of id and the likely fix. The same check against the corpus ids
  when ``retrieval_corpus`` is set. Ids that differ from judged ids only in their Unicode
  normalisation (``café`` composed in the golden set, decomposed in the index) look identical in
  every message and never match: :func:`normalisation_mismatch` stops the run and shows both.

* **Judgment holes**: results without a judgment count as non-relevant, so low coverage
  (``judged@K``) where the gates look means the numbers measure the labels as much as the
  retriever. :class:`Coverage` says how much, and warns below :data:`LOW_COVERAGE`.

Both look only at queries that ran without an error; held-out queries are never quoted.

Nothing here takes a session: each check takes the run's facts (its outcomes, the visible
queries, the judged ids, the cutoffs the gates look at). :mod:`pytest_retrieval.session.findings`
applies them to a session's run: which stages, cutoffs and queries they look at, and which finding
stops the run: a refusal, a usage error (:func:`doc_id_problem`, the ``retrieval_doc_id`` path that
no returned item has; :func:`id_problem`; :func:`short_rankings_refusal`), or an error
(:func:`every_query_failed`: nothing ran, so nothing can be scored). Each is a
:class:`~pytest_retrieval.verdict.Stop`: the reason and the fix, apart.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Iterator, KeysView, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..golden.scope import DETAILS_HINT
from ..scoring.metrics import MetricSpec
from ..text import for_terminal
from ..verdict import Stop
from .retriever import RETRIEVER_STAGE
from .shortrankings import (
    ShortRankings,
)

if TYPE_CHECKING:
    from ..golden.model import Query
    from ..scoring.dedup import DuplicateGroups
    from ..scoring.evaluate import Evaluation
    from .retriever import QueryOutcome

__all__ = [
    "SPELLING_WORDS",
    "Coverage",
    "IdMatch",
    "StageRankings",
    "doc_id_problem",
    "every_query_failed",
    "gated_cutoffs",
    "id_match",
    "id_mismatch",
    "id_problem",
    "judged_ids",
    "normalisation_mismatch",
    "normalisation_pairs",
    "short_rankings_refusal",
    "spelling_pairs",
    "stage_coverage",
    "visible_rankings",
    "without_judged_ids",
]

#: Below this share of queries with any judged id in their ranking, the ids "almost never" match
#: (with at least :data:`MIN_QUERIES_FOR_SHARE` queries; with fewer, only "never" counts).
MISMATCH_SHARE = 0.05
MIN_QUERIES_FOR_SHARE = 20
EXAMPLES = 4

_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
_SEPARATORS = ("::", "#", "|", "/", "_", "-", ":")


@dataclass(frozen=True, slots=True)
class IdMatch:
    """How a run's ids meet the known ids (:func:`id_match`)."""

    #: Non-empty rankings holding at least one known id, of ``ranked`` non-empty rankings.
    matching: int
    ranked: int
    #: A few returned and known ids, for the message.
    returned: list[str]
    expected: list[str]
    #: The fix, when the returned ids have a recognisably wrong shape.
    pattern: str | None
    #: The rule says the numbers would be meaningless (see :func:`id_match`).
    refused: bool
    #: When no ranking holds a known id: returned ids that equal one once spelling is ignored
    #: (:func:`spelling_pairs`), each with that id.
    spelling: dict[str, str] = field(default_factory=dict)


def id_match(rankings: Mapping[str, Sequence[str]], known: Collection[str]) -> IdMatch | None:
    """How many rankings hold a ``known`` id; None without a non-empty ranking or a known id.

    A query matches when its ranking holds at least one known id. The rule refuses the run when
    no query matches, or when fewer than :data:`MISMATCH_SHARE` do among at least
    :data:`MIN_QUERIES_FOR_SHARE` non-empty rankings; with fewer rankings than that, only when
    the returned ids also have a recognisably wrong shape (chunk ids of judged documents,
    generated UUIDs, page contents): a retriever that is merely bad on a small golden set looks
    the same as one with the wrong ids. Whatever the golden set's size, it also refuses the run
    when more rankings hold a known id spelled otherwise (:func:`spelling_pairs`: case,
    separators, a path, a file extension) than hold one as given: a doc map that writes
    ``refund_policy`` for ``refund-policy`` leaves only the one-word ids matching, and the
    metrics near 0 for a reason that is not retrieval quality.
    """
    ranked = {qid: r for qid, r in rankings.items() if r}
    if not ranked or not known:
        return None
    disjoint = _disjoint(known)
    matching = sum(1 for r in ranked.values() if not disjoint(r))
    small = len(ranked) < MIN_QUERIES_FOR_SHARE
    # When every ranking holds a known id, no count of misspelled ones can exceed it: the
    # spelling pass (a fold of every unknown returned id, the run's largest check at scale)
    # could only be discarded below, so it is skipped; the outcome is the same.
    spelling = spelling_pairs(ranked, known) if matching < len(ranked) else {}
    misspelled = spelling.keys().isdisjoint
    spelled = sum(1 for r in ranked.values() if not misspelled(r)) if spelling else 0
    if spelled <= matching:  # a stray variant beside ids that match: not the explanation
        spelling = {}
    if matching and not spelling and (small or matching / len(ranked) >= MISMATCH_SHARE):
        return IdMatch(matching, len(ranked), [], [], None, refused=False)  # nothing to show
    returned = _examples(doc for r in ranked.values() for doc in r)
    expected = _examples(sorted(known))
    pattern = _pattern_fix(returned, known)
    if spelling and pattern is None:
        pattern = SPELLING_FIX
    refused = bool(matching) or pattern is not None or not small
    return IdMatch(matching, len(ranked), returned, expected, pattern, refused, spelling)


def _disjoint(known: Collection[str]) -> Callable[[Iterable[str]], bool]:
    """``known.isdisjoint``: C-level, stops at the first known id (a set is built only when
    ``known`` is no set or key view)."""
    if isinstance(known, (set, frozenset, KeysView)):
        return known.isdisjoint
    return set(known).isdisjoint


#: File extensions a returned id may carry where the golden set names the document without one.
_EXTENSIONS = re.compile(
    r"\.(md|mdx|markdown|txt|rst|html?|pdf|docx?|json|jsonl|ya?ml|csv|xml|ipynb)$", re.I
)

SPELLING_FIX = (
    "return ids spelled as the golden set spells them (the same case and separators, no path "
    "or file extension): fix the id the retriever returns, or retrieval_doc_id / "
    "retrieval_doc_id_map / retrieval_doc_id_separator, or write the golden set's ids as the "
    "index spells them"
)


#: What the words of an id may be joined with: ``refund-policy``, ``refund_policy``, ``Refund
#: Policy`` name one document.
SPELLING_WORDS = "case, separators (-, _, white space), a path or a file extension"

_WORD_JOINS = re.compile(r"[\s_-]+")


def _spelling(doc: str) -> str:
    """``doc`` with what does not name a document removed: a path (up to the last ``/`` or
    ``\\``), a file extension; case folded, runs of ``-``, ``_`` and white space one ``-``,
    none at either end."""
    text = doc.strip().replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    text = _EXTENSIONS.sub("", text).strip().casefold()
    return _WORD_JOINS.sub("-", text).strip("-")


def spelling_pairs(rankings: Mapping[str, Sequence[str]], known: Collection[str]) -> dict[str, str]:
    """Returned ids that are no ``known`` id but equal one once case, separators, a path or a
    file extension is ignored (``'REFUND-POLICY'``, ``'refund_policy'``,
    ``'docs/refund-policy.md'`` against ``'refund-policy'``; :data:`SPELLING_WORDS`), each with
    that id. Ids are compared as given everywhere else; this only explains why they do not match
    (:func:`id_match` refuses a run in which more rankings hold such an id than a known one)."""
    folded: dict[str, str] = {}
    for k in sorted(known):
        folded.setdefault(_spelling(k), k)
    folded.pop("", None)
    pairs: dict[str, str] = {}
    for ranking in rankings.values():
        for doc in ranking:
            if doc in pairs or doc in known:
                continue
            match = folded.get(_spelling(doc))
            if match is not None:
                pairs[doc] = match
    return pairs


def id_mismatch(
    rankings: Mapping[str, Sequence[str]],
    known: Collection[str],
    *,
    what: str,
    stage: str,
    stored: bool = False,
) -> Stop | None:
    """The refusal when the run's ids (almost) never meet ``known`` (:func:`id_match`); None
    when they do.

    ``rankings`` are the visible queries' rankings (query id → ids), ``known`` the judged ids
    (``what="judged"``) or the corpus ids (``what="corpus"``). ``stored``: they were read from
    run files, where no doc-id setting applies, so the fix is :func:`stored_run_fix`.
    """
    found = id_match(rankings, known)
    if found is None or not found.refused:
        return None
    own = (
        stored_run_fix(found.returned or list(found.spelling), known, spelling=bool(found.spelling))
        if stored
        else None
    )
    which = "of a judged document" if what == "judged" else "in the corpus"
    outcome = "every metric would be 0" if not found.matching else "the metrics would be near 0"
    if found.spelling:
        shown = list(found.spelling.items())[:EXAMPLES]
        lines = [
            f"the returned ids do not match the golden set's: {found.matching} of "
            f"{found.ranked} rankings [{stage}] hold an id {which}, but {len(found.spelling)} "
            f"returned id(s) equal {what} ids once {SPELLING_WORDS} is ignored, so {outcome} "
            "for a reason that is not retrieval quality:",
            *(f"  returned {doc!r}, {what} {match!r}" for doc, match in shown),
        ]
        fix = f"{own or found.pattern}\n(retrieval_id_check = off turns this check off.)"
        return Stop.refused("\n".join(lines), fix)
    lines = [
        f"the returned ids do not match the golden set's: {found.matching} of {found.ranked} "
        f"rankings [{stage}] hold an id {which}, so {outcome} for a reason that is not "
        "retrieval quality.",
        f"  returned ids, e.g.: {', '.join(repr(d) for d in found.returned)}",
        f"  {what} ids, e.g.:   {', '.join(repr(d) for d in found.expected)}",
    ]
    fix = (
        f"{own or found.pattern or likely_fix(found.returned, known)}\n"
        "(If the retriever really finds none of them, set retrieval_id_check = off.)"
    )
    return Stop.refused("\n".join(lines), fix)


def normalisation_pairs(
    rankings: Mapping[str, Sequence[str]], known: Collection[str]
) -> dict[str, str]:
    """Returned ids that are no ``known`` id but equal one after NFC normalisation (composed
    against decomposed: the same text on screen, different strings), each with that id."""
    import unicodedata

    def nfc(text: str) -> str:
        return text if text.isascii() else unicodedata.normalize("NFC", text)

    composed: dict[str, str] = {}
    for k in known:
        composed.setdefault(nfc(k), k)
    # When every known id is composed, only a returned id that is not can differ from one (the
    # Kelvin sign in 'K-100' composes to ASCII 'K-100', so ASCII ids are not exempt otherwise).
    known_composed = all(k == c for c, k in composed.items()) and len(composed) == len(known)
    pairs: dict[str, str] = {}
    seen: set[str] = set()
    for ranking in rankings.values():
        if known_composed and "".join(ranking).isascii():
            continue  # the common case, first: ASCII ids are composed (one C-level pass)
        for doc in ranking:
            if known_composed and doc.isascii():
                continue
            if doc in seen or doc in known:
                continue
            seen.add(doc)
            if known_composed and unicodedata.is_normalized("NFC", doc):
                continue
            match = composed.get(nfc(doc))
            if match is not None and match != doc:
                pairs[doc] = match
    return pairs


def normalisation_mismatch(
    rankings: Mapping[str, Sequence[str]], known: Collection[str], *, what: str, stage: str
) -> Stop | None:
    """The refusal when returned ids differ from ``known`` ids only in their Unicode
    normalisation (:func:`normalisation_pairs`); None when none do. Ids are compared as given
    everywhere else: they are labels, not text, so the convention is to refuse rather than to
    normalise silently (which would change what a golden set's fingerprint and a baseline
    mean)."""
    pairs = normalisation_pairs(rankings, known)
    if not pairs:
        return None
    shown = list(pairs.items())[:EXAMPLES]
    lines = [
        f"{len(pairs)} returned id(s) [{stage}] differ from {what} ids only in their Unicode "
        "normalisation (they look the same but are different strings), so they never match "
        "and would be scored as misses:",
        *(f"  returned {doc!a}, {what} {match!a}" for doc, match in shown),
    ]
    fix = (
        'return ids in one normal form, e.g. unicodedata.normalize("NFC", doc_id) in the '
        "retriever (or write the golden set's ids in the form the index uses).\n"
        "(retrieval_id_check = off turns this check off.)"
    )
    return Stop.refused("\n".join(lines), fix)


def likely_fix(returned: Sequence[str], known: Collection[str]) -> str:
    """What most often causes ids like ``returned`` to miss ids like ``known``."""
    return _pattern_fix(returned, known) or (
        "set retrieval_doc_id to where each returned item keeps its document id (e.g. "
        "metadata.source), map chunk ids to document ids (retrieval_doc_id_map, "
        "retrieval_doc_id_separator), and check that the index was built from the corpus the "
        "golden set was labelled on (and that your pytest configuration file was read)"
    )


def _chunk_separator(returned: Sequence[str], known: Collection[str]) -> str | None:
    """The separator that cuts ``returned`` chunk ids to ``known`` document ids, if one does."""
    for sep in _SEPARATORS:
        cut = [d.rsplit(sep, 1)[0] for d in returned if sep in d]
        if cut and any(c in known for c in cut):
            return sep
    return None


#: Why no doc-id setting is the fix for ids read from a run file (``--retrieval-run``).
STORED_RUN = (
    "a run file is scored as written (retrieval_doc_id, retrieval_doc_id_map and "
    "retrieval_doc_id_separator apply when the plugin calls the retriever, not to a stored run)"
)


def stored_run_fix(returned: Sequence[str], known: Collection[str], *, spelling: bool) -> str:
    """The fix when a run file's ids miss ``known``: write the right ids into the file, or
    gate the retriever itself with the setting that would map them (:data:`STORED_RUN`)."""
    sep = _chunk_separator(returned, known)
    if sep is not None:
        return (
            f"the run file holds chunk ids of the judged documents ({returned[0]!r}), and "
            f"{STORED_RUN}: write each id cut before its last {sep!r} into the run file (for "
            "pytest-retrieval run: have its retriever return document ids), or gate the "
            f"retriever itself, without --retrieval-run, with retrieval_doc_id_separator = {sep}"
        )
    if spelling:
        return (
            "write the ids into the run file spelled as the golden set spells them (the same "
            "case and separators, no path or file extension), or the golden set's ids as the "
            f"run spells them; {STORED_RUN}"
        )
    return (
        "write the golden set's document ids into the run file (generated node or chunk ids "
        f"mapped to their document); {STORED_RUN}. Check that the index was built from the "
        "corpus the golden set was labelled on"
    )


def _pattern_fix(returned: Sequence[str], known: Collection[str]) -> str | None:
    """The fix when the returned ids have a recognisable wrong shape; None otherwise."""
    sep = _chunk_separator(returned, known)
    if sep is not None:
        return (
            f"the returned ids are chunk ids of the judged documents ({returned[0]!r}): set "
            f"retrieval_doc_id_separator = {sep} to score the document before the last {sep!r}"
        )
    if returned and all(_UUID.match(d) for d in returned):
        return (
            "these are generated node/chunk ids (UUIDs). LlamaIndex: set retrieval_doc_id = "
            "node.ref_doc_id (or node.metadata.<key> where your documents keep their id); "
            "LangChain/Haystack: set retrieval_doc_id = metadata.<key> / meta.<key>"
        )
    if returned and all(len(d) > 40 and " " in d.strip() for d in returned):
        return (
            "these look like page contents, not ids: set retrieval_doc_id to where each result "
            "keeps its id, e.g. retrieval_doc_id = metadata.source"
        )
    return None


def _examples(ids: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for doc in ids:
        shown = doc if len(doc) <= 60 else doc[:57] + "..."
        seen.setdefault(shown, None)
        if len(seen) >= EXAMPLES:
            break
    return list(seen)


#: Below this judged@K where the gates look, the summary and the reports warn: more than one
#: result in ten counts as non-relevant only because nobody labelled it.
LOW_COVERAGE = 0.9


@dataclass(frozen=True, slots=True)
class Coverage:
    """judged@K of one stage over the visible scored queries: the mean, how many queries were
    measured and how many of them have at least one unjudged result in their top K."""

    stage: str
    cutoff: int
    value: float | None
    queries: int
    with_holes: int

    @property
    def low(self) -> bool:
        """True when coverage is below :data:`LOW_COVERAGE`."""
        return self.value is not None and self.value < LOW_COVERAGE

    @property
    def line(self) -> str:
        """``judgment coverage [retriever]: judged@10 = 0.8300 (5 of 30 queries have holes)``."""
        shown = "—" if self.value is None else f"{self.value:.4f}"
        return (
            f"judgment coverage [{self.stage}]: judged@{self.cutoff} = {shown} "
            f"({self.with_holes} of {self.queries} queries have unjudged results in the top "
            f"{self.cutoff})"
        )

    def to_dict(self) -> dict[str, object]:
        """Builtins, for the artifact's ``coverage`` list."""
        return {
            "stage": self.stage,
            "cutoff": self.cutoff,
            "value": self.value,
            "queries": self.queries,
            "with_holes": self.with_holes,
            "message": self.line,
        }


def coverage_warnings(found: Sequence[Coverage]) -> list[dict[str, object]]:
    """One warning per stage whose coverage is low at some cutoff the gates look at (the
    artifact's ``warnings`` entries, kind ``low_coverage``; ``message`` is what is printed)."""
    out: list[dict[str, object]] = []
    for stage in dict.fromkeys(c.stage for c in found):
        low = [c for c in found if c.stage == stage and c.low]
        if not low:
            continue
        worst = min(low, key=lambda c: (c.value or 0.0, c.cutoff))
        values = ", ".join(f"judged@{c.cutoff} = {c.value or 0.0:.4f}" for c in low)
        share = 1.0 - (worst.value or 0.0)
        message = (
            f"low judgment coverage [{stage}]: {values}: up to {share:.0%} of the top "
            f"results the gates look at carry no judgment and count as non-relevant "
            f"({worst.with_holes} of {worst.queries} queries have holes in the top "
            f"{worst.cutoff}); pool and label them (pytest-retrieval golden pool), or gate "
            f"judged@{worst.cutoff}"
        )
        out.append(
            {
                "kind": "low_coverage",
                "stage": stage,
                "cutoff": worst.cutoff,
                "value": worst.value,
                "with_holes": worst.with_holes,
                "queries": worst.queries,
                "message": message,
                # The compact summary's one line: the worst cutoff and the remedy.
                "short": (
                    f"low judgment coverage [{stage}]: judged@{worst.cutoff} = "
                    f"{worst.value or 0.0:.4f} ({share:.0%} of the top {worst.cutoff} unjudged); "
                    "label them: golden pool"
                ),
            }
        )
    return out


# --- the checks of a run ---------------------------------------------------------------------

#: The rankings of one stage, as :func:`visible_rankings` gives them: ``(stage, rankings,
#: with_answers)``.
StageRankings = tuple[str, dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]


def gated_cutoffs(
    declared: Iterable[tuple[MetricSpec, str | None]],
    *,
    default_stage: str,
    ks: Sequence[int],
    stages: Sequence[str],
) -> dict[str, tuple[int, ...]]:
    """Per stage of ``stages``, the cutoffs the gates look at (``declared``: each declared,
    recorded or budgeted metric with its stage; a gate without a stage looks at the
    ``default_stage``, the final one). When no gate names a cutoff, the final stage at the
    ``ks`` cutoff nearest 10."""
    pairs: set[tuple[str, int]] = set()
    for spec, stage in declared:
        if spec.k is not None and spec.name != "judged":
            pairs.add((stage or default_stage, spec.k))
    if not pairs:
        pairs.add((default_stage, min(ks, key=lambda k: (abs(k - 10), k))))
    return {
        stage: tuple(sorted(k for s, k in pairs if s == stage))
        for stage in stages
        if any(s == stage for s, _k in pairs)
    }


def stage_coverage(
    stage: str, specs: Sequence[MetricSpec], evaluation: Evaluation
) -> list[Coverage]:
    """judged@K of one stage for each ``judged@K`` of ``specs``, from ``evaluation`` (over the
    queries it covers: the visible ones, since the held-out split's coverage would describe
    its rankings)."""
    found = []
    for spec in specs:
        values = [v for v in evaluation.columns[str(spec)] if v is not None]
        found.append(
            Coverage(
                stage=stage,
                cutoff=spec.k or 0,
                value=sum(values) / len(values) if values else None,
                queries=len(values),
                with_holes=sum(1 for v in values if v < 1.0),
            )
        )
    return found


def every_query_failed(
    outcomes: Sequence[QueryOutcome], redacted: Callable[[str], bool]
) -> Stop | None:
    """The error when every query of the run (``outcomes``) failed (nothing to score: a table
    of zeros would say nothing about retrieval quality); None when one ran. The first visible
    failure is quoted, never one of a query ``redacted`` hides (by id)."""
    if not outcomes or any(o.error is None for o in outcomes):
        return None
    stages = sorted({o.error_stage or RETRIEVER_STAGE for o in outcomes})
    visible = [o for o in outcomes if not redacted(o.query_id)]
    first = (
        f"; the first, query {visible[0].query_id!r} [{visible[0].error_stage}]: "
        f"{for_terminal(visible[0].error_type)}: {for_terminal(visible[0].error)}"
        if visible
        else f" (held-out queries: details hidden; {DETAILS_HINT})"
    )
    return Stop.errored(
        f"every query failed in the {' and the '.join(stages)} ({len(outcomes)} of "
        f"{len(outcomes)}){first}",
        f"make the {' and the '.join(stages)} answer (the error quoted is the first; the JSON "
        "artifact lists every one), then run again",
    )


def doc_id_problem(
    doc_id: str | None, outcomes: Sequence[QueryOutcome], redacted: Callable[[str], bool]
) -> Stop | None:
    """The refusal when every query failed because no returned item has the
    ``retrieval_doc_id`` path (``doc_id``): the setting is wrong, not each query. A query
    ``redacted`` hides (by id) is never quoted."""
    if not outcomes or not doc_id or ":" in doc_id:
        return None
    if not all(o.error_type == "DocIdPathError" for o in outcomes):
        return None
    visible = [o for o in outcomes if not redacted(o.query_id)]
    example = f" (query {visible[0].query_id!r}: {visible[0].error})" if visible else ""
    return Stop.refused(
        f"retrieval_doc_id = {doc_id}: no returned item has it, so every query failed{example}",
        "set it to the key or attribute path where each result keeps its document id (e.g. "
        "metadata.source, meta.source, node.ref_doc_id), or remove it to use the default lookup",
    )


def visible_rankings(
    outcomes: Mapping[str, QueryOutcome], visible: Sequence[Query], stages: Sequence[str]
) -> Iterator[StageRankings]:
    """Per stage of the run (``stages``; the retriever's when it has none): ``(stage, rankings,
    with_answers)``, the rankings of the ``visible`` queries that ran, and those of the
    answerable ones among them (a no-answer query's ranking need not hold a judged id)."""
    answerable = {q.id for q in visible if any(g > 0 for g in q.judgments.values())}
    for stage in stages or (RETRIEVER_STAGE,):
        rankings = {
            q.id: outcomes[q.id].rankings.get(stage, ())
            for q in visible
            if q.id in outcomes and outcomes[q.id].error is None
        }
        yield stage, rankings, {qid: r for qid, r in rankings.items() if qid in answerable}


def judged_ids(golden: Iterable[Query], groups: DuplicateGroups | None) -> set[str]:
    """The ids that count as judged: every judged id, and with duplicate ``groups`` every
    member of a judged id's group (a copy stands for its group, so a ranking of copies is
    scored)."""
    judged = {doc for q in golden for doc in q.judgments}
    return groups.with_copies(judged) if groups is not None else judged


def without_judged_ids(per_stage: Iterable[StageRankings], judged: Collection[str]) -> str | None:
    """Why no baseline may be written from a run, when no ranking of an answerable query
    holds a ``judged`` id at some stage (``per_stage``: :func:`visible_rankings`; every metric
    there is 0: a baseline of zeros would let every later run pass its budgets), whatever
    ``retrieval_id_check`` says; None otherwise."""
    for stage, _rankings, with_answers in per_stage:
        ranked = [r for r in with_answers.values() if r]
        if ranked and judged and not any(doc in judged for r in ranked for doc in r):
            return (
                f"no ranking [{stage}] holds a judged id (0 of {len(ranked)} rankings of "
                "queries with a relevant document), so every metric is 0 and a baseline of "
                "zeros would let every later run pass; make the returned ids the golden set's "
                "(see retrieval_id_check) and run again"
            )
    return None


def id_problem(
    per_stage: Iterable[StageRankings],
    judged: Collection[str],
    corpus_ids: Collection[str] | None = None,
    *,
    stored: bool = False,
) -> Stop | None:
    """The refusal when returned ids differ from ``judged`` ids only in their Unicode
    normalisation, or (almost) no ranking of an answerable query holds a judged id (or no
    ranking a corpus id); every stage of ``per_stage`` (:func:`visible_rankings`) is checked,
    the first finding is the error. ``stored``: the rankings were read from run files (the fix
    says what applies to one)."""
    for stage, rankings, with_answers in per_stage:
        # The normal-form check first: ids that only look alike are its case, not the generic one.
        problem = normalisation_mismatch(rankings, judged, what="judged", stage=stage)
        if problem is None:
            problem = id_mismatch(with_answers, judged, what="judged", stage=stage, stored=stored)
        if problem is None and corpus_ids:
            problem = id_mismatch(rankings, corpus_ids, what="corpus", stage=stage, stored=stored)
        if problem is not None:
            return problem
    return None


def short_rankings_refusal(found: Sequence[ShortRankings]) -> Stop | None:
    """The refusal of a run whose rankings are short (``found``) under
    ``retrieval_short_rankings = error``; None when none are."""
    if not found:
        return None
    fixes = dict.fromkeys(f.fix for f in found)  # one stage's fix is often the other's
    return Stop.refused("\n".join(f.finding for f in found), "\n".join(fixes))
