"""Issue 12 through the plugin, against the real frameworks (offline, no model downloads).

* A retriever that ignores the depth (LangChain's BM25Retriever, default k=4) makes rankings
  shorter than the cutoffs: the summary, the artifact and the reports say so with the fix, and a
  gate deeper than every ranking fails with that explanation instead of a number.
* Ids that never match the judged ids (LlamaIndex node ids from a splitter) stop the run with
  examples of both and the fix; with the fix (``node.ref_doc_id``) the run scores.
* One chunk → document rule: the same retriever gives the same numbers under every form.
"""

from __future__ import annotations

from pathlib import Path

import haystack_hybrid
import pytest
from plugin_helpers import RetrievalProject

GOLDEN = """\
version: 1
queries:
  - id: q-refund
    text: how does a refund work
    relevant: [refund]
  - id: q-okta
    text: set up okta login
    relevant: [okta]
  - id: q-export
    text: export my data
    relevant: [export]
"""

TOPICS = ["refund", "shipping", "invoice", "password", "okta", "billing", "export", "mfa"]

BM25_CONFTEST = f"""
import warnings
import pytest
from langchain_core.documents import Document

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from langchain_community.retrievers import BM25Retriever

TOPICS = {TOPICS!r}


@pytest.fixture(scope="session")
def retriever_under_test():
    docs = [
        Document(page_content=f"{{t}} how {{t}} works", metadata={{"source": t}}) for t in TOPICS
    ]
    return BM25Retriever.from_documents(docs)  # k=4 unless told otherwise
"""


def test_a_retriever_that_ignores_the_depth_gets_a_short_ranking_warning_with_its_fix(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        golden=GOLDEN,
        conftest=BM25_CONFTEST,
        ks="1,3,10",
        ini={"retrieval_doc_id": "metadata.source"},
        tests="""
        def test_run(retrieval_run):
            assert {len(r) for r in retrieval_run.values()} == {4}
        """,
    )
    result = retrieval_project.run("-v", "--retrieval-json=out.json", "--retrieval-markdown=out.md")
    result.assert_outcomes(passed=1)
    expected = (
        "warning: short rankings [retriever]: 3 of 3 rankings are shorter than the cutoff 10 "
        "(longest 4, median 4; 10 were asked for); every metric at @10 is scored on at most 4 "
        "results. Fix: BM25Retriever drops k=: build it with k=10, e.g. "
        "BM25Retriever.from_documents(docs, k=10) (retrieval_short_rankings = off if the corpus "
        "is that small)"
    )
    result.stdout.fnmatch_lines([expected])
    warning = retrieval_project.artifact()["warnings"][0]
    assert warning["kind"] == "short_rankings"
    assert (warning["longest"], warning["cutoff"], warning["flat"]) == (4, 10, [10])
    assert "BM25Retriever.from_documents(docs, k=10)" in warning["hint"]
    markdown = (retrieval_project.path / "out.md").read_text(encoding="utf-8")
    assert "> ⚠️ short rankings \\[retriever\\]: 3 of 3 rankings" in markdown
    assert "BM25Retriever.from\\_documents(docs, k=10)" in markdown  # escaped for Markdown


def test_the_warning_stays_under_quiet(retrieval_project: RetrievalProject) -> None:
    retrieval_project.write(
        golden=GOLDEN,
        conftest=BM25_CONFTEST,
        ks="1,10",
        ini={"retrieval_doc_id": "metadata.source"},
        tests="def test_run(retrieval_run): pass\n",
    )
    result = retrieval_project.run("-q")
    result.stdout.fnmatch_lines(["warning: short rankings [[]retriever[]]: 3 of 3*"])


def test_a_gate_deeper_than_every_ranking_fails_with_the_explanation(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        golden=GOLDEN,
        conftest=BM25_CONFTEST,
        ks="1,3",
        ini={"retrieval_doc_id": "metadata.source"},
        tests="""
        from pytest_retrieval import assert_recall_at

        def test_deep():
            assert_recall_at(10) >= 0.5
        """,
    )
    result = retrieval_project.run("--retrieval-json=out.json")
    result.assert_outcomes(failed=1)
    (gate,) = retrieval_project.artifact()["gates"]  # recorded as failed, not left out
    assert (gate["metric"], gate["passed"], gate["value"]) == ("recall@10", False, None)
    assert "cannot be scored" in gate["message"]
    result.stdout.fnmatch_lines(
        [
            "*recall@10 cannot be scored: every ranking [[]retriever[]] is shorter than 10 "
            "(longest 4, 3 asked for), so it would be scored on at most 4 results. Fix: "
            "BM25Retriever drops k=: build it with k=10, e.g. BM25Retriever.from_documents(docs, "
            "k=10); if 10 is deeper than you need, gate a smaller K*"
        ]
    )
    assert "recall@10 = " not in result.stdout.str()  # no number is printed for it


def test_the_strict_setting_stops_the_run(retrieval_project: RetrievalProject) -> None:
    retrieval_project.write(
        golden=GOLDEN,
        conftest=BM25_CONFTEST,
        ks="1,10",
        ini={"retrieval_doc_id": "metadata.source", "retrieval_short_rankings": "error"},
        tests="def test_run(retrieval_run): pass\n",
    )
    result = retrieval_project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["*short rankings [[]retriever[]]: 3 of 3 rankings*"])


LLAMA_CONFTEST = f"""
import pytest
from llama_index.core import Document, Settings, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.node_parser import SentenceSplitter

TOPICS = {TOPICS!r}


@pytest.fixture(scope="session")
def retriever_under_test():
    Settings.embed_model = MockEmbedding(embed_dim=8)
    docs = [Document(text=f"{{t}} how {{t}} works. " * 3, doc_id=t) for t in TOPICS]
    nodes = SentenceSplitter(chunk_size=64, chunk_overlap=0).get_nodes_from_documents(docs)
    index = VectorStoreIndex(nodes)
    return index.as_retriever(similarity_top_k=3)
"""


def test_llamaindex_node_ids_that_never_match_stop_the_run_with_the_fix(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        golden=GOLDEN,
        conftest=LLAMA_CONFTEST,
        ks="1,3",
        tests="def test_run(retrieval_run): pass\n",
    )
    result = retrieval_project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    out = result.stdout.str()
    assert "the returned ids do not match the golden set's: 0 of 3 rankings" in out
    assert "judged ids, e.g.:   'export', 'okta', 'refund'" in out
    assert "Fix: these are generated node/chunk ids (UUIDs). LlamaIndex: set " in out
    assert "retrieval_doc_id = node.ref_doc_id" in out


def test_with_ref_doc_id_the_llamaindex_run_scores(retrieval_project: RetrievalProject) -> None:
    retrieval_project.write(
        golden=GOLDEN,
        conftest=LLAMA_CONFTEST,
        ks="1,3",
        ini={"retrieval_doc_id": "node.ref_doc_id"},
        tests="""
        def test_run(retrieval_run):
            ids = {d for ranking in retrieval_run.values() for d in ranking}
            assert ids <= set(TOPICS)
        """.replace("TOPICS", repr(TOPICS)),
    )
    retrieval_project.run().assert_outcomes(passed=1)


CHUNK_CONFTEST = """
import pytest

# Each document has chunks "<doc>#<n>"; the ranking interleaves chunks of several documents.
RANKED = {
    "how does a refund work": ["shipping#0", "refund#1", "shipping#2", "refund#0", "okta#0"],
    "set up okta login": ["mfa#0", "mfa#1", "okta#2", "okta#0", "export#1"],
    "export my data": ["export#0", "billing#3", "export#4", "invoice#0", "mfa#2"],
}


class Chunk(dict):
    pass


@pytest.fixture(scope="session")
def retriever_under_test():
    def search(text):  # every chunk it has: more than the depth, as chunk retrievers do
        return [Chunk(id=c, metadata={"source": c.split("#")[0]}) for c in RANKED[text]]
    return search
"""


@pytest.mark.parametrize(
    "ini",
    [
        {"retrieval_doc_id": "metadata.source"},
        {"retrieval_doc_id_separator": "#"},
        {"retrieval_doc_id_map": "chunks.tsv"},
        {"retrieval_doc_id": "chunkmap:to_doc"},
    ],
    ids=["path", "separator", "map-file", "function"],
)
def test_every_chunk_form_gives_the_same_hand_computed_numbers(
    retrieval_project: RetrievalProject, ini: dict[str, str]
) -> None:
    rows = [
        c
        for ranking in (
            ["shipping#0", "refund#1", "shipping#2", "refund#0", "okta#0"],
            ["mfa#0", "mfa#1", "okta#2", "okta#0", "export#1"],
            ["export#0", "billing#3", "export#4", "invoice#0", "mfa#2"],
        )
        for c in ranking
    ]
    (retrieval_project.path / "chunks.tsv").write_text(
        "".join(f"{c}\t{c.split('#')[0]}\n" for c in rows), encoding="utf-8"
    )
    retrieval_project.pytester.makepyfile(
        chunkmap="def to_doc(chunk_id):\n    return chunk_id.split('#')[0]\n"
    )
    retrieval_project.write(
        golden=GOLDEN,
        conftest=CHUNK_CONFTEST,
        ks="1,2,3",
        ini=ini,
        tests="""
        def test_run(retrieval_run):
            # Each document at its best chunk's rank, later chunks removed.
            assert retrieval_run == {
                "q-refund": ("shipping", "refund", "okta"),
                "q-okta": ("mfa", "okta", "export"),
                "q-export": ("export", "billing", "invoice", "mfa"),
            }
        """,
    )
    result = retrieval_project.run("--retrieval-json=out.json")
    result.assert_outcomes(passed=1)
    means = next(
        r["metrics"] for r in retrieval_project.artifact()["results"] if r["column"] == "overall"
    )
    # By hand on the collapsed rankings: the relevant document sits at rank 2, 2 and 1.
    assert means["recall@1"] == pytest.approx(1 / 3)
    assert means["recall@2"] == pytest.approx(1.0)
    assert means["mrr@3"] == pytest.approx((1 / 2 + 1 / 2 + 1) / 3)
    assert means["ndcg@3"] == pytest.approx((1 / 1.5849625007211563 * 2 + 1) / 3)


# --- issue 23: a hybrid Haystack pipeline (BM25 + embedder + joiner) through the plugin --------

HYBRID_GOLDEN = """\
version: 1
queries:
  - id: q-refund
    text: refund window
    relevant: [refund-policy, money-back]
  - id: q-sso
    text: okta sso
    relevant: [sso-setup]
  - id: q-parcel
    text: parcel
    relevant: [shipping]
"""


def hybrid_conftest(inputs: str) -> str:
    return f"""
import pytest
from hybrid import hybrid_pipeline, indexed_store
from pytest_retrieval import HaystackPipeline


@pytest.fixture(scope="session")
def retriever_under_test():
    return HaystackPipeline(hybrid_pipeline(indexed_store()), input={inputs})
"""


def test_a_hybrid_haystack_pipeline_is_scored_on_what_the_pipeline_returns(
    retrieval_project: RetrievalProject,
) -> None:
    # The same file tests/unit/run/test_frameworks_haystack.py imports: real Haystack components,
    # and a deterministic bag-of-concepts embedder (no model download).
    retrieval_project.pytester.makepyfile(hybrid=Path(haystack_hybrid.__file__).read_text())
    retrieval_project.write(
        golden=HYBRID_GOLDEN,
        conftest=hybrid_conftest('["bm25.query", "embedder.text"]'),
        ks="1,3",
        # Its retrievers are built with Haystack's default top_k=10, and a run never asks a
        # retriever for fewer than it was built with, unless retrieval_depth says so: the rankings
        # derived by hand in haystack_hybrid are at depth 3.
        ini={"retrieval_depth": "3"},
        tests="""
        from hybrid import direct_ids

        TEXTS = {"q-refund": "refund window", "q-sso": "okta sso", "q-parcel": "parcel"}

        def test_run(retrieval_run, retriever_under_test):
            pipeline = retriever_under_test.pipeline
            # The depth (3, retrieval_depth) reached bm25, dense and the joiner.
            assert retrieval_run == {q: direct_ids(pipeline, t, 3) for q, t in TEXTS.items()}
        """,
    )
    result = retrieval_project.run("--retrieval-json=out.json")
    result.assert_outcomes(passed=1)
    means = next(
        r["metrics"] for r in retrieval_project.artifact()["results"] if r["column"] == "overall"
    )
    # By hand on the rankings derived in haystack_hybrid: q-refund [refund-policy*, money-back*,
    # shipping], q-sso [okta, sso-setup*, refund-policy], q-parcel [shipping*, ...].
    assert means["recall@1"] == pytest.approx((1 / 2 + 0 + 1) / 3)
    assert means["recall@3"] == pytest.approx(1.0)
    assert means["mrr@3"] == pytest.approx((1 + 1 / 2 + 1) / 3)


def test_a_hybrid_given_only_its_bm25_input_is_refused_before_any_query_runs(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.pytester.makepyfile(hybrid=Path(haystack_hybrid.__file__).read_text())
    retrieval_project.write(
        golden=HYBRID_GOLDEN,
        conftest=hybrid_conftest('"bm25.query"'),
        tests="def test_run(retrieval_run): pass\n",
    )
    result = retrieval_project.run()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*pytest-retrieval refused the run: HaystackPipeline(input='bm25.query'): the "
            "pipeline's mandatory input embedder.text would get nothing, so Haystack would "
            "refuse every query; name "
            "every socket that takes the query text, e.g. HaystackPipeline(pipeline, "
            'input=?"bm25.query", "embedder.text"?)',
        ]
    )
    assert "Missing mandatory input" not in result.stdout.str()


def test_a_hybrid_is_asked_for_the_top_k_its_retrievers_were_built_with(
    retrieval_project: RetrievalProject,
) -> None:
    # No retrieval_depth: the largest K is 3, but InMemoryBM25Retriever and
    # InMemoryEmbeddingRetriever are built with Haystack's default top_k=10, so every open top_k
    # gets 10 (the six-document corpus runs out first): never fewer than it was built with.
    retrieval_project.pytester.makepyfile(hybrid=Path(haystack_hybrid.__file__).read_text())
    retrieval_project.write(
        golden=HYBRID_GOLDEN,
        conftest=hybrid_conftest('["bm25.query", "embedder.text"]'),
        ks="1,3",
        tests="""
        from hybrid import direct_ids

        TEXTS = {"q-refund": "refund window", "q-sso": "okta sso", "q-parcel": "parcel"}

        def test_run(retrieval_run, retriever_under_test):
            pipeline = retriever_under_test.pipeline
            assert retrieval_run == {q: direct_ids(pipeline, t, 10) for q, t in TEXTS.items()}
            assert all(len(ranking) == 6 for ranking in retrieval_run.values())
        """,
    )
    result = retrieval_project.run("--retrieval-json=out.json")
    result.assert_outcomes(passed=1)
