"""``pytest-retrieval cache show|clear [--cache-dir DIR]``: what a cache holds, emptying it, and
damaged files reported (show) or removed (clear)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pytest_retrieval.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, main
from pytest_retrieval.run.cachekey import CacheEntry, CacheKey
from pytest_retrieval.run.store import RunCache, cache_file

KEY = CacheKey("retriever", "q", 10, "shop.bm25", index_version="v2")


def fill(folder: Path) -> Path:
    path = cache_file(folder)
    with RunCache(path) as cache:
        cache.put_many(
            [
                (KEY, CacheEntry(("a",))),
                (dataclasses.replace(KEY, query="r"), CacheEntry(("b",))),
                (dataclasses.replace(KEY, stage="reranker", candidates=("a",)), CacheEntry(())),
                (
                    dataclasses.replace(KEY, retriever="shop.dense", index_version=None),
                    CacheEntry(()),
                ),
            ]
        )
    return path


def test_show_lists_entries_per_stage_retriever_and_index_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = fill(tmp_path)
    assert main(["cache", "show", "--cache-dir", str(tmp_path)]) == EXIT_OK
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"retrieval cache {path}: 4 entries, ")
    assert lines[1].startswith("oldest entry 20")
    assert ", newest 20" in lines[1]
    assert lines[2:] == [
        "by stage:",
        "  reranker   1",
        "  retriever  3",
        "by retriever:",
        "  shop.bm25   3",
        "  shop.dense  1",
        "by index version:",
        "  (none)  1",
        "  v2      3",
    ]


def test_show_defaults_to_the_cache_folder_in_the_current_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(tmp_path / ".retrieval-cache")
    monkeypatch.chdir(tmp_path)
    assert main(["cache", "show"]) == EXIT_OK
    assert capsys.readouterr().out.startswith(
        "retrieval cache .retrieval-cache/runs.sqlite3: 4 entries"
    )


def test_show_without_a_cache_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cache", "show", "--cache-dir", str(tmp_path / "none")]) == EXIT_OK
    assert capsys.readouterr().out == (
        f"no retrieval cache at {tmp_path / 'none' / 'runs.sqlite3'} (pytest "
        "--retrieval-cache=use creates it)\n"
    )
    assert not (tmp_path / "none").exists()  # show never creates one


def test_show_reports_a_damaged_cache_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = fill(tmp_path)
    path.write_bytes(path.read_bytes()[:5000])
    assert main(["cache", "show", "--cache-dir", str(tmp_path)]) == EXIT_FAILED
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"pytest-retrieval cache: retrieval cache {path}: is damaged, e.g. truncated (database "
        "disk image is malformed); it was not used (delete the file or run "
        f"`pytest-retrieval cache clear --cache-dir {tmp_path}`)\n"
    )


def test_clear_empties_a_sound_cache(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = fill(tmp_path)
    assert main(["cache", "clear", "--cache-dir", str(tmp_path)]) == EXIT_OK
    assert capsys.readouterr().out == f"cleared the retrieval cache {path} (4 entries)\n"
    with RunCache(path) as cache:
        assert len(cache) == 0
        assert cache.get(KEY) is None


def test_clear_deletes_a_damaged_cache_so_the_next_run_starts_afresh(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = cache_file(tmp_path)
    with RunCache(path) as cache:
        cache.put_many(
            (dataclasses.replace(KEY, query=f"q{i}"), CacheEntry(tuple(f"d{j}" for j in range(50))))
            for i in range(200)
        )
    path.write_bytes(path.read_bytes()[:-100])  # cut mid-page: a damaged cache of ours
    assert main(["cache", "show", "--cache-dir", str(tmp_path)]) == EXIT_FAILED
    assert "is damaged" in capsys.readouterr().err
    assert main(["cache", "clear", "--cache-dir", str(tmp_path)]) == EXIT_OK
    assert capsys.readouterr().out == (
        f"cleared the retrieval cache {path} (a damaged cache, deleted)\n"
    )
    assert not path.exists()
    with RunCache(path) as cache:
        assert len(cache) == 0


def test_clear_without_a_cache_says_there_is_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["cache", "clear", "--cache-dir", str(tmp_path)]) == EXIT_OK
    assert capsys.readouterr().out == (
        f"no retrieval cache at {tmp_path / 'runs.sqlite3'}: nothing to clear\n"
    )


def test_no_action_is_a_one_line_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cache"]) == EXIT_USAGE
    assert capsys.readouterr().err == (
        "pytest-retrieval cache: error: no action given (use `pytest-retrieval cache show` "
        "or `pytest-retrieval cache clear`)\n"
    )


def test_a_cache_dir_that_is_a_file_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    assert main(["cache", "show", "--cache-dir", str(blocker)]) == EXIT_USAGE
    assert capsys.readouterr().err == (
        f"pytest-retrieval cache: error: {blocker}: the cache folder is a file (pass the "
        "folder that holds the cache (retrieval_cache_dir))\n"
    )


def test_an_unknown_action_is_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cache", "purge"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "invalid choice: 'purge'" in err
    assert len(err.strip().splitlines()) == 1
