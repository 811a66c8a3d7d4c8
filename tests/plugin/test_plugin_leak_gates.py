"""Leak gates as a user sees them: forbidden and stale documents counted in the top K, the
zero-tolerance gate naming each leak, and the bad inputs refused by name.

The corpus gives two tenants their refund policies and marks last year's policy superseded;
the retriever either ignores the tenant (the leak the gates exist for) or filters by it.
Expected values are counted by hand in the comments.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from pytest_retrieval import Query, evaluate, load_golden
from pytest_retrieval.errors import GoldenSetError, InputError
from pytest_retrieval.formats.corpus import read_access_rules
from pytest_retrieval.gates.declared import parse_threshold
from pytest_retrieval.golden.access import build_access

pytest_plugins = ["pytester"]

CORPUS = [
    {"_id": "acme-refund", "text": "Acme refunds within 30 days", "tenant": "acme"},
    {"_id": "globex-refund", "text": "Globex refunds within 14 days", "tenant": "globex"},
    {"_id": "refund-policy-2024", "text": "Refunds within 60 days", "superseded_by": "acme-refund"},
    {"_id": "faq", "text": "Frequently asked questions"},
]

GOLDEN = """\
version: 1
queries:
  - id: acme-q
    text: How long is the refund window?
    relevant: [acme-refund]
    context: {tenant: acme}
  - id: globex-q
    text: How long is the refund window at Globex?
    relevant: [globex-refund]
    context: {tenant: globex}
"""

# Ranks every document for every query, tenant or not: acme-refund first for acme-q, then
# globex-refund (another tenant's), refund-policy-2024 (superseded), faq.
CONFTEST = """\
import os
import pytest

ORDER = {
    "acme": ["acme-refund", "globex-refund", "refund-policy-2024", "faq"],
    "globex": ["globex-refund", "acme-refund", "refund-policy-2024", "faq"],
}
TENANT_OF = {"acme-refund": "acme", "globex-refund": "globex"}

@pytest.fixture(scope="session")
def retriever_under_test():
    def search(text, k, tenant):
        ranking = ORDER[tenant]
        if os.environ.get("TENANT_FILTER") == "on":
            ranking = [d for d in ranking if TENANT_OF.get(d, tenant) == tenant]
        return ranking[:k]
    return search
"""


def _project(pytester: pytest.Pytester, thresholds: str, corpus: list[dict[str, str]] = CORPUS):
    pytester.makefile(".jsonl", corpus="\n".join(json.dumps(doc) for doc in corpus))
    pytester.makefile(".yaml", golden=GOLDEN)
    pytester.makeconftest(CONFTEST)
    pytester.makeini(
        "[pytest]\nretrieval_golden = golden.yaml\nretrieval_corpus = corpus.jsonl\n"
        "retrieval_ks = 3\nretrieval_short_rankings = off\nretrieval_thresholds =\n"
        + textwrap.indent(thresholds, "    ")
    )


def test_a_retriever_that_ignores_the_tenant_fails_the_zero_tolerance_gate_naming_each_leak(
    pytester: pytest.Pytester,
) -> None:
    _project(pytester, "forbidden@3 == 0\nrecall@3 >= 1.0\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == 1
    # acme-q: globex-refund (tenant globex) at rank 2; globex-q: acme-refund at rank 2.
    result.stdout.fnmatch_lines(
        [
            "forbidden@3 == 0 fails (zero tolerance) [[]stage=retriever split=overall[]]",
            "2 forbidden documents in the top 3 of 2 queries:",
            "  query acme-q (tenant acme): globex-refund at rank 2 [[]retriever[]]: tenant "
            "globex, the query's is acme",
            "  query globex-q (tenant globex): acme-refund at rank 2 [[]retriever[]]: tenant "
            "acme, the query's is globex",
        ]
    )
    # the plain metrics are perfect: the leak is invisible to them
    result.stdout.fnmatch_lines(["PASS recall@3 >= 1*"])
    assert "confidence interval" not in result.stdout.str().split("zero tolerance")[1][:400]


def test_the_tenant_filter_keeps_the_zero_tolerance_gate_green(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TENANT_FILTER", "on")
    _project(pytester, "forbidden@3 == 0\n")
    pytester.makepyfile(
        "from pytest_retrieval import assert_no_forbidden_at\n"
        "def test_no_leak():\n    assert assert_no_forbidden_at(3) is True\n"
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["PASS forbidden@3 == 0*"])


def test_assert_no_forbidden_at_raises_when_called_naming_the_leak(
    pytester: pytest.Pytester,
) -> None:
    _project(pytester, "recall@3 >= 0.5\n")
    pytester.makepyfile(
        "from pytest_retrieval import assert_no_forbidden_at\n"
        "def test_no_leak():\n    assert_no_forbidden_at(3, stage='retriever')\n"
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "E       AssertionError: forbidden@3 == 0 fails (zero tolerance)*",
            "E         query acme-q (tenant acme): globex-refund at rank 2 [[]retriever[]]*",
        ]
    )


def test_marking_refund_policy_2024_superseded_fails_a_stale_gate_where_the_plain_metrics_pass(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TENANT_FILTER", "on")
    # With the filter each ranking is [own refund, refund-policy-2024, faq]: recall@3 = 1,
    # mrr = 1, and stale@3 = 1/3 in both queries (refund-policy-2024 at rank 2).
    _project(pytester, "stale@3 <= 0.0\nrecall@3 >= 1.0\nmrr >= 1.0\nforbidden@3 == 0\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "stale@3 = 0.3333 > 0, expected <= 0 [[]stage=retriever split=overall[]]",
            "2 stale documents in the top 3 of 2 queries:",
            "  query acme-q (tenant acme): refund-policy-2024 at rank 2 [[]retriever[]]: "
            "superseded by acme-refund",
        ]
    )
    out = result.stdout.str()
    assert "PASS recall@3 >= 1" in out
    assert "PASS mrr >= 1" in out
    assert "PASS forbidden@3 == 0" in out
    # Without the mark the corpus says nothing about currency: the gate cannot be measured,
    # and says so naming the corpus, instead of passing on a 0 that means nothing.
    unmarked = [doc for doc in CORPUS if "superseded_by" not in doc]
    _project(pytester, "stale@3 <= 0.0\n", corpus=unmarked)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "*stale@3 cannot be measured [[]retriever[]]: *corpus.jsonl gives no document "
            "'superseded_by' or 'status' metadata*"
        ]
    )


def test_forbidden_and_stale_at_k_are_shares_of_the_top_k_counted_by_hand() -> None:
    run = {"q1": ["a", "x", "s", "b"], "q2": ["s", "s2"], "q3": []}
    qrels = {"q1": {"a": 1}, "q2": {}, "q3": {"c": 1}}
    evaluation = evaluate(
        run,
        qrels,
        ["forbidden@2", "forbidden@4", "stale@3"],
        forbidden={"q1": {"x", "b"}, "q2": {"s2"}},
        stale={"s", "s2"},
    )
    # forbidden@2: q1 x at rank 2 -> 1/2; q2 s2 at rank 2 -> 1/2; q3 nothing shown -> 0
    assert evaluation.columns["forbidden@2"] == [0.5, 0.5, 0.0]
    # forbidden@4: q1 x and b -> 2/4; q2 s2 -> 1/4 (K even when fewer came back); q3 0
    assert evaluation.columns["forbidden@4"] == [0.5, 0.25, 0.0]
    # stale@3: q1 s -> 1/3; q2 s, s2 -> 2/3; q3 0. q2 has no answer and still counts.
    assert evaluation.columns["stale@3"] == pytest.approx([1 / 3, 2 / 3, 0.0])
    assert evaluation.means["stale@3"] == pytest.approx(1 / 3)


def test_a_forbidden_id_judged_relevant_is_refused_naming_the_query(tmp_path: Path) -> None:
    path = tmp_path / "golden.yaml"
    path.write_text(
        "version: 1\nqueries:\n  - id: q1\n    text: refunds\n    relevant: [a]\n"
        "    forbidden: [b, a]\n",
        encoding="utf-8",
    )
    with pytest.raises(GoldenSetError) as caught:
        load_golden(path)
    assert (
        str(caught.value)
        .splitlines()[1]
        .endswith(
            "query 'q1', field 'forbidden': doc 'a' is both judged relevant (grade 1) and "
            "forbidden (a document the user must not see cannot be their answer: take it out "
            "of 'relevant' (or grade it 0), or out of 'forbidden')"
        )
    )
    with pytest.raises(GoldenSetError, match="both judged relevant"):
        Query("q1", "refunds", {"a": 2}, forbidden=["a"])
    # grade 0 (judged not relevant) and forbidden is consistent
    assert Query("q1", "refunds", {"a": 1, "b": 0}, forbidden=["b"]).forbidden == ("b",)


def test_forbidden_lists_read_from_csv_and_beir_and_written_back(tmp_path: Path) -> None:
    csv = tmp_path / "golden.csv"
    csv.write_text("id,text,relevant,forbidden\nq1,refunds,a,b;c\n", encoding="utf-8")
    assert load_golden(csv)["q1"].forbidden == ("b", "c")
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "queries.jsonl").write_text(
        json.dumps({"_id": "q1", "text": "refunds", "forbidden": ["c", "b"]}) + "\n",
        encoding="utf-8",
    )
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\ta\t1\n")
    golden = load_golden(beir, format="beir")
    assert golden["q1"].forbidden == ("b", "c")
    from pytest_retrieval import write_golden

    write_golden(golden, tmp_path / "out.jsonl")
    assert load_golden(tmp_path / "out.jsonl")["q1"].forbidden == ("b", "c")


def test_the_fingerprint_counts_forbidden_and_a_set_without_it_keeps_its_own() -> None:
    import hashlib

    from pytest_retrieval import GoldenSet

    plain = GoldenSet((Query("q1", "refunds", ["a"]),))
    # the documented serialisation, computed here: a set without forbidden lists is unchanged
    payload = json.dumps(
        [{"id": "q1", "judgments": {"a": 1}, "slices": [], "split": "tune", "text": "refunds"}],
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    assert plain.fingerprint == hashlib.sha256(payload.encode()).hexdigest()
    scoped = GoldenSet((Query("q1", "refunds", ["a"], forbidden=["b"]),))
    assert scoped.fingerprint != plain.fingerprint


def _corpus(tmp_path: Path, docs: list[dict[str, object]]) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(json.dumps(d) for d in docs) + "\n", encoding="utf-8")
    return path


def test_an_unknown_tenant_and_a_denied_relevant_document_are_refused_naming_the_query(
    tmp_path: Path,
) -> None:
    rules = read_access_rules(_corpus(tmp_path, CORPUS))
    typo = Query("q1", "refunds", ["acme-refund"], context={"tenant": "acmee"})
    with pytest.raises(GoldenSetError) as caught:
        build_access([typo], rules)
    assert caught.value.problems[0].query_id == "q1"
    assert caught.value.problems[0].message == (
        f"context.tenant 'acmee' is no tenant of {rules.source} (its documents name acme, globex)"
    )
    crossed = Query("q2", "refunds", ["globex-refund"], context={"tenant": "acme"})
    with pytest.raises(GoldenSetError) as caught:
        build_access([crossed], rules)
    assert caught.value.problems[0].query_id == "q2"
    assert "doc 'globex-refund' is judged relevant, but" in caught.value.problems[0].message
    assert "(tenant globex, the query's is acme)" in caught.value.problems[0].message


def test_the_groups_rule_forbids_unless_the_context_groups_intersect(tmp_path: Path) -> None:
    rules = read_access_rules(
        _corpus(tmp_path, [{"_id": "pay", "metadata": {"groups": ["hr", "legal"]}}, {"_id": "faq"}])
    )
    hr = Query("q1", "pay", ["faq"], context={"groups": ["hr"]})
    support = Query("q2", "pay", ["faq"], context={"groups": "support"})
    nobody = Query("q3", "pay", ["faq"])
    access = build_access([hr, support, nobody], rules)
    assert "pay" not in access.forbidden["q1"]
    assert access.forbidden["q2"].reason("pay") == "groups hr, legal, none of the query's"
    assert "pay" in access.forbidden["q3"]
    assert "faq" not in access.forbidden["q3"]


def test_bad_corpus_metadata_is_refused_naming_the_file_and_line(tmp_path: Path) -> None:
    path = _corpus(
        tmp_path,
        [{"_id": "a", "tenant": 3}, {"_id": "b", "superseded_by": "missing"}],
    )
    with pytest.raises(GoldenSetError) as caught:
        read_access_rules(path)
    assert [(p.line, p.message) for p in caught.value.problems] == [
        (1, "'tenant' must be a non-blank string, got 3")
    ]
    path = _corpus(tmp_path, [{"_id": "b", "superseded_by": "missing"}])
    with pytest.raises(GoldenSetError) as caught:
        read_access_rules(path)
    assert caught.value.problems[0].message == (
        "'b' is superseded by 'missing', which is not in the corpus"
    )


def test_thresholds_read_the_direction_of_the_metric_table() -> None:
    assert parse_threshold("stale@3 <= 0.0").op == "<="
    assert parse_threshold("forbidden@10 == 0").op == "=="
    with pytest.raises(InputError) as caught:
        parse_threshold("stale@3 >= 0.1")
    assert caught.value.problems[0].message == (
        "'stale@3 >= 0.1': stale@3 is lower-is-better (a share of the top 3 that must not be "
        "there), so stale@3 >= 0.1 gates the wrong way"
    )
    assert caught.value.problems[0].fix == "write stale@3 <= 0.1"
    with pytest.raises(InputError, match="== is the zero-tolerance gate"):
        parse_threshold("recall@10 == 0")
    with pytest.raises(InputError, match="== is the zero-tolerance gate, == 0"):
        parse_threshold("forbidden@10 == 0.5")


# Chunks of one document share its id before the '#': the retriever returns three chunks of the
# query's own page before another tenant's plans (two chunks) and FAQ.
CHUNK_CORPUS = [
    {"_id": "initech-vpn", "text": "Connect to the Initech VPN", "tenant": "initech"},
    {"_id": "acme-plans", "text": "Acme annual plans", "tenant": "acme"},
    {"_id": "acme-faq", "text": "Acme billing FAQ", "tenant": "acme"},
]

CHUNK_CONFTEST = """\
import pytest

RESULTS = ["initech-vpn#1", "initech-vpn#0", "initech-vpn#2", "acme-plans#0", "acme-plans#1",
           "acme-faq#0"]

@pytest.fixture(scope="session")
def retriever_under_test():
    def search(text, k):
        return RESULTS[:k]
    return search
"""


VPN_QUERY = (
    "version: 1\nqueries:\n  - id: vpn\n    text: How do I connect to the VPN?\n"
    "    relevant: [initech-vpn]\n    context: {tenant: initech}\n"
)


def _chunk_project(
    pytester: pytest.Pytester, unit: str, thresholds: str, golden: str = VPN_QUERY
) -> None:
    pytester.makefile(".jsonl", corpus="\n".join(json.dumps(doc) for doc in CHUNK_CORPUS))
    pytester.makefile(".yaml", golden=golden)
    pytester.makeconftest(CHUNK_CONFTEST)
    pytester.makeini(
        "[pytest]\nretrieval_golden = golden.yaml\nretrieval_corpus = corpus.jsonl\n"
        "retrieval_doc_id_separator = #\nretrieval_ks = 3,5\n"
        f"retrieval_cutoff_unit = {unit}\nretrieval_thresholds =\n"
        + textwrap.indent(thresholds, "    ")
    )


def test_under_cutoff_unit_results_forbidden_at_k_counts_the_first_k_results_as_recall_does(
    pytester: pytest.Pytester,
) -> None:
    # The run is asked for 5 results: initech-vpn#1, #0, #2, acme-plans#0, #1.
    # The first 3 results hold initech-vpn only: recall@3 = 1, forbidden@3 = 0/3 = 0 (the
    # document ranking initech-vpn, acme-plans would put acme-plans at rank 2 of 3: 1/3).
    # The first 5 results hold initech-vpn and acme-plans (first at result 4):
    # forbidden@5 = 1/5 = 0.2, the leak named at rank 4, the rank in the unit K counts.
    _chunk_project(pytester, "results", "forbidden@3 == 0\nrecall@3 >= 1.0\nforbidden@5 == 0\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--retrieval-json", "out.json")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "forbidden@5 == 0 fails (zero tolerance) [[]stage=retriever split=overall[]]",
            "1 forbidden document in the top 5 of 1 query:",
            "  query vpn (tenant initech): acme-plans at rank 4 [[]retriever[]]: tenant acme, "
            "the query's is initech",
        ]
    )
    result.stdout.fnmatch_lines(["PASS forbidden@3 == 0*", "PASS recall@3 >= 1*"])
    artifact = json.loads((pytester.path / "out.json").read_text("utf-8"))
    counted = {
        r["metric"]: (r["documents"], r["queries"], round(r["share"], 4))
        for r in artifact["leaks"]["results"]
        if r["metric"].startswith("forbidden")
    }
    assert counted == {"forbidden@3": (0, 0, 0.0), "forbidden@5": (1, 1, 0.2)}
    (query,) = artifact["queries"]
    assert [(leak["rank"], leak["doc"]) for leak in query["leaks"]] == [(4, "acme-plans")]


def test_under_cutoff_unit_documents_forbidden_at_k_counts_the_first_k_documents(
    pytester: pytest.Pytester,
) -> None:
    # K counts documents: the run asks deeper until 3 documents are filled (all 6 results):
    # initech-vpn, acme-plans, acme-faq; forbidden@3 = 2/3, named at document ranks 2 and 3.
    _chunk_project(pytester, "documents", "forbidden@3 == 0\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "2 forbidden documents in the top 3 of 1 query:",
            "  query vpn (tenant initech): acme-plans at rank 2 [[]retriever[]]: *",
            "  query vpn (tenant initech): acme-faq at rank 3 [[]retriever[]]: *",
        ]
    )


def test_under_cutoff_unit_results_the_worst_query_line_names_what_the_first_k_results_missed(
    pytester: pytest.Pytester,
) -> None:
    # No tenant: acme-plans is this query's answer. It is result 4 (initech-vpn#1, #0, #2 come
    # first), so recall@3 = 0 under results: the line names it missed, first relevant at
    # rank 4 (the document ranking initech-vpn, acme-plans would say rank 2 and miss nothing);
    # the top shown is the results as returned.
    golden = (
        "version: 1\nqueries:\n  - id: plans\n    text: Which annual plans are there?\n"
        "    relevant: [acme-plans]\n"
    )
    _chunk_project(pytester, "results", "recall@3 >= 1.0\n", golden)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "  plans 'Which annual plans are there?': recall@3 = 0.0000; missed acme-plans; "
            "first relevant at rank 4; returned initech-vpn, initech-vpn, initech-vpn",
        ]
    )
