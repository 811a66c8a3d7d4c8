"""JUnit XML: every gate item carries what it checked as ``<property>`` elements.

Threshold items: metric, op, threshold, value (and where: stage, split, slice). Regression items:
metric, budget, the baseline and current means, the delta, the one-sided p-value and the status.
The project is ``baseline_helpers``' 12 queries with the budget ``mrr 0.02``, checked under both
JUnit families (``xunit2`` is pytest's default).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from baseline_helpers import Project


@pytest.fixture
def project(pytester: pytest.Pytester) -> Project:
    project = Project(pytester).write()
    with (project.path / "pytest.ini").open("a", encoding="utf-8") as ini:
        ini.write("retrieval_thresholds = recall@3 >= 0.9\n")
    return project


def properties(junit: str, name: str) -> dict[str, str]:
    """The properties of the test case called ``name``."""
    root = ET.fromstring(junit)
    (case,) = [c for c in root.iter("testcase") if c.get("name") == name]
    return {p.get("name", ""): p.get("value", "") for p in case.iter("property")}


@pytest.mark.parametrize(
    "family",
    [
        "xunit1",
        "xunit2",
    ],
)
def test_gate_items_carry_metric_value_threshold_budget_and_p_value(
    project: Project, family: str
) -> None:
    project.update()
    # Eight of twelve queries now find their document second: MRR 1 -> 2/3, recall@3 stays 1.
    project.rank({f"{n:02d}": ["filler-a", f"doc-{n:02d}"] for n in range(1, 9)})
    result = project.run("--junitxml=junit.xml", "-o", f"junit_family={family}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    junit = (project.path / "junit.xml").read_text(encoding="utf-8")

    threshold = properties(junit, "recall_at_3_ge_0.9")
    assert threshold["metric"] == "recall@3"
    assert threshold["op"] == ">="
    assert float(threshold["threshold"]) == 0.9
    assert float(threshold["value"]) == 1.0

    regression = properties(junit, "mrr-budget_0.02")
    assert regression["metric"] == "mrr"
    assert regression["budget"] == "0.02"
    assert regression["status"] == "regression"
    assert float(regression["baseline_mean"]) == 1.0
    assert float(regression["current_mean"]) == pytest.approx(1 - 8 / 12 * 0.5, abs=1e-6)
    assert float(regression["delta"]) == pytest.approx(-8 / 12 * 0.5, abs=1e-6)
    # eight equal drops, four zeros: the exact sign-flip p-value is 1 / 2**8
    assert float(regression["p_value"]) == pytest.approx(1 / 256)
