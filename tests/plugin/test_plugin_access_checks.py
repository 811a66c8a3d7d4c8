"""The corpus's access rules refuse a golden set that would silently defeat them, in the run and
in ``pytest-retrieval golden validate --corpus`` alike (one home: ``golden.access.
access_problems``, and the corpus check of ``formats.corpus``).

A ``context.tenant`` that is not a string, or ``groups`` that are no list of names, would read as
"no tenant" / "no groups": the query unscoped, its leaks uncounted (a false green). A forbidden
id no corpus document has forbids nothing. Each is refused naming the golden file, the query,
what was given and the fix; validate says exactly what the run says.
"""

from __future__ import annotations

import json

import pytest

from pytest_retrieval.cli import EXIT_FAILED, main

pytest_plugins = ["pytester"]

CORPUS = [
    {"_id": "acme-invoices", "text": "Acme invoices", "tenant": "acme"},
    {"_id": "globex-invoices", "text": "Globex invoices", "tenant": "globex"},
    {"_id": "salary-bands", "text": "Salary bands", "groups": ["hr"]},
    {"_id": "faq", "text": "Frequently asked questions"},
]

# Ranks every document for every query: another tenant's invoices second (the leak the tenant
# rule must count), the hr page third.
CONFTEST = """\
import pytest

@pytest.fixture(scope="session")
def retriever_under_test():
    def search(text, k):
        return ["acme-invoices", "globex-invoices", "salary-bands", "faq"][:k]
    return search
"""


def _project(pytester: pytest.Pytester, golden: str, name: str = "golden.yaml") -> None:
    pytester.makefile(".jsonl", corpus="\n".join(json.dumps(doc) for doc in CORPUS))
    (pytester.path / name).write_text(golden, encoding="utf-8")
    pytester.makeconftest(CONFTEST)
    pytester.makeini(
        f"[pytest]\nretrieval_golden = {name}\nretrieval_corpus = corpus.jsonl\n"
        "retrieval_ks = 3\nretrieval_short_rankings = off\n"
        "retrieval_thresholds = forbidden@3 == 0\n"
    )


def _yaml(context: str, *, relevant: str = "faq", forbidden: str | None = None) -> str:
    lines = [
        "version: 1",
        "queries:",
        "  - id: q1",
        "    text: Where do I download invoices?",
        f"    relevant: [{relevant}]",
        f"    context: {context}",
    ]
    if forbidden is not None:
        lines.append(f"    forbidden: [{forbidden}]")
    return "\n".join(lines) + "\n"


def _refused(pytester: pytest.Pytester) -> list[str]:
    """The run's problem lines: it stops before running any test (exit 4)."""
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    return [line for line in result.stderr.lines + result.stdout.lines if "  - " in line]


TENANT = "context.tenant is {given}, not a string, and the tenant rule of {corpus} compares a "
TENANT += "tenant's id as text (its documents name acme, globex): the query would not be "
TENANT += "scoped by tenant at all ({fix})"


@pytest.mark.parametrize(
    ("context", "given", "fix"),
    [
        ("{tenant: 7}", "7", 'quote it: tenant: "7"'),
        (
            "{tenant: [acme, globex]}",
            '["acme", "globex"]',
            "a query is asked for one tenant: write one query per tenant, each with its own "
            "tenant: ID",
        ),
        ("{tenant: null}", "null", "drop the tenant key for a query scoped to no tenant"),
    ],
    ids=["number", "list", "null"],
)
def test_a_tenant_that_is_not_a_string_is_refused_naming_the_file_query_and_fix(
    pytester: pytest.Pytester, context: str, given: str, fix: str
) -> None:
    _project(pytester, _yaml(context))
    corpus = pytester.path / "corpus.jsonl"
    golden = pytester.path / "golden.yaml"
    expected = TENANT.format(given=given, corpus=corpus, fix=fix)
    assert _refused(pytester) == [f"  - {golden}: query 'q1', field 'context': {expected}"]


def test_one_contradicting_query_is_counted_in_the_singular(pytester: pytest.Pytester) -> None:
    _project(pytester, _yaml("{tenant: 7}"))
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    output = result.stderr.str() + result.stdout.str()
    assert f"1 query contradicts the access rules of {pytester.path / 'corpus.jsonl'}:" in output
    assert "query(ies)" not in output


@pytest.mark.parametrize(
    ("fmt", "write"),
    [
        ("csv", 'id,text,relevant,context\nq1,invoices,faq,"{""tenant"": 7}"\n'),
        (
            "jsonl",
            json.dumps(
                {"id": "q1", "text": "invoices", "relevant": ["faq"], "context": {"tenant": 7}}
            )
            + "\n",
        ),
    ],
)
def test_a_numeric_tenant_is_refused_in_the_csv_and_jsonl_formats_too(
    pytester: pytest.Pytester, fmt: str, write: str
) -> None:
    _project(pytester, write, name=f"golden.{fmt}")
    corpus = pytester.path / "corpus.jsonl"
    expected = TENANT.format(given="7", corpus=corpus, fix='quote it: tenant: "7"')
    assert _refused(pytester) == [
        f"  - {pytester.path / f'golden.{fmt}'}: query 'q1', field 'context': {expected}"
    ]


def test_a_beir_context_with_a_numeric_tenant_is_refused(pytester: pytest.Pytester) -> None:
    beir = pytester.path / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text(
        "\n".join(json.dumps(doc) for doc in CORPUS) + "\n", encoding="utf-8"
    )
    (beir / "queries.jsonl").write_text(
        json.dumps({"_id": "q1", "text": "invoices", "context": {"tenant": 7}}) + "\n",
        encoding="utf-8",
    )
    (beir / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\tfaq\t1\n", encoding="utf-8"
    )
    pytester.makeconftest(CONFTEST)
    pytester.makeini(
        "[pytest]\nretrieval_golden = beir\nretrieval_corpus = beir\nretrieval_ks = 3\n"
        "retrieval_short_rankings = off\n"
    )
    expected = TENANT.format(given="7", corpus=beir, fix='quote it: tenant: "7"')
    assert _refused(pytester) == [f"  - {beir}: query 'q1', field 'context': {expected}"]


@pytest.mark.parametrize(
    ("groups", "given", "fix"),
    [
        ("5", "5", 'groups: ["5"]'),
        ("[1, 2]", "[1, 2]", 'groups: ["1", "2"]'),
        ("{hr: true}", '{"hr": true}', 'groups: ["hr"]'),
    ],
    ids=["number", "numbers", "mapping"],
)
def test_groups_that_are_no_list_of_names_are_refused_not_read_as_no_groups(
    pytester: pytest.Pytester, groups: str, given: str, fix: str
) -> None:
    _project(pytester, _yaml(f"{{tenant: acme, groups: {groups}}}"))
    corpus = pytester.path / "corpus.jsonl"
    assert _refused(pytester) == [
        f"  - {pytester.path / 'golden.yaml'}: query 'q1', field 'context': context.groups is "
        f"{given}, and the groups rule of {corpus} reads a list of group names (or one name) "
        f"(write the names as strings: {fix})"
    ]


def test_validate_with_a_corpus_refuses_what_the_run_refuses_with_the_same_lines(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    golden = "\n".join(
        [
            "version: 1",
            "queries:",
            "  - {id: typo, text: invoices, relevant: [faq], context: {tenant: acmee}}",
            "  - {id: number, text: invoices, relevant: [faq], context: {tenant: 7}}",
            "  - {id: denied, text: pay, relevant: [salary-bands], context: {groups: [support]}}",
            "  - {id: fine, text: invoices, relevant: [acme-invoices], context: {tenant: acme}}",
        ]
    )
    _project(pytester, golden + "\n")
    run_lines = _refused(pytester)
    capsys.readouterr()
    code = main(
        [
            "golden",
            "validate",
            str(pytester.path / "golden.yaml"),
            "--corpus",
            str(pytester.path / "corpus.jsonl"),
        ]
    )
    err = capsys.readouterr().err
    assert code == EXIT_FAILED
    validate_lines = [line for line in err.splitlines() if "  - " in line]
    assert validate_lines == run_lines
    assert [line.split("query ")[1].split(",")[0] for line in run_lines] == [
        "'typo'",
        "'number'",
        "'denied'",
    ]
    assert err.splitlines()[0] == (
        f"3 queries contradict the access rules of {pytester.path / 'corpus.jsonl'}:"
    )


def test_a_forbidden_id_not_in_the_corpus_is_refused_with_the_closest_id(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(pytester, _yaml("{tenant: acme}", forbidden="globex-invoice"))
    golden = pytester.path / "golden.yaml"
    expected = (
        f"  - {golden}:3: query 'q1', field 'forbidden': 1 forbidden doc id(s) not in the corpus "
        f"({pytester.path / 'corpus.jsonl'}): 'globex-invoice' (did you mean 'globex-invoices'?) "
        "(a forbidden id no document has is never retrieved, so it forbids nothing: fix its "
        "spelling, or drop it if the document was removed)"
    )
    assert _refused(pytester) == [expected]
    capsys.readouterr()
    code = main(
        ["golden", "validate", str(golden), "--corpus", str(pytester.path / "corpus.jsonl")]
    )
    assert code == EXIT_FAILED
    assert [line for line in capsys.readouterr().err.splitlines() if "  - " in line] == [expected]
