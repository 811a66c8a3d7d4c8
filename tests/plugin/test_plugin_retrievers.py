"""Every retriever shape and return type the plugin accepts, and the ones it reports as errors.

Each case is the standard project (plugin_helpers) with a different ``retriever_under_test``;
whatever the shape, the final rankings must be the standard ones, so the hand-computed
recall@3 = (1 + 1 + 0) / 3 = 0.6667 over refund, sso and invoice holds in every case.
"""

from __future__ import annotations

import json
import textwrap
import time

import pytest
from plugin_helpers import GOLDEN as GOLDEN_TEXT
from plugin_helpers import RetrievalProject, conftest_with, esc

STANDARD_RUN_TEST = """
import pytest
from pytest_retrieval.gates.gate import recall_at

def test_rankings(retrieval_run):
    assert retrieval_run == {
        "refund": ("shipping", "refund-policy", "contact"),
        "sso": ("okta", "mfa", "sso-setup"),
        "invoice": ("faq", "pricing", "contact"),
        "fax": ("invoices",),
    }

def test_recall():
    # (1 + 1 + 0) / 3
    assert float(recall_at(3)) == pytest.approx(2 / 3)
"""


def retriever(body: str) -> str:
    """A conftest whose session fixture returns what ``body`` (a function body) builds."""
    indented = textwrap.indent(textwrap.dedent(body).strip(), "    ")
    return conftest_with(
        f"""
@pytest.fixture(scope="session")
def retriever_under_test():
{indented}
"""
    )


RETURN_TYPES = {
    "a list of str ids": """
        def search(text, k):
            return RANKINGS[text][:k]
        return search
    """,
    "a tuple": """
        return lambda text: tuple(RANKINGS[text])
    """,
    "a generator": """
        def search(text):
            yield from RANKINGS[text]
        return search
    """,
    "(id, score) pairs": """
        def search(text):
            return [(d, 1.0 / rank) for rank, d in enumerate(RANKINGS[text], 1)]
        return search
    """,
    "dicts with an id": """
        return lambda text: [{"id": d, "score": 0.5} for d in RANKINGS[text]]
    """,
    "dicts with a doc_id": """
        return lambda text: [{"doc_id": d, "text": "..."} for d in RANKINGS[text]]
    """,
    "objects with an id attribute": """
        class Hit:
            def __init__(self, id):
                self.id = id
                self.score = 0.5
        return lambda text: [Hit(d) for d in RANKINGS[text]]
    """,
    "LlamaIndex NodeWithScore": """
        class TextNode:
            def __init__(self, node_id):
                self.node_id = node_id
                self.text = "chunk text"
        class NodeWithScore:
            def __init__(self, node, score):
                self.node = node
                self.score = score
        return lambda text: [NodeWithScore(TextNode(d), 0.5) for d in RANKINGS[text]]
    """,
}


@pytest.mark.parametrize("body", RETURN_TYPES.values(), ids=list(RETURN_TYPES))
def test_every_accepted_return_type_gives_the_same_rankings(
    retrieval_project: RetrievalProject, body: str
) -> None:
    retrieval_project.write(conftest=retriever(body), tests=STANDARD_RUN_TEST)
    result = retrieval_project.run()
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.OK


def test_int_ids_are_compared_as_strings(retrieval_project: RetrievalProject) -> None:
    golden = """\
version: 1
queries:
  - id: q1
    text: first question
    relevant: [12]
  - id: q2
    text: second question
    relevant: [7, 30]
"""
    conftest = retriever(
        """
        # 99 is judged nowhere: three results per query, as deep as the recall@3 gate looks.
        answers = {"first question": [3, 12, 99], "second question": [7, 8, 99]}
        return lambda text: answers[text]
        """
    )
    retrieval_project.write(
        golden=golden,
        conftest=conftest,
        tests="""
        from pytest_retrieval.gates.gate import assert_recall_at

        def test_run(retrieval_run):
            assert retrieval_run == {"q1": ("3", "12", "99"), "q2": ("7", "8", "99")}

        def test_recall():
            # q1: 12 found (1/1); q2: 7 found, 30 missed (1/2) -> (1 + 0.5) / 2 = 0.75
            assert_recall_at(3) >= 0.75
            assert_recall_at(3) <= 0.75
        """,
    )
    retrieval_project.run().assert_outcomes(passed=2)


def test_langchain_documents_with_the_id_in_metadata_source(
    retrieval_project: RetrievalProject,
) -> None:
    conftest = retriever(
        """
        class Document:
            def __init__(self, page_content, metadata):
                self.page_content = page_content
                self.metadata = metadata
                self.id = None

        class Retriever:  # a LangChain-style retriever: invoke(query) -> documents
            def invoke(self, text):
                return [Document("...", {"source": d, "page": 1}) for d in RANKINGS[text]]

        return Retriever()
        """
    )
    retrieval_project.write(
        conftest=conftest,
        ini={"retrieval_doc_id": "metadata.source"},
        tests=STANDARD_RUN_TEST,
    )
    retrieval_project.run().assert_outcomes(passed=2)


def test_a_doc_id_path_that_is_missing_names_the_item(
    retrieval_project: RetrievalProject,
) -> None:
    conftest = retriever('return lambda text: [{"metadata": {"url": d}} for d in RANKINGS[text]]')
    retrieval_project.write(
        conftest=conftest,
        ini={"retrieval_doc_id": "metadata.source"},
        tests="def test_run(retrieval_run): pass",
    )
    result = retrieval_project.run()
    # Every query failed on the setting: one usage error about the setting, naming the item.
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        esc(
            [
                "*retrieval_doc_id = metadata.source: no returned item has it, so every query "
                "failed (query 'refund': item {'metadata': {'url': 'shipping'}} has no "
                "'metadata.source' (set by the doc id option))*",
            ]
        )
    )


RETRIEVER_OBJECTS = {
    "a function of (text)": "return lambda text: RANKINGS[text]",
    "a function of (text, top_k=...)": """
        def search(text, top_k=10):
            return RANKINGS[text][:top_k]
        return search
    """,
    "a callable object": """
        class Search:
            def __call__(self, text, k):
                return RANKINGS[text][:k]
        return Search()
    """,
    "a bound LangChain-style invoke(input, config=None)": """
        class Retriever:
            def invoke(self, text, config=None, **kwargs):
                # the cutoff must not be passed as config
                assert config is None, f"config={config!r}"
                return RANKINGS[text]
        return Retriever().invoke
    """,
    "a function behind a decorator's (*args, **kwargs) wrapper": """
        def traced(fn):
            def wrapper(*args, **kwargs):
                return fn(*args, **kwargs)
            return wrapper

        @traced
        def search(text):
            return RANKINGS[text]
        return search
    """,
    "an object with retrieve (LlamaIndex)": """
        class Retriever:
            def retrieve(self, text):
                return RANKINGS[text]
        return Retriever()
    """,
    "an object with search": """
        class Index:
            def search(self, text, k):
                return RANKINGS[text][:k]
        return Index()
    """,
    "an async function of (text)": """
        async def search(text):
            return RANKINGS[text]
        return search
    """,
    "an async function of (text, k)": """
        async def search(text, k):
            return RANKINGS[text][:k]
        return search
    """,
    "a callable object with an async __call__": """
        class Search:
            async def __call__(self, text):
                return RANKINGS[text]
        return Search()
    """,
}


@pytest.mark.parametrize("body", RETRIEVER_OBJECTS.values(), ids=list(RETRIEVER_OBJECTS))
def test_every_retriever_shape_is_called_once_per_query(
    retrieval_project: RetrievalProject, body: str
) -> None:
    # log_call wraps RANKINGS lookups: every call leaves one line in calls.log.
    body = body.replace("RANKINGS[text]", "(log_call(text) or RANKINGS[text])")
    retrieval_project.write(conftest=retriever(body), tests=STANDARD_RUN_TEST)
    result = retrieval_project.run()
    result.assert_outcomes(passed=2)
    assert sorted(retrieval_project.calls()) == sorted(
        [
            "How long is the refund window?",
            "How do I set up SSO with Okta?",
            "Where do I download invoices?",
            "Can I send invoices by fax?",
        ]
    )


@pytest.mark.parametrize("method", ["batch", "retrieve_batch"])
def test_a_batch_method_is_called_with_batches_of_retrieval_batch_size(
    retrieval_project: RetrievalProject, method: str
) -> None:
    conftest = retriever(
        f"""
        class Retriever:
            def {method}(self, texts):
                log_call(" | ".join(texts))
                return [RANKINGS[t] for t in texts]

            def invoke(self, text):  # never used when a batch method exists
                raise AssertionError("invoke called")

        return Retriever()
        """
    )
    retrieval_project.write(
        conftest=conftest, ini={"retrieval_batch_size": "3"}, tests=STANDARD_RUN_TEST
    )
    retrieval_project.run().assert_outcomes(passed=2)
    # 4 scorable queries in batches of 3: two calls, 3 then 1 queries, in golden-set order.
    assert sorted(retrieval_project.calls()) == [
        "Can I send invoices by fax?",
        "How long is the refund window? | How do I set up SSO with Okta? | "
        "Where do I download invoices?",
    ]


def test_a_batch_returning_the_wrong_number_of_results_fails_its_queries(
    retrieval_project: RetrievalProject,
) -> None:
    conftest = retriever(
        """
        class Retriever:
            def batch(self, texts):
                return [RANKINGS[t] for t in texts][:-1]
        return Retriever()
        """
    )
    retrieval_project.write(
        conftest=conftest,
        ini={"retrieval_batch_size": "2"},
        tests="def test_run(retrieval_run): pass",
    )
    result = retrieval_project.run()
    # Every batch is one result short, so every query failed: the run errored (nothing scored).
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "pytest-retrieval: the run errored, nothing was scored: every query failed in the "
            "retriever (4 of 4); the first, query 'refund' [[]retriever[]]: "
            "RetrieverOutputError: the batch method returned 1 results for 2 queries*",
            "queries that failed:",
            "  refund [[]retriever[]] RetrieverOutputError: the batch method returned 1 results "
            "for 2 queries (refund, sso); return a list with one ranking per query text, in order",
        ]
    )


# --- chunk -> document mapping -----------------------------------------------------------

# The retriever returns chunk ids "<doc>#<n>", several chunks of one document in a row. Refund's
# chunks: shipping#0, shipping#1, shipping#2, refund-policy#0, refund-policy#1, contact#0.
# Collapsed to documents at their best chunk's rank: shipping, refund-policy, contact, the
# standard ranking (refund-policy at rank 2). Uncollapsed, refund-policy would sit at rank 4,
# outside the top 3.
CHUNKS = retriever(
    """
    def search(text):
        chunks = []
        for d in RANKINGS[text]:
            chunks += [f"{d}#{n}" for n in range(3 if d == "shipping" else 2)]
        return chunks
    return search
    """
)


def test_retrieval_doc_id_module_function_maps_chunks_to_documents(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.pytester.makepyfile(
        chunkmap="def to_doc(chunk_id):\n    return chunk_id.split('#')[0]\n"
    )
    retrieval_project.write(
        conftest=CHUNKS, ini={"retrieval_doc_id": "chunkmap:to_doc"}, tests=STANDARD_RUN_TEST
    )
    retrieval_project.run().assert_outcomes(passed=2)


def _chunk_pairs() -> list[tuple[str, str]]:
    from plugin_helpers import RANKINGS

    docs = {d for ranking in RANKINGS.values() for d in ranking}
    return [(f"{d}#{n}", d) for d in sorted(docs) for n in range(3)]


def test_retrieval_doc_id_map_reads_a_tsv_file(retrieval_project: RetrievalProject) -> None:
    tsv = "# chunk\tdocument\n" + "".join(f"{c}\t{d}\n" for c, d in _chunk_pairs())
    (retrieval_project.path / "chunks.tsv").write_text(tsv, encoding="utf-8")
    retrieval_project.write(
        conftest=CHUNKS, ini={"retrieval_doc_id_map": "chunks.tsv"}, tests=STANDARD_RUN_TEST
    )
    retrieval_project.run().assert_outcomes(passed=2)


def test_retrieval_doc_id_map_reads_a_json_file(retrieval_project: RetrievalProject) -> None:
    (retrieval_project.path / "chunks.json").write_text(
        json.dumps(dict(_chunk_pairs())), encoding="utf-8"
    )
    retrieval_project.write(
        conftest=CHUNKS, ini={"retrieval_doc_id_map": "chunks.json"}, tests=STANDARD_RUN_TEST
    )
    retrieval_project.run().assert_outcomes(passed=2)


def test_chunk_ids_that_never_match_a_judged_id_stop_the_run_with_the_separator_fix(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(conftest=CHUNKS, tests="def test_run(retrieval_run): pass")
    result = retrieval_project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        [
            "*the returned ids do not match the golden set's: 0 of * rankings [[]retriever[]] "
            "hold an id of a judged document*",
            "*returned ids, e.g.: 'shipping#0', 'shipping#1', 'shipping#2', 'refund-policy#0'*",
            "*Fix: the returned ids are chunk ids of the judged documents ('shipping#0'): "
            "set retrieval_doc_id_separator = #*",
        ]
    )


def test_a_doc_map_that_writes_underscores_stops_the_run_though_one_word_ids_match(
    retrieval_project: RetrievalProject,
) -> None:
    # The doc map writes refund_policy for refund-policy (a slug with underscores): the one-word
    # ids (okta) still match, so one of the three answerable rankings holds a judged id and the
    # run was scored near 0 (recall@3 1/6) and could write that baseline. Two rankings hold a
    # judged id spelled otherwise, more than hold one as given: the spelling is the cause.
    tsv = "".join(f"{c}\t{d.replace('-', '_')}\n" for c, d in _chunk_pairs())
    (retrieval_project.path / "chunks.tsv").write_text(tsv, encoding="utf-8")
    retrieval_project.write(
        conftest=CHUNKS,
        ini={"retrieval_doc_id_map": "chunks.tsv"},
        tests="def test_run(retrieval_run): pass",
    )
    result = retrieval_project.run(
        "--retrieval-baseline=baseline.json", "--retrieval-update-baseline"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        esc(
            [
                "*the returned ids do not match the golden set's: 1 of 3 rankings [retriever] "
                "hold an id of a judged document, but 2 returned id(s) equal judged ids once "
                "case, separators (-, _, white space), a path or a file extension is ignored, so "
                "the metrics would be near 0 for a reason that is not retrieval quality:",
                "  returned 'refund_policy', judged 'refund-policy'",
                "  returned 'sso_setup', judged 'sso-setup'",
                "Fix: return ids spelled as the golden set spells them (the same case and "
                "separators, no path or file extension)*",
            ]
        )
    )
    assert not (retrieval_project.path / "baseline.json").exists()


def test_ids_that_differ_from_judged_ids_only_in_unicode_normalisation_stop_the_run(
    retrieval_project: RetrievalProject,
) -> None:
    # The golden set writes "crème" composed (NFC); the index returns it decomposed (NFD). Both
    # print as "crème", and without the check recall@3 of "refund" would be 0.
    golden = GOLDEN_TEXT.replace("[refund-policy]", '["cr\\u00e8me"]')
    retrieval_project.write(
        golden=golden,
        conftest=retriever(
            """
            def search(text, k):
                ranking = ["cre\\u0300me" if d == "refund-policy" else d for d in RANKINGS[text]]
                return ranking[:k]
            return search
            """
        ),
        tests="def test_run(retrieval_run): pass",
    )
    result = retrieval_project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        [
            "*1 returned id(s) [[]retriever[]] differ from judged ids only in their Unicode*",
            "*returned 'cre\\u0300me', judged 'cr\\xe8me'*",
            '*Fix: return ids in one normal form, e.g. unicodedata.normalize("NFC", *',
        ]
    )


def _accented_golden(count: int) -> str:
    lines = ["version: 1", "queries:"]
    for i in range(count):
        lines += [f"  - id: q{i}", f"    text: question {i}", f'    relevant: ["caf\\u00e9-{i}"]']
    return "\n".join(lines) + "\n"


ACCENTED = """
import unicodedata
import pytest


@pytest.fixture(scope="session")
def retriever_under_test():
    def search(text, k):
        doc = "caf\\u00e9-" + text.split()[-1]
        return [unicodedata.normalize(FORM, doc), "other"][:k]
    return search
"""


def test_a_wholly_decomposed_index_gets_the_normal_form_message_not_the_generic_one(
    retrieval_project: RetrievalProject,
) -> None:
    # 22 queries, every returned id decomposed: no ranking matches, which the generic "ids do
    # not match" check would report with two identical-looking ids and the wrong fix.
    retrieval_project.write(
        golden=_accented_golden(22),
        conftest='FORM = "NFD"\n' + ACCENTED,
        tests="def test_run(retrieval_run): pass",
    )
    result = retrieval_project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        ["*22 returned id(s) [[]retriever[]] differ from judged ids only in their Unicode*"]
    )
    assert "do not match the golden set's" not in result.stdout.str()


def test_a_reranker_that_decomposes_its_ids_is_caught_at_its_stage(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        golden=_accented_golden(3),
        conftest='FORM = "NFC"\n'
        + ACCENTED
        + """

@pytest.fixture(scope="session")
def reranker_under_test():
    def rerank(text, candidates):
        return [unicodedata.normalize("NFD", c) for c in candidates]
    return rerank
""",
        tests="def test_run(retrieval_run): pass",
    )
    result = retrieval_project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        ["*3 returned id(s) [[]reranker[]] differ from judged ids only in their Unicode*"]
    )


def test_no_answer_queries_do_not_count_against_the_id_check(
    retrieval_project: RetrievalProject,
) -> None:
    # 24 no-answer queries ranking unjudged documents and one answerable query that finds its
    # document: 1 of 25 rankings holds a judged id (under 5%), yet nothing is wrong with the ids.
    lines = ["version: 1", "queries:"]
    for i in range(24):
        lines += [f"  - id: na{i}", f"    text: no answer {i}", "    relevant: []"]
    lines += ["  - id: a1", "    text: answerable 1", "    relevant: [doc-a]"]
    retrieval_project.write(
        golden="\n".join(lines) + "\n",
        conftest=retriever(
            """
            def search(text, k):
                return ["doc-a"] if text == "answerable 1" else ["unjudged-" + text[-2:]]
            return search
            """
        ),
        tests="""
        from pytest_retrieval import mrr

        def test_mrr():
            assert float(mrr()) == 1.0  # a1 at rank 1; the no-answer queries are skipped
        """,
    )
    retrieval_project.run().assert_outcomes(passed=1)


def test_the_separator_setting_collapses_chunk_ids_to_documents(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        conftest=CHUNKS,
        ini={"retrieval_doc_id_separator": "#"},
        tests="""
        def test_run(retrieval_run):
            assert retrieval_run["refund"][:2] == ("shipping", "refund-policy")
        """,
    )
    retrieval_project.run().assert_outcomes(passed=1)


def test_without_a_mapping_chunk_ids_stay_as_returned(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        conftest=CHUNKS,
        ini={"retrieval_id_check": "off"},
        tests="""
        def test_run(retrieval_run):
            assert retrieval_run["refund"][:4] == (
                "shipping#0", "shipping#1", "shipping#2", "refund-policy#0"
            )
        """,
    )
    retrieval_project.run().assert_outcomes(passed=1)


def test_a_malformed_doc_id_map_is_a_usage_error_naming_the_line(
    retrieval_project: RetrievalProject,
) -> None:
    (retrieval_project.path / "chunks.tsv").write_text(
        "shipping#0\tshipping\nrefund-policy#0 refund-policy\n", encoding="utf-8"
    )
    retrieval_project.write(
        conftest=CHUNKS,
        ini={"retrieval_doc_id_map": "chunks.tsv"},
        tests="def test_run(retrieval_run): pass",
    )
    result = retrieval_project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        ["*/chunks.tsv:2: retrieval_doc_id_map: expected 'chunk id<TAB>document id'*"]
    )


# --- what is not a ranking ---------------------------------------------------------------

GATE_ON_THE_REST = """
from pytest_retrieval.gates.gate import assert_recall_at

def test_the_other_queries_still_score():
    # invoice fails and scores 0, as its ranking did anyway: (1 + 1 + 0) / 3
    assert_recall_at(3) >= 0.6
"""


@pytest.mark.parametrize(
    ("returned", "shown"),
    [
        (
            "None",
            "returned None (NoneType); expected a list of ids, (id, score) pairs, dicts "
            "with an id, or Document/Node objects",
        ),
        (
            "'faq'",
            "returned 'faq' (str); expected a list of ids, (id, score) pairs, dicts "
            "with an id, or Document/Node objects",
        ),
        (
            "42",
            "returned 42 (int); expected a list of ids, (id, score) pairs, dicts with an "
            "id, or Document/Node objects",
        ),
        (
            "[{'score': 0.9}]",
            "dict item {'score': 0.9} has none of the keys id, doc_id, "
            "document_id, _id, node_id, chunk_id; set retrieval_doc_id to the key that holds the "
            "document id",
        ),
    ],
    ids=["None", "a string", "a number", "an item without an id"],
)
def test_a_malformed_return_value_fails_that_query_naming_what_was_returned(
    retrieval_project: RetrievalProject, returned: str, shown: str
) -> None:
    conftest = retriever(
        f"""
        def search(text):
            if text == "Where do I download invoices?":
                return {returned}
            return RANKINGS[text]
        return search
        """
    )
    retrieval_project.write(conftest=conftest, tests=GATE_ON_THE_REST)
    result = retrieval_project.run()
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        esc(
            [
                "queries: 4 run, 1 failed, 1 skipped in means*",
                "1 query failed (they score 0 and fail the session):",
                f"  invoice [retriever] RetrieverOutputError: {shown}",
            ]
        )
    )


def test_a_raising_retriever_fails_that_query_and_the_session(
    retrieval_project: RetrievalProject,
) -> None:
    conftest = retriever(
        """
        def search(text):
            if text == "Where do I download invoices?":
                raise ConnectionError("vector store unreachable")
            return RANKINGS[text]
        return search
        """
    )
    retrieval_project.write(conftest=conftest, tests=GATE_ON_THE_REST)
    result = retrieval_project.run()
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "1 query failed (they score 0 and fail the session):",
            "  invoice [retriever] ConnectionError: vector store unreachable",
        ]
    )


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_hanging_query_times_out_without_holding_up_the_session(
    retrieval_project: RetrievalProject, kind: str
) -> None:
    if kind == "sync":
        body = """
        import time
        def search(text):
            if text == "Where do I download invoices?":
                time.sleep(5)
            return RANKINGS[text]
        return search
        """
    else:
        body = """
        import asyncio
        async def search(text):
            if text == "Where do I download invoices?":
                await asyncio.sleep(5)
            return RANKINGS[text]
        return search
        """
    retrieval_project.write(
        conftest=retriever(body), ini={"retrieval_timeout": "0.5"}, tests=GATE_ON_THE_REST
    )
    start = time.monotonic()
    result = retrieval_project.run()
    elapsed = time.monotonic() - start
    # The 5 s call is abandoned after 0.5 s; the session ends long before the call would.
    assert elapsed < 2.5
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "1 query failed (they score 0 and fail the session):",
            "  invoice [retriever] TimeoutError: no answer within 0.5 s",
        ]
    )


def test_no_timeout_and_concurrency_1_call_the_retriever_in_pytests_own_thread(
    retrieval_project: RetrievalProject,
) -> None:
    # A retriever over a sqlite3 connection made in the fixture: sqlite3 refuses a connection
    # used from another thread, so with worker threads every query failed with "SQLite objects
    # created in a thread can only be used in that same thread". retrieval_timeout = 0 (no
    # limit) with one query at a time leaves nothing for a thread to do: the calls run in
    # pytest's thread and the standard rankings come back.
    body = """
        import sqlite3
        connection = sqlite3.connect(":memory:")
        connection.execute("create table ranks (query text, rank integer, doc text)")
        connection.executemany(
            "insert into ranks values (?, ?, ?)",
            [(q, r, d) for q, docs in RANKINGS.items() for r, d in enumerate(docs)],
        )

        def search(text, k):
            rows = connection.execute(
                "select doc from ranks where query = ? order by rank limit ?", (text, k)
            )
            return [doc for (doc,) in rows]
        return search
        """
    retrieval_project.write(
        conftest=retriever(body),
        ini={"retrieval_timeout": "0", "retrieval_concurrency": "1"},
        tests=STANDARD_RUN_TEST,
    )
    result = retrieval_project.run()
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.OK
    assert "SQLite objects" not in result.stdout.str()


def test_a_retriever_that_cannot_be_called_refuses_the_run_as_a_usage_error(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        conftest=retriever("return 42"),
        tests="""
        def test_one(retrieval_run): pass
        def test_two(retrieval_run): pass
        """,
    )
    result = retrieval_project.run()
    # The first test that needs the run fails with the reason; the session ends there, as a
    # usage error (it used to fail every test, exit 1).
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*pytest-retrieval refused the run: the retriever under test is a int, which is "
            "neither callable nor "
            "has an invoke/retrieve/search/retrieve_batch/batch method; return a function "
            "`retrieve(query_text) -> ranked ids` from the retriever_under_test fixture",
        ]
    )


# --- issue 12: real frameworks and refusals through the plugin ------------------------------


def test_a_fixture_returning_the_retriever_class_is_refused_by_name(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        conftest=retriever(
            """
            class MyRetriever:
                def invoke(self, text):
                    return RANKINGS[text]
            return MyRetriever
            """
        ),
        tests="def test_run(retrieval_run): pass",
    )
    result = retrieval_project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*pytest-retrieval refused the run: the retriever under test is the class "
            "retriever_under_test.<locals>.MyRetriever, not an instance of it: return "
            "retriever_under_test.<locals>.MyRetriever(...) from the retriever_under_test "
            "fixture, not retriever_under_test.<locals>.MyRetriever",
        ]
    )
    # Never called as if the query text were `self` (that used to fail with KeyError: 3).
    assert "KeyError" not in result.stdout.str()


def test_a_set_ranking_fails_that_query_saying_a_ranking_must_be_ordered(
    retrieval_project: RetrievalProject,
) -> None:
    conftest = retriever(
        """
        def search(text):
            if text == "Where do I download invoices?":
                return {"faq"}
            return RANKINGS[text]
        return search
        """
    )
    retrieval_project.write(conftest=conftest, tests=GATE_ON_THE_REST)
    result = retrieval_project.run()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        esc(
            [
                "  invoice [retriever] RetrieverOutputError: returned {'faq'} (set): a ranking "
                "must be ordered: return a list, best first (e.g. sorted by score), not a set",
            ]
        )
    )


def test_the_depth_reaches_a_real_langchain_retriever_through_the_plugin(
    retrieval_project: RetrievalProject,
) -> None:
    # LangChain's as_retriever() returns 4 documents unless told otherwise; with ks 1,3 the plugin
    # asks for 3, so every ranking has 3 ids (the corpus has 10 documents).
    conftest = retriever(
        """
        from langchain_core.documents import Document
        from langchain_core.embeddings import DeterministicFakeEmbedding
        from langchain_core.vectorstores import InMemoryVectorStore

        docs = sorted({d for ranking in RANKINGS.values() for d in ranking})
        store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
        store.add_documents([Document(id=d, page_content=f"about {d}") for d in docs])
        return store.as_retriever()
        """
    )
    retrieval_project.write(
        conftest=conftest,
        tests="""
        def test_depth(retrieval_run):
            assert retrieval_run and all(len(r) == 3 for r in retrieval_run.values())
        """,
    )
    retrieval_project.run().assert_outcomes(passed=1)


def test_a_doc_id_path_no_item_has_is_one_usage_error_not_a_failure_per_query(
    retrieval_project: RetrievalProject,
) -> None:
    retrieval_project.write(
        conftest=retriever(
            """
            def search(text, k):
                return [{"id": d, "metadata": {"source": d}} for d in RANKINGS[text][:k]]
            return search
            """
        ),
        ini={"retrieval_doc_id": "metadata.sourc"},
        tests="def test_run(retrieval_run): pass\n",
    )
    result = retrieval_project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        [
            "*retrieval_doc_id = metadata.sourc: no returned item has it, so every query failed "
            "(query 'refund': *has no 'metadata.sourc'*"
        ]
    )


LANGCHAIN_PATHS = """
import re
import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore

TEXTS = {
    "refund-policy": "refund window days purchase",
    "sso-setup": "sso setup okta identity provider",
    "okta": "okta saml application",
    "invoices": "download invoices billing page",
    "billing": "billing details invoices",
    "shipping": "shipping times",
}
WORDS = sorted({w for t in TEXTS.values() for w in t.split()})


class BagOfWords(Embeddings):
    def embed_documents(self, texts):
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text):
        words = re.findall(r"\\w+", text.lower())
        return [float(words.count(w)) for w in WORDS] + [0.01]


STORE = InMemoryVectorStore(BagOfWords())
# What a LangChain file loader writes: metadata.source is the path of the file.
STORE.add_documents(
    [Document(page_content=t, metadata={"source": f"docs/{d}.md"}) for d, t in TEXTS.items()]
)


@pytest.fixture(scope="session")
def retriever_under_test():
    return STORE.as_retriever(search_kwargs={"k": 3})
"""


def test_langchain_sources_that_are_file_paths_of_judged_documents_stop_the_run(
    retrieval_project: RetrievalProject,
) -> None:
    # metadata.source = "docs/refund-policy.md" where the golden set judges "refund-policy":
    # no ranking holds a judged id, every metric would be 0. Three answerable queries are too
    # few for the share rule; the ids' spelling gives it away.
    retrieval_project.write(
        conftest=LANGCHAIN_PATHS,
        ini={"retrieval_doc_id": "metadata.source"},
        tests="def test_run(retrieval_run): pass",
    )
    result = retrieval_project.run("--retrieval-json=out.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        esc(
            [
                "*the returned ids do not match the golden set's: 0 of 3 rankings [retriever] "
                "hold an id of a judged document, but * returned id(s) equal judged ids once "
                "case, separators (-, _, white space), a path or a file extension is ignored*",
                "*returned 'docs/*.md', judged '*'",
                "Fix: return ids spelled as the golden set spells them (the same case and "
                "separators, no path or file extension)*",
            ]
        )
    )
    artifact = retrieval_project.artifact()
    assert artifact["status"] == "refused"


def test_no_baseline_is_written_from_a_run_where_no_ranking_holds_a_judged_id(
    retrieval_project: RetrievalProject,
) -> None:
    # The id check turned off: the run is scored (every metric 0), but a baseline of zeros
    # would let every later run pass its budgets, so it is not written.
    retrieval_project.write(
        conftest=LANGCHAIN_PATHS,
        ini={"retrieval_doc_id": "metadata.source", "retrieval_id_check": "off"},
        tests="def test_run(retrieval_run): pass",
    )
    result = retrieval_project.run(
        "--retrieval-baseline=baseline.json", "--retrieval-update-baseline"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert not (retrieval_project.path / "baseline.json").exists()
    result.stdout.fnmatch_lines(
        esc(
            [
                "pytest-retrieval: baseline not written to *baseline.json: no ranking "
                "[retriever] holds a judged id (0 of 3 rankings of queries with a relevant "
                "document), so every metric is 0 and a baseline of zeros would let every later "
                "run pass*",
            ]
        )
    )
