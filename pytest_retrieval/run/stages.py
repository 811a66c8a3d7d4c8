"""The stages of a run: their names, their pipeline order and the final one.

A run has one stage (``retriever``) or two (``retriever``, then ``reranker`` over its
candidates). The **final stage** is the last one in pipeline order (``retriever`` first,
``reranker`` second, any other name after them in name order): its ranking is what users get.
It is the default stage of everything that names none (a gate, a budget, the ``retrieval_run``
fixture, the reports), and this module is the one home of that rule (:func:`final_stage`;
:func:`stage_or_final` for something that may name its own stage); a run's default stage is
:attr:`pytest_retrieval.session.session.RetrievalSession.default_stage`, a stored run's
:func:`final_stage` of its ``stages``.

Budgets compare stages across two runs, and a stage can be added or removed between them: a
budget that names no stage compares the final stage of each side (the baseline's and this
run's, whatever their names), and :func:`stage_change` is the phrase every report says it with
when the two are not the same stage.
"""

from __future__ import annotations

from collections.abc import Iterable

RETRIEVER_STAGE = "retriever"
RERANKER_STAGE = "reranker"


def pipeline_order(stages: Iterable[str]) -> tuple[str, ...]:
    """``stages`` once each, in pipeline order: retriever, reranker, then others by name."""
    seen = set(stages)
    known = [s for s in (RETRIEVER_STAGE, RERANKER_STAGE) if s in seen]
    return tuple(known + sorted(seen - set(known)))


def final_stage(stages: Iterable[str]) -> str | None:
    """The final stage of ``stages`` (the last in pipeline order), None when there is none."""
    ordered = pipeline_order(stages)
    return ordered[-1] if ordered else None


def stage_or_final(named: str | None, stages: Iterable[str]) -> str:
    """The stage of something that names ``named`` (None: it names none): that stage, else the
    final stage of ``stages`` (:func:`final_stage`), else ``retriever`` (no stage yet: before
    the run, or a stored run that records none)."""
    if named is not None:
        return named
    return final_stage(stages) or RETRIEVER_STAGE


def stage_change(baseline_stage: str | None, current_stage: str | None) -> str | None:
    """``final stage: reranker in the baseline, retriever now`` when a comparison paired two
    different stages (a stage was added or removed since the baseline); None when it compared
    one stage with itself, or does not know the baseline's (an artifact written before the
    baseline's stage was recorded)."""
    if baseline_stage is None or current_stage is None or baseline_stage == current_stage:
        return None
    return f"final stage: {baseline_stage} in the baseline, {current_stage} now"
