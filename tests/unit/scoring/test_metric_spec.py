"""MetricSpec: one spelling per metric, aliases, and errors that suggest the fix."""

from __future__ import annotations

import pytest
from paths import ROOT

from pytest_retrieval.errors import InputError
from pytest_retrieval.scoring.metrics import MetricSpec

CANONICAL = [
    "recall@50",
    "precision@5",
    "hit_rate@5",
    "ndcg@10",
    "ndcg",
    "map@100",
    "map",
    "mrr",
    "mrr@10",
    "r_precision",
]


@pytest.mark.parametrize("text", CANONICAL)
def test_the_canonical_spelling_round_trips(text: str) -> None:
    assert str(MetricSpec.parse(text)) == text
    spec = MetricSpec.parse(text)
    assert MetricSpec.parse(str(spec)) == spec


@pytest.mark.parametrize(
    ("alias", "canonical"),
    [
        ("P@5", "precision@5"),
        ("nDCG@10", "ndcg@10"),
        ("R@50", "recall@50"),
        ("success@5", "hit_rate@5"),
        ("AP", "map"),
        ("AP@100", "map@100"),
        ("RR", "mrr"),
        ("RR@10", "mrr@10"),
        ("Rprec", "r_precision"),
        ("MAP@100", "map@100"),
        ("Recall@50", "recall@50"),
        ("P_5", "precision@5"),
        ("recall_100", "recall@100"),
        ("ndcg_cut_10", "ndcg@10"),
        ("map_cut_100", "map@100"),
        ("success_10", "hit_rate@10"),
        ("recip_rank", "mrr"),
        (" ndcg@10 ", "ndcg@10"),
    ],
)
def test_aliases_parse_to_the_canonical_spelling(alias: str, canonical: str) -> None:
    assert str(MetricSpec.parse(alias)) == canonical


@pytest.mark.parametrize(
    ("text", "suggestion"),
    [("recal@5", "recall@5"), ("ndgc@10", "ndcg@10"), ("precison@3", "precision@3")],
)
def test_a_misspelled_metric_suggests_the_nearest_valid_spelling(
    text: str, suggestion: str
) -> None:
    with pytest.raises(InputError) as info:
        MetricSpec.parse(text)
    assert f"did you mean {suggestion!r}" in str(info.value)
    assert repr(text) in str(info.value)


@pytest.mark.parametrize("text", ["recall@0", "recall@-1", "recall@ten", "ndcg@", "map@1.5"])
def test_a_bad_cutoff_is_named_in_the_error(text: str) -> None:
    with pytest.raises(InputError, match="is not a positive integer"):
        MetricSpec.parse(text)


def test_recall_without_a_cutoff_asks_for_one() -> None:
    with pytest.raises(InputError, match=r"recall needs a cutoff.*recall@10"):
        MetricSpec.parse("recall")


def test_r_precision_refuses_a_cutoff() -> None:
    with pytest.raises(InputError, match="takes no cutoff"):
        MetricSpec.parse("r_precision@5")


def test_an_unknown_name_lists_the_valid_metrics() -> None:
    with pytest.raises(InputError, match="valid metrics: recall@K"):
        MetricSpec.parse("bleu@4")


def test_specs_sort_by_name_then_cutoff() -> None:
    specs = [MetricSpec.parse(t) for t in ["mrr", "ndcg@10", "recall@50", "recall@5", "map"]]
    ordered = [str(s) for s in sorted(specs, key=lambda s: s.sort_key)]
    assert ordered == ["recall@5", "recall@50", "ndcg@10", "map", "mrr"]


def test_constructing_a_spec_directly_validates_it() -> None:
    with pytest.raises(ValueError, match="needs a cutoff"):
        MetricSpec("precision")
    with pytest.raises(ValueError, match="unknown metric name"):
        MetricSpec("bleu", 4)


# --- the metric table: every spelling, rule and message derives from it ---------------------


from pytest_retrieval.gates import gate as gates  # noqa: E402
from pytest_retrieval.gates.declared import parse_budget, parse_threshold  # noqa: E402
from pytest_retrieval.scoring.metrics import METRICS, Metric  # noqa: E402
from pytest_retrieval.settings.options import DEFAULT_METRICS  # noqa: E402
from pytest_retrieval.settings.resolve import Settings  # noqa: E402
from pytest_retrieval.settings.values import InvalidValue, parse_metrics  # noqa: E402

METRICS_PAGE = (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")


def _written(alias: str, metric: Metric) -> str:
    """``alias`` as a user writes it: with a cutoff when the metric takes one."""
    return f"{alias}@7" if metric.takes_cutoff else alias


@pytest.mark.parametrize("metric", METRICS, ids=lambda m: m.name)
def test_every_alias_of_the_table_resolves_to_its_metric_in_every_grammar(metric: Metric) -> None:
    # The parser, a declared gate line and a budget line (declared's grammar) all read the
    # table's names: a second list anywhere would miss an alias added to the table.
    for alias in (metric.name, *metric.aliases):
        for text in (_written(alias, metric), _written(alias.upper(), metric)):
            assert MetricSpec.parse(text).name == metric.name, text
            op = "<=" if metric.lower_is_better else ">="  # the way the table's direction gates
            assert parse_threshold(f"{text} {op} 0.5").spec.name == metric.name, text
            if not metric.lower_is_better:  # a budget on a leak metric is refused (for now)
                assert parse_budget(f"{text} 0.02").spec.name == metric.name, text
    if metric.trec is not None:
        # trec_eval's underscore spelling of a cutoff: P_5, ndcg_cut_10
        assert metric.trec in metric.aliases or metric.trec == metric.name
        assert MetricSpec.parse(f"{metric.trec.upper()}_7") == MetricSpec(metric.name, 7)


def test_no_alias_names_two_metrics() -> None:
    names = [alias for m in METRICS for alias in (m.name, *m.aliases)]
    assert sorted(a for a in set(names) if names.count(a) > 1) == []
    assert all(alias == alias.lower() for alias in names)


@pytest.mark.parametrize("metric", METRICS, ids=lambda m: m.name)
def test_the_cutoff_rule_of_the_table_is_the_one_parsing_and_construction_apply(
    metric: Metric,
) -> None:
    for make in (lambda: MetricSpec(metric.name), lambda: MetricSpec.parse(metric.name)):
        if metric.needs_cutoff:
            with pytest.raises(ValueError, match="needs a cutoff"):
                make()
        else:
            assert make().k is None
    for make in (lambda: MetricSpec(metric.name, 5), lambda: MetricSpec.parse(f"{metric.name}@5")):
        if metric.takes_cutoff:
            assert make().k == 5
        else:
            with pytest.raises(ValueError, match="takes no cutoff"):
                make()


def test_the_valid_metrics_text_lists_every_spelling_of_the_table_in_its_order() -> None:
    with pytest.raises(InputError) as info:
        MetricSpec.parse("bleu@4")
    text = str(info.value)
    listed = text.split("valid metrics: ", 1)[1].rstrip(")").split(", ")
    # ndcg without a cutoff (the whole ranking) is valid and was once left out of this list
    assert listed == [spelling for m in METRICS for spelling in m.spellings]
    assert "ndcg" in listed


def test_the_metrics_setting_names_every_metric_of_the_table_when_it_refuses_one() -> None:
    with pytest.raises(InvalidValue) as info:
        parse_metrics("recal")
    known = str(info.value).split("(known: ", 1)[1]
    for metric in METRICS:
        assert f"{metric.name}, " in known or f"{metric.name}," in known, metric.name


def test_the_metrics_page_has_one_row_per_metric_of_the_table_with_its_spellings() -> None:
    import re

    table = METRICS_PAGE.split("| metric | spelling | definition |", 1)[1].split("\n\n", 1)[0]
    rows = re.findall(r"^\| [^|]+ \| ((?:`[^`]+`(?:, )?)+) \|", table, flags=re.M)
    documented = sorted(sorted(re.findall(r"`([^`]+)`", cell)) for cell in rows)
    assert documented == sorted(sorted(m.spellings) for m in METRICS)


def test_the_summary_table_defaults_to_the_metrics_the_table_marks() -> None:
    assert tuple(m.name for m in METRICS if m.summary) == DEFAULT_METRICS
    assert Settings().metrics == DEFAULT_METRICS
    assert DEFAULT_METRICS == ("recall", "precision", "hit_rate", "ndcg", "map", "mrr")


def test_every_gate_helper_is_a_metric_of_the_table_with_its_cutoff_rule() -> None:
    import inspect

    helpers = {
        name: fn for name, fn in vars(gates).items() if name.startswith("assert_") and callable(fn)
    }
    assert helpers, "no assert_* helpers found"
    by_name = {m.name: m for m in METRICS}
    for name, fn in helpers.items():
        base = name.removeprefix("assert_").removeprefix("no_")  # assert_no_forbidden_at
        at = base.endswith("_at")
        metric = by_name[base.removesuffix("_at") if at else base]
        takes_k = "k" in inspect.signature(fn).parameters
        assert takes_k == at, name
        assert metric.takes_cutoff if at else not metric.needs_cutoff, name


@pytest.mark.parametrize(
    ("spec", "helper"),
    [
        (MetricSpec("recall", 5), "assert_recall_at(...)"),
        (MetricSpec("mrr"), "assert_mrr_at(...)"),
        # a metric without a cutoff has no _at helper: assert_abstain_rate_at does not exist
        (MetricSpec("abstain_rate"), "assert_abstain_rate(...)"),
        (MetricSpec("answer_rate"), "assert_answer_rate(...)"),
    ],
)
def test_messages_name_the_helper_that_exists_for_the_metric(spec: MetricSpec, helper: str) -> None:
    assert gates.helper_call(spec) == helper
    assert hasattr(gates, helper.removesuffix("(...)"))


def test_the_metrics_setting_help_names_every_metric_of_the_table() -> None:
    from pytest_retrieval.settings.options import OPTIONS

    help_text = next(o.help for o in OPTIONS if o.name == "metrics")
    for metric in METRICS:
        assert metric.name in help_text, metric.name


@pytest.mark.parametrize("metric", METRICS, ids=lambda m: m.name)
def test_every_metric_of_the_table_is_scored_by_batch_evaluation(metric: Metric) -> None:
    from pytest_retrieval.scoring.evaluate import evaluate

    spec = MetricSpec(metric.name, 2 if metric.needs_cutoff else None)
    # q1: relevant a at rank 1 of [a, b] (b judged 0, score 0.9 above the 0.5 floor); q2 no answer
    run = {"q1": ["a", "b"], "q2": ["c"]}
    qrels = {"q1": {"a": 1, "b": 0}, "q2": {}}
    scores = {"q1": [0.9, 0.1], "q2": [0.2]}
    evaluation = evaluate(run, qrels, [spec], scores=scores, score_floor=0.5)
    values = evaluation.columns[str(spec)]
    assert len(values) == 2
    # hand-computed: every relevance metric of q1 is 1.0 (a at rank 1 is all there is) but
    # precision@2 = 1/2; distinct@2 = 1.0; judged@2 = 1.0; q2 has no relevant document
    expected = {
        "recall": 1.0,
        "precision": 0.5,
        "hit_rate": 1.0,
        "ndcg": 1.0,
        "map": 1.0,
        "mrr": 1.0,
        "r_precision": 1.0,
        "distinct": 1.0,
        "abstain_rate": None,  # q1 is answerable: abstain_rate is defined on q2 only
        "answer_rate": 1.0,  # q1 answered (0.9 >= 0.5)
        "judged": 1.0,
        # no forbidden= or stale= documents given: unmeasured, never a silent 0
        "forbidden": None,
        "stale": None,
    }
    assert values[0] == expected[metric.name]
