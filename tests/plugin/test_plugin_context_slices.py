"""Slices by context value as a user sees them: ``slice=tenant:acme`` selects the queries whose
context's tenant is acme, ``slice=tenant:*`` is one gate per tenant, in declared gates, budgets
against a baseline and the ``assert_*`` helpers; a key or value no query has is refused naming
the ones present.

The golden set and the retriever below are scored by hand in the comments.
"""

from __future__ import annotations

import pytest
from plugin_helpers import RetrievalProject, esc

pytest_plugins = ["pytester"]

# a1 and g1 are ranked first (recall@1 = 1), a2's answer is second (recall@1 = 0), n1 has no
# context (recall@1 = 1). By context value:
#   tenant:acme     a1, a2   (1 + 0) / 2 = 0.5
#   tenant:globex   g1       1.0
#   groups:support  a1, a2   0.5    (a list holding "support")
#   groups:hr       a1, g1   1.0    (a1's list holds it; g1's groups is the one string "hr")
#   priority:1      a1       1.0    (the number 1, by its JSON spelling)
GOLDEN = """\
version: 1
queries:
  - id: a1
    text: acme one
    relevant: [d1]
    context: {tenant: acme, groups: [support, hr], priority: 1}
  - id: a2
    text: acme two
    relevant: [d2]
    context: {tenant: acme, groups: [support]}
  - id: g1
    text: globex one
    relevant: [d3]
    context: {tenant: globex, groups: hr}
  - id: n1
    text: no context
    relevant: [d4]
"""

CONFTEST = """\
import pytest

RANKINGS = {
    "acme one": ["d1", "x"],
    "acme two": ["x", "d2"],
    "globex one": ["d3", "x"],
    "no context": ["d4", "x"],
}

@pytest.fixture(scope="session")
def retriever_under_test():
    def search(text, k, context):
        return RANKINGS[text][:k]
    return search
"""


def _project(pytester: pytest.Pytester, thresholds: str = "", tests: str | None = None):
    ini = {"retrieval_thresholds": thresholds} if thresholds else {}
    return RetrievalProject(pytester).write(
        golden=GOLDEN, conftest=CONFTEST, ini=ini, tests=tests, ks="1"
    )


def test_slice_tenant_star_is_one_gate_per_tenant_scored_on_that_tenants_queries(
    pytester: pytest.Pytester,
) -> None:
    project = _project(pytester, "recall@1 >= 0.75 slice=tenant:*\n")
    result = project.run("-v")
    result.assert_outcomes(passed=1, failed=1)
    # the item names stay -k words: ':' becomes '_'
    result.stdout.fnmatch_lines(
        [
            "pytest.ini::recall_at_1_ge_0.75-slice_tenant_acme FAILED*",
            "pytest.ini::recall_at_1_ge_0.75-slice_tenant_globex PASSED*",
        ]
    )
    result.stdout.fnmatch_lines(
        esc(
            [
                # (1 + 0) / 2 over a1 and a2; the worst query is a2
                "recall@1 = 0.5000 < 0.75, expected >= 0.75 [stage=retriever split=overall "
                "slice=tenant:acme]",
                "queries scored: 2, skipped (no relevant document): 0",
                "*a2 'acme two': recall@1 = 0.0000*",
            ]
        )
    )
    result.stdout.fnmatch_lines(
        esc(["PASS recall@1 >= 0.75: 1.0000 * [stage=retriever slice=tenant:globex] (n=1)*"])
    )
    selected = project.run("-k", "slice_tenant_globex")
    selected.assert_outcomes(passed=1, deselected=1)


def test_the_helpers_take_a_context_slice_a_list_by_membership_a_number_by_its_json_spelling(
    pytester: pytest.Pytester,
) -> None:
    project = _project(
        pytester,
        tests="""
        from pytest_retrieval import assert_recall_at, recall_at

        def test_by_context():
            support = recall_at(1, slice="groups:support")
            assert (support.value, support.n) == (0.5, 2)   # a1 1, a2 0
            hr = recall_at(1, slice="groups:hr")
            assert (hr.value, hr.n) == (1.0, 2)             # a1 (a list), g1 (one string)
            priority = recall_at(1, slice="priority:1")
            assert (priority.value, priority.n) == (1.0, 1)  # a1 only
            assert_recall_at(1, slice="tenant:globex") >= 1.0
            assert_recall_at(1, slice="tenant:acme") >= 0.5
        """,
    )
    result = project.run()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        esc(["PASS recall@1 >= 0.5: 0.5000 * [stage=retriever slice=tenant:acme] (n=2)*"])
    )


@pytest.mark.parametrize(
    ("line", "said"),
    [
        (
            "recall@1 >= 0.5 slice=tenat:acme",
            "slice 'tenat:acme': no query's context has the key 'tenat' (the contexts' keys "
            "are groups, priority, tenant)",
        ),
        (
            "recall@1 >= 0.5 slice=tenant:acmee",
            "slice 'tenant:acmee': no query's context.tenant is 'acmee' (its values are acme, "
            "globex)",
        ),
        (
            "recall@1 >= 0.5 slice=tenant:",
            "slice 'tenant:' names no context key or no value (write slice=KEY:VALUE *",
        ),
    ],
    ids=["unknown-key", "unknown-value", "no-value"],
)
def test_a_context_slice_that_selects_nothing_is_a_usage_error_naming_what_is_there(
    pytester: pytest.Pytester, line: str, said: str
) -> None:
    result = _project(pytester, line + "\n").run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"  - retrieval_thresholds: '{line}': {said}"])


def test_a_helper_given_an_unknown_context_key_or_a_star_says_what_to_write(
    pytester: pytest.Pytester,
) -> None:
    project = _project(
        pytester,
        tests="""
        from pytest_retrieval import assert_recall_at

        def test_typo():
            assert_recall_at(1, slice="tenat:acme") >= 0.5

        def test_star():
            assert_recall_at(1, slice="tenant:*") >= 0.5
        """,
    )
    result = project.run()
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "E       *GateUsageError: slice 'tenat:acme': no query's context has the key "
            "'tenat'; the contexts' keys are groups, priority, tenant",
            "E       *GateUsageError: slice 'tenant:*' is one line per value in a declared "
            "gate; in a test, name one value *golden_set.context_values(KEY)",
        ]
    )


def _tenants_golden() -> str:
    lines = ["version: 1", "queries:"]
    for tenant in ("acme", "globex"):
        for i in range(6):
            lines += [
                f"  - id: {tenant}-{i}",
                f"    text: {tenant} question {i}",
                f"    relevant: [{tenant}-doc-{i}]",
                f"    context: {{tenant: {tenant}}}",
            ]
    return "\n".join(lines) + "\n"


TENANT_CONFTEST = """\
import os
import pytest

@pytest.fixture(scope="session")
def retriever_under_test():
    def search(text, k, tenant):
        doc = text.replace(" question ", "-doc-")
        if tenant == "acme" and os.environ.get("BROKEN_FOR_ACME"):
            return ["other", doc][:k]
        return [doc, "other"][:k]
    return search
"""


def test_a_context_slice_budget_pairs_each_tenants_queries_with_the_baseline(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = RetrievalProject(pytester).write(
        golden=_tenants_golden(),
        conftest=TENANT_CONFTEST,
        ini={
            "retrieval_baseline": "baseline.json",
            "retrieval_regression": "recall@1 0 slice=tenant:*",
        },
        ks="1",
    )
    project.run("--retrieval-update-baseline").assert_outcomes(skipped=2)
    monkeypatch.setenv("BROKEN_FOR_ACME", "1")
    result = project.run_subprocess("-v")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "pytest.ini::recall_at_1-budget_0-slice_tenant_acme FAILED*",
            "pytest.ini::recall_at_1-budget_0-slice_tenant_globex PASSED*",
        ]
    )
    # acme's 6 queries all fell from recall@1 1 to 0: paired with their baseline values, a
    # sign-flip p of 1/2^6 = 0.015625 (maxT over the two checks leaves it: the globex one has
    # no change); globex's 6 did not move.
    result.stdout.fnmatch_lines(
        esc(
            [
                "FAIL recall@1 budget 0.0000 [stage=retriever slice=tenant:acme]: 1.0000 → "
                "0.0000 (Δ -1.0000, *p = 0.0156 adjusted*n = 6*",
            ]
        )
    )
