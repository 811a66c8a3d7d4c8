"""pytest-retrieval: retrieval quality as a pytest regression gate.

This module is the public API. Everything a user imports is named in :data:`__all__` and
imported from here, ``from pytest_retrieval import assert_recall_at``; the submodules are the
implementation and may change between releases.

pytest imports this package in every run of every environment the plugin is installed in (the
``pytest11`` entry point is ``pytest_retrieval.plugin``), so nothing is imported eagerly: each
name is resolved on first use from the table below (PEP 562), and editors and type checkers see
the same names through the ``TYPE_CHECKING`` imports.

Gates, used inside tests of a session with a golden set:
    ``assert_recall_at``, ``assert_precision_at``, ``assert_hit_rate_at``, ``assert_ndcg_at``,
    ``assert_map_at``, ``assert_mrr``, ``assert_mrr_at``, ``assert_distinct_at``,
    ``assert_abstain_rate``, ``assert_answer_rate``, ``assert_forbidden_at``,
    ``assert_stale_at`` (the comparison raises with the worst queries, or the leaks), the
    zero-tolerance ``assert_no_forbidden_at`` (asserts when called), and the plain scores
    ``recall_at``, ``precision_at``, ``hit_rate_at``, ``ndcg_at``, ``map_at``, ``mrr``,
    ``mrr_at``, ``forbidden_at``, ``stale_at`` (a :class:`Score` to compare); ``Selection``
    (stage, split, slice), ``GateUsageError``, ``RetrievalSession`` (the
    ``retrieval_session`` fixture's type).
Golden sets:
    ``Query``, ``GoldenSet``, ``Label`` (a judgment's provenance), ``load_golden``,
    ``write_golden``.
Scoring without pytest:
    ``evaluate``, ``Evaluation``, ``Conventions``, ``MetricSpec``, ``DuplicateGroups`` and the
    per-query metric functions
    ``recall_at_k``, ``precision_at_k``, ``hit_rate_at_k``, ``reciprocal_rank``,
    ``average_precision``, ``dcg``, ``ndcg_at_k``, ``r_precision``, ``judged_at_k`` (coverage).
Retrievers:
    ``HaystackPipeline`` (names a Haystack pipeline's query input), ``describe_retriever``
    (how the runner will call an object, and whether the depth reaches it), ``RetrieverShape``,
    ``RetrieverShapeError``.
Errors:
    ``Problem``, ``InputError``, ``GoldenSetError``, ``RunFileError``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = [
    "Conventions",
    "DuplicateGroups",
    "Evaluation",
    "GateUsageError",
    "GoldenSet",
    "GoldenSetError",
    "HaystackPipeline",
    "InputError",
    "Label",
    "MetricSpec",
    "Problem",
    "Query",
    "RetrievalSession",
    "RetrieverShape",
    "RetrieverShapeError",
    "RunFileError",
    "Score",
    "Selection",
    "__version__",
    "assert_abstain_rate",
    "assert_answer_rate",
    "assert_distinct_at",
    "assert_forbidden_at",
    "assert_hit_rate_at",
    "assert_map_at",
    "assert_mrr",
    "assert_mrr_at",
    "assert_ndcg_at",
    "assert_no_forbidden_at",
    "assert_precision_at",
    "assert_recall_at",
    "assert_stale_at",
    "average_precision",
    "dcg",
    "describe_retriever",
    "evaluate",
    "forbidden_at",
    "hit_rate_at",
    "hit_rate_at_k",
    "judged_at_k",
    "load_golden",
    "map_at",
    "mrr",
    "mrr_at",
    "ndcg_at",
    "ndcg_at_k",
    "precision_at",
    "precision_at_k",
    "r_precision",
    "recall_at",
    "recall_at_k",
    "reciprocal_rank",
    "stale_at",
    "write_golden",
]

# name -> the module that defines it (relative to this package)
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(
        (
            "GateUsageError",
            "Score",
            "Selection",
            "assert_abstain_rate",
            "assert_answer_rate",
            "assert_distinct_at",
            "assert_forbidden_at",
            "assert_hit_rate_at",
            "assert_map_at",
            "assert_mrr",
            "assert_mrr_at",
            "assert_ndcg_at",
            "assert_precision_at",
            "assert_no_forbidden_at",
            "assert_recall_at",
            "assert_stale_at",
            "forbidden_at",
            "hit_rate_at",
            "map_at",
            "mrr",
            "mrr_at",
            "ndcg_at",
            "precision_at",
            "recall_at",
            "stale_at",
        ),
        "gates.gate",
    ),
    **dict.fromkeys(("GoldenSet", "Label", "Query"), "golden.model"),
    **dict.fromkeys(("load_golden", "write_golden"), "formats.golden_io"),
    **dict.fromkeys(("Conventions", "Evaluation", "evaluate"), "scoring.evaluate"),
    "DuplicateGroups": "scoring.dedup",
    **dict.fromkeys(
        (
            "MetricSpec",
            "average_precision",
            "dcg",
            "hit_rate_at_k",
            "judged_at_k",
            "ndcg_at_k",
            "precision_at_k",
            "r_precision",
            "recall_at_k",
            "reciprocal_rank",
        ),
        "scoring.metrics",
    ),
    **dict.fromkeys(("GoldenSetError", "InputError", "Problem", "RunFileError"), "errors"),
    "RetrievalSession": "session.session",
    **dict.fromkeys(
        ("HaystackPipeline", "RetrieverShape", "RetrieverShapeError", "describe_retriever"),
        "run.retriever",
    ),
    "__version__": "version",
}

if TYPE_CHECKING:
    from .errors import GoldenSetError, InputError, Problem, RunFileError
    from .formats.golden_io import load_golden, write_golden
    from .gates.gate import (
        GateUsageError,
        Score,
        Selection,
        assert_abstain_rate,
        assert_answer_rate,
        assert_distinct_at,
        assert_forbidden_at,
        assert_hit_rate_at,
        assert_map_at,
        assert_mrr,
        assert_mrr_at,
        assert_ndcg_at,
        assert_no_forbidden_at,
        assert_precision_at,
        assert_recall_at,
        assert_stale_at,
        forbidden_at,
        hit_rate_at,
        map_at,
        mrr,
        mrr_at,
        ndcg_at,
        precision_at,
        recall_at,
        stale_at,
    )
    from .golden.model import GoldenSet, Label, Query
    from .run.retriever import (
        HaystackPipeline,
        RetrieverShape,
        RetrieverShapeError,
        describe_retriever,
    )
    from .scoring.dedup import DuplicateGroups
    from .scoring.evaluate import Conventions, Evaluation, evaluate
    from .scoring.metrics import (
        MetricSpec,
        average_precision,
        dcg,
        hit_rate_at_k,
        judged_at_k,
        ndcg_at_k,
        precision_at_k,
        r_precision,
        recall_at_k,
        reciprocal_rank,
    )
    from .session.session import RetrievalSession
    from .version import __version__


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # resolved once; later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
