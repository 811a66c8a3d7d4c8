"""@K means K documents, through the plugin, against the real libraries (offline).

The corpus is ``chunked_corpus``: 12 documents of 3 or 4 chunks, cutoffs 1, 5 and 10. Ten chunks
hold six to eight documents for three of the four queries, so a gate at 10 used to be refused
("every ranking is shorter than 10") while the summary printed a number for it. Now:

* retrievers the depth reaches (a LangChain vector-store retriever, a Haystack component, a
  function with ``k``) are asked again, deeper, for the queries short of 10 documents, and every
  gate at 10 passes on 10 documents; the artifact records per query the depth asked, the results
  returned and the documents they collapsed into;
* retrievers it cannot reach (LlamaIndex ``similarity_top_k``, ``BM25Retriever``, a function
  without ``k``) get the message naming their knob and about how many results would fill 10.

Every expected number comes from the library itself: its own answer at the depth the artifact
says was asked, collapsed to documents here, and scored with pytrec_eval.
"""

from __future__ import annotations

import math
import os
import statistics
import warnings
from collections import Counter
from typing import Any

import pytest
import pytrec_eval
from chunked_corpus import CHUNKS, GOLDEN, QUERIES, cosine_ranking, embed
from plugin_helpers import RetrievalProject

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # no network from the test suite

KS = "1,5,10"
GATE = {"retrieval_thresholds": "recall@10 >= 0.5"}
RUN_TEST = "def test_run(retrieval_run):\n    pass\n"


def documents_of(chunk_ids: list[str]) -> list[str]:
    """The document ranking of chunk ids ``<doc>#<n>``: each document at its best chunk."""
    return list(dict.fromkeys(c.split("#")[0] for c in chunk_ids))


def pytrec_recall_at_10(rankings: dict[str, list[str]]) -> float:
    """Mean recall@10 of the document rankings, by pytrec_eval (an independent implementation)."""
    qrels = {qid: {doc: 1 for doc in relevant} for qid, (_t, relevant) in QUERIES.items()}
    run = {
        qid: {doc: float(len(ranking) - rank) for rank, doc in enumerate(ranking)}
        for qid, ranking in rankings.items()
    }
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"recall_10"}).evaluate(run)
    return sum(v["recall_10"] for v in per_query.values()) / len(per_query)


def short_warnings(artifact: dict[str, Any]) -> list[dict[str, Any]]:
    return [w for w in artifact["warnings"] if w["kind"] == "short_rankings"]


def unwrapped(result: pytest.RunResult) -> str:
    """The terminal output with the summary's wrapped lines joined again."""
    return result.stdout.str().replace("\n  ", " ")


def rows_by_id(artifact: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["id"]: row for row in artifact["queries"]}


def gate_value(artifact: dict[str, Any], metric: str = "recall@10") -> Any:
    (gate,) = [g for g in artifact["gates"] if g["metric"] == metric]
    return gate


# --- the libraries, built here the same way each conftest builds them -----------------------

LANGCHAIN = """
import pytest
from chunked_corpus import CHUNKS, embed
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore


class BagOfWords(Embeddings):
    def embed_documents(self, texts):
        return [embed(t) for t in texts]

    def embed_query(self, text):
        return embed(text)


STORE = InMemoryVectorStore(BagOfWords())
STORE.add_documents(
    [Document(id=c, page_content=t, metadata={"source": d}) for c, d, t in CHUNKS]
)


@pytest.fixture(scope="session")
def retriever_under_test():
    return STORE.as_retriever(search_kwargs={"k": BUILT_K})
"""


@pytest.fixture(scope="module")
def langchain_store() -> Any:
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore

    class BagOfWords(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [embed(t) for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return embed(text)

    store = InMemoryVectorStore(BagOfWords())
    store.add_documents(
        [Document(id=c, page_content=t, metadata={"source": d}) for c, d, t in CHUNKS]
    )
    return store


def test_a_langchain_vector_store_is_asked_deeper_and_gates_at_k_on_k_documents(
    retrieval_project: RetrievalProject, langchain_store: Any
) -> None:
    retrieval_project.write(
        golden=GOLDEN,
        conftest=LANGCHAIN.replace("BUILT_K", "4"),  # LangChain's own default depth
        ks=KS,
        ini={"retrieval_doc_id": "metadata.source", **GATE},
        tests=RUN_TEST,
    )
    result = retrieval_project.run("--retrieval-json=out.json")
    result.assert_outcomes(passed=2)  # the run and the declared gate: no false red
    artifact = retrieval_project.artifact()
    assert not short_warnings(artifact)
    rankings: dict[str, list[str]] = {}
    for qid, row in rows_by_id(artifact).items():
        depth = row["depth"]["retriever"]
        # The library's own answer at the depth the artifact says it was asked.
        docs = langchain_store.similarity_search(QUERIES[qid][0], k=depth["asked"])
        expected = documents_of([str(d.id) for d in docs])
        assert row["rankings"]["retriever"] == expected[:10]
        assert (depth["returned"], depth["documents"]) == (len(docs), len(expected))
        assert depth["documents"] >= 10  # K documents
        first = documents_of(
            [str(d.id) for d in langchain_store.similarity_search(QUERIES[qid][0], k=10)]
        )
        # Asked again exactly when its first 10 chunks held fewer than 10 documents.
        assert (depth["asked"] > 10) == (len(first) < 10), qid
        rankings[qid] = expected
    assert rows_by_id(artifact)["q-step0"]["depth"]["retriever"]["asked"] == 10
    assert rows_by_id(artifact)["q-audit"]["depth"]["retriever"]["asked"] > 10
    gate = gate_value(artifact)
    assert gate["passed"] is True
    assert gate["value"] == pytest.approx(pytrec_recall_at_10(rankings))
    overall = next(r for r in artifact["results"] if r["column"] == "overall")
    assert overall["metrics"]["recall@10"] == pytest.approx(gate["value"])  # the table agrees
    facts = artifact["retriever"]["depth"]
    assert (facts["first"], facts["reason"], facts["fill"]) == (10, "the largest cutoff", 10)
    assert facts["asked_again"] == 3
    deepest = facts["deepest"]
    assert (
        "depth: 10 results asked per query (the largest cutoff); 3 of 4 asked again, up to "
        f"{deepest}, to fill 10 documents" in unwrapped(result)
    )


def test_a_langchain_retriever_built_deeper_is_never_asked_for_fewer(
    retrieval_project: RetrievalProject, langchain_store: Any
) -> None:
    retrieval_project.write(
        golden=GOLDEN,
        conftest=LANGCHAIN.replace("BUILT_K", "30"),
        ks=KS,
        ini={"retrieval_doc_id": "metadata.source", **GATE},
        tests="""
        def test_not_mutated(retriever_under_test, retrieval_run):
            assert retriever_under_test.search_kwargs == {"k": 30}
        """,
    )
    result = retrieval_project.run("--retrieval-json=out.json")
    result.assert_outcomes(passed=2)
    artifact = retrieval_project.artifact()
    facts = artifact["retriever"]["depth"]
    assert (facts["first"], facts["built"], facts["asked_again"]) == (30, 30, 0)
    assert facts["reason"] == "as many as the retriever was built to return, 30"
    for qid, row in rows_by_id(artifact).items():
        docs = langchain_store.similarity_search(QUERIES[qid][0], k=30)
        assert row["depth"]["retriever"] == {
            "asked": 30,
            "returned": 30,
            "documents": len(documents_of([str(d.id) for d in docs])),
        }
    # The configured depth is what the baseline would record: the largest cutoff, 10.
    assert artifact["snapshot"]["settings"]["depth"] == 10
    assert (
        "depth: 30 results asked per query (as many as the retriever was built to return, 30)"
        in unwrapped(result)
    )


HAYSTACK = """
import pytest
from chunked_corpus import CHUNKS
from haystack import Document
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.document_stores.in_memory import InMemoryDocumentStore

STORE = InMemoryDocumentStore()
STORE.write_documents([Document(id=c, content=t, meta={"source": d}) for c, d, t in CHUNKS])


@pytest.fixture(scope="session")
def retriever_under_test():
    return InMemoryBM25Retriever(STORE, top_k=4)
"""


def test_a_haystack_component_is_asked_deeper_through_top_k(
    retrieval_project: RetrievalProject,
) -> None:
    from haystack import Document
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    store = InMemoryDocumentStore()
    store.write_documents([Document(id=c, content=t, meta={"source": d}) for c, d, t in CHUNKS])
    retrieval_project.write(
        golden=GOLDEN,
        conftest=HAYSTACK,
        ks=KS,
        ini={"retrieval_doc_id": "meta.source", **GATE},
        tests=RUN_TEST,
    )
    result = retrieval_project.run("--retrieval-json=out.json")
    result.assert_outcomes(passed=2)
    artifact = retrieval_project.artifact()
    assert not short_warnings(artifact)
    rankings = {}
    for qid, row in rows_by_id(artifact).items():
        depth = row["depth"]["retriever"]
        found = InMemoryBM25Retriever(store).run(query=QUERIES[qid][0], top_k=depth["asked"])
        expected = documents_of([d.id for d in found["documents"]])
        assert row["rankings"]["retriever"] == expected[:10]
        assert (depth["returned"], depth["documents"]) == (len(found["documents"]), len(expected))
        assert depth["documents"] >= 10
        rankings[qid] = expected
    assert artifact["retriever"]["depth"]["asked_again"] >= 1
    assert gate_value(artifact)["value"] == pytest.approx(pytrec_recall_at_10(rankings))


FUNCTION_WITH_K = """
import pytest
from chunked_corpus import cosine_ranking

ASKED = []


@pytest.fixture(scope="session")
def retriever_under_test():
    def search(text, k):
        ASKED.append((text, k))
        return cosine_ranking(text)[:k]

    return search
"""


def test_a_function_with_k_is_asked_again_only_for_the_short_queries(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        golden=GOLDEN,
        conftest=FUNCTION_WITH_K,
        ks=KS,
        ini={"retrieval_doc_id_separator": "#", **GATE},
        tests="""
        from conftest import ASKED

        def test_calls(retrieval_run):
            # Every query once at 10; the three whose 10 chunks held fewer than 10 documents
            # once more, deeper. Never step 0, whose 10 chunks are 10 documents.
            assert sorted(k for text, k in ASKED if text == "step 0") == [10]
            assert len(ASKED) == 7
        """,
    )
    result = retrieval_project.run("--retrieval-json=out.json")
    result.assert_outcomes(passed=2)
    artifact = retrieval_project.artifact()
    rankings = {}
    for qid, row in rows_by_id(artifact).items():
        depth = row["depth"]["retriever"]
        chunks = cosine_ranking(QUERIES[qid][0])[: depth["asked"]]
        rankings[qid] = documents_of(chunks)
        assert row["rankings"]["retriever"] == rankings[qid][:10]
        assert depth["documents"] == len(rankings[qid]) >= 10
        first = documents_of(cosine_ranking(QUERIES[qid][0])[:10])
        if len(first) < 10:
            # By the rule: twice as deep, or 10 x 10 / (documents in the first 10), rounded up.
            assert depth["asked"] == max(20, math.ceil(100 / len(first)))
    assert gate_value(artifact)["value"] == pytest.approx(pytrec_recall_at_10(rankings))


# --- where the depth cannot be handed over: the knob and the number ---------------------------


def fill_bounds(chunk_rankings: dict[str, list[str]], documents: int = 10) -> tuple[int, int, int]:
    """``(enough, at_least, most)`` for the short rankings of the library's answers, by hand:
    ``most`` is the most chunks of one document in one ranking; if no document has more, the
    worst case puts every chunk of ``documents - 1`` documents before the last one needed, so
    ``(documents - 1) * most + 1`` results are enough; and each result past those returned adds
    at most one document, so a ranking of R results holding D documents needs at least
    ``R + documents - D``."""
    most = max(max(documents_of_counts(chunks).values()) for chunks in chunk_rankings.values())
    short = [c for c in chunk_rankings.values() if len(documents_of(c)) < documents]
    at_least = max(len(c) + documents - len(documents_of(c)) for c in short)
    return (documents - 1) * most + 1, at_least, most


def documents_of_counts(chunk_ids: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for chunk in chunk_ids:
        doc = chunk.split("#")[0]
        counts[doc] = counts.get(doc, 0) + 1
    return counts


def fill_words(enough: int, at_least: int, most: int, documents: int = 10) -> str:
    return (
        f"({enough} results hold {documents} documents for every query seen here if no "
        f"document has more than {most} chunks, the most one ranking held of one document; "
        f"fewer than {at_least} results cannot)"
    )


LLAMAINDEX = """
import pytest
from chunked_corpus import CHUNKS, embed
from llama_index.core import VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import TextNode


class BagOfWords(BaseEmbedding):
    def _get_query_embedding(self, query):
        return embed(query)

    async def _aget_query_embedding(self, query):
        return embed(query)

    def _get_text_embedding(self, text):
        return embed(text)


def build():
    nodes = [TextNode(id_=c, text=t, metadata={"source": d}) for c, d, t in CHUNKS]
    return VectorStoreIndex(nodes, embed_model=BagOfWords()).as_retriever(similarity_top_k=10)


@pytest.fixture(scope="session")
def retriever_under_test():
    return build()
"""


def test_llamaindex_gets_its_knob_and_the_number_that_would_fill_k(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        golden=GOLDEN,
        conftest=LLAMAINDEX,
        ks=KS,
        ini={"retrieval_doc_id": "node.metadata.source", **GATE},
        tests="""
        import json
        from conftest import build

        def test_library(retrieval_run):
            retriever = build()
            with open("library.json", "w") as out:
                json.dump({t: [n.node.node_id for n in retriever.retrieve(t)]
                           for t in ["refund step", "okta guide", "audit common words",
                                     "step 0"]}, out)
        """,
    )
    result = retrieval_project.run("--retrieval-json=out.json")
    import json

    library = json.loads((retrieval_project.path / "library.json").read_text(encoding="utf-8"))
    by_text = {text: qid for qid, (text, _r) in QUERIES.items()}
    chunk_rankings = {by_text[t]: ids for t, ids in library.items()}
    assert all(len(ids) == 10 for ids in chunk_rankings.values())  # similarity_top_k=10
    number, at_least, most = fill_bounds(chunk_rankings)
    artifact = retrieval_project.artifact()
    (warning,) = short_warnings(artifact)
    short = sum(1 for ids in chunk_rankings.values() if len(documents_of(ids)) < 10)
    assert (warning["kind"], warning["collapsed"], warning["short"]) == (
        "short_rankings",
        short,
        short,
    )
    assert (
        "Fix: a LlamaIndex retriever returns what it was built for: build it with "
        f"similarity_top_k={number}, e.g. index.as_retriever(similarity_top_k={number}) "
        + fill_words(number, at_least, most)
        in warning["message"]
    )
    # The number is enough: built with it, the library's own answers hold 10 documents for
    # every query, and the plugin warns no more.
    retrieval_project.write(
        golden=GOLDEN,
        conftest=LLAMAINDEX.replace("similarity_top_k=10", f"similarity_top_k={number}"),
        ks=KS,
        ini={"retrieval_doc_id": "node.metadata.source", **GATE},
    )
    retrieval_project.run("--retrieval-json=out.json").assert_outcomes(passed=2)
    library = json.loads((retrieval_project.path / "library.json").read_text(encoding="utf-8"))
    assert all(len(ids) == number for ids in library.values())
    assert all(len(documents_of(ids)) >= 10 for ids in library.values())
    assert not short_warnings(retrieval_project.artifact())
    assert f"similarity_top_k={number}" in unwrapped(result)
    assert (
        "depth: cannot be handed to this retriever: it returns what it was built for (10 results)"
        in unwrapped(result)
    )
    for row in artifact["queries"]:  # nothing was handed over: no depth asked
        assert row["depth"]["retriever"]["asked"] is None
        assert row["depth"]["retriever"]["returned"] == 10
    # One query's 10 chunks are 10 documents, three hold fewer: most rankings collapsed short
    # of 10, so recall@10 would be scored on fewer than 10 documents for most queries; the
    # gate is refused with the reason and the fix (it passed on 6 to 8 documents before).
    gate = gate_value(artifact)
    assert (gate["passed"], gate["value"]) == (False, None)
    assert gate["message"].startswith(
        f"recall@10 cannot be scored: {short} of 4 rankings [retriever] hold fewer than 10 "
        "documents (median "
    ), gate["message"]
    assert f"similarity_top_k={number}" in gate["message"]
    # One number: the artifact's depth hint is the message's, not the depth of the cutoff (10).
    assert artifact["retriever"]["depth_hint"] == (
        "a LlamaIndex retriever returns what it was built for: build it with "
        f"similarity_top_k={number}, e.g. index.as_retriever(similarity_top_k={number})"
    )


def test_every_cutoff_short_of_documents_is_named_and_a_gate_most_rankings_miss_is_refused(
    retrieval_project: RetrievalProject,
) -> None:
    # A LlamaIndex retriever built with similarity_top_k=5 under cutoffs 1, 5 and 10 (a trial's
    # similarity_top_k=10 under 5, 10 and 20, scaled down). The warning named only @10 (every
    # ranking short of it) while recall@5 passed scored on 2 or 3 documents for most queries.
    retrieval_project.write(
        golden=GOLDEN,
        conftest=LLAMAINDEX.replace("similarity_top_k=10", "similarity_top_k=5"),
        ks=KS,
        ini={
            "retrieval_doc_id": "node.metadata.source",
            "retrieval_thresholds": "recall@5 >= 0.1\nrecall@1 >= 0.1",
        },
        tests="""
        import json
        from conftest import build

        def test_library(retrieval_run):
            retriever = build()
            with open("library.json", "w") as out:
                json.dump({t: [n.node.node_id for n in retriever.retrieve(t)]
                           for t in ["refund step", "okta guide", "audit common words",
                                     "step 0"]}, out)
        """,
    )
    result = retrieval_project.run("--retrieval-json=out.json")
    import json

    library = json.loads((retrieval_project.path / "library.json").read_text(encoding="utf-8"))
    documents = [len(documents_of(ids)) for ids in library.values()]
    assert all(len(ids) == 5 for ids in library.values())  # every call came back full
    short5 = [n for n in documents if n < 5]
    assert len(short5) * 2 > 4  # most of the 4 rankings: fewer than 5 documents
    artifact = retrieval_project.artifact()
    (warning,) = short_warnings(artifact)
    assert warning["cutoff"] == 10
    assert warning["smaller"] == [
        {"cutoff": 5, "short": len(short5), "shortest": min(short5), "refused": True}
    ]
    assert (
        f"short at smaller cutoffs too: @5 in {len(short5)} of 4 rankings (shortest "
        f"{min(short5)}; a gate at @5 cannot be scored: most of them collapsed). Fix: "
        in warning["message"]
    ), warning["message"]
    assert warning["message"] in unwrapped(result)
    gate5 = gate_value(artifact, "recall@5")
    assert (gate5["passed"], gate5["value"]) == (False, None)
    lines = result.stdout.lines
    assert (
        f"FAIL recall@5 >= 0.1: n/a (cannot be scored: {len(short5)} of 4 rankings [retriever] "
        f"hold fewer than 5 documents (median {statistics.median(documents):g}, shortest "
        f"{min(documents)})) — pytest.ini::recall_at_5_ge_0.1" in lines
    ), lines
    # @1 is scored: every ranking holds a document (the documents were there).
    assert gate_value(artifact, "recall@1")["value"] is not None


BM25 = """
import warnings
import pytest
from chunked_corpus import CHUNKS
from langchain_core.documents import Document

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from langchain_community.retrievers import BM25Retriever


def build():
    docs = [Document(id=c, page_content=t, metadata={"source": d}) for c, d, t in CHUNKS]
    return BM25Retriever.from_documents(docs, k=10)


@pytest.fixture(scope="session")
def retriever_under_test():
    return build()
"""


def test_bm25_retriever_gets_its_knob_and_the_number_that_would_fill_k(
    retrieval_project: RetrievalProject,
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from langchain_community.retrievers import BM25Retriever
    from langchain_core.documents import Document

    library = BM25Retriever.from_documents(
        [Document(id=c, page_content=t, metadata={"source": d}) for c, d, t in CHUNKS], k=10
    )
    chunk_rankings = {
        qid: [str(d.id) for d in library.invoke(text)] for qid, (text, _r) in QUERIES.items()
    }
    number, at_least, most = fill_bounds(chunk_rankings)
    retrieval_project.write(
        golden=GOLDEN,
        conftest=BM25,
        ks=KS,
        ini={"retrieval_doc_id": "metadata.source", **GATE},
        tests=RUN_TEST,
    )
    retrieval_project.run("--retrieval-json=out.json")
    (warning,) = short_warnings(retrieval_project.artifact())
    assert (
        f"Fix: BM25Retriever drops k=: build it with k={number}, e.g. "
        f"BM25Retriever.from_documents(docs, k={number}) "
        + fill_words(number, at_least, most)
        in warning["message"]
    )
    # Following it fills: the library built with that k holds 10 documents for every query,
    # and the plugin run with it warns no more.
    built = BM25Retriever.from_documents(
        [Document(id=c, page_content=t, metadata={"source": d}) for c, d, t in CHUNKS], k=number
    )
    for text, _relevant in QUERIES.values():
        assert len(documents_of([str(d.id) for d in built.invoke(text)])) >= 10
    retrieval_project.write(
        golden=GOLDEN,
        conftest=BM25.replace("k=10", f"k={number}"),
        ks=KS,
        ini={"retrieval_doc_id": "metadata.source", **GATE},
    )
    retrieval_project.run("--retrieval-json=out.json").assert_outcomes(passed=2)
    assert not short_warnings(retrieval_project.artifact())


def test_a_collapse_warning_has_one_fix_in_every_report(
    retrieval_project: RetrievalProject,
) -> None:
    # BM25Retriever built with k=10: the warning's one fix names a k that fills 10 documents.
    # A second "Fix: ... build it with k=10" (the depth it already has) contradicted it.
    retrieval_project.write(
        golden=GOLDEN,
        conftest=BM25,
        ks=KS,
        ini={"retrieval_doc_id": "metadata.source", **GATE},
        tests=RUN_TEST,
    )
    result = retrieval_project.run(
        "--retrieval-json=out.json", "--retrieval-markdown=out.md", "--retrieval-html=out.html"
    )
    (warning,) = short_warnings(retrieval_project.artifact())
    assert warning["message"].count("Fix:") == 1, warning["message"]
    assert "k=10," not in warning["message"]
    terminal = unwrapped(result)
    start = terminal.index("warning: short rankings")
    paragraph = terminal[start : terminal.index("\n", start)]
    assert paragraph.count("Fix:") == 1, paragraph
    markdown = (retrieval_project.path / "out.md").read_text(encoding="utf-8")
    (line,) = [x for x in markdown.splitlines() if "short rankings" in x]
    assert line.count("Fix:") == 1, line
    html = (retrieval_project.path / "out.html").read_text(encoding="utf-8")
    assert html.count("Fix:") == 1


ENSEMBLE = """
import warnings
import pytest
from chunked_corpus import CHUNKS, embed
from langchain_classic.retrievers import EnsembleRetriever
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from langchain_community.retrievers import BM25Retriever


class BagOfWords(Embeddings):
    def embed_documents(self, texts):
        return [embed(t) for t in texts]

    def embed_query(self, text):
        return embed(text)


def build(k):
    docs = [Document(id=c, page_content=t, metadata={"source": d}) for c, d, t in CHUNKS]
    store = InMemoryVectorStore(BagOfWords())
    store.add_documents(docs)
    bm25 = BM25Retriever.from_documents(docs, k=k)
    return EnsembleRetriever(retrievers=[bm25, store.as_retriever(search_kwargs={"k": k})])


@pytest.fixture(scope="session")
def retriever_under_test():
    return build(BUILT_K)
"""


def build_ensemble(k: int) -> Any:
    """The conftest's EnsembleRetriever, built here the same way (the real libraries)."""
    from langchain_classic.retrievers import EnsembleRetriever
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from langchain_community.retrievers import BM25Retriever

    class BagOfWords(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [embed(t) for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return embed(text)

    docs = [Document(id=c, page_content=t, metadata={"source": d}) for c, d, t in CHUNKS]
    store = InMemoryVectorStore(BagOfWords())
    store.add_documents(docs)
    return EnsembleRetriever(
        retrievers=[
            BM25Retriever.from_documents(docs, k=k),
            store.as_retriever(search_kwargs={"k": k}),
        ]
    )


def test_an_ensemble_warning_says_up_to_and_its_artifact_hint_names_the_k_of_its_fix(
    retrieval_project: RetrievalProject,
) -> None:
    # An EnsembleRetriever of BM25 and a vector store, each built with k=3: the union of their
    # answers is 3 or 4 results per query. The warning said "came back full (4 results)" of
    # every query, and the artifact's hint named k=10 (the depth asked, which cannot reach it)
    # while the message's fix named the k that fills 10 documents. And its lower bound counts
    # results, which an ensemble's k is not.
    answers = {
        qid: [d.metadata["source"] for d in build_ensemble(3).invoke(text)]
        for qid, (text, _r) in QUERIES.items()
    }
    collapsed = {q: a for q, a in answers.items() if len(set(a)) < min(10, len(a))}
    lengths = {len(a) for a in collapsed.values()}
    assert len(lengths) > 1  # the unions differ: "up to" the longest
    # By hand (fill_bounds): ``most`` chunks of one document in one answer; (10 - 1) * most + 1
    # results hold 10 documents if no document has more; R results in D documents need at
    # least R + 10 - D.
    most = max(max(Counter(a).values()) for a in answers.values())
    at_least = max(len(a) + 10 - len(set(a)) for a in collapsed.values())
    number = 9 * most + 1
    retrieval_project.write(
        golden=GOLDEN,
        conftest=ENSEMBLE.replace("BUILT_K", "3"),
        ks=KS,
        ini={"retrieval_doc_id": "metadata.source", **GATE},
        tests=RUN_TEST,
    )
    retrieval_project.run("--retrieval-json=out.json")
    (warning,) = short_warnings(retrieval_project.artifact())
    message = warning["message"]
    assert (
        f"{len(collapsed)} of them came back full (up to {max(lengths)} results) but" in message
    ), message
    knob = (
        f"EnsembleRetriever drops k=: build each retriever it combines with k={number}, e.g. "
        f"BM25Retriever.from_documents(docs, k={number}) and "
        f'as_retriever(search_kwargs={{"k": {number}}})'
    )
    assert f"Fix: {knob} ({number} results hold 10 documents" in message, message
    assert f"fewer than {at_least} results cannot)" in message, message
    assert warning["hint"] == knob
    # The retriever block names the same knob at the same number, not the depth asked (k=10).
    assert retrieval_project.artifact()["retriever"]["depth_hint"] == knob
    # Following it fills: each retriever built with that k, the union holds 10 documents.
    for text, _relevant in QUERIES.values():
        assert len({d.metadata["source"] for d in build_ensemble(number).invoke(text)}) >= 10


K_LESS = """
import pytest
from chunked_corpus import cosine_ranking


@pytest.fixture(scope="session")
def retriever_under_test():
    def search(text):
        return cosine_ranking(text)[:CHUNKS_RETURNED]

    return search
"""


def test_a_function_without_k_is_told_to_take_one(retrieval_project: RetrievalProject) -> None:
    retrieval_project.write(
        golden=GOLDEN,
        conftest=K_LESS.replace("CHUNKS_RETURNED", "10"),
        ks=KS,
        ini={"retrieval_doc_id_separator": "#", **GATE},
        tests=RUN_TEST,
    )
    retrieval_project.run("--retrieval-json=out.json")
    (warning,) = short_warnings(retrieval_project.artifact())
    assert warning["collapsed"] == 3  # q-step0's 10 chunks are 10 documents
    assert warning["message"].startswith(
        "short rankings [retriever]: 3 of 4 rankings hold fewer than 10 documents (longest 10, "
    )
    assert (
        "Fix: give it a k parameter, search(query_text, k), and it is called with k=10; the run "
        "then asks again deeper where needed" in warning["message"]
    )


def test_a_gate_every_ranking_is_too_short_for_is_refused_and_the_table_shows_no_number(
    retrieval_project: RetrievalProject,
) -> None:
    # 9 chunks per query: no query reaches 10 documents, so recall@10 cannot be scored.
    retrieval_project.write(
        golden=GOLDEN,
        conftest=K_LESS.replace("CHUNKS_RETURNED", "9"),
        ks=KS,
        ini={"retrieval_doc_id_separator": "#", **GATE},
        tests=RUN_TEST,
    )
    result = retrieval_project.run("--retrieval-json=out.json", "-v")
    result.assert_outcomes(passed=1, failed=1)
    artifact = retrieval_project.artifact()
    gate = gate_value(artifact)
    assert (gate["passed"], gate["value"]) == (False, None)
    assert gate["message"].startswith(
        "recall@10 cannot be scored: every ranking [retriever] holds fewer than 10 documents"
    )
    assert "give it a k parameter, search(query_text, k)" in gate["message"]
    overall = next(r for r in artifact["results"] if r["column"] == "overall")
    assert overall["metrics"]["recall@10"] is None  # no number a gate refuses
    assert overall["metrics"]["recall@5"] is not None  # 5 documents are there to score
    table = [line.split() for line in result.stdout.lines if line.startswith("recall@")]
    assert ["recall@10", "—"] in table, table  # the -v table's row: no number
    assert ["recall@5", "0.5000"] in table, table


def test_a_gate_without_a_number_says_why_in_its_gates_line_and_in_the_markdown(
    retrieval_project: RetrievalProject,
) -> None:
    # 9 chunks per query hold at most 9 documents: recall@10 has no number. Its line in the
    # gates section said only "n/a (n=0)"; it now says why, in short.
    retrieval_project.write(
        golden=GOLDEN,
        conftest=K_LESS.replace("CHUNKS_RETURNED", "9"),
        ks=KS,
        ini={"retrieval_doc_id_separator": "#", **GATE},
        tests=RUN_TEST,
    )
    result = retrieval_project.run("--retrieval-markdown=out.md")
    longest = max(
        len(documents_of(cosine_ranking(text)[:9])) for text, _relevant in QUERIES.values()
    )
    reason = (
        "cannot be scored: every ranking [retriever] holds fewer than 10 documents "
        f"(longest {longest})"
    )
    (line,) = [x for x in result.stdout.lines if x.startswith("FAIL recall@10 >= 0.5")]
    assert line == f"FAIL recall@10 >= 0.5: n/a ({reason}) — pytest.ini::recall_at_10_ge_0.5"
    markdown = (retrieval_project.path / "out.md").read_text(encoding="utf-8")
    escaped = reason.replace("[", "\\[").replace("]", "\\]")  # Markdown escapes brackets
    assert f"- ❌ `recall@10 ≥ 0.5` (overall): {escaped}" in markdown, markdown


# --- repeated ids: one rule under pytest and in evaluate() --------------------------------------

REPEATS_GOLDEN = "version: 1\nqueries:\n  - id: q\n    text: anything\n    relevant: [c]\n"
REPEATS = """
import pytest


@pytest.fixture(scope="session")
def retriever_under_test():
    def search(text, k):
        return ["a", "a", "c", "d"][:k]

    return search
"""


def write_repeats(project: RetrievalProject, unit: str, ks: str, metrics: str, tests: str) -> None:
    """The project whose one query ``q`` (c relevant) gets a, a, c, d, under ``unit``."""
    project.write(
        golden=REPEATS_GOLDEN,
        conftest=REPEATS,
        ks=ks,
        ini={"retrieval_metrics": metrics, "retrieval_cutoff_unit": unit},
        tests=tests,
    )


@pytest.mark.parametrize(
    ("unit", "recall_at_2"),
    [("documents", 1.0), ("results", 0.0)],
)
def test_repeated_ids_score_the_same_under_pytest_and_in_evaluate(
    retrieval_project: RetrievalProject, unit: str, recall_at_2: float
) -> None:
    # a, a, c, d with c relevant. Documents a, c, d: recall@2 = 1 (c is the second document).
    # K in results: the top 2 results are a twice, so recall@2 = 0. distinct@4 counts the four
    # results as returned, 3 distinct ids of 4: 0.75 in both.
    from pytest_retrieval.scoring.evaluate import evaluate

    write_repeats(retrieval_project, unit, "2,4", "recall,distinct", RUN_TEST)
    retrieval_project.run("--retrieval-json=out.json").assert_outcomes(passed=1)
    (row,) = retrieval_project.artifact()["queries"]
    assert row["rankings"]["retriever"] == ["a", "c", "d"]
    assert row["returned"]["retriever"] == ["a", "a", "c", "d"]
    assert row["metrics"]["retriever"]["recall@2"] == recall_at_2
    assert row["metrics"]["retriever"]["distinct@4"] == 0.75
    plain = evaluate(
        {"q": ["a", "a", "c", "d"]},
        {"q": {"c": 1}},
        ["recall@2", "recall@4", "distinct@2", "distinct@4"],
        cutoff_unit=unit,  # type: ignore[arg-type]
    )
    assert plain.per_query["q"] == row["metrics"]["retriever"]


@pytest.mark.parametrize(
    ("unit", "first", "returned"),
    [("documents", 2, "a, c, d"), ("results", 3, "a, a, c")],
)
def test_a_worst_query_line_shows_the_top_in_the_unit_its_rank_counts(
    retrieval_project: RetrievalProject, unit: str, first: int, returned: str
) -> None:
    # a, a, c, d with c relevant; recall@1 = 0 in both units. The line's "first relevant at
    # rank" and "returned" must speak one unit: documents a, c, d (c second), or the results as
    # returned a, a, c, d (c third), never a result rank beside the deduplicated documents.
    gate = "from pytest_retrieval import assert_recall_at\n\n"
    gate += "def test_gate():\n    assert_recall_at(1) >= 0.5\n"
    write_repeats(retrieval_project, unit, "1,4", "recall", gate)
    result = retrieval_project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"* q 'anything': recall@1 = 0.0000; missed c; first relevant at rank {first}; "
            f"returned {returned}"
        ]
    )


# --- distinct@K counts the results as returned: never refused for what collapsed -------------

REPEATS_WITHOUT_K = """
import pytest


@pytest.fixture(scope="session")
def retriever_under_test():
    def search(text):
        return ["a", "a", "c", "d"]

    return search
"""


def test_distinct_at_k_is_scored_on_the_results_as_returned_when_documents_fall_short(
    retrieval_project: RetrievalProject,
) -> None:
    # a, a, c, d from a function without k: 3 documents, so recall@4 is refused (4 documents
    # are not there), but distinct@4 is defined over the 4 results as returned, which came
    # back: 3 distinct ids of 4 = 0.75 (hand), a number, and the gate at 0.7 passes.
    retrieval_project.write(
        golden=REPEATS_GOLDEN,
        conftest=REPEATS_WITHOUT_K,
        ks="2,4",
        ini={
            "retrieval_metrics": "recall,distinct",
            "retrieval_thresholds": "distinct@4 >= 0.7",
        },
        tests=RUN_TEST,
    )
    result = retrieval_project.run("--retrieval-json=out.json", "-v")
    result.assert_outcomes(passed=2)
    artifact = retrieval_project.artifact()
    gate = gate_value(artifact, "distinct@4")
    assert (gate["passed"], gate["value"]) == (True, 0.75)
    overall = next(r for r in artifact["results"] if r["column"] == "overall")
    assert overall["metrics"]["distinct@4"] == 0.75  # the table shows it too
    assert overall["metrics"]["recall@4"] is None  # 3 documents cannot fill recall@4
    table = [line.split() for line in result.stdout.lines if line.startswith("distinct@")]
    assert ["distinct@4", "0.7500"] in table, table


def test_distinct_at_10_of_a_real_bm25_retriever_is_its_share_of_distinct_documents(
    retrieval_project: RetrievalProject,
) -> None:
    # BM25Retriever built with k=10 over 3-4 chunks per document, without q-step0 (whose 10
    # chunks are 10 documents): every query's 10 chunks hold fewer than 10 documents, so
    # recall@10 is refused, but distinct@10 is the share of the 10 results that are not a
    # copy: from the library's own answers.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from langchain_community.retrievers import BM25Retriever
    from langchain_core.documents import Document

    library = BM25Retriever.from_documents(
        [Document(id=c, page_content=t, metadata={"source": d}) for c, d, t in CHUNKS], k=10
    )
    queries = {qid: q for qid, q in QUERIES.items() if qid != "q-step0"}
    shares = []
    for text, _relevant in queries.values():
        sources = [d.metadata["source"] for d in library.invoke(text)]
        assert len(sources) == 10
        shares.append(len(set(sources)) / 10)
        assert len(set(sources)) < 10
    expected = sum(shares) / len(shares)
    retrieval_project.write(
        golden="version: 1\nqueries:\n"
        + "".join(
            f"  - id: {qid}\n    text: {text}\n    relevant: [{', '.join(relevant)}]\n"
            for qid, (text, relevant) in queries.items()
        ),
        conftest=BM25,
        ks=KS,
        ini={"retrieval_doc_id": "metadata.source", "retrieval_thresholds": "distinct@10 >= 0.3"},
        tests=RUN_TEST,
    )
    retrieval_project.run("--retrieval-json=out.json").assert_outcomes(passed=2)
    gate = gate_value(retrieval_project.artifact(), "distinct@10")
    assert gate["passed"] is True
    assert gate["value"] == pytest.approx(expected)


#: One long document of 8 chunks that all match "alpha", six short ones of 2 chunks.
UNEVEN_CHUNKS = [(f"big-{n}", f"alpha guide part {n}") for n in range(8)] + [
    (f"d{i}-{n}", f"other words {i} {n}") for i in range(1, 7) for n in range(2)
]
UNEVEN_MAP = "".join(f"{chunk}\t{chunk.split('-')[0]}\n" for chunk, _text in UNEVEN_CHUNKS)
UNEVEN_GOLDEN = "version: 1\nqueries:\n  - id: q\n    text: alpha\n    relevant: [big]\n"
UNEVEN = f"""
import warnings
import pytest
from langchain_core.documents import Document

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from langchain_community.retrievers import BM25Retriever

CHUNKS = {UNEVEN_CHUNKS!r}


@pytest.fixture(scope="session")
def retriever_under_test():
    return BM25Retriever.from_documents(
        [Document(id=c, page_content=t) for c, t in CHUNKS], k=BUILT_K
    )
"""


def test_with_a_doc_map_the_number_is_enough_for_unevenly_chunked_documents(
    retrieval_project: RetrievalProject,
) -> None:
    # "alpha" with k=4: the four results are chunks of big (4 of its 8), 1 document, K=3.
    # Without chunk counts the most seen of one document is 4, and (3 - 1) * 4 + 1 = 9 would
    # be enough only if no document had more than 4 chunks; big has 8. The doc map says so:
    # worst case, big's 4 other chunks, then the largest document it does not hold (2 chunks),
    # then the one more needed: 4 + 4 + 2 + 1 = 11 (by hand). At least 4 + 3 - 1 = 6.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from langchain_community.retrievers import BM25Retriever
    from langchain_core.documents import Document

    def documents_at(k: int) -> int:
        library = BM25Retriever.from_documents(
            [Document(id=c, page_content=t) for c, t in UNEVEN_CHUNKS], k=k
        )
        return len(dict.fromkeys(str(d.id).split("-")[0] for d in library.invoke("alpha")))

    # The library's own answers: 9 results still hold 2 documents, 11 hold 3 (11 is enough).
    assert (documents_at(4), documents_at(9), documents_at(11)) == (1, 2, 3)
    ini = {"retrieval_doc_id_map": "chunks.tsv", "retrieval_thresholds": "recall@1 >= 0.5"}
    retrieval_project.write(
        golden=UNEVEN_GOLDEN,
        conftest=UNEVEN.replace("BUILT_K", "4"),
        ks="1,3",
        ini=ini,
        tests=RUN_TEST,
    )
    (retrieval_project.path / "chunks.tsv").write_text(UNEVEN_MAP, encoding="utf-8")
    retrieval_project.run("--retrieval-json=out.json")
    (warning,) = short_warnings(retrieval_project.artifact())
    assert (
        "build it with k=11, e.g. BM25Retriever.from_documents(docs, k=11) (11 results hold 3 "
        "documents for every query seen here by the chunks per document in "
        "retrieval_doc_id_map; fewer than 6 results cannot)" in warning["message"]
    ), warning["message"]
    retrieval_project.write(
        golden=UNEVEN_GOLDEN, conftest=UNEVEN.replace("BUILT_K", "11"), ks="1,3", ini=ini
    )
    retrieval_project.run("--retrieval-json=out.json").assert_outcomes(passed=2)
    assert not short_warnings(retrieval_project.artifact())


# --- the index runs out: no depth fills K -------------------------------------------------------


def test_when_the_index_runs_out_the_warning_says_so_instead_of_asking_for_more(
    retrieval_project: RetrievalProject,
) -> None:
    # 12 documents in 42 chunks (chunked_corpus) under recall@16: each query is asked deeper
    # until its call comes back with fewer results than asked, all 42 chunks, 12 documents.
    # Asking for more cannot help; the fix is a smaller K.
    assert (len(CHUNKS), len({d for _c, d, _t in CHUNKS})) == (42, 12)
    retrieval_project.write(
        golden=GOLDEN,
        conftest=LANGCHAIN.replace("BUILT_K", "4"),
        ks="1,5,16",
        ini={"retrieval_doc_id": "metadata.source", "retrieval_thresholds": "recall@16 >= 0.5"},
        tests=RUN_TEST,
    )
    result = retrieval_project.run("--retrieval-json=out.json")
    result.assert_outcomes(passed=1, failed=1)
    artifact = retrieval_project.artifact()
    asked = max(row["depth"]["retriever"]["asked"] for row in artifact["queries"])
    assert all(row["depth"]["retriever"]["returned"] == 42 for row in artifact["queries"])
    assert asked > 42
    (warning,) = short_warnings(artifact)
    assert (warning["exhausted"], warning["asked"], warning["returned"]) == (4, asked, 42)
    assert warning["message"] == (
        "short rankings [retriever]: 4 of 4 rankings hold fewer than 16 documents (longest 12, "
        f"median 12); 4 of them came back with fewer results than asked for (up to {asked} "
        "asked, at most 42 returned): the index holds no more for them; every metric at @16 is "
        "scored on at most 12 documents. Fix: the index holds fewer than 16 documents for these "
        "queries (at most 12 came back): gate K of at most 12 (retrieval_ks and the gates' K), "
        "or set retrieval_short_rankings = off if the corpus is that small"
    )
    assert "make the retriever return" not in unwrapped(result)
    gate = gate_value(artifact, "recall@16")
    assert gate["value"] is None
    assert gate["message"] == (
        "recall@16 cannot be scored: every ranking [retriever] holds fewer than 16 documents "
        "(longest 12); 4 of them came back with fewer results than asked for (at most 42 "
        "returned): the index holds no more for them, so it would be scored on at most 12 "
        "documents. Fix: the index holds fewer than 16 documents for these queries (at most 12 "
        "came back): gate K of at most 12 (retrieval_ks and the gates' K), or set "
        "retrieval_short_rankings = off if the corpus is that small"
    )


def test_a_function_whose_index_has_three_documents_is_told_so(
    retrieval_project: RetrievalProject,
) -> None:
    # search(text, k) = [a, a, c, d][:k]: asked 4, it returns 4 results, 3 documents, so it is
    # asked again at 8 (twice as deep) and returns the same 4: the index holds 3 documents.
    retrieval_project.write(
        golden=REPEATS_GOLDEN,
        conftest=REPEATS,
        ks="2,4",
        ini={"retrieval_metrics": "recall,distinct"},
        tests=RUN_TEST,
    )
    retrieval_project.run("--retrieval-json=out.json").assert_outcomes(passed=1)
    (warning,) = short_warnings(retrieval_project.artifact())
    assert warning["message"].startswith(
        "short rankings [retriever]: 1 of 1 rankings hold fewer than 4 documents (longest 3, "
        "median 3); 1 of them came back with fewer results than asked for (up to 8 asked, at "
        "most 4 returned): the index holds no more for them; every metric at @4 is scored on "
        "at most 3 documents. Fix: the index holds fewer than 4 documents for these queries"
    ), warning["message"]
