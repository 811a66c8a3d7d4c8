"""forbidden@K and stale@K in every report, gate or no gate: the terminal's leak table, the JSON
artifact's ``leaks`` block and per-query leaks, the Markdown "Leaks" section and the HTML table;
and nothing of it in a run that cannot measure a leak.

The retriever returns fixed rankings (below), so every count is a hand count:

* q-acme (tenant acme, forbidden: [draft]):
  acme-refund, globex-refund (another tenant's), refund-policy-2024 (superseded), draft (listed),
  faq
* q-globex (tenant globex): globex-refund, faq, old-faq (retired), acme-refund (another
  tenant's), salary (groups hr; the query has none)
* q-faq (no context): faq, salary (groups hr), old-faq (retired), refund-policy-2024
  (superseded), acme-refund (not forbidden: a query without a tenant is not scoped by tenant)

At K=3: forbidden q-acme 1 (rank 2), q-globex 0, q-faq 1 (rank 2): 2 documents in 2 queries,
share (1/3 + 0 + 1/3) / 3 = 2/9 = 0.2222; stale 1 + 1 + 1 = 3 documents in 3 queries, share
(1/3 * 3) / 3 = 0.3333.
At K=5: forbidden 2 + 2 + 1 = 5 documents in 3 queries, share (2/5 + 2/5 + 1/5) / 3 = 0.3333;
stale 1 + 1 + 2 = 4 documents in 3 queries, share (1/5 + 1/5 + 2/5) / 3 = 4/15 = 0.2667.
"""

from __future__ import annotations

import json
import re

import pytest

pytest_plugins = ["pytester"]

CORPUS = [
    {"_id": "acme-refund", "text": "Acme refunds within 30 days", "tenant": "acme"},
    {"_id": "globex-refund", "text": "Globex refunds within 14 days", "tenant": "globex"},
    {"_id": "refund-policy-2024", "text": "Refunds in 60 days", "superseded_by": "acme-refund"},
    {"_id": "old-faq", "text": "Old questions", "metadata": {"status": "retired"}},
    {"_id": "draft", "text": "A draft"},
    {"_id": "faq", "text": "Frequently asked questions"},
    {"_id": "salary", "text": "Salary bands", "metadata": {"groups": ["hr"]}},
]

GOLDEN = """\
version: 1
queries:
  - id: q-acme
    text: acme refund
    relevant: [acme-refund]
    forbidden: [draft]
    context: {tenant: acme}
  - id: q-globex
    text: globex refund
    relevant: [globex-refund]
    context: {tenant: globex}
  - id: q-faq
    text: faq
    relevant: [faq]
"""

CONFTEST = """\
import pytest

RANKINGS = {
    "acme refund": ["acme-refund", "globex-refund", "refund-policy-2024", "draft", "faq"],
    "globex refund": ["globex-refund", "faq", "old-faq", "acme-refund", "salary"],
    "faq": ["faq", "salary", "old-faq", "refund-policy-2024", "acme-refund"],
    "secret refund": ["globex-refund", "faq", "old-faq", "acme-refund", "salary"],
}

@pytest.fixture(scope="session")
def retriever_under_test():
    def search(text, k, context):
        return RANKINGS[text][:k]
    return search
"""

INI = (
    "[pytest]\nretrieval_golden = golden.yaml\nretrieval_ks = 3,5\nretrieval_short_rankings = off\n"
)


def _project(pytester: pytest.Pytester, *, corpus: bool = True, golden: str = GOLDEN) -> None:
    if corpus:
        pytester.makefile(".jsonl", corpus="\n".join(json.dumps(doc) for doc in CORPUS))
    pytester.makefile(".yaml", golden=golden)
    pytester.makeconftest(CONFTEST)
    pytester.makeini(INI + ("retrieval_corpus = corpus.jsonl\n" if corpus else ""))
    pytester.makepyfile("def test_run(retrieval_run):\n    pass\n")


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)


def test_the_terminal_summary_shows_the_leak_table_without_any_gate(
    pytester: pytest.Pytester,
) -> None:
    _project(pytester)
    result = _run(pytester)
    result.assert_outcomes(passed=1)
    lines = result.stdout.lines
    start = lines.index(
        "leaks in the top K: documents counted (their share of the top-K positions)"
    )
    table = [re.sub(r"\s{2,}", " | ", line.strip()) for line in lines[start + 1 : start + 4]]
    assert table == [
        "leaks (n=3) | @3 | @5",
        "forbidden | 2 (0.2222) | 5 (0.3333)",
        "stale | 3 (0.3333) | 4 (0.2667)",
    ]


def test_the_artifact_holds_the_hand_counted_leaks_per_stage_and_per_query(
    pytester: pytest.Pytester,
) -> None:
    _project(pytester)
    result = _run(pytester, "--retrieval-json", "out.json")
    result.assert_outcomes(passed=1)
    artifact = json.loads((pytester.path / "out.json").read_text("utf-8"))
    block = artifact["leaks"]
    assert block["cutoffs"] == [3, 5]
    assert block["measured"] == ["forbidden", "stale"]
    assert block["unmeasured"] == {}
    rows = {(r["stage"], r["column"], r["metric"]): r for r in block["results"]}
    assert set(rows) == {
        ("retriever", "overall", m) for m in ("forbidden@3", "forbidden@5", "stale@3", "stale@5")
    }
    counted = {
        m: (r["documents"], r["queries"], round(r["share"], 4)) for (_, _, m), r in rows.items()
    }
    assert counted == {
        "forbidden@3": (2, 2, 0.2222),
        "forbidden@5": (5, 3, 0.3333),
        "stale@3": (3, 3, 0.3333),
        "stale@5": (4, 3, 0.2667),
    }
    leaks = {q["id"]: q["leaks"] for q in artifact["queries"]}

    def leak(metric: str, rank: int, doc: str, kind: str, reason: str) -> dict[str, object]:
        return {
            "stage": "retriever",
            "metric": metric,
            "rank": rank,
            "doc": doc,
            "kind": kind,
            "reason": reason,
            "cached": False,
        }

    assert leaks["q-acme"] == [
        leak("forbidden", 2, "globex-refund", "tenant", "tenant globex, the query's is acme"),
        leak("forbidden", 4, "draft", "listed", "listed in the golden set"),
        leak("stale", 3, "refund-policy-2024", "superseded", "superseded by acme-refund"),
    ]
    assert leaks["q-globex"] == [
        leak("forbidden", 4, "acme-refund", "tenant", "tenant acme, the query's is globex"),
        leak("forbidden", 5, "salary", "groups", "groups hr, none of the query's"),
        leak("stale", 3, "old-faq", "retired", "retired"),
    ]
    assert leaks["q-faq"] == [
        leak("forbidden", 2, "salary", "groups", "groups hr, none of the query's"),
        leak("stale", 3, "old-faq", "retired", "retired"),
        leak("stale", 4, "refund-policy-2024", "superseded", "superseded by acme-refund"),
    ]


def test_a_ranking_served_from_the_cache_is_marked_cached_in_the_artifact(
    pytester: pytest.Pytester,
) -> None:
    _project(pytester)
    _run(pytester, "--retrieval-cache", "use").assert_outcomes(passed=1)
    result = _run(pytester, "--retrieval-cache", "use", "--retrieval-json", "out.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["cache use: 3 of 3 queries served from the cache*"])
    artifact = json.loads((pytester.path / "out.json").read_text("utf-8"))
    flags = {leak["cached"] for q in artifact["queries"] for leak in q["leaks"]}
    assert flags == {True}


def test_the_markdown_report_has_a_leaks_section_worst_first(pytester: pytest.Pytester) -> None:
    _project(pytester)
    _run(pytester, "--retrieval-markdown", "report.md").assert_outcomes(passed=1)
    text = (pytester.path / "report.md").read_text("utf-8")
    section = text.split("#### Leaks", 1)[1].split("\n#### ", 1)[0]
    assert "| forbidden | 2 (0.2222) | 5 (0.3333) |" in section
    assert "| stale | 3 (0.3333) | 4 (0.2667) |" in section
    # Worst first: every query has 3 leaks in its top 5, so the earliest leak decides (q-acme
    # and q-faq at rank 2, q-globex at rank 3), then the id.
    order = [line.split("`")[1] for line in section.splitlines() if line.startswith("| `q-")]
    assert order == ["q-acme", "q-faq", "q-globex"]
    assert "`globex-refund` at rank 2 (forbidden: tenant globex, the query's is acme)" in section


def test_the_html_report_has_a_leak_table(pytester: pytest.Pytester) -> None:
    _project(pytester)
    _run(pytester, "--retrieval-html", "report.html").assert_outcomes(passed=1)
    page = (pytester.path / "report.html").read_text("utf-8")
    assert "<h2>Leaks</h2>" in page
    assert "2 (0.2222)" in page
    assert "4 (0.2667)" in page
    assert "tenant globex, the query&#x27;s is acme" in page or (
        "tenant globex, the query&#39;s is acme" in page
    )


def test_a_run_that_can_measure_only_stale_documents_shows_only_stale(
    pytester: pytest.Pytester,
) -> None:
    # No forbidden list and no tenant or groups in the corpus: forbidden@K is unmeasured.
    corpus = [{k: v for k, v in doc.items() if k != "tenant"} for doc in CORPUS]
    corpus[-1] = {"_id": "salary", "text": "Salary bands"}
    golden = GOLDEN.replace("    forbidden: [draft]\n", "")
    pytester.makefile(".jsonl", corpus="\n".join(json.dumps(doc) for doc in corpus))
    _project(pytester, corpus=False, golden=golden)
    pytester.makeini(INI + "retrieval_corpus = corpus.jsonl\n")
    result = _run(pytester, "--retrieval-json", "out.json")
    result.assert_outcomes(passed=1)
    assert not [line for line in result.stdout.lines if line.startswith("forbidden")]
    result.stdout.re_match_lines([r"^stale\s+3 \(0\.3333\)\s+4 \(0\.2667\)$"])
    block = json.loads((pytester.path / "out.json").read_text("utf-8"))["leaks"]
    assert block["measured"] == ["stale"]
    assert "no query lists forbidden documents" in block["unmeasured"]["forbidden"]


def test_a_project_without_leak_data_shows_no_leak_section_anywhere(
    pytester: pytest.Pytester,
) -> None:
    golden = GOLDEN.replace("    forbidden: [draft]\n", "")
    _project(pytester, corpus=False, golden=golden)
    result = _run(
        pytester,
        "--retrieval-json",
        "out.json",
        "--retrieval-markdown",
        "report.md",
        "--retrieval-html",
        "report.html",
    )
    result.assert_outcomes(passed=1)
    assert "leaks" not in result.stdout.str()
    artifact = json.loads((pytester.path / "out.json").read_text("utf-8"))
    assert "leaks" not in artifact
    assert all("leaks" not in q for q in artifact["queries"])
    assert "Leaks" not in (pytester.path / "report.md").read_text("utf-8")
    assert "Leaks" not in (pytester.path / "report.html").read_text("utf-8")


HELDOUT = """\
  - id: q-secret
    text: secret refund
    relevant: [globex-refund]
    context: {tenant: globex}
    split: heldout
"""


def test_held_out_leaks_are_counted_never_named(pytester: pytest.Pytester) -> None:
    # q-secret ranks as q-globex: at K=5, acme-refund (tenant) and salary (groups)
    # are forbidden, old-faq stale: 3 leaked documents, counted in the held-out column only.
    _project(pytester, golden=GOLDEN + HELDOUT)
    result = _run(
        pytester,
        "--retrieval-heldout",
        "--retrieval-json",
        "out.json",
        "--retrieval-markdown",
        "report.md",
    )
    result.assert_outcomes(passed=1)
    artifact = json.loads((pytester.path / "out.json").read_text("utf-8"))
    assert "q-secret" not in {q["id"] for q in artifact["queries"]}
    heldout = {
        r["metric"]: (r["documents"], r["queries"])
        for r in artifact["leaks"]["results"]
        if r["column"] == "heldout"
    }
    assert heldout == {
        "forbidden@3": (0, 0),
        "forbidden@5": (2, 1),
        "stale@3": (1, 1),
        "stale@5": (1, 1),
    }
    # the overall rows are the three visible queries' (as before)
    overall = [r for r in artifact["leaks"]["results"] if r["column"] == "overall"]
    assert [r["documents"] for r in overall] == [2, 5, 3, 4]
    markdown = (pytester.path / "report.md").read_text("utf-8")
    assert "_3 leaked documents in held-out queries, not named._" in markdown
    assert "q-secret" not in markdown
    # the terminal table is the overall column's
    result.stdout.re_match_lines([r"^forbidden\s+2 \(0\.2222\)\s+5 \(0\.3333\)$"])


def test_the_leak_artifact_validates_against_the_schema_and_renders_again_offline(
    pytester: pytest.Pytester,
) -> None:
    from importlib.resources import files

    import jsonschema

    _project(pytester)
    _run(pytester, "--retrieval-json", "out.json", "--retrieval-markdown", "run.md")
    artifact = json.loads((pytester.path / "out.json").read_text("utf-8"))
    schema = json.loads(files("pytest_retrieval").joinpath("artifact.schema.json").read_text())
    errors = [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(artifact)]
    assert errors == []
    offline = pytester.run("pytest-retrieval", "report", "out.json", "--markdown", "offline.md")
    assert offline.ret == 0
    leaks = (pytester.path / "offline.md").read_text("utf-8").split("#### Leaks")[1]
    assert leaks == (pytester.path / "run.md").read_text("utf-8").split("#### Leaks")[1]


def test_an_edited_leak_count_in_an_artifact_is_refused_naming_the_field(
    pytester: pytest.Pytester,
) -> None:
    _project(pytester)
    _run(pytester, "--retrieval-json", "out.json")
    path = pytester.path / "out.json"
    artifact = json.loads(path.read_text("utf-8"))
    artifact["leaks"]["results"][1]["documents"] = "five"
    path.write_text(json.dumps(artifact), "utf-8")
    result = pytester.run("pytest-retrieval", "report", "out.json", "--markdown", "-")
    assert result.ret == 2
    assert "leaks.results[1]" in result.stderr.str()
    assert "Traceback" not in result.stderr.str()


FRESHNESS_RERANKER = """

@pytest.fixture(scope="session")
def reranker_under_test():
    # A freshness rule: superseded and retired documents never reach the LLM.
    return lambda query, candidates: [
        d for d in candidates if d not in ("refund-policy-2024", "old-faq")
    ]
"""


def test_each_stage_has_its_leak_rows_and_a_freshness_reranker_shows_zero_stale(
    pytester: pytest.Pytester,
) -> None:
    # The reranker drops the stale documents, so the others move up. At K=3: q-acme
    # globex-refund (2) and draft (3), q-globex acme-refund (3), q-faq salary (2): 4 documents,
    # share (2/3 + 1/3 + 1/3) / 3 = 4/9 = 0.4444; at K=5 the same 5 as the retriever's,
    # share 0.3333. No stale document is left: 0 at both K.
    _project(pytester)
    pytester.makeconftest(CONFTEST + FRESHNESS_RERANKER)
    result = _run(pytester, "--retrieval-json", "out.json")
    result.assert_outcomes(passed=1)
    result.stdout.re_match_lines(
        [
            r"^leaks \(n=3\)\s+@3\s+@5$",
            r"^forbidden \[retriever\]\s+2 \(0\.2222\)\s+5 \(0\.3333\)$",
            r"^stale \[retriever\]\s+3 \(0\.3333\)\s+4 \(0\.2667\)$",
            r"^forbidden \[reranker\]\s+4 \(0\.4444\)\s+5 \(0\.3333\)$",
            r"^stale \[reranker\]\s+0 \(0\.0000\)\s+0 \(0\.0000\)$",
        ]
    )
    artifact = json.loads((pytester.path / "out.json").read_text("utf-8"))
    acme = next(q for q in artifact["queries"] if q["id"] == "q-acme")
    reranked = [
        (leak["rank"], leak["doc"]) for leak in acme["leaks"] if leak["stage"] == "reranker"
    ]
    assert reranked == [(2, "globex-refund"), (3, "draft")]


def test_the_compact_leak_table_drops_cutoffs_to_fit_a_narrow_terminal(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "40")  # pytest's narrowest (below 40 it reads 80)
    _project(pytester)
    pytester.makeini(INI.replace("3,5", "1,3,5") + "retrieval_corpus = corpus.jsonl\n")
    result = _run(pytester)
    result.assert_outcomes(passed=1)
    # Three cutoffs make "forbidden  0 (0.0000)  2 (0.2222)  5 (0.3333)" 46 wide: the @5
    # column goes, and it is said (no rank 1 is a leak: 0 at K=1).
    result.stdout.re_match_lines(
        [
            r"^leaks \(n=3\)\s+@1\s+@3$",
            r"^forbidden\s+0 \(0\.0000\)\s+2 \(0\.2222\)$",
            r"^\(1 more cutoffs not shown: -v shows every K\)$",
        ]
    )
    result = _run(pytester, "-v")
    result.stdout.re_match_lines([r"^forbidden\s+0 \(0\.0000\)\s+2 \(0\.2222\)\s+5 \(0\.3333\)$"])


def test_under_xdist_the_controller_reports_the_same_leaks(pytester: pytest.Pytester) -> None:
    _project(pytester)
    pytester.makepyfile(
        test_more="def test_a(retrieval_run):\n    pass\n\ndef test_b(retrieval_run):\n    pass\n"
    )
    result = _run(pytester, "-n", "2", "--retrieval-json", "out.json")
    result.assert_outcomes(passed=3)
    result.stdout.re_match_lines([r"^forbidden\s+2 \(0\.2222\)\s+5 \(0\.3333\)$"])
    artifact = json.loads((pytester.path / "out.json").read_text("utf-8"))
    documents = [r["documents"] for r in artifact["leaks"]["results"]]
    assert documents == [2, 5, 3, 4]
    assert sum(len(q["leaks"]) for q in artifact["queries"]) == 9
