"""The reports at scale write the same bytes as before, with less work: the HTML query table a
row at a time (the bytes the escaping builder makes), the relevant ranks read without building
a query's snapshot values, snapshot values rounded once per distinct value, the short-ranking
check found once per run, and the artifact writer's text exactly ``json.dumps``'s."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from report_helpers import hostile_artifact, load

from pytest_retrieval.files import LazyList, LazyMapping, write_json
from pytest_retrieval.golden.model import GoldenSet, Query
from pytest_retrieval.regression import snapshot as snapshots
from pytest_retrieval.regression.snapshot import DECIMALS, QuerySnapshot, Snapshot
from pytest_retrieval.report import html_tables, phrases, view
from pytest_retrieval.report.markup import Markup, el, escape
from pytest_retrieval.run import shortrankings
from pytest_retrieval.run.retriever import RETRIEVER_STAGE, QueryOutcome
from pytest_retrieval.session import findings
from pytest_retrieval.session.session import RetrievalSession
from pytest_retrieval.settings.resolve import Settings

# --- the query table -------------------------------------------------------------------------


def _td(text: object, *, num: bool = False, sort: object = None, cls: str = "") -> Markup:
    classes = " ".join(c for c in ("num" if num else "", cls) if c)
    return el(
        "td",
        {"class": classes or None, "data-sort": None if sort is None else str(sort)},
        text,
    )


def _reference_rows(artifact: Mapping[str, Any], baseline: Mapping[str, Any] | None) -> str:
    """The query table's rows as the escaping builder made them before (one ``el`` tree per
    row: the 0.2.x code, kept here as the oracle)."""
    stages = view.stage_list(artifact)
    final = view.default_stage(artifact)
    metrics = html_tables._query_metrics(artifact)
    body = []
    for row in artifact.get("queries") or ():
        qid = str(row.get("id"))
        cells = [
            _td(el("code", None, qid)),
            _td(view.row_text(row)),
            _td(str(row.get("split") or "")),
            _td(", ".join(str(s) for s in row.get("slices") or ())),
        ]
        for stage in stages:
            rank, text = view.first_relevant_rank(artifact, row, stage)
            cells.append(_td(text, num=True, sort="" if rank is None else rank))
        values = (row.get("metrics") or {}).get(final) or {}
        for metric in metrics:
            value = values.get(metric)
            cells.append(_td(phrases.fmt(value), num=True, sort="" if value is None else value))
        missed = view.missed_relevant(artifact, qid, final, baseline) if final else []
        missed_cell: list[Markup] = []
        for doc in missed:
            if missed_cell:
                missed_cell.append(escape(", "))
            if doc.lost:
                missed_cell.append(
                    el(
                        "span",
                        {"class": "lost", "title": f"the baseline ranked it {doc.baseline_rank}"},
                        el("code", None, doc.doc),
                        f" (lost; baseline #{doc.baseline_rank})",
                    )
                )
            else:
                missed_cell.append(el("code", None, doc.doc))
        cells.append(_td(missed_cell or "", sort=len(missed)))
        returned_cell: list[Markup] = []
        for returned_id in view.top_returned(row, final):
            if returned_cell:
                returned_cell.append(escape(", "))
            returned_cell.append(el("code", None, returned_id))
        cells.append(_td(returned_cell or "—"))
        latency = [v for v in (row.get("latency_ms") or {}).values() if isinstance(v, (int, float))]
        total = sum(latency) if latency else None
        cells.append(
            _td(
                "—" if total is None else f"{total:.1f}",
                num=True,
                sort="" if total is None else total,
            )
        )
        error = row.get("error")
        error_text = (
            f"[{error.get('stage')}] {error.get('type')}: {error.get('message')}" if error else ""
        )
        cells.append(_td(error_text, cls="err" if error else ""))
        body.append(
            el(
                "tr",
                {
                    "data-id": qid,
                    "class": "fail" if error else None,
                    "data-lost": "1" if any(d.lost for d in missed) else None,
                },
                cells,
            )
        )
    return "".join(body)


def _awkward_artifact() -> dict[str, Any]:
    """The hostile failing run (markup in ids, texts, slices, documents and messages), plus
    a row with every value missing, unicode and quotes, a lost document and a NaN metric."""
    artifact = hostile_artifact()
    rows = artifact["queries"]
    rows.append(
        {"id": 'q "ü" <&> \u2028', "text": None, "split": None, "slices": [], "metrics": {}}
    )
    rows[0]["metrics"] = {
        stage: {**values, **{name: math.nan for name in list(values)[:1]}}
        for stage, values in (rows[0].get("metrics") or {}).items()
    }
    rows[0]["latency_ms"] = {"retriever": 0.05, "reranker": "slow"}
    return artifact


@pytest.mark.parametrize("with_baseline", [True, False])
def test_the_query_table_rows_are_the_bytes_the_escaping_builder_makes(
    with_baseline: bool,
) -> None:
    artifact = _awkward_artifact()
    baseline = load("report-fail-baseline.json") if with_baseline else None
    section = html_tables.queries_section(artifact, baseline)
    expected = _reference_rows(artifact, baseline)
    assert expected.count("<tr ") == len(artifact["queries"])
    assert f"<tbody>{expected}</tbody>" in section
    if with_baseline:  # the lost-document span is among the rows compared
        assert 'class="lost"' in expected


# --- relevant ranks from the artifact being written ------------------------------------------


def _query_snapshot(ranks: dict[str, dict[str, int | None]]) -> QuerySnapshot:
    return QuerySnapshot(
        split="test",
        slices=(),
        labels="x",
        metrics={stage: {"recall@2": 0.5} for stage in ranks},
        relevant_ranks=ranks,
        top={stage: ("a", "b") for stage in ranks},
    )


def test_the_reports_read_relevant_ranks_without_building_a_query_s_snapshot_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    queries = {
        "q1": _query_snapshot({"retriever": {"a": 1, "z": None}}),
        "q2": _query_snapshot({"retriever": {"b": 7}}),
    }
    snapshot = Snapshot("f", {"ks": [2]}, ("retriever",), ("recall@2",), queries)
    eager = {"settings": {"ks": [2]}, "stages": ["retriever"], "snapshot": snapshot.to_dict()}
    built: list[str] = []
    to_dict = QuerySnapshot.to_dict

    def counted(self: QuerySnapshot) -> dict[str, Any]:
        built.append(self.labels)
        return to_dict(self)

    monkeypatch.setattr(QuerySnapshot, "to_dict", counted)
    lazy = {**eager, "snapshot": snapshot.to_dict(lazy=True)}
    for qid in ("q1", "q2", "absent"):
        row = {"id": qid, "metrics": {}}
        assert view.first_relevant_rank(lazy, row, "retriever") == view.first_relevant_rank(
            eager, row, "retriever"
        )
        assert view.missed_relevant(lazy, qid, "retriever") == view.missed_relevant(
            eager, qid, "retriever"
        )
    # q1: rank 1 found, z missed; q2: b at 7, outside the top 2; absent: no snapshot row.
    assert view.first_relevant_rank(lazy, {"id": "q2"}, "retriever") == (7, "7")
    assert [m.doc for m in view.missed_relevant(lazy, "q1", "retriever")] == ["z"]
    assert built == []  # no query's values (rounded metrics, rankings) were built
    queries_lazy = lazy["snapshot"]["queries"]
    assert "q1" in queries_lazy
    assert "absent" not in queries_lazy
    assert built == []
    assert queries_lazy["q1"] is queries_lazy["q1"]  # read twice in a row, built once
    assert built == ["x"]


def test_a_lazy_mapping_member_is_the_built_value_s_member() -> None:
    by_id = LazyMapping(["a", "b"], lambda key: {"n": key * 2, "m": 1})
    assert by_id.member("a", "n") == "aa"
    assert by_id.member("a", "missing") is None
    assert by_id.member("c", "n") is None
    fast = LazyMapping(["a"], lambda key: {"n": key * 2}, {"n": lambda key: key * 2})
    assert fast.member("a", "n") == fast["a"]["n"]


# --- snapshot values rounded once ------------------------------------------------------------


def test_snapshot_values_are_rounded_exactly_as_round_rounds_each_one() -> None:
    awkward: list[Any] = [
        0.1,
        1e-07,
        1 / 3,
        2 / 3,
        0.1234565,  # a tie in decimal, not in binary: round decides, not the cache
        0.0,
        -0.0,
        1.0,
        1,  # an int stays an int (1 == 1.0 must not share a rounded float)
        math.inf,
        math.nan,
        None,
        5e-324,
    ]
    for _ in range(2):  # the second pass reads the cache
        values = {f"m{i}": v for i, v in enumerate([*awkward, *awkward[::-1]])}
        rounded = snapshots._rounded(values)
        for key, value in values.items():
            want = None if value is None else round(value, DECIMALS)
            got = rounded[key]
            assert type(got) is type(want), key
            assert json.dumps(got) == json.dumps(want), (key, value)
            if isinstance(want, float) and want == 0.0:
                assert math.copysign(1.0, got) == math.copysign(1.0, want)  # -0.0 stays -0.0


# --- the short-ranking check -----------------------------------------------------------------


def test_the_short_ranking_check_runs_once_per_run_however_many_reports_read_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    golden = GoldenSet((Query("q1", "refunds", ["a"]), Query("q2", "returns", ["b"])))

    def stop(reason: str) -> Any:
        raise LookupError(reason)

    session = RetrievalSession(
        settings=Settings(ks=(5,)), golden=golden, on_skip=stop, on_sealed=stop
    )
    calls: list[int] = []
    real = shortrankings.find_short_rankings

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(findings, "find_short_rankings", counted)

    def outcome(qid: str, ids: Sequence[str]) -> QueryOutcome:
        return QueryOutcome(qid, rankings={RETRIEVER_STAGE: tuple(ids)})

    session.set_outcomes([outcome("q1", ["a", "x"]), outcome("q2", ["b"])])
    first = findings.short_rankings(session)
    assert findings.short_rankings(session) == first
    assert len(calls) == 1
    # Two and one results where recall@5 counts five: both rankings are short.
    assert [f.stage for f in first] == [RETRIEVER_STAGE]
    session.set_outcomes([outcome("q1", ["a", "b", "c", "d", "e"]), outcome("q2", "bcdef")])
    assert findings.short_rankings(session) == []  # a new run is checked again
    assert len(calls) == 2


# --- the artifact writer ---------------------------------------------------------------------


def test_the_artifact_writer_writes_exactly_json_dumps_for_awkward_values() -> None:
    awkward: dict[str, Any] = {
        "unicode": 'ü € 😀 \u2028 \x00 "quoted" \\ </script>',
        "floats": [0.1, 1e-07, 1e16, 2.5e-308, -0.0, 1 / 3, 123456789.0],
        "nan": math.nan,
        "inf": [math.inf, -math.inf],
        "empties": {"list": [], "dict": {}, "nested": [[], {}, [[]], {"a": {}}]},
        "keys": {"1": 1, "": 0, "ü": None},
        "bools": [True, False, None],
        "tuple": (1, "a"),
    }
    rows = [dict(awkward, i=i) for i in range(600)]  # more than a chunk, so slices are encoded
    document = {
        "head": awkward,
        "queries": LazyList(len(rows), rows.__getitem__),
        "snapshot": {"queries": LazyMapping([str(i) for i in range(300)], lambda k: awkward)},
    }
    plain = {
        "head": awkward,
        "queries": rows,
        "snapshot": {"queries": {str(i): awkward for i in range(300)}},
    }
    out = io.StringIO()
    write_json(out, document)
    assert out.getvalue() == json.dumps(plain, ensure_ascii=False, separators=(",", ":"))
    assert (
        "NaN" in out.getvalue()
    )  # as json.dumps writes it (the artifact's own values are checked)
