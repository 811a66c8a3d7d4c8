"""Who may see what: the forbidden and stale documents of each query.

A query's **forbidden** documents are the ones its user must not be shown: those its golden
entry lists (``forbidden: [ids]``) and those the corpus's access rules deny it. A **stale**
document is one the corpus marks superseded (``superseded_by: ID``) or retired
(``status: retired``): correct once, wrong to hand an LLM today. ``forbidden@K`` and
``stale@K`` (:mod:`pytest_retrieval.scoring.metrics`) count them in the top K.

The access rules (one home, docs/scoped-retrieval.md "Leak gates"), read from a corpus
document's metadata and the query's context:

* **tenant**: a document with ``tenant: T`` is forbidden for a query whose context names
  another tenant (``context.tenant`` a string other than ``T``). A query whose context has no
  ``tenant`` key is not scoped by tenant; a document without a tenant is shared. A tenant that
  is not a string (``7``, a list, ``null``) is refused while the corpus names tenants
  (:func:`access_problems`): read as "no tenant" it would unscope the query.
* **groups**: a document with ``groups: [G, ...]`` (a non-empty list) is forbidden unless the
  query's context ``groups`` (a list of strings, or one string) shares one of them: a query
  with no groups sees no group-restricted document. A document without groups is open. Groups
  that are neither are refused while some document is restricted to groups.

The context keys read are exactly ``tenant`` and ``groups``. The module is pure: the corpus
reader (:mod:`pytest_retrieval.formats.corpus`) builds the :class:`AccessRules`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import GoldenSetError, Problem
from ..scoring.metrics import MetricSpec
from ..text import plural
from .model import Query

#: The context keys the access rules read.
TENANT_KEY = "tenant"
GROUPS_KEY = "groups"
#: The ``status`` that makes a document stale.
RETIRED = "retired"
#: Why a document counts as a leak, as the reports name it: a forbidden one is ``listed`` in
#: the golden set or denied by the corpus's ``tenant`` or ``groups``; a stale one is
#: ``superseded`` or ``retired``.
Kind = Literal["listed", "tenant", "groups", "superseded", "retired"]


@dataclass(frozen=True, slots=True)
class Reason:
    """Why one document counts for a query: its :data:`Kind` and the sentence every message
    shows (``tenant globex, the query's is acme``)."""

    kind: Kind
    text: str


@dataclass(frozen=True, slots=True)
class DocumentAccess:
    """What one corpus document says about who may see it and whether it is current."""

    tenant: str | None = None
    groups: tuple[str, ...] = ()
    superseded_by: str | None = None
    status: str | None = None

    @property
    def stale_reason(self) -> Reason | None:
        """``superseded by X`` or ``retired``; None for a current document."""
        if self.superseded_by is not None:
            return Reason("superseded", f"superseded by {self.superseded_by}")
        if self.status == RETIRED:
            return Reason("retired", RETIRED)
        return None


@dataclass(frozen=True, slots=True)
class AccessRules:
    """The access metadata of a corpus: only its documents that carry some (``documents``),
    and the file it came from (``source``, named in every message)."""

    documents: Mapping[str, DocumentAccess] = field(default_factory=dict)
    source: str | None = None

    @property
    def tenants(self) -> tuple[str, ...]:
        """Every tenant a document names, sorted."""
        return tuple(sorted({d.tenant for d in self.documents.values() if d.tenant}))

    @property
    def has_groups(self) -> bool:
        """True when some document is restricted to groups."""
        return any(d.groups for d in self.documents.values())

    @property
    def has_status(self) -> bool:
        """True when some document says whether it is current (``superseded_by``, ``status``)."""
        return any(
            d.superseded_by is not None or d.status is not None for d in self.documents.values()
        )

    @property
    def stale(self) -> dict[str, Reason]:
        """``{doc id: why it is stale}`` for every superseded or retired document."""
        found = {doc: d.stale_reason for doc, d in self.documents.items()}
        return {doc: reason for doc, reason in found.items() if reason is not None}

    def denial(self, query: Query, doc: str) -> str | None:
        """Why the rules deny ``doc`` to ``query`` (module docstring); None when they do not.
        A lookup per document: no query's forbidden set is ever built whole (a tenant's
        complement can be most of the corpus)."""
        found = self.denied(query, doc)
        return found.text if found is not None else None

    def denied(self, query: Query, doc: str) -> Reason | None:
        """:meth:`denial` with its kind (``tenant`` or ``groups``)."""
        found = self.documents.get(doc)
        if found is None:
            return None
        tenant = query.context.get(TENANT_KEY)
        if isinstance(tenant, str) and found.tenant is not None and found.tenant != tenant:
            return Reason("tenant", f"tenant {found.tenant}, the query's is {tenant}")
        if found.groups and not set(query_groups(query)).intersection(found.groups):
            return Reason("groups", f"groups {', '.join(found.groups)}, none of the query's")
        return None


def query_groups(query: Query) -> tuple[str, ...]:
    """The query's ``context.groups`` as strings (one string is one group)."""
    value = query.context.get(GROUPS_KEY)
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Sequence):
        return tuple(item for item in value if isinstance(item, str))
    return ()


class Denied(Collection[str]):
    """The forbidden documents of one query, looked up one at a time: what the query's golden
    entry lists, and what the corpus's rules deny it (:meth:`AccessRules.denial`)."""

    __slots__ = ("listed", "query", "rules")

    def __init__(self, query: Query, rules: AccessRules | None) -> None:
        self.query = query
        self.rules = rules
        self.listed = frozenset(query.forbidden)

    def reason(self, doc: str) -> str | None:
        """Why ``doc`` is forbidden to this query; None when it is not."""
        found = self.why(doc)
        return found.text if found is not None else None

    def why(self, doc: str) -> Reason | None:
        """:meth:`reason` with its kind (``listed``, ``tenant`` or ``groups``)."""
        if doc in self.listed:
            return Reason("listed", "listed in the golden set")
        return self.rules.denied(self.query, doc) if self.rules is not None else None

    def __contains__(self, doc: object) -> bool:
        return isinstance(doc, str) and self.why(doc) is not None

    def __iter__(self) -> Iterator[str]:
        documents = self.rules.documents if self.rules is not None else {}
        yield from sorted(self.listed)
        yield from (d for d in documents if d not in self.listed and d in self)

    def __len__(self) -> int:
        return sum(1 for _doc in self)


@dataclass(frozen=True, slots=True)
class Access:
    """What the leak metrics are scored from: per query, its forbidden documents
    (:class:`Denied`), and the stale documents with the reason. ``forbidden_unmeasured`` and
    ``stale_unmeasured`` say why a metric cannot be measured (None: it can)."""

    forbidden: Mapping[str, Denied] = field(default_factory=dict)
    stale: Mapping[str, Reason] = field(default_factory=dict)
    forbidden_unmeasured: str | None = None
    stale_unmeasured: str | None = None

    @property
    def measured(self) -> tuple[str, ...]:
        """The leak metrics this run can measure (``forbidden``, ``stale``), in table order."""
        reasons = (("forbidden", self.forbidden_unmeasured), ("stale", self.stale_unmeasured))
        return tuple(name for name, why in reasons if why is None)

    def reason(self, metric: str, query_id: str, doc: str) -> Reason | None:
        """Why ``doc`` counts for ``metric`` (``forbidden`` or ``stale``) in ``query_id``'s
        ranking; None when it does not."""
        if metric == "stale":
            return self.stale.get(doc)
        denied = self.forbidden.get(query_id)
        return denied.why(doc) if denied is not None else None

    def scoring_arguments(self, specs: Iterable[MetricSpec]) -> dict[str, Any]:
        """``evaluate_documents``' ``forbidden``, ``stale`` and ``unmeasurable`` arguments, when
        ``specs`` ask for ``forbidden@K`` or ``stale@K`` (else none)."""
        if not any(s.metric.source == "access" for s in specs):
            return {}
        reasons = (("forbidden", self.forbidden_unmeasured), ("stale", self.stale_unmeasured))
        return {
            "forbidden": self.forbidden,
            "stale": frozenset(self.stale),
            "unmeasurable": {name: why for name, why in reasons if why is not None},
        }


def _spelled(value: object) -> str:
    """A context value as the golden set writes it (JSON: ``7``, ``["acme", "globex"]``)."""
    import json

    from .context import thaw_context

    return json.dumps(thaw_context(value), sort_keys=True)


def _tenant_type_problem(value: object, where: str, tenants: Collection[str]) -> tuple[str, str]:
    """``(message, fix)`` for a ``context.tenant`` that is not a string: the tenant rule
    compares strings, so reading it as "no tenant" would leave the query unscoped."""
    message = (
        f"context.tenant is {_spelled(value)}, not a string, and the tenant rule of {where} "
        f"compares a tenant's id as text (its documents name {', '.join(sorted(tenants))}): "
        "the query would not be scoped by tenant at all"
    )
    if isinstance(value, Sequence) and not isinstance(value, str):
        fix = "a query is asked for one tenant: write one query per tenant, each with its own "
        fix += "tenant: ID"
    elif value is None:
        fix = "drop the tenant key for a query scoped to no tenant"
    elif isinstance(value, (bool, int, float)):
        fix = f'quote it: tenant: "{_spelled(value)}"'
    else:
        fix = "write the tenant's id as a string, e.g. tenant: acme"
    return message, fix


def _groups_type_problem(value: object, where: str) -> tuple[str, str] | None:
    """``(message, fix)`` for a ``context.groups`` that is neither a string nor a list of
    strings (None when it is one): read as "no groups", it would hide the mistake."""
    if isinstance(value, str):
        return None
    items = list(value) if isinstance(value, Sequence) else None
    if items is not None and all(isinstance(item, str) for item in items):
        return None
    message = (
        f"context.groups is {_spelled(value)}, and the groups rule of {where} reads a list of "
        "group names (or one name)"
    )
    if value is None:
        return message, "write groups: [] (or drop the key) for a query with no groups"
    if isinstance(value, Mapping):  # {hr: true}: the names are its keys
        items = list(value)
    elif items is None:
        items = [value]
    names = [item if isinstance(item, str) else _spelled(item) for item in items]
    import json

    return message, f"write the names as strings: groups: {json.dumps(names)}"


def access_problems(
    queries: Iterable[Query], rules: AccessRules | None, *, source: str | None = None
) -> list[Problem]:
    """Every way ``queries`` contradict the corpus's access ``rules``, one
    :class:`~pytest_retrieval.errors.Problem` each, naming the query (and the golden file,
    ``source``). The one home of these checks: the run (:func:`build_access`) and
    ``pytest-retrieval golden validate --corpus`` both call it.

    * a ``context.tenant`` that is not a string, when the corpus's documents name tenants (the
      rule would not scope the query), or one no document names (a typo would scope it to
      nothing);
    * a ``context.groups`` that is neither a string nor a list of strings, when some document
      is restricted to groups;
    * a document the rules deny a query that the query judges relevant (it cannot be both).
    """
    if rules is None:
        return []
    where = rules.source or "the corpus"
    problems: list[Problem] = []
    tenants = set(rules.tenants)

    def problem(query: Query, message: str, fix: str, field: str) -> None:
        problems.append(Problem(message, fix, source=source, query_id=query.id, field=field))

    for query in queries:
        if tenants and TENANT_KEY in query.context:
            tenant = query.context[TENANT_KEY]
            if not isinstance(tenant, str):
                problem(query, *_tenant_type_problem(tenant, where, tenants), "context")
            elif tenant not in tenants:
                problem(
                    query,
                    f"context.tenant {tenant!r} is no tenant of {where} (its documents name "
                    f"{', '.join(sorted(tenants))})",
                    f"fix the tenant's spelling, or give its documents 'tenant: {tenant}' in "
                    "the corpus",
                    "context",
                )
        if rules.has_groups and GROUPS_KEY in query.context:
            found = _groups_type_problem(query.context[GROUPS_KEY], where)
            if found is not None:
                problem(query, *found, "context")
        for doc in query.relevant:
            why = rules.denial(query, doc)
            if why is not None:
                problem(
                    query,
                    f"doc {doc!r} is judged relevant, but {where} denies it to this query ({why})",
                    "a document the user must not see cannot be their answer: fix the "
                    "query's context, the document's tenant or groups, or the judgment",
                    "relevant",
                )
    return problems


def access_error(problems: Sequence[Problem], rules: AccessRules | None) -> GoldenSetError:
    """The one error :func:`access_problems`' findings are raised and printed as."""
    where = rules.source if rules is not None and rules.source else "the corpus"
    return GoldenSetError(
        list(problems),
        title=f"{plural(len(problems), 'query', 'queries')} "
        f"{'contradicts' if len(problems) == 1 else 'contradict'} the access rules of {where}",
    )


def build_access(
    queries: Iterable[Query], rules: AccessRules | None, *, source: str | None = None
) -> Access:
    """Every query's forbidden documents and the stale ones; a clear error for a contradiction.

    Refused, naming the query (one :class:`~pytest_retrieval.errors.GoldenSetError` listing
    all): what :func:`access_problems` finds (a tenant that is no string or no tenant of the
    corpus, groups that are no list of names, a denied document judged relevant). ``source``
    is the golden file the queries came from, named in each problem.
    """
    queries = list(queries)
    where = rules.source if rules is not None and rules.source else "the corpus"
    problems = access_problems(queries, rules, source=source)
    if problems:
        raise access_error(problems, rules)
    tenants = set(rules.tenants) if rules is not None else set()
    has_rules = rules is not None and (bool(tenants) or rules.has_groups)
    forbidden_unmeasured = None
    if not has_rules and not any(q.forbidden for q in queries):
        forbidden_unmeasured = (
            "no query lists forbidden documents and "
            + (
                f"{where} gives no document a tenant or groups"
                if rules is not None
                else "no corpus is set (retrieval_corpus)"
            )
            + ": list them per query (forbidden: [ids]) or give corpus documents 'tenant' / "
            "'groups' metadata"
        )
    stale = rules.stale if rules is not None else {}
    stale_unmeasured = None
    if rules is None or not rules.has_status:
        stale_unmeasured = (
            f"{where} gives no document 'superseded_by' or 'status' metadata"
            if rules is not None
            else "no corpus is set (retrieval_corpus) to read 'superseded_by' / "
            "'status: retired' from"
        ) + ": stale@K would be 0 for any retriever"
    forbidden = {q.id: Denied(q, rules if has_rules else None) for q in queries}
    return Access(forbidden, stale, forbidden_unmeasured, stale_unmeasured)
