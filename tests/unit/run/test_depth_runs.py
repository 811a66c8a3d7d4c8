"""Asking again deeper, below the plugin: the rule, the runner against real LangChain, the cache
(each depth its own entry), the determinism probe (a query re-run at its own depth), the xdist
codec and the baseline (the ids as returned kept, a rescore by the same rule).

The corpus is ``chunked_corpus``: 12 documents of 3 or 4 chunks. Expected values are
hand-computed from the rule's formula or read from the library's own answers.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from chunked_corpus import CHUNKS, GOLDEN, QUERIES, cosine_ranking, embed
from paths import HELPERS
from plugin_helpers import RetrievalProject

from pytest_retrieval.golden.model import GoldenSet, Query
from pytest_retrieval.regression.snapshot import QuerySnapshot, build_snapshot
from pytest_retrieval.run.retriever import (
    QueryOutcome,
    QueryRequest,
    RetrieverCall,
    deeper,
    run_pipeline,
)
from pytest_retrieval.run.shards import decode_outcome, encode_outcome
from pytest_retrieval.run.store import RunCache
from pytest_retrieval.scoring.evaluate import Conventions, evaluate
from pytest_retrieval.session.payload import outcome_from_dict, outcome_to_dict


@pytest.mark.parametrize(
    ("asked", "returned", "documents", "fill", "cap", "expected"),
    [
        (10, 10, 8, 10, 100, 20),  # twice as deep beats ceil(10 * 10 / 8) = 13
        (10, 10, 3, 10, 100, 34),  # ceil(10 * 10 / 3) = 34 beats twice as deep
        (40, 40, 10, 50, 100, 100),  # ceil(40 * 50 / 10) = 200, held to the cap
        (10, 9, 3, 10, 100, None),  # came back short of 10: the index has no more
        (10, 10, 10, 10, 100, None),  # already 10 documents
        (100, 100, 50, 60, 100, None),  # at the cap
    ],
)
def test_the_rule_asks_again_only_when_full_but_short_and_below_the_cap(
    asked: int, returned: int, documents: int, fill: int, cap: int, expected: int | None
) -> None:
    assert deeper(asked, returned, documents, fill=fill, max_depth=cap) == expected


@pytest.fixture(scope="module")
def store() -> Any:
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore

    class BagOfWords(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [embed(t) for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return embed(text)

    vector_store = InMemoryVectorStore(BagOfWords())
    vector_store.add_documents(
        [Document(id=c, page_content=t, metadata={"source": d}) for c, d, t in CHUNKS]
    )
    return vector_store


REQUESTS = [QueryRequest(qid, text) for qid, (text, _r) in QUERIES.items()]


def sources(store: Any, text: str, k: int) -> list[str]:
    return [d.metadata["source"] for d in store.similarity_search(text, k=k)]


def test_the_runner_asks_only_the_short_queries_again_and_hands_the_reranker_the_last_call(
    store: Any,
) -> None:
    retriever = store.as_retriever(search_kwargs={"k": 4})
    calls: list[RetrieverCall] = []
    handed: dict[str, int] = {}

    def rerank(text: str, candidates: list[Any]) -> list[Any]:
        handed[text] = len(candidates)
        return candidates

    outcomes = run_pipeline(
        REQUESTS,
        retriever,
        rerank,
        depth=10,
        doc_id="metadata.source",
        fill=10,
        max_depth=100,
        on_call=calls.append,
    )
    assert retriever.search_kwargs == {"k": 4}  # the user's object is never changed
    by_query = {o.query_id: o for o in outcomes}
    for request in REQUESTS:
        outcome = by_query[request.id]
        first = sources(store, request.text, 10)
        asked = outcome.asked if outcome.asked is not None else 10
        # The library's answer at the depth the outcome says it was asked: its documents and,
        # as returned, its sources with their repeats.
        found = sources(store, request.text, asked)
        assert outcome.rankings["retriever"] == tuple(dict.fromkeys(found))
        assert outcome.as_returned("retriever") == tuple(found)
        assert (outcome.asked is not None) == (len(set(first)) < 10)
        assert handed[request.text] == asked  # the reranker got the last call's chunks
        depths = [c.depth for c in calls if c.index == REQUESTS.index(request)]
        assert depths == ([10] if outcome.asked is None else [10, outcome.asked])
    assert by_query["q-step0"].asked is None
    # q-audit's 10 chunks hold 6 documents: max(2 * 10, ceil(10 * 10 / 6) = 17) = 20.
    assert len(set(sources(store, "audit common words", 10))) == 6
    assert by_query["q-audit"].asked == 20
    assert by_query["q-audit"].latency_ms["retriever"] >= 0.0


def test_a_deeper_call_that_fails_keeps_the_last_answer_and_says_why() -> None:
    def search(text: str, k: int) -> list[str]:
        if k > 10:
            raise ValueError("top_k must be <= 10")
        return cosine_ranking(text)[:k]

    outcome = run_pipeline(
        [QueryRequest("q-audit", "audit common words")],
        search,
        depth=10,
        doc_id_separator="#",
        fill=10,
        max_depth=100,
    )[0]
    assert outcome.error is None
    assert outcome.rankings["retriever"] == tuple(
        dict.fromkeys(c.split("#")[0] for c in cosine_ranking("audit common words")[:10])
    )
    assert outcome.asked is None
    assert outcome.deeper_error == "asking 20 failed: ValueError: top_k must be <= 10"


def test_without_fill_nothing_is_asked_again(store: Any) -> None:
    calls: list[RetrieverCall] = []
    run_pipeline(
        REQUESTS, store.as_retriever(), depth=10, doc_id="metadata.source", on_call=calls.append
    )
    assert [c.depth for c in calls] == [10, 10, 10, 10]


def test_the_codec_and_the_payload_keep_the_depth_fields_and_leave_old_rows_unchanged() -> None:
    plain = QueryOutcome("q", rankings={"retriever": ("a", "c")}, latency_ms={"retriever": 1.0})
    # Nothing repeated, nothing asked again: the row is exactly the old compact one.
    assert encode_outcome(plain) == ["q", {"retriever": ("a", "c")}, {"retriever": 1.0}]
    assert set(outcome_to_dict(plain)) == {
        "query_id",
        "rankings",
        "latency_ms",
        "error",
        "error_type",
        "error_stage",
        "scores",
    }
    deep = QueryOutcome(
        "q",
        rankings={"retriever": ("a", "c")},
        latency_ms={"retriever": 1.0},
        returned={"retriever": ("a", "a", "c")},
        asked=40,
        deeper_error="asking 80 failed: ValueError: no",
    )
    row = json.loads(json.dumps(encode_outcome(deep)))
    assert decode_outcome(row) == deep
    assert outcome_from_dict(json.loads(json.dumps(outcome_to_dict(deep)))) == deep


CACHED = """
import os
import pytest
from chunked_corpus import cosine_ranking

LOG = os.path.join(os.path.dirname(__file__), "asked.log")


@pytest.fixture(scope="session")
def retriever_under_test():
    def search(text, k):
        with open(LOG, "a", encoding="utf-8") as out:
            out.write(f"{text}\\t{k}\\n")
        return cosine_ranking(text)[:k]

    return search
"""


def asked(project: RetrievalProject) -> list[tuple[str, int]]:
    log = project.path / "asked.log"
    if not log.exists():
        return []
    lines = log.read_text(encoding="utf-8").splitlines()
    return [(text, int(k)) for text, k in (line.split("\t") for line in lines)]


def test_each_deeper_call_is_its_own_cache_entry_and_a_cached_rerun_calls_nothing(
    retrieval_project: RetrievalProject, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    retrieval_project.write(
        golden=GOLDEN,
        conftest=CACHED,
        ks="1,5,10",
        ini={"retrieval_doc_id_separator": "#", "retrieval_cache": "use"},
        tests="def test_run(retrieval_run):\n    pass\n",
    )
    flags = [f"--retrieval-cache-dir={cache}", "--retrieval-json=out.json"]
    retrieval_project.run(*flags).assert_outcomes(passed=1)
    first_calls = asked(retrieval_project)
    # 4 queries at 10, the 3 whose 10 chunks held fewer than 10 documents again at 20.
    assert sorted(k for _t, k in first_calls) == [10, 10, 10, 10, 20, 20, 20]
    first = retrieval_project.artifact()
    with RunCache(cache / "runs.sqlite3") as stored:
        assert len(stored) == 7  # one entry per call, each at its own depth
    (retrieval_project.path / "asked.log").unlink()
    retrieval_project.run(*flags).assert_outcomes(passed=1)
    assert asked(retrieval_project) == []  # served whole from the cache, deeper calls included
    again = retrieval_project.artifact()
    assert again["run"]["cache"]["cached"] == 4
    assert [q["rankings"] for q in again["queries"]] == [q["rankings"] for q in first["queries"]]
    assert [q["depth"] for q in again["queries"]] == [q["depth"] for q in first["queries"]]
    assert again["results"] == first["results"]
    retrieval_project.run(*flags, "--retrieval-cache=replay").assert_outcomes(passed=1)
    assert retrieval_project.artifact()["results"] == first["results"]


def test_the_probe_re_runs_a_query_at_the_depth_its_ranking_came_from(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        golden=GOLDEN,
        conftest=CACHED,
        ks="1,5,10",
        ini={
            "retrieval_doc_id_separator": "#",
            "retrieval_baseline": "baseline.json",
            "retrieval_determinism_probe": "4",
        },
        tests="def test_run(retrieval_run):\n    pass\n",
    )
    # The probe runs only with a baseline, compared against or, as here, written.
    retrieval_project.run("--retrieval-json=out.json", "--retrieval-update-baseline")
    calls = asked(retrieval_project)
    main, probe = calls[:7], calls[7:]
    assert sorted(k for _t, k in main) == [10, 10, 10, 10, 20, 20, 20]
    depth_of = {
        QUERIES[row["id"]][0]: row["depth"]["retriever"]["asked"]
        for row in retrieval_project.artifact()["queries"]
    }
    # One call per probed query, at its own depth (not 10 first and then deeper again).
    assert sorted(probe) == sorted(depth_of.items())
    determinism = retrieval_project.artifact()["determinism"]
    assert determinism["changed"] == []
    # The baseline records the configured depth (the largest cutoff), not the deepest call; it
    # keeps the whole document ranking that was scored (all the documents of the deeper call,
    # what a metric without a cutoff reads) and the chunks' document ids as returned beside it.
    baseline = json.loads((retrieval_project.path / "baseline.json").read_text(encoding="utf-8"))
    assert baseline["settings"]["depth"] == 10
    audit = baseline["queries"]["q-audit"]
    (row,) = [r for r in retrieval_project.artifact()["queries"] if r["id"] == "q-audit"]
    assert len(audit["top"]["retriever"]) == row["depth"]["retriever"]["documents"] > 10
    assert audit["top"]["retriever"][:10] == row["rankings"]["retriever"]
    assert audit["returned"]["retriever"][:3] == ["audit"] * 3  # its chunks, as returned


def test_results_unit_asks_nothing_again(retrieval_project: RetrievalProject) -> None:
    retrieval_project.write(
        golden=GOLDEN,
        conftest=CACHED,
        ks="1,5,10",
        ini={"retrieval_doc_id_separator": "#", "retrieval_cutoff_unit": "results"},
        tests="def test_run(retrieval_run):\n    pass\n",
    )
    retrieval_project.run("--retrieval-json=out.json").assert_outcomes(passed=1)
    assert sorted(k for _t, k in asked(retrieval_project)) == [10, 10, 10, 10]
    artifact = retrieval_project.artifact()
    assert not [w for w in artifact["warnings"] if w["kind"] == "short_rankings"]
    # recall@10 of the documents within the top 10 chunks as returned, by hand per query.
    values = []
    for text, relevant in QUERIES.values():
        top = {c.split("#")[0] for c in cosine_ranking(text)[:10]}
        values.append(len(top & set(relevant)) / len(relevant))
    overall = next(r for r in artifact["results"] if r["column"] == "overall")
    assert overall["metrics"]["recall@10"] == pytest.approx(sum(values) / len(values))


def test_an_explicit_retrieval_depth_wins_over_what_the_retriever_was_built_with(
    retrieval_project: RetrievalProject,
) -> None:
    conftest = """
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


@pytest.fixture(scope="session")
def retriever_under_test():
    store = InMemoryVectorStore(BagOfWords())
    store.add_documents(
        [Document(id=c, page_content=t, metadata={"source": d}) for c, d, t in CHUNKS]
    )
    return store.as_retriever(search_kwargs={"k": 30})
"""
    retrieval_project.write(
        golden=GOLDEN,
        conftest=conftest,
        ks="1,5,10",
        ini={"retrieval_doc_id": "metadata.source", "retrieval_depth": "12"},
        tests="def test_run(retrieval_run):\n    pass\n",
    )
    retrieval_project.run("--retrieval-json=out.json").assert_outcomes(passed=1)
    facts = retrieval_project.artifact()["retriever"]["depth"]
    assert (facts["first"], facts["reason"], facts["built"]) == (12, "retrieval_depth", 30)


def test_a_query_asked_to_the_cap_names_retrieval_max_depth(
    retrieval_project: RetrievalProject,
) -> None:
    # q-audit: 10 chunks hold 6 documents, so it is asked again at min(cap 11, 20) = 11 and
    # stops there, its 11 chunks still short of 10 documents.
    assert len({c.split("#")[0] for c in cosine_ranking("audit common words")[:11]}) < 10
    retrieval_project.write(
        golden=GOLDEN,
        conftest=CACHED,
        ks="1,5,10",
        ini={"retrieval_doc_id_separator": "#", "retrieval_max_depth": "11"},
        tests="def test_run(retrieval_run):\n    pass\n",
    )
    retrieval_project.run("--retrieval-json=out.json").assert_outcomes(passed=1)
    artifact = retrieval_project.artifact()
    (warning,) = [w for w in artifact["warnings"] if w["kind"] == "short_rankings"]
    assert warning["deepest"] == 11
    rows = {row["id"]: row for row in artifact["queries"]}
    assert rows["q-audit"]["depth"]["retriever"]["asked"] == 11
    # The number, by hand from the rankings at the depth each query was asked: ``most`` chunks
    # of one document in one ranking at most, so (10 - 1) * most + 1 results hold 10 documents
    # if no document has more; a ranking of R results in D documents needs R + 10 - D at least.
    chunk_rankings = [
        cosine_ranking(QUERIES[qid][0])[: row["depth"]["retriever"]["asked"]]
        for qid, row in rows.items()
    ]
    counts = [Counter(c.split("#")[0] for c in chunks) for chunks in chunk_rankings]
    most = max(max(c.values()) for c in counts)
    at_least = max(sum(c.values()) + 10 - len(c) for c in counts if len(c) < 10)
    enough = 9 * most + 1
    assert (
        f"Fix: raise retrieval_max_depth (now 11) to {enough}, or start every query at "
        f"retrieval_depth = {enough} ({enough} results hold 10 documents for every query seen "
        f"here if no document has more than {most} chunks, the most one ranking held of one "
        f"document; fewer than {at_least} results cannot)" in warning["message"]
    ), warning["message"]


def test_the_baseline_keeps_the_ids_as_returned_and_rescores_them_by_the_same_rule() -> None:
    # a, a, c, d at depth 2: kept whole, as scored (a metric without a cutoff reads all of it).
    gold = GoldenSet((Query("q", "t", {"c": 1}),))
    evaluation = evaluate({"q": ["a", "a", "c", "d"]}, gold.qrels(), ["recall@2", "map"])
    built = build_snapshot(
        gold,
        {"retriever": evaluation},
        lambda qid, stage: ("a", "c", "d"),
        metric_names=["recall@2", "map"],
        settings={"depth": 2},
        returned_of=lambda qid, stage: ("a", "a", "c", "d"),
    )
    assert built.schema_version == 3
    assert built.queries["q"].top == {"retriever": ("a", "c", "d")}
    assert built.queries["q"].returned == {"retriever": ("a", "a", "c", "d")}
    query = QuerySnapshot(
        split="tune",
        slices=(),
        labels="x",
        metrics={},
        relevant_ranks={},
        top={"retriever": ("a", "c", "d")},
        judgments={"c": 1},
        text="t",
        returned={"retriever": ("a", "a", "c", "d")},
    )
    document = query.to_dict()
    assert document["returned"] == {"retriever": ["a", "a", "c", "d"]}
    assert QuerySnapshot.from_dict(document) == query
    without = QuerySnapshot.from_dict({**document, "returned": {}})
    assert "returned" not in without.to_dict()  # left out of the file when nothing repeated


def test_rescore_in_results_unit_uses_the_ids_as_returned() -> None:
    from pytest_retrieval.regression.rescore import rescore
    from pytest_retrieval.regression.snapshot import Snapshot

    def snapshot(returned: tuple[str, ...]) -> Snapshot:
        query = QuerySnapshot(
            split="tune",
            slices=(),
            labels="x",
            metrics={"retriever": {}},
            relevant_ranks={},
            top={"retriever": tuple(dict.fromkeys(returned))},
            judgments={"c": 1},
            text="t",
            returned={"retriever": returned},
        )
        settings = {"gain": "exponential", "min_grade": 1, "no_relevant": "skip", "depth": 4}
        return Snapshot(
            fingerprint="f",
            settings={**settings, "cutoff_unit": "results"},
            stages=("retriever",),
            metrics=("recall@2", "distinct@4"),
            queries={"q": query},
            schema_version=2,
        )

    current = snapshot(("a", "c", "d", "e"))
    conventions = Conventions.from_recorded(current.settings)
    done = rescore(snapshot(("a", "a", "c", "d")), current, ["recall@2"], conventions)
    # Baseline: the top 2 results are a, a (no c): 0. Current: a, c: 1. As evaluate() says.
    assert done.baseline.queries["q"].metrics["retriever"]["recall@2"] == 0.0
    assert done.current.queries["q"].metrics["retriever"]["recall@2"] == 1.0
    fresh = evaluate(
        {"q": ["a", "a", "c", "d"]}, {"q": {"c": 1}}, ["recall@2"], cutoff_unit="results"
    )
    assert fresh.per_query["q"]["recall@2"] == 0.0


def test_under_xdist_the_deeper_calls_and_the_depth_facts_are_those_of_n0(
    retrieval_project: RetrievalProject,
) -> None:
    # The workers share the queries through the shard store: the ids as returned and the depth
    # asked travel in its codec, the depth plan in the payload.
    source = (HELPERS / "chunked_corpus.py").read_text(encoding="utf-8")
    (retrieval_project.path / "chunked_corpus.py").write_text(source, encoding="utf-8")
    retrieval_project.write(
        golden=GOLDEN,
        conftest=CACHED,
        ks="1,5,10",
        ini={"retrieval_doc_id_separator": "#", "retrieval_metrics": "recall,distinct"},
        tests="def test_a(retrieval_run):\n    pass\n\n\ndef test_b(retrieval_run):\n    pass\n",
    )
    retrieval_project.run_subprocess("-n", "0", "--retrieval-json=one.json").assert_outcomes(
        passed=2
    )
    serial = sorted(asked(retrieval_project))
    (retrieval_project.path / "asked.log").unlink()
    result = retrieval_project.run_subprocess("-n", "2", "--retrieval-json=two.json")
    result.assert_outcomes(passed=2)
    assert sorted(asked(retrieval_project)) == serial  # each call made once, by one worker
    one, two = retrieval_project.artifact("one.json"), retrieval_project.artifact("two.json")
    assert two["results"] == one["results"]
    assert two["retriever"]["depth"] == one["retriever"]["depth"]
    assert [(q.get("returned"), q["depth"]) for q in two["queries"]] == [
        (q.get("returned"), q["depth"]) for q in one["queries"]
    ]
    assert sum("returned" in q for q in two["queries"]) == 3  # all but q-step0 repeat an id
