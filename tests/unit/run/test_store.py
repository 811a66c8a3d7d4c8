"""The retriever-output cache (``pytest_retrieval.run.store``): complete keys, hits, overwrites,
and files that are not a cache of ours (random bytes, truncated, foreign, another version)."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from pytest_retrieval.run.cachekey import (
    CacheEntry,
    CacheKey,
    doc_id_fingerprint,
    keys_for,
    retriever_identity,
)
from pytest_retrieval.run.store import (
    APPLICATION_ID,
    CACHE_FILE_NAME,
    CacheCorrupt,
    RunCache,
    cache_file,
    mode_reads,
    mode_writes,
)

BASE = CacheKey(
    stage="retriever",
    query="how do I reset my password",
    depth=100,
    retriever="shop.search.bm25",
    factory="shop.search:make",
    index_version="2026-05-01",
    corpus="c" * 64,
    doc_ids="d" * 64,
    candidates=None,
)
ENTRY = CacheEntry(("doc-3", "doc-1", "doc-7"), (2.5, 1.0, 0.25), 12.5)


@pytest.fixture
def cache(tmp_path: Path) -> Any:
    with RunCache(tmp_path / "cache" / CACHE_FILE_NAME) as opened:
        yield opened


def test_a_stored_entry_comes_back_equal(cache: RunCache) -> None:
    assert cache.get(BASE) is None
    cache.put(BASE, ENTRY)
    hit = cache.get(BASE)
    assert hit == ENTRY
    assert hit is not None
    assert hit.ranking == ("doc-3", "doc-1", "doc-7")
    assert hit.scores == (2.5, 1.0, 0.25)
    assert hit.latency_ms == 12.5
    assert hit.created > 0


def test_an_entry_survives_closing_and_reopening_the_file(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    with RunCache(path) as first:
        first.put(BASE, ENTRY)
    with RunCache(path) as second:
        assert second.get(BASE) == ENTRY
        assert len(second) == 1


def test_an_equal_key_built_separately_is_a_hit(cache: RunCache) -> None:
    cache.put(BASE, ENTRY)
    assert cache.get(CacheKey(**BASE.to_dict())) == ENTRY


CHANGES: dict[str, Any] = {
    "stage": "reranker",
    "query": "how do I reset my password?",
    "depth": 50,
    "retriever": "shop.search.dense",
    "factory": "shop.search:make_dense",
    "index_version": "2026-05-02",
    "corpus": "e" * 64,
    "doc_ids": "f" * 64,
    "candidates": ("doc-3", "doc-1"),
    "context": '{"tenant":"acme"}',
    "context_filter": "shop.scope:tenant_filter",
}


def test_the_changes_cover_every_key_field() -> None:
    assert set(CHANGES) == {f.name for f in dataclasses.fields(CacheKey)}


@pytest.mark.parametrize("name", sorted(CHANGES))
def test_changing_any_one_key_field_is_a_miss(cache: RunCache, name: str) -> None:
    cache.put(BASE, ENTRY)
    changed = dataclasses.replace(BASE, **{name: CHANGES[name]})
    assert changed.digest != BASE.digest
    assert cache.get(changed) is None
    assert cache.get(BASE) == ENTRY


@pytest.mark.parametrize("name", ["factory", "index_version", "corpus", "doc_ids"])
def test_none_and_an_empty_string_are_different_keys(cache: RunCache, name: str) -> None:
    none: dict[str, Any] = {name: None}
    empty: dict[str, Any] = {name: ""}
    with_none = dataclasses.replace(BASE, **none)
    with_empty = dataclasses.replace(BASE, **empty)
    cache.put(with_none, ENTRY)
    assert cache.get(with_empty) is None


def test_reranker_candidates_in_another_order_are_a_miss(cache: RunCache) -> None:
    first = dataclasses.replace(BASE, stage="reranker", candidates=("a", "b"))
    cache.put(first, ENTRY)
    assert cache.get(dataclasses.replace(first, candidates=("b", "a"))) is None
    assert cache.get(dataclasses.replace(first, candidates=())) is None
    assert cache.get(dataclasses.replace(first, candidates=None)) is None
    assert cache.get(first) == ENTRY


def test_a_second_put_overwrites_the_entry_as_refresh_does(cache: RunCache) -> None:
    cache.put(BASE, ENTRY)
    newer = CacheEntry(("doc-9",), None, 3.0)
    cache.put(BASE, newer)
    assert cache.get(BASE) == newer
    assert len(cache) == 1


def test_put_many_writes_every_entry_and_get_many_returns_them_by_label(cache: RunCache) -> None:
    texts = {f"q{i}": f"text {i}" for i in range(1200)}  # more than one SELECT chunk
    keys = keys_for(texts, BASE)
    written = cache.put_many(
        (key, CacheEntry((f"doc-{label}",))) for label, key in keys.items() if label != "q7"
    )
    assert written == 1199
    hits = cache.get_many(keys)
    assert len(hits) == 1199
    assert hits["q1000"].ranking == ("doc-q1000",)
    assert cache.missing(keys) == ["q7"]


def test_two_labels_with_one_key_both_get_the_hit(cache: RunCache) -> None:
    cache.put(BASE, ENTRY)
    assert cache.get_many({"a": BASE, "b": BASE}) == {"a": ENTRY, "b": ENTRY}


def test_missing_lists_the_labels_without_an_entry_in_the_order_given(cache: RunCache) -> None:
    keys = keys_for({"q3": "three", "q1": "one", "q2": "two"}, BASE)
    cache.put(keys["q1"], ENTRY)
    assert cache.missing(keys) == ["q3", "q2"]


def test_keys_for_sets_each_query_text_and_reranker_candidates() -> None:
    template = dataclasses.replace(BASE, stage="reranker")
    keys = keys_for({"q1": "one"}, template, candidates={"q1": ["a", "b"]})
    assert keys["q1"] == dataclasses.replace(template, query="one", candidates=("a", "b"))


def test_an_entry_without_scores_or_latency_round_trips(cache: RunCache) -> None:
    bare = CacheEntry(("x", "y"))
    cache.put(BASE, bare)
    hit = cache.get(BASE)
    assert hit is not None
    assert hit.scores is None
    assert hit.latency_ms is None
    assert hit.ranking == ("x", "y")


def test_an_empty_ranking_is_a_hit_not_a_miss(cache: RunCache) -> None:
    cache.put(BASE, CacheEntry(()))
    assert cache.get(BASE) == CacheEntry(())


def test_non_finite_scores_round_trip(cache: RunCache) -> None:
    entry = CacheEntry(("a", "b"), (float("inf"), float("-inf")))
    cache.put(BASE, entry)
    hit = cache.get(BASE)
    assert hit is not None
    assert hit.scores == (float("inf"), float("-inf"))


def test_unicode_query_text_and_ids_round_trip(cache: RunCache) -> None:
    key = dataclasses.replace(BASE, query="Straße ünd 東京")
    cache.put(key, CacheEntry(("dóc-1", "文書")))
    hit = cache.get(key)
    assert hit is not None
    assert hit.ranking == ("dóc-1", "文書")
    assert cache.get(dataclasses.replace(BASE, query="Strasse und 東京")) is None


def test_scores_must_match_the_ranking_length() -> None:
    with pytest.raises(ValueError, match="2 scores for a ranking of 1 ids"):
        CacheEntry(("a",), (1.0, 2.0))


def test_clear_empties_the_cache_and_counts_what_it_removed(cache: RunCache) -> None:
    cache.put_many([(BASE, ENTRY), (dataclasses.replace(BASE, query="other"), ENTRY)])
    assert cache.clear() == 2
    assert len(cache) == 0
    assert cache.get(BASE) is None


def test_stats_count_per_stage_retriever_and_index_version(cache: RunCache) -> None:
    reranked = dataclasses.replace(BASE, stage="reranker", candidates=("a",))
    other = dataclasses.replace(BASE, query="q2", retriever="shop.search.dense", index_version=None)
    cache.put_many([(BASE, ENTRY), (reranked, ENTRY), (other, ENTRY)])
    stats = cache.stats()
    assert stats.entries == 3
    assert stats.by_stage == {"reranker": 1, "retriever": 2}
    assert stats.by_retriever == {"shop.search.bm25": 2, "shop.search.dense": 1}
    assert stats.by_index_version == {None: 1, "2026-05-01": 2}
    assert stats.oldest is not None
    assert stats.newest is not None
    assert stats.oldest <= stats.newest
    assert stats.file_bytes > 0
    assert stats.path == str(cache.path)


def test_the_file_is_in_wal_mode_and_marked_as_ours(cache: RunCache) -> None:
    connection = sqlite3.connect(cache.path)
    try:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert connection.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
        assert connection.execute("PRAGMA user_version").fetchone()[0] == 1
    finally:
        connection.close()


def test_modes_say_who_reads_and_who_writes() -> None:
    assert [m for m in ("off", "use", "refresh", "replay") if mode_reads(m)] == ["use", "replay"]
    assert [m for m in ("off", "use", "refresh", "replay") if mode_writes(m)] == ["use", "refresh"]


def test_cache_file_is_inside_the_cache_dir(tmp_path: Path) -> None:
    assert cache_file(tmp_path) == tmp_path / "runs.sqlite3"


# --- identities and fingerprints -----------------------------------------------------------


def module_level_retriever(text: str) -> list[str]:
    return [text]


class ObjectRetriever:
    def retrieve(self, text: str) -> list[str]:
        return [text]


def test_a_function_is_identified_by_its_module_and_qualified_name() -> None:
    assert retriever_identity(module_level_retriever) == f"{__name__}.module_level_retriever"


def test_an_object_is_identified_by_its_class() -> None:
    assert retriever_identity(ObjectRetriever()) == f"{__name__}.ObjectRetriever"
    bound = ObjectRetriever().retrieve
    assert retriever_identity(bound) == f"{__name__}.ObjectRetriever.retrieve"


def test_no_doc_id_mapping_has_no_fingerprint() -> None:
    assert doc_id_fingerprint() is None


def test_each_doc_id_option_has_its_own_fingerprint(tmp_path: Path) -> None:
    map_file = tmp_path / "map.json"
    map_file.write_text(json.dumps({"c1": "d1"}), encoding="utf-8")
    prints = [
        doc_id_fingerprint("metadata.source"),
        doc_id_fingerprint("metadata.doc"),
        doc_id_fingerprint(module_level_retriever),
        doc_id_fingerprint(doc_id_map={"c1": "d1"}),
        doc_id_fingerprint(doc_id_map={"c1": "d2"}),
        doc_id_fingerprint(doc_id_map=map_file),
        doc_id_fingerprint(separator="#"),
        doc_id_fingerprint(separator="::"),
    ]
    assert all(p is not None and len(p) == 64 for p in prints)
    assert len(set(prints)) == len(prints)
    assert doc_id_fingerprint("metadata.source") == prints[0]  # stable


def test_editing_the_doc_id_map_file_changes_the_fingerprint(tmp_path: Path) -> None:
    map_file = tmp_path / "map.tsv"
    map_file.write_text("c1\td1\n", encoding="utf-8")
    before = doc_id_fingerprint(doc_id_map=map_file)
    map_file.write_text("c1\td2\n", encoding="utf-8")
    assert doc_id_fingerprint(doc_id_map=map_file) != before


def test_a_mapping_fingerprint_does_not_depend_on_insertion_order() -> None:
    one = doc_id_fingerprint(doc_id_map={"a": "1", "b": "2"})
    assert doc_id_fingerprint(doc_id_map={"b": "2", "a": "1"}) == one


# --- files that are not a cache of ours ----------------------------------------------------


def filled(path: Path, count: int = 300) -> list[CacheKey]:
    """A cache of ``count`` entries with long rankings (several pages of data)."""
    keys = [dataclasses.replace(BASE, query=f"query {i}") for i in range(count)]
    ranking = tuple(f"document-{j}" for j in range(100))
    with RunCache(path) as cache:
        cache.put_many((key, CacheEntry(ranking)) for key in keys)
    return keys


def assert_refused(path: Path, reason: str, *, ours: bool = True) -> None:
    """Refused naming the file and the reason; a damaged cache of ours with "delete it", any
    other file with "it was left as it is" (it is never ours to delete)."""
    with pytest.raises(CacheCorrupt) as info, RunCache(path) as cache:
        cache.get_many({i: dataclasses.replace(BASE, query=f"query {i}") for i in range(300)})
    message = str(info.value)
    assert message.startswith(f"retrieval cache {path}: ")
    assert reason in message
    if ours:
        assert "it was not used (delete the file or run `pytest-retrieval cache clear" in message
    else:
        assert (
            "it was not used (it is not a file pytest-retrieval wrote, so it was left as it is: "
            "move it out of the folder, or set retrieval_cache_dir" in message
        )
        assert "cache clear" not in message
    assert info.value.ours is ours
    assert info.value.path == str(path)


def test_a_file_of_random_bytes_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    path.write_bytes(bytes(range(256)) * 40)
    assert_refused(path, "is not an SQLite database", ours=False)


def test_a_text_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    path.write_text("these are not the rankings you are looking for\n" * 200, encoding="utf-8")
    assert_refused(path, "is not an SQLite database", ours=False)


def test_an_sqlite_database_of_another_program_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    other = sqlite3.connect(path)
    other.execute("CREATE TABLE entries (key TEXT, value TEXT)")
    other.execute("INSERT INTO entries VALUES ('k', 'v')")
    other.commit()
    other.close()
    assert_refused(path, "is an SQLite database of another program (tables: entries)", ours=False)


def test_a_cache_of_another_schema_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    filled(path, 1)
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA user_version = 7")
    connection.commit()
    connection.close()
    assert_refused(path, "was written with cache schema version 7; this version")


@pytest.mark.parametrize("keep", [0.5, 0.9])
def test_a_file_truncated_at_a_page_boundary_is_refused(tmp_path: Path, keep: float) -> None:
    path = tmp_path / "c.sqlite3"
    filled(path)
    data = path.read_bytes()
    pages = len(data) // 4096
    path.write_bytes(data[: int(pages * keep) * 4096])
    assert_refused(path, "is damaged")


@pytest.mark.parametrize("cut", [50, 100, 5000])
def test_a_file_truncated_mid_page_is_refused(tmp_path: Path, cut: int) -> None:
    path = tmp_path / "c.sqlite3"
    filled(path)
    data = path.read_bytes()
    path.write_bytes(data[:cut] if cut < 1000 else data[:-cut])
    assert_refused(path, "is damaged")


def test_an_entry_edited_behind_our_back_is_refused_not_returned(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    with RunCache(path) as cache:
        cache.put(BASE, ENTRY)
    connection = sqlite3.connect(path)
    connection.execute("UPDATE entries SET value = replace(value, 'doc-3', 'doc-4')")
    connection.commit()
    connection.close()
    with RunCache(path) as cache, pytest.raises(CacheCorrupt, match="does not match its checksum"):
        cache.get(BASE)


def test_check_finds_a_damaged_entry_without_a_lookup(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    with RunCache(path) as cache:
        cache.put(BASE, ENTRY)
        cache.check()  # a sound file passes
    connection = sqlite3.connect(path)
    connection.execute("UPDATE entries SET checksum = 'x'")
    connection.commit()
    connection.close()
    with RunCache(path) as cache, pytest.raises(CacheCorrupt, match="does not match"):
        cache.check()


def test_rebuild_moves_the_damaged_file_aside_and_starts_empty(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    filled(path)
    damaged = path.read_bytes()[:-100]  # cut mid-page: ours (its header says so), and damaged
    path.write_bytes(damaged)
    with RunCache.rebuild(path) as cache:
        assert len(cache) == 0
        cache.put(BASE, ENTRY)
        assert cache.get(BASE) == ENTRY
    assert (tmp_path / "c.sqlite3.corrupt").read_bytes() == damaged


def test_a_directory_in_the_way_is_refused(tmp_path: Path) -> None:
    (tmp_path / "c.sqlite3").mkdir()
    with pytest.raises(CacheCorrupt, match="is a directory, not a cache file"):
        RunCache(tmp_path / "c.sqlite3")


def test_an_empty_file_becomes_a_cache(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    path.write_bytes(b"")
    with RunCache(path) as cache:
        cache.put(BASE, ENTRY)
        assert cache.get(BASE) == ENTRY


def test_a_closed_cache_says_so(tmp_path: Path) -> None:
    cache = RunCache(tmp_path / "c.sqlite3")
    cache.close()
    cache.close()  # idempotent
    with pytest.raises(ValueError, match="is closed"):
        cache.get(BASE)


@pytest.mark.parametrize(
    "module",
    ["pytest_retrieval.run.store", "pytest_retrieval.formats.runs", "pytest_retrieval.cli.cache"],
)
def test_the_new_modules_import_with_pytest_and_the_heavy_deps_blocked(module: str) -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('pytest', '_pytest', 'yaml', 'numpy', 'tabulate'):\n"
        "            raise ImportError('blocked: ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        f"import {module}\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
