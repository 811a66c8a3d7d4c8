"""What a new user's trial of query contexts (issue 27) ran into, as the user sees it: a YAML
1.1 boolean word inside a context, a context filter that returns the wrong type for its store,
the context-filter refusals' own fixes, the rescore wording when a context changed, and the
grammar of a one-query failure."""

from __future__ import annotations

import pytest
from plugin_helpers import RetrievalProject

CONFTEST = """
import pytest

@pytest.fixture(scope="session")
def retriever_under_test():
    def search(text, k, tenant="", locale="", beta=False):
        return [f"{tenant}-policy"][:k]
    return search
"""

TESTS = """
from pytest_retrieval import assert_recall_at

def test_recall():
    assert_recall_at(1) >= 1.0
"""


# --- 1. a YAML 1.1 boolean word in a context is refused where it is written ------------------


def test_a_yaml_1_1_boolean_word_in_a_context_is_refused_naming_file_line_query_and_key(
    retrieval_project: RetrievalProject,
) -> None:
    # PyYAML reads the unquoted words no and On as booleans (YAML 1.1); the user meant the
    # locale code 'no' (Norwegian) and the text 'On'. true and True stay booleans, a quoted
    # 'no' stays text: neither is refused.
    golden = """\
version: 1
queries:
  - id: acme-q
    text: Refund window?
    relevant: [acme-policy]
    context: {tenant: acme, locale: no, beta: true}
  - id: globex-q
    text: Refund window?
    relevant: [globex-policy]
    context:
      tenant: globex
      flags: [True, 'no', On]
"""
    retrieval_project.write(golden=golden, conftest=CONFTEST, tests=TESTS)
    result = retrieval_project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    golden_path = retrieval_project.path / "golden.yaml"
    assert result.stderr.lines[:3] == [
        f"ERROR: {golden_path}: golden set has 2 problems:",
        f"  - {golden_path}:6:29: query 'acme-q', field 'context': context.locale: YAML reads "
        "no as the boolean false, not the text 'no' (quote it ('no') if it is the text, or "
        "write false)",
        f"  - {golden_path}:12:27: query 'globex-q', field 'context': context.flags[2]: YAML "
        "reads On as the boolean true, not the text 'On' (quote it ('On') if it is the text, "
        "or write true)",
    ]
    assert retrieval_project.calls() == []


def test_a_yaml_set_in_a_context_is_refused_with_the_list_it_meant_and_null_values_are_kept(
    retrieval_project: RetrievalProject,
) -> None:
    # '? hr' keys and the flow form {hr, legal} are YAML's set syntax: PyYAML reads them as
    # {hr: None, legal: None}, a mapping the groups rule would never read as groups. Written
    # with a ':' ('hr:', 'hr: null', '? field' then ': value') they are a mapping, and kept.
    golden = """\
version: 1
queries:
  - id: acme-q
    text: Refund window?
    relevant: [acme-policy]
    context:
      tenant: acme
      groups:
        ? hr
        ? legal   # a comment: with a colon
  - id: globex-q
    text: Refund window?
    relevant: [globex-policy]
    context: {tenant: globex, groups: {support, hr}}
  - id: kept-q
    text: Refund window?
    relevant: [acme-policy]
    context:
      tenant: acme
      flags: {beta: null, dark: }
      filters:
        ? field
        : meta.tenant
"""
    retrieval_project.write(golden=golden, conftest=CONFTEST, tests=TESTS)
    result = retrieval_project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    golden_path = retrieval_project.path / "golden.yaml"
    assert result.stderr.lines[:3] == [
        f"ERROR: {golden_path}: golden set has 2 problems:",
        f"  - {golden_path}:9:11: query 'acme-q', field 'context': context.groups is written "
        "as a set (hr, legal), which YAML reads as a mapping of each name to null, not a list "
        "(write a list, e.g. groups: [hr, legal]; or, for a mapping whose values are null, "
        "write each as 'name: null')",
        f"  - {golden_path}:14:40: query 'globex-q', field 'context': context.groups is "
        "written as a set (support, hr), which YAML reads as a mapping of each name to null, "
        "not a list (write a list, e.g. groups: [support, hr]; or, for a mapping whose values "
        "are null, write each as 'name: null')",
    ]
    assert retrieval_project.calls() == []


def test_a_tagged_yaml_set_in_a_context_is_refused_with_a_list_as_the_fix(
    retrieval_project: RetrievalProject,
) -> None:
    golden = """\
version: 1
queries:
  - id: acme-q
    text: Refund window?
    relevant: [acme-policy]
    context: {tenant: acme, groups: !!set {hr, legal}}
"""
    retrieval_project.write(golden=golden, conftest=CONFTEST, tests=TESTS)
    result = retrieval_project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    golden_path = retrieval_project.path / "golden.yaml"
    assert result.stderr.lines[1] == (
        f"  - {golden_path}:6:37: unsupported YAML tag 'tag:yaml.org,2002:set' (write a list, "
        "e.g. [hr, legal])"
    )


# --- 2 and 3: the context filter's refusals and a filter of the wrong type -------------------

GOLDEN = """\
version: 1
queries:
  - id: acme-q
    text: how does the refund work
    relevant: [acme/refund]
    context: {tenant: acme}
  - id: globex-q
    text: how does the refund work
    relevant: [globex/refund]
    context: {tenant: globex}
"""

#: retrieval_context_filter functions: the right one for InMemoryVectorStore (a function of a
#: Document), and two a new user wrote first (a string, a dict: what other stores take).
SCOPE = """
def by_document(context):
    return lambda doc: doc.metadata["tenant"] == context["tenant"]


def as_text(context):
    return "tenant == " + context["tenant"]


def as_dict(context):
    return {"tenant": context["tenant"]}


def of_nothing(context):
    return lambda: True
"""

LANGCHAIN = """
import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore


@pytest.fixture(scope="session")
def retriever_under_test():
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_documents([
        Document(id=f"{t}/{topic}", page_content=f"{topic} works", metadata={"tenant": t})
        for t in ("acme", "globex") for topic in ("refund", "shipping")
    ])
    return store.as_retriever(SEARCH_KWARGS)
"""


def langchain(p: RetrievalProject, builder: str, search_kwargs: str = "") -> RetrievalProject:
    p.write(
        golden=GOLDEN,
        conftest=LANGCHAIN.replace("SEARCH_KWARGS", search_kwargs),
        tests=TESTS,
        ks="1",
        ini={"retrieval_context_filter": f"scope:{builder}"},
    )
    (p.path / "scope.py").write_text(SCOPE, encoding="utf-8")
    p.pytester.syspathinsert()
    return p


def refusal(result: pytest.RunResult) -> list[str]:
    """The refusal's two lines (reason, fix) as the terminal summary prints them."""
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    lines = result.stdout.lines
    start = lines.index(
        "==================== retrieval: run refused (exit status 4) ===================="
    )
    return lines[start + 1 : start + 3]


GENERIC_FIX = "Fix: return an object the plugin can call"


def test_a_context_filter_for_a_plain_function_is_refused_with_its_own_fix(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        golden=GOLDEN,
        conftest=CONFTEST,
        tests=TESTS,
        ks="1",
        ini={"retrieval_context_filter": "scope:as_dict"},
    )
    (retrieval_project.path / "scope.py").write_text(SCOPE, encoding="utf-8")
    retrieval_project.pytester.syspathinsert()
    result = retrieval_project.run()
    assert refusal(result) == [
        "pytest-retrieval refused the run: retrieval_context_filter = scope:as_dict builds the "
        "filter= of a LangChain retriever and the filters= of a Haystack one, and the retriever "
        "under test is a function: it is handed the context itself (tenant=context['tenant'])",
        "Fix: drop retrieval_context_filter from the pytest configuration",
    ]
    assert GENERIC_FIX not in result.stdout.str()


def test_a_langchain_retriever_built_with_its_own_filter_is_refused_with_its_own_fix(
    retrieval_project: RetrievalProject,
) -> None:
    langchain(retrieval_project, "by_document", 'search_kwargs={"filter": lambda doc: True}')
    result = retrieval_project.run()
    reason, fix = refusal(result)
    assert reason.startswith(
        "pytest-retrieval refused the run: VectorStoreRetriever was built with a filter "
        "(search_kwargs={'filter': <function "
    )
    assert reason.endswith(
        "and retrieval_context_filter = scope:by_document would replace it with each query's filter"
    )
    assert fix == (
        "Fix: build the retriever without a filter and apply both in by_document(context), or "
        "drop retrieval_context_filter"
    )
    assert GENERIC_FIX not in result.stdout.str()


HAYSTACK = """
import os
os.environ["HAYSTACK_TELEMETRY_ENABLED"] = "False"
import pytest
from haystack import Document
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.document_stores.in_memory import InMemoryDocumentStore


@pytest.fixture(scope="session")
def retriever_under_test():
    store = InMemoryDocumentStore()
    store.write_documents([
        Document(id=f"{t}/refund", content="how the refund works", meta={"tenant": t})
        for t in ("acme", "globex")
    ])
    own = {"field": "meta.tenant", "operator": "!=", "value": "nobody"}
    return InMemoryBM25Retriever(store, filters=own)
"""


def test_a_haystack_component_whose_filters_would_be_replaced_is_refused_with_its_own_fix(
    retrieval_project: RetrievalProject,
) -> None:
    golden = GOLDEN.replace(
        "context: {tenant: acme}",
        "context: {filters: {field: meta.tenant, operator: '==', value: acme}}",
    )
    retrieval_project.write(golden=golden, conftest=HAYSTACK, tests=TESTS, ks="1")
    result = retrieval_project.run()
    assert refusal(result) == [
        "pytest-retrieval refused the run: the Haystack component InMemoryBM25Retriever was "
        "built with filters={'field': 'meta.tenant', 'operator': '!=', 'value': 'nobody'} and "
        "filter_policy=REPLACE, so each query's filters (from context['filters']) would "
        "replace them",
        "Fix: build it with filter_policy=FilterPolicy.MERGE to apply both (from "
        "haystack.document_stores.types import FilterPolicy), or move its filters into the "
        "queries' contexts",
    ]
    assert GENERIC_FIX not in result.stdout.str()


def failed_queries(result: pytest.RunResult) -> str:
    """The first line of the every-query-failed message."""
    [line] = [
        line for line in result.stdout.lines if line.startswith("pytest-retrieval: the run errored")
    ][:1]
    return line


@pytest.mark.parametrize(("builder", "returned"), [("as_text", "str"), ("as_dict", "dict")])
def test_a_context_filter_of_the_wrong_type_for_in_memory_vector_store_names_setting_and_type(
    retrieval_project: RetrievalProject, builder: str, returned: str
) -> None:
    langchain(retrieval_project, builder)
    result = retrieval_project.run()
    assert failed_queries(result) == (
        "pytest-retrieval: the run errored, nothing was scored: every query failed in the "
        "retriever (2 of 2); the first, query 'acme-q' [retriever]: ContextFilterError: "
        f"retrieval_context_filter = scope:{builder} returned a {returned}, and "
        "InMemoryVectorStore filters with a function of a Document: return one, e.g. "
        "lambda doc: doc.metadata['tenant'] == context['tenant']"
    )
    assert "object is not callable" not in result.stdout.str()


def test_a_context_filter_the_store_raises_a_type_error_on_is_named_with_what_it_takes(
    retrieval_project: RetrievalProject,
) -> None:
    # A function, but of no argument: InMemoryVectorStore calls it with each Document.
    langchain(retrieval_project, "of_nothing")
    result = retrieval_project.run()
    assert failed_queries(result) == (
        "pytest-retrieval: the run errored, nothing was scored: every query failed in the "
        "retriever (2 of 2); the first, query 'acme-q' [retriever]: ContextFilterError: "
        "InMemoryVectorStore raised TypeError: of_nothing.<locals>.<lambda>() takes 0 "
        "positional arguments but 1 was given, given the filter= that retrieval_context_filter "
        "= scope:of_nothing returned (a function): if the filter is the cause, return a "
        "function of a Document, e.g. lambda doc: doc.metadata['tenant'] == tenant"
    )


def test_the_right_context_filter_for_in_memory_vector_store_scopes_each_query(
    retrieval_project: RetrievalProject,
) -> None:
    # Each tenant's refund page is filtered to its own tenant: recall@1 = 1 for both.
    langchain(retrieval_project, "by_document")
    retrieval_project.run().assert_outcomes(passed=1)


# --- 4. rescore names the context as a cause of a changed query ----------------------------


def test_a_rescore_leaving_out_a_query_whose_context_changed_says_the_context_may_be_why() -> None:
    import pytest_retrieval.scoring.stats  # noqa: F401  (numpy early; see baseline_helpers)
    from pytest_retrieval.gates.declared import parse_budget
    from pytest_retrieval.golden.model import GoldenSet, Query
    from pytest_retrieval.regression.pairs import CompareOptions
    from pytest_retrieval.regression.rule import compare
    from pytest_retrieval.regression.snapshot import build_snapshot
    from pytest_retrieval.scoring.evaluate import evaluate

    def snapshot(tenant_of_q01: str) -> object:
        gold = GoldenSet(
            tuple(
                Query(
                    f"q{n:02d}",
                    f"question {n:02d}",
                    {f"doc-{n:02d}": 1},
                    context={"tenant": tenant_of_q01 if n == 1 else "acme"},
                )
                for n in range(1, 13)
            )
        )
        run = {q.id: [f"doc-{q.id[1:]}", "filler"] for q in gold}
        return build_snapshot(
            gold,
            {"retriever": evaluate(run, gold.qrels(), ("mrr",))},
            lambda qid, stage: tuple(run[qid]),
            metric_names=("mrr",),
            settings={"gain": "exponential", "min_grade": 1, "no_relevant": "skip", "depth": 2},
        )

    # q01: the same text, another tenant: not the same query any more.
    outcome = compare(
        snapshot("acme"),  # type: ignore[arg-type]
        snapshot("globex"),  # type: ignore[arg-type]
        parse_budget("mrr 0.01"),
        options=CompareOptions(mode="rescore", resamples=2000),
    )
    assert outcome.n == 11
    assert "leaving out 1 whose text, context, split or slices changed (q01)" in outcome.message
