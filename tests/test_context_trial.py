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
        f"ERROR: {golden_path}: golden set has 2 problem(s):",
        f"  - {golden_path}:6:29: query 'acme-q', field 'context': context.locale: YAML reads "
        "no as the boolean false, not the text 'no' (quote it ('no') if it is the text, or "
        "write false)",
        f"  - {golden_path}:12:27: query 'globex-q', field 'context': context.flags[2]: YAML "
        "reads On as the boolean true, not the text 'On' (quote it ('On') if it is the text, "
        "or write true)",
    ]
    assert retrieval_project.calls() == []
