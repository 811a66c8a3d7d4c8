"""The zero-tolerance leak gate over real framework retrievers, offline and in memory.

A corpus of two tenants' pages (``retrieval_corpus`` gives each its ``tenant``) and a golden set
whose queries name their tenant in the context. LangChain: an ``InMemoryVectorStore`` over the
deterministic fake embedding of ``langchain_core.embeddings``, filtered by the function
``retrieval_context_filter`` builds from each query's context; Haystack: an
``InMemoryDocumentStore`` with ``InMemoryBM25Retriever``, given the golden set's ``filters``.
Wired, ``forbidden@5 == 0`` passes; the same retriever without the filter fails it, and the
expected leaks (query, document, rank, stage) are the library's own unfiltered top 5 with each
document of another tenant than the query's, computed here from the same store.
"""

from __future__ import annotations

import os

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # no network from the test suite

import json
import types
from typing import Any

import pytest
from plugin_helpers import RetrievalProject, esc

pytest_plugins = ["pytester"]

TENANTS = ("acme", "globex")
TOPICS = ("refund", "shipping", "invoice")
#: The corpus: each topic's page once per tenant (the globex pages are longer, so BM25 never
#: ties two tenants' pages).
PAGES = [
    {
        "_id": f"{tenant}-{topic}",
        "text": f"{topic}: how the {topic} works"
        + (", step by step" if tenant == "globex" else ""),
        "tenant": tenant,
    }
    for tenant in TENANTS
    for topic in TOPICS
]
#: (id, text, tenant): the same text for both tenants, and a second acme question.
QUERIES = [
    ("acme-refund", "how does the refund work", "acme"),
    ("globex-refund", "how does the refund work", "globex"),
    ("acme-invoice", "where is the invoice", "acme"),
]

#: The stores, one module the project's conftest imports and this test runs too (the expected
#: rankings are the library's, never the plugin's).
STORES = """\
import json
import os

from haystack import Document as HaystackDocument
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.document_stores.in_memory import InMemoryDocumentStore
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore

HERE = os.path.dirname(os.path.abspath(__file__))


def pages():
    with open(os.path.join(HERE, "corpus.jsonl"), encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def langchain_store():
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    store.add_documents(
        [Document(id=p["_id"], page_content=p["text"], metadata={"tenant": p["tenant"]})
         for p in pages()]
    )
    return store


def haystack_retriever():
    store = InMemoryDocumentStore()
    store.write_documents(
        [HaystackDocument(id=p["_id"], content=p["text"], meta={"tenant": p["tenant"]})
         for p in pages()]
    )
    return InMemoryBM25Retriever(store)
"""

SCOPE = """\
def tenant_filter(context):
    tenant = context["tenant"]
    return lambda doc: doc.metadata["tenant"] == tenant
"""

CONFTEST = """\
import pytest
import leak_stores


@pytest.fixture(scope="session")
def retriever_under_test():
    return BUILD
"""


def _golden(haystack_filters: bool) -> str:
    lines = ["version: 1", "queries:"]
    for qid, text, tenant in QUERIES:
        context: dict[str, Any] = {"tenant": tenant}
        if haystack_filters:
            context["filters"] = {"field": "meta.tenant", "operator": "==", "value": tenant}
        lines += [
            f"  - id: {qid}",
            f"    text: {text}",
            f"    relevant: [{tenant}-{qid.split('-')[1]}]",
            f"    context: {json.dumps(context)}",
        ]
    return "\n".join(lines) + "\n"


def _project(
    pytester: pytest.Pytester, build: str, *, context_filter: bool, haystack_filters: bool
) -> RetrievalProject:
    ini = {
        "retrieval_corpus": "corpus.jsonl",
        "retrieval_short_rankings": "off",
        "retrieval_thresholds": "forbidden@5 == 0",
    }
    if context_filter:
        ini["retrieval_context_filter"] = "leak_scope:tenant_filter"
    project = RetrievalProject(pytester).write(
        golden=_golden(haystack_filters),
        conftest=CONFTEST.replace("BUILD", build),
        ini=ini,
        ks="5",
    )
    (project.path / "corpus.jsonl").write_text(
        "".join(json.dumps(page) + "\n" for page in PAGES), encoding="utf-8"
    )
    (project.path / "leak_stores.py").write_text(STORES, encoding="utf-8")
    (project.path / "leak_scope.py").write_text(SCOPE, encoding="utf-8")
    pytester.syspathinsert()
    return project


def _stores(project: RetrievalProject) -> types.ModuleType:
    """The project's store module, run in this process on the same corpus."""
    module = types.ModuleType("leak_stores_here")
    module.__file__ = str(project.path / "leak_stores.py")
    exec(compile(STORES, module.__file__, "exec"), module.__dict__)
    return module


def _expected_leaks(rankings: dict[str, list[str]]) -> list[str]:
    """The failure's lines for these unfiltered top-5 rankings: every page of another tenant
    than the query's, at its rank."""
    tenant_of = {page["_id"]: page["tenant"] for page in PAGES}
    leaks = []
    for qid, _text, tenant in QUERIES:
        for rank, doc in enumerate(rankings[qid][:5], start=1):
            if tenant_of[doc] != tenant:
                leaks.append(
                    f"  query {qid} (tenant {tenant}): {doc} at rank {rank} [retriever]: "
                    f"tenant {tenant_of[doc]}, the query's is {tenant}"
                )
    return leaks


def _assert_fails_naming(result: pytest.RunResult, leaks: list[str]) -> None:
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # every query's top 5 holds another tenant's page (5 results from 3 pages per tenant)
    assert len(leaks) >= len(QUERIES)
    result.stdout.fnmatch_lines(
        esc(
            [
                "forbidden@5 == 0 fails (zero tolerance) [stage=retriever split=overall]",
                f"{len(leaks)} forbidden documents in the top 5 of {len(QUERIES)} queries:",
                *leaks,
            ]
        )
    )


def test_a_langchain_vector_store_filtered_by_the_context_filter_keeps_forbidden_at_5_at_zero(
    pytester: pytest.Pytester,
) -> None:
    project = _project(
        pytester,
        "leak_stores.langchain_store().as_retriever()",
        context_filter=True,
        haystack_filters=False,
    )
    store = _stores(project).langchain_store()
    for _qid, text, tenant in QUERIES:  # the filter is what keeps the other tenant out
        filtered = store.similarity_search(
            text, k=5, filter=lambda doc, t=tenant: doc.metadata["tenant"] == t
        )
        assert {d.metadata["tenant"] for d in filtered} == {tenant}
    result = project.run()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["PASS forbidden@5 == 0*"])


def test_the_same_langchain_retriever_without_the_filter_fails_naming_each_leak_and_rank(
    pytester: pytest.Pytester,
) -> None:
    project = _project(
        pytester,
        "leak_stores.langchain_store().as_retriever()",
        context_filter=False,
        haystack_filters=False,
    )
    store = _stores(project).langchain_store()
    rankings = {
        qid: [str(d.id) for d in store.similarity_search(text, k=5)] for qid, text, _t in QUERIES
    }
    _assert_fails_naming(project.run(), _expected_leaks(rankings))


def test_a_haystack_bm25_retriever_given_the_golden_sets_filters_keeps_forbidden_at_5_at_zero(
    pytester: pytest.Pytester,
) -> None:
    project = _project(
        pytester, "leak_stores.haystack_retriever()", context_filter=False, haystack_filters=True
    )
    result = project.run()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["PASS forbidden@5 == 0*"])


def test_the_same_haystack_retriever_without_filters_fails_naming_each_leak_and_rank(
    pytester: pytest.Pytester,
) -> None:
    project = _project(
        pytester, "leak_stores.haystack_retriever()", context_filter=False, haystack_filters=False
    )
    retriever = _stores(project).haystack_retriever()
    rankings = {
        qid: [d.id for d in retriever.run(query=text, top_k=5)["documents"]]
        for qid, text, _t in QUERIES
    }
    _assert_fails_naming(project.run(), _expected_leaks(rankings))


# A query without a context is filtered too: retrieval_context_filter is called with {} for it
# (docs/scoped-retrieval.md: such a query "gets context={}"), never skipped, which would hand it
# every restricted document. The corpus: a public page of acme's, a shared public page and a
# page restricted to the legal group (its "audience" metadata is what the stores filter on).
OPEN_PAGES = [
    {"_id": "acme-refund", "text": "refund: acme", "tenant": "acme", "audience": "public"},
    {"_id": "shared-refund", "text": "refund: everyone", "audience": "public"},
    {
        "_id": "legal-refund",
        "text": "refund: legal terms",
        "groups": ["legal"],
        "audience": "legal",
    },
]
OPEN_GOLDEN = """\
version: 1
queries:
  - id: acme-refund
    text: how does the refund work
    relevant: [acme-refund]
    context: {tenant: acme}
  - id: anyone-refund
    text: how does the refund work
    relevant: [shared-refund]
"""
#: The same stores, their documents tagged with an audience instead of a tenant.
OPEN_STORES = STORES.replace('{"tenant": p["tenant"]}', '{"audience": p["audience"]}')
OPEN_SCOPE = """\
import json
import os

LOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "filter-calls.log")


def _log(context):
    with open(LOG, "a", encoding="utf-8") as log:
        log.write(json.dumps(context, sort_keys=True) + "\\n")


def langchain_filter(context):
    _log(context)
    legal = "legal" in context.get("groups", [])
    return lambda doc: legal or doc.metadata["audience"] == "public"


def haystack_filter(context):
    _log(context)
    if "legal" in context.get("groups", []):
        return None
    return {"field": "meta.audience", "operator": "==", "value": "public"}
"""


@pytest.mark.parametrize(
    ("build", "function"),
    [
        ("open_stores.langchain_store().as_retriever()", "langchain_filter"),
        ("open_stores.haystack_retriever()", "haystack_filter"),
    ],
    ids=["langchain", "haystack"],
)
def test_the_context_filter_is_called_with_an_empty_context_for_a_query_without_one(
    pytester: pytest.Pytester, build: str, function: str
) -> None:
    project = RetrievalProject(pytester).write(
        golden=OPEN_GOLDEN,
        conftest=CONFTEST.replace("leak_stores", "open_stores").replace("BUILD", build),
        ini={
            "retrieval_corpus": "corpus.jsonl",
            "retrieval_short_rankings": "off",
            "retrieval_thresholds": "forbidden@5 == 0",
            "retrieval_context_filter": f"open_scope:{function}",
        },
        ks="5",
    )
    (project.path / "corpus.jsonl").write_text(
        "".join(json.dumps(page) + "\n" for page in OPEN_PAGES), encoding="utf-8"
    )
    (project.path / "open_stores.py").write_text(OPEN_STORES, encoding="utf-8")
    (project.path / "open_scope.py").write_text(OPEN_SCOPE, encoding="utf-8")
    pytester.syspathinsert()
    # Unfiltered, the three pages all sit in every top 5, so legal-refund (groups legal) would
    # leak into anyone-refund's, whose context gives no groups.
    result = project.run()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["PASS forbidden@5 == 0*"])
    calls = (project.path / "filter-calls.log").read_text(encoding="utf-8").splitlines()
    assert sorted(calls) == ['{"tenant": "acme"}', "{}"]


def _open_project(pytester: pytest.Pytester, golden: str, ini: dict[str, str]) -> RetrievalProject:
    project = RetrievalProject(pytester).write(
        golden=golden,
        conftest=CONFTEST.replace("leak_stores", "open_stores").replace(
            "BUILD", "open_stores.langchain_store().as_retriever()"
        ),
        ini=ini,
        ks="5",
    )
    (project.path / "corpus.jsonl").write_text(
        "".join(json.dumps(page) + "\n" for page in OPEN_PAGES), encoding="utf-8"
    )
    (project.path / "open_stores.py").write_text(OPEN_STORES, encoding="utf-8")
    (project.path / "open_scope.py").write_text(OPEN_SCOPE, encoding="utf-8")
    pytester.syspathinsert()
    return project


OPEN_INI = {
    "retrieval_corpus": "corpus.jsonl",
    "retrieval_short_rankings": "off",
    "retrieval_thresholds": "forbidden@5 == 0",
    "retrieval_cache": "use",
    "retrieval_index_version": "v1",
}


def test_a_ranking_cached_without_the_context_filter_is_not_served_to_a_filtered_run(
    pytester: pytest.Pytester,
) -> None:
    # The cache is filled by a run without the filter: unfiltered, anyone-refund's top 5 holds
    # legal-refund (groups legal), so that run fails the gate.
    project = _open_project(pytester, OPEN_GOLDEN, OPEN_INI)
    project.run().assert_outcomes(failed=1)
    assert not (project.path / "filter-calls.log").exists()
    # With the filter set, both queries are called again through it (anyone-refund with {}):
    # served from the cache, anyone-refund's unfiltered ranking would fail the gate (a false red).
    project.write_ini(
        {**OPEN_INI, "retrieval_context_filter": "open_scope:langchain_filter"}, ks="5"
    )
    result = project.run()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["PASS forbidden@5 == 0*"])
    calls = (project.path / "filter-calls.log").read_text(encoding="utf-8").splitlines()
    assert sorted(calls) == ['{"tenant": "acme"}', "{}"]
    # Run again with the filter: now both come from the cache (the filter is not called).
    (project.path / "filter-calls.log").unlink()
    project.run().assert_outcomes(passed=1)
    assert not (project.path / "filter-calls.log").exists()


NO_CONTEXT_GOLDEN = """\
version: 1
queries:
  - id: anyone-refund
    text: how does the refund work
    relevant: [shared-refund]
  - id: anyone-terms
    text: where are the refund terms
    relevant: [shared-refund]
"""


def test_the_context_filter_is_called_for_every_query_of_a_golden_set_without_contexts(
    pytester: pytest.Pytester,
) -> None:
    # No query has a context, and the filter is still what scopes each one: unfiltered, the
    # three pages sit in every top 5 and legal-refund (groups legal) leaks into both.
    ini = {**OPEN_INI, "retrieval_context_filter": "open_scope:langchain_filter"}
    del ini["retrieval_cache"], ini["retrieval_index_version"]
    project = _open_project(pytester, NO_CONTEXT_GOLDEN, ini)
    result = project.run()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["PASS forbidden@5 == 0*"])
    calls = (project.path / "filter-calls.log").read_text(encoding="utf-8").splitlines()
    assert calls == ["{}", "{}"]


ONE_QUERY_GOLDEN = """\
version: 1
queries:
  - id: anyone-refund
    text: how does the refund work
    relevant: [shared-refund]
"""
UNJUDGED_GOLDEN = (
    ONE_QUERY_GOLDEN
    + """\
  - id: anyone-terms
    text: where are the refund terms
    relevant: []
"""
)


def test_a_passing_leak_gate_counts_its_one_query_in_the_singular(
    pytester: pytest.Pytester,
) -> None:
    ini = {**OPEN_INI, "retrieval_context_filter": "open_scope:langchain_filter"}
    del ini["retrieval_cache"], ini["retrieval_index_version"]
    project = _open_project(pytester, ONE_QUERY_GOLDEN, ini)
    project.run("--retrieval-json", "run.json").assert_outcomes(passed=1)
    artifact = json.loads((project.path / "run.json").read_text(encoding="utf-8"))
    messages = [gate["message"] for gate in artifact["gates"]]
    assert messages == [
        "forbidden@5 == 0 holds: no forbidden document in the top 5 of 1 query "
        "[stage=retriever split=overall]"
    ]


def test_a_failing_leak_gate_says_it_scored_every_query_a_query_without_relevant_documents_too(
    pytester: pytest.Pytester,
) -> None:
    # Unfiltered, legal-refund sits in both top 5s; anyone-terms judges nothing relevant and is
    # still scored by forbidden@5 (it needs no relevant document), so nothing is "skipped".
    ini = {k: v for k, v in OPEN_INI.items() if not k.startswith("retrieval_cache")}
    del ini["retrieval_index_version"]
    ini["retrieval_no_relevant"] = "skip"
    result = _open_project(pytester, UNJUDGED_GOLDEN, ini).run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "forbidden@5 == 0 fails (zero tolerance) *",
            "queries scored: 2 (every query: forbidden@K needs no relevant document)",
        ]
    )
    assert "skipped (no relevant document)" not in result.stdout.str()
