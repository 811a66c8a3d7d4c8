"""The settings of the cache and of stored runs: retrieval_cache, retrieval_cache_dir,
retrieval_index_version and retrieval_run (resolved without pytest)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_retrieval.errors import InputError
from pytest_retrieval.settings.resolve import DEFAULT_CACHE_DIR, option, resolve


def test_by_default_the_cache_is_off_and_no_run_is_gated(tmp_path: Path) -> None:
    settings = resolve({}, {})
    assert settings.cache == "off"
    assert settings.cache_dir is None
    assert settings.index_version is None
    assert settings.run == ()
    assert settings.runs == {}
    assert settings.cache_directory(tmp_path) == tmp_path / ".retrieval-cache"
    assert DEFAULT_CACHE_DIR == ".retrieval-cache"


@pytest.mark.parametrize("mode", ["off", "use", "refresh", "replay", "USE"])
def test_each_cache_mode_is_accepted(mode: str) -> None:
    assert resolve({"cache": mode}, {}).cache == mode.lower()


def test_a_bad_cache_mode_names_the_flag_and_the_choices() -> None:
    with pytest.raises(InputError) as info:
        resolve({"cache": "sometimes"}, {})
    assert str(info.value) == (
        "pytest-retrieval: invalid settings:\n"
        "  - --retrieval-cache sometimes: 'sometimes' is not one of off, use, refresh, replay "
        "(see `pytest --help` for --retrieval-cache)"
    )


def test_the_cache_dir_is_resolved_against_the_ini_folder(tmp_path: Path) -> None:
    settings = resolve({}, {"cache_dir": "build/cache"}, ini_base=tmp_path)
    assert settings.cache_dir == str((tmp_path / "build" / "cache").resolve())
    assert settings.cache_directory(Path("/elsewhere")) == (tmp_path / "build" / "cache").resolve()


def test_the_index_version_is_kept_as_text() -> None:
    assert resolve({"index_version": " 2026-05-01.b "}, {}).index_version == "2026-05-01.b"


def test_repeated_run_flags_give_one_run_per_stage_resolved_against_the_cwd(
    tmp_path: Path,
) -> None:
    # The plugin registers the flag with action="append": a list, one value per flag.
    settings = resolve({"run": ["nightly.trec", "reranker=out/rr.jsonl"]}, {}, cli_base=tmp_path)
    assert settings.run == (
        ("retriever", str((tmp_path / "nightly.trec").resolve())),
        ("reranker", str((tmp_path / "out" / "rr.jsonl").resolve())),
    )
    assert settings.runs == {
        "retriever": str((tmp_path / "nightly.trec").resolve()),
        "reranker": str((tmp_path / "out" / "rr.jsonl").resolve()),
    }


def test_runs_in_the_ini_are_one_per_line(tmp_path: Path) -> None:
    settings = resolve(
        {}, {"run": ["retriever = a.jsonl", "", "Reranker=/abs/b.trec"]}, ini_base=tmp_path
    )
    assert settings.run == (
        ("retriever", str((tmp_path / "a.jsonl").resolve())),
        ("reranker", "/abs/b.trec"),
    )


def test_a_path_whose_prefix_is_not_a_name_is_a_path_even_with_an_equals_sign(
    tmp_path: Path,
) -> None:
    settings = resolve({"run": ["runs/a=b.jsonl"]}, {}, cli_base=tmp_path)
    assert settings.run == (("retriever", str((tmp_path / "runs" / "a=b.jsonl").resolve())),)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            ["rerankr=rr.jsonl"],
            "'rerankr=rr.jsonl': unknown stage 'rerankr'; write PATH (the retriever stage) or "
            "STAGE=PATH with STAGE one of retriever, reranker",
        ),
        (["reranker="], "'reranker=': no path after reranker="),
        (
            ["a.jsonl", "retriever=b.jsonl"],
            "two runs for the retriever stage (a.jsonl and b.jsonl); give one run per stage",
        ),
    ],
)
def test_a_bad_run_value_says_what_is_wrong(values: list[str], message: str) -> None:
    with pytest.raises(InputError) as info:
        resolve({"run": values}, {})
    assert len(info.value.problems) == 1
    assert info.value.problems[0].message == message
    assert info.value.problems[0].fix == "see `pytest --help` for --retrieval-run"


def test_the_run_flag_is_repeatable_and_the_others_are_not() -> None:
    assert option("run").repeatable
    assert option("run").ini_type == "linelist"
    assert not any(option(name).repeatable for name in ("cache", "cache_dir", "index_version"))


def test_the_new_settings_go_into_the_artifact_as_json(tmp_path: Path) -> None:
    settings = resolve({"cache": "use", "index_version": "v3", "run": ["reranker=/r/rr.jsonl"]}, {})
    document = json.loads(json.dumps(settings.to_dict()))
    assert document["cache"] == "use"
    assert document["cache_dir"] is None
    assert document["index_version"] == "v3"
    assert document["run"] == [{"stage": "reranker", "path": "/r/rr.jsonl"}]
