"""How deep the retriever is asked: the first depth and why, and how far a query is asked again.

The rule, written once (docs/frameworks.md, "Depth", points here):

* **The first call** asks ``retrieval_depth`` results when it is set (it wins, even below what
  the retriever was built with). Otherwise the larger of the largest cutoff scored (every K of
  ``retrieval_ks`` and of the declared gates and budgets) and the depth the retriever was built
  to return, where that can be read (LangChain ``search_kwargs["k"]``, a Haystack component's
  ``top_k``): a retriever is never handed a smaller ``k`` than it was built with. Baselines
  record the configured depth (:attr:`~pytest_retrieval.session.session.RetrievalSession.
  effective_depth`), whatever was asked.
* **Asking again.** With ``retrieval_cutoff_unit = documents`` (the default, K counts
  documents), a query whose results collapse (chunks of one document, an id returned twice)
  into fewer documents than the largest cutoff while its call came back full (as many results
  as asked: the index has more) is asked again, deeper, as
  :func:`~pytest_retrieval.run.retriever.items.deeper` says (at least twice as deep, or as deep as
  its results-per-document ratio says would fill the cutoff), up to ``retrieval_max_depth``
  (default :data:`MAX_DEPTH_FACTOR` times the first depth). Only those queries are asked again,
  and only where the depth reaches the retriever (a ``k``/``top_k`` parameter, LangChain
  ``k=``, Haystack ``top_k``). Where it cannot (a LlamaIndex ``similarity_top_k``,
  ``BM25Retriever``, a function without ``k``), the run's checks name the build-time knob and
  the number that would fill K (:mod:`pytest_retrieval.run.shortrankings`).
* With ``retrieval_cutoff_unit = results``, K counts the results as returned: nothing is asked
  again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..settings.resolve import Settings
    from .retriever import RetrieverShape

#: ``retrieval_max_depth``'s default: this many times the first depth.
MAX_DEPTH_FACTOR = 10


@dataclass(frozen=True, slots=True)
class DepthPlan:
    """How deep this session's retriever is asked.

    ``first`` is the depth of every query's first call and ``reason`` why
    (``retrieval_depth``, ``the largest cutoff``, ``as built``); ``passed`` says whether the
    depth reaches the retriever; ``fill`` is the documents a ranking should hold, for which a
    query is asked again (None: never asked again), up to ``max_depth``. ``built`` is the depth
    the retriever was built with, when it can be read; ``hint_builds`` whether its depth hint
    sets that depth (:attr:`~pytest_retrieval.run.retriever.RetrieverShape.hint_builds`).
    """

    first: int
    reason: str
    passed: bool
    fill: int | None
    max_depth: int
    built: int | None = None
    hint_builds: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Builtins (the xdist payload and the artifact)."""
        return {
            "first": self.first,
            "reason": self.reason,
            "passed": self.passed,
            "fill": self.fill,
            "max_depth": self.max_depth,
            "built": self.built,
            "hint_builds": self.hint_builds,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DepthPlan:
        """Inverse of :meth:`to_dict`."""
        return cls(
            first=int(data["first"]),
            reason=str(data["reason"]),
            passed=bool(data["passed"]),
            fill=None if data.get("fill") is None else int(data["fill"]),
            max_depth=int(data["max_depth"]),
            built=None if data.get("built") is None else int(data["built"]),
            hint_builds=bool(data.get("hint_builds", False)),
        )


def plan_depth(
    settings: Settings, *, cutoff: int, depth: int, shape: RetrieverShape | None
) -> DepthPlan:
    """The depth plan of a run whose largest cutoff is ``cutoff`` and configured depth ``depth``
    (:attr:`~pytest_retrieval.session.session.RetrievalSession.effective_depth`), calling a
    retriever of ``shape`` (None: unknown). See the module docstring."""
    built = shape.built_depth if shape is not None else None
    passed = shape is not None and shape.depth_passed
    if settings.depth is not None:
        first, reason = settings.depth, "retrieval_depth"
    elif passed and built is not None and built > depth:
        first, reason = built, f"as many as the retriever was built to return, {built}"
    else:
        first, reason = depth, "the largest cutoff"
    fill = min(cutoff, depth) if passed and settings.cutoff_unit == "documents" else None
    cap = settings.max_depth if settings.max_depth is not None else MAX_DEPTH_FACTOR * first
    return DepthPlan(
        first=first,
        reason=reason,
        passed=passed,
        fill=fill,
        max_depth=max(first, cap),
        built=built,
        hint_builds=shape is not None and shape.hint_builds,
    )
