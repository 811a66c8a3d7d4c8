"""runsource: the cache modes and run files without pytest (a counting fake retriever)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from pytest_retrieval.errors import InputError
from pytest_retrieval.regression.baseline import dump_baseline, load_baseline
from pytest_retrieval.regression.snapshot import Snapshot
from pytest_retrieval.run.cachekey import CacheEntry, CacheKey
from pytest_retrieval.run.retriever import QueryOutcome, QueryRequest
from pytest_retrieval.run.source import KeyTemplates, RunInfo, through_cache
from pytest_retrieval.run.store import RunCache
from pytest_retrieval.session.payload import Report, merge_all

REQUESTS = [QueryRequest("a", "alpha"), QueryRequest("b", "beta"), QueryRequest("c", "gamma")]
KEYS = KeyTemplates(CacheKey("retriever", "", 10, "tests.fake", index_version="v1"))


class Fake:
    """Answers ``[<text>-1, <text>-2]``; fails on the texts in ``failing``; counts calls."""

    def __init__(self, failing: Sequence[str] = ()) -> None:
        self.calls: list[str] = []
        self.failing = set(failing)

    def __call__(self, requests: Sequence[QueryRequest]) -> list[QueryOutcome]:
        out = []
        for r in requests:
            self.calls.append(r.text)
            if r.text in self.failing:
                out.append(QueryOutcome(r.id, error="down", error_type="RuntimeError"))
            else:
                out.append(
                    QueryOutcome(
                        r.id,
                        rankings={"retriever": (f"{r.text}-1", f"{r.text}-2")},
                        latency_ms={"retriever": 5.0},
                    )
                )
        return out


def test_use_calls_only_the_misses_and_keeps_the_order(tmp_path: Path) -> None:
    path = tmp_path / "c" / "runs.sqlite3"
    fake = Fake()
    through_cache(REQUESTS[:2], fake, mode="use", path=path, keys=KEYS)
    outcomes, info = through_cache(REQUESTS, fake, mode="use", path=path, keys=KEYS)
    assert fake.calls == ["alpha", "beta", "gamma"]
    assert [o.query_id for o in outcomes] == ["a", "b", "c"]
    assert outcomes[0].rankings == {"retriever": ("alpha-1", "alpha-2")}
    assert outcomes[0].latency_ms == {}
    assert outcomes[2].latency_ms == {"retriever": 5.0}
    assert (info.cached, info.called, info.stored) == (2, 1, 1)


def test_failures_are_not_stored(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite3"
    through_cache(REQUESTS, Fake(failing=["beta"]), mode="use", path=path, keys=KEYS)
    fake = Fake()
    _outcomes, info = through_cache(REQUESTS, fake, mode="use", path=path, keys=KEYS)
    assert fake.calls == ["beta"]
    assert info.stored == 1


def test_refresh_overwrites_and_replay_reads(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite3"
    through_cache(REQUESTS, Fake(), mode="use", path=path, keys=KEYS)

    class Other(Fake):
        def __call__(self, requests: Sequence[QueryRequest]) -> list[QueryOutcome]:
            return [QueryOutcome(r.id, rankings={"retriever": ("new",)}) for r in requests]

    through_cache(REQUESTS, Other(), mode="refresh", path=path, keys=KEYS)
    never = Fake()
    outcomes, info = through_cache(REQUESTS, never, mode="replay", path=path, keys=KEYS)
    assert never.calls == []
    assert [o.rankings["retriever"] for o in outcomes] == [("new",)] * 3
    assert (info.cached, info.called, info.stored) == (3, 0, 0)


def test_replay_names_what_is_missing(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite3"
    through_cache(REQUESTS[:1], Fake(), mode="use", path=path, keys=KEYS)
    with pytest.raises(InputError, match=r"2 of 3 queries have no entry in .*: b, c;"):
        through_cache(REQUESTS, Fake(), mode="replay", path=path, keys=KEYS)


def test_a_damaged_cache_in_use_runs_uncached_and_warns(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite3"
    path.write_bytes(b"\x00garbage" * 100)
    warned: list[str] = []
    fake = Fake()
    outcomes, info = through_cache(
        REQUESTS, fake, mode="use", path=path, keys=KEYS, warn=warned.append
    )
    assert len(fake.calls) == 3
    assert len(outcomes) == 3
    assert warned == list(info.warnings)
    assert "not an SQLite database" in warned[0]
    assert info.stored == 0
    assert path.read_bytes() == b"\x00garbage" * 100


def test_refresh_rebuilds_a_damaged_cache(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite3"
    with RunCache(path) as cache:  # a cache of ours (its header says so), then cut mid-page
        cache.put(CacheKey("retriever", "q", 10, "m.f"), CacheEntry(("a",) * 2000))
    damaged = path.read_bytes()[:-100]
    path.write_bytes(damaged)
    _outcomes, info = through_cache(REQUESTS, Fake(), mode="refresh", path=path, keys=KEYS)
    assert info.stored == 3
    assert (
        "refresh moved it aside to runs.sqlite3.corrupt and starts a new cache"
        in (info.warnings[0])
    )
    assert (tmp_path / "runs.sqlite3.corrupt").read_bytes() == damaged
    with RunCache(path) as cache:
        assert len(cache) == 3


def test_refresh_leaves_a_file_that_is_not_ours_and_stores_nothing(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite3"
    path.write_bytes(b"\x00garbage" * 100)
    _outcomes, info = through_cache(REQUESTS, Fake(), mode="refresh", path=path, keys=KEYS)
    assert info.stored == 0
    assert info.called == 3
    assert "is not an SQLite database, so not a cache pytest-retrieval wrote" in info.warnings[0]
    assert "moved" not in info.warnings[0]
    assert path.read_bytes() == b"\x00garbage" * 100
    assert not (tmp_path / "runs.sqlite3.corrupt").exists()


def test_run_info_round_trips_and_merges() -> None:
    info = RunInfo(
        source="run files",
        run_files=(("retriever", "/r.trec"),),
        missing={"retriever": ("q1",)},
        missing_hidden={"retriever": 2},
        unknown={"retriever": ("x",)},
        index_version="v3",
    )
    assert RunInfo.from_dict(info.to_dict()) == info
    worker = Report(run_info=info.to_dict())
    assert merge_all([Report(), worker]).run_info == info.to_dict()
    assert merge_all([worker, Report()]).run_info == info.to_dict()


def test_baselines_record_the_index_version_and_old_ones_still_load(tmp_path: Path) -> None:
    snapshot = Snapshot("f" * 64, {}, ("retriever",), ("mrr",), {}, index_version="idx-7")
    path = tmp_path / "b.json"
    path.write_text(dump_baseline(snapshot), encoding="utf-8")
    assert load_baseline(path).index_version == "idx-7"
    old = dump_baseline(Snapshot("f" * 64, {}, ("retriever",), ("mrr",), {}))
    path.write_text(old.replace('  "index_version": null,\n', ""), encoding="utf-8")
    assert "index_version" not in path.read_text()
    assert load_baseline(path).index_version is None
