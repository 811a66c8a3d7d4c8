"""The example project, run as a user runs it: as shipped it passes; broken, it fails usefully.

The example needs its own dependency (bm25s, in the test extra) and finds its package through
PYTHONPATH, so these tests work whether or not ``pip install -e ./example_project`` was run.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from paths import ROOT

EXAMPLE = ROOT / "example_project"


def run_example(
    tmp_path: Path,
    *args: str,
    env: dict[str, str] | None = None,
    cache_dir: Path | None = None,
    cwd: Path = EXAMPLE,
) -> tuple[int, str, dict[str, Any]]:
    """Run the example's gates in a subprocess; return (exit status, output, JSON artifact).

    ``cwd``: a copy of the example's project files (its package and corpus stay where they are:
    PYTHONPATH finds them)."""
    artifact = tmp_path / "report.json"
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(EXAMPLE), os.environ.get("PYTHONPATH", "")]),
        **(env or {}),
    }
    for name in (
        "ACME_TOKENIZER",
        "ACME_RERANKER",
        "ACME_CHUNK_SIZE",
        "ACME_CHUNK_OVERLAP",
        "ACME_TENANT_FILTER",
        "ACME_FRESHNESS",
    ):
        if env is None or name not in env:
            environment.pop(name, None)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--retrieval-json",
            str(artifact),
            # The example keeps its cache on (retrieval_cache = use): each test gets its own, so
            # no test depends on or is served by another's (or a developer's) cache.
            f"--retrieval-cache-dir={cache_dir or tmp_path / 'cache'}",
            *args,
        ],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    output = result.stdout + result.stderr
    document = json.loads(artifact.read_text()) if artifact.exists() else {}
    return result.returncode, output, document


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, dict[str, Any]]:
    return run_example(tmp_path_factory.mktemp("shipped"))


def test_the_example_passes_as_shipped(shipped: tuple[int, str, dict[str, Any]]) -> None:
    status, output, document = shipped
    assert status == 0, output[-3000:]
    assert "retrieval gates: all passed" in output
    assert document["stages"] == ["retriever", "reranker"]
    # 164 queries, 39 of them held out and sealed: 125 scored (6 of them asked by a customer).
    assert document["golden"]["queries"] == 164
    assert document["heldout"]["scored"] is False
    assert len(document["queries"]) == 125


def test_the_example_broken_as_documented_fails_and_names_what_it_lost(tmp_path: Path) -> None:
    status, output, _document = run_example(tmp_path, env={"ACME_TOKENIZER": "naive"})
    assert status == 1, output[-3000:]
    # The budgets are items of the gates file: retrieval-gates.yaml::ndcg_at_10-budget_0.02 ...
    assert re.search(r"FAILED retrieval-gates\.yaml::\S+-budget_", output), output[-3000:]
    # A lost relevant document with its rank before and after, e.g. "invoice-languages: rank 1 → —"
    # (pushed out of the ranking) or "merge-duplicate-contacts: rank 1 → 17" (pushed down).
    moves = re.findall(r"([\w-]+): rank (\d+) → (—|\d+)", output)
    assert moves, output[-3000:]
    assert any(after == "—" or int(after) > int(before) for _doc, before, after in moves)


def section(output: str, title: str) -> list[str]:
    """The lines of one ``= title =`` section of the terminal output (without its rule)."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if re.fullmatch(rf"=+ {title} =+", line))
    end = next(
        (i for i in range(start + 1, len(lines)) if re.fullmatch(r"=+ .* =+", lines[i])),
        len(lines),
    )
    return lines[start + 1 : end]


def test_the_default_summary_fits_a_120_column_terminal_and_v_shows_the_full_table(
    tmp_path: Path,
) -> None:
    status, output, _document = run_example(tmp_path / "compact", env={"COLUMNS": "120"})
    assert status == 0, output[-3000:]
    summary = section(output, "retrieval")
    too_wide = [line for line in summary if len(line) > 120]
    assert not too_wide, too_wide
    # Two stages, each a pivot of 9 metric rows and a 6-line slice table, the leak table (its
    # title, header and a forbidden and a stale row per stage), the run's facts (the depth asked
    # among them) and one coverage warning per stage: about 47 lines in all.
    assert len(summary) <= 54, "\n".join(summary)
    assert "stale [reranker]       0 (0.0000)  0 (0.0000)  0 (0.0000)" in "\n".join(summary)
    # The cutoffs, then the metrics without one (abstain_rate, answer_rate).
    assert "retriever (n=114)    @1      @3      @5      @10     @20     @50     (no K)" in summary
    assert any(line.startswith("paraphrase (n=32)") for line in summary)
    # The no-answer slice is a row of its own (its abstain_rate), never a column of dashes.
    assert not any("no-answer (n=0)" in line for line in summary)
    assert any(line.startswith("no-answer (n=11)") for line in summary)
    # The example's 50 chunks collapse into about 45 documents; its first stage takes k, so the
    # queries short of 50 documents are asked again deeper and @50 is scored on 50 documents:
    # no warning (tests/plugin/test_plugin_frameworks.py has the warnings that must show), and the
    # summary says how deep it asked.
    assert not any(line.startswith("warning: short rankings") for line in summary)
    assert any(line.startswith("depth: 50 results asked per query") for line in summary)

    status, output, _document = run_example(tmp_path / "full", "-v", env={"COLUMNS": "120"})
    assert status == 0, output[-3000:]
    full = section(output, "retrieval")
    assert "stage: retriever" in full
    assert any(line.startswith("precision@20") for line in full)
    assert any("no-answer (n=0)" in line for line in full)


def test_turning_the_reranker_off_is_caught_by_the_baseline(tmp_path: Path) -> None:
    status, output, document = run_example(tmp_path, env={"ACME_RERANKER": "off"})
    assert status == 1, output[-3000:]
    failed = [r for r in document["regressions"] if r["status"] == "regression"]
    assert failed
    worst = failed[0]["worse"][0]
    assert worst["after"] < worst["before"]
    assert any(m["before"] != m["after"] for m in worst["moves"])


def test_removing_the_reranker_is_caught_by_the_two_stage_baseline(tmp_path: Path) -> None:
    # The team deletes the reranker fixture: the pipeline has one stage now, the committed
    # baseline two. The budgets without stage= compare what users got (the baseline's reranker)
    # with what they get (this run's retriever), whatever the stages are called.
    project = tmp_path / "project"
    project.mkdir()
    for name in ("pyproject.toml", "retrieval-gates.yaml", "retrieval-baseline.json"):
        shutil.copy(EXAMPLE / name, project / name)
    shutil.copy(EXAMPLE / "duplicates.tsv", project / "duplicates.tsv")
    shutil.copy(EXAMPLE / "corpus.jsonl", project / "corpus.jsonl")
    shutil.copytree(EXAMPLE / "golden", project / "golden")
    shutil.copytree(EXAMPLE / "tests", project / "tests")
    conftest = (EXAMPLE / "conftest.py").read_text(encoding="utf-8")
    kept, cut, _reranker = conftest.partition(
        '\n\n@pytest.fixture(scope="session")\ndef reranker_under_test'
    )
    assert cut, "the example's conftest no longer defines the reranker fixture this way"
    (project / "conftest.py").write_text(kept + "\n", encoding="utf-8")
    status, output, document = run_example(tmp_path, cwd=project)
    assert status == 1, output[-3000:]
    assert document["stages"] == ["retriever"]
    means = json.loads((EXAMPLE / "retrieval-baseline.json").read_text(encoding="utf-8"))["means"]
    checks = {r["name"]: r for r in document["regressions"]}
    for metric in ("ndcg@10", "mrr"):
        check = checks[f"{metric}[budget=0.02]"]
        assert (check["status"], check["baseline_stage"], check["stage"]) == (
            "regression",
            "reranker",
            "retriever",
        ), check["message"]
        # Before: the committed baseline's reranker mean. Now: its retriever mean (BM25 has not
        # changed), so the delta is the reranker's whole gain, lost.
        before = means["reranker"]["overall"][metric]
        now = means["retriever"]["overall"][metric]
        assert (check["baseline_mean"], check["current_mean"]) == (
            pytest.approx(before, abs=1e-6),
            pytest.approx(now, abs=1e-6),
        )
        assert check["delta"] == pytest.approx(now - before, abs=1e-6)
        assert check["delta"] < -0.02
        assert f"FAIL {metric} budget 0.0200 [final stage: reranker in the baseline, " in output
    # The budget that names the retriever compares the retriever with itself: unchanged.
    kept_check = checks["recall@50[budget=0.02,stage=retriever]"]
    assert (kept_check["status"], kept_check["delta"]) == ("pass", 0.0)
    assert kept_check["baseline_stage"] == kept_check["stage"] == "retriever"


def test_two_workers_give_the_same_numbers(
    tmp_path: Path, shipped: tuple[int, str, dict[str, Any]]
) -> None:
    status, output, document = run_example(tmp_path, "-n", "2")
    assert status == 0, output[-3000:]
    _status, _output, single = shipped
    assert document["results"] == single["results"]
    strip = lambda rows: [{k: v for k, v in row.items() if k != "latency_ms"} for row in rows]  # noqa: E731
    assert strip(document["queries"]) == strip(single["queries"])


def test_a_cached_rerun_searches_nothing_and_gives_the_same_numbers(
    tmp_path: Path, shipped: tuple[int, str, dict[str, Any]]
) -> None:
    cache = tmp_path / "cache"
    status, output, first = run_example(tmp_path / "first", cache_dir=cache)
    assert status == 0, output[-3000:]
    assert first["run"]["cache"]["called"] == 125
    status, output, again = run_example(tmp_path / "again", cache_dir=cache)
    assert status == 0, output[-3000:]
    assert again["run"]["cache"] == {
        **first["run"]["cache"],
        "cached": 125,
        "called": 0,
        "stored": 0,
    }
    # (the compact summary wraps its prose at the terminal's width)
    flat = " ".join(output.split())
    assert "cache use: 125 of 125 queries served from the cache, index version " in flat
    assert again["results"] == shipped[2]["results"]
    assert again["retriever"]["index_version"] == "acme-help-bm25-stem-200w-2"
    # A changed index under a new version is a miss for every query, so the break is caught.
    status, output, broken = run_example(
        tmp_path / "broken",
        "--retrieval-index-version",
        "naive-tokenizer",
        env={"ACME_TOKENIZER": "naive"},
        cache_dir=cache,
    )
    assert status == 1, output[-3000:]
    assert broken["run"]["cache"]["called"] == 125


def _declared_groups() -> dict[str, str]:
    """doc id → group id from the example's duplicates.tsv, read here without the plugin."""
    groups = {}
    for line in (EXAMPLE / "duplicates.tsv").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            doc, group = line.split("\t")
            groups[doc] = group
    return groups


def _per_group(
    retrieved: list[str], grades: dict[str, int], groups: dict[str, str]
) -> tuple[list[str], dict[str, int]]:
    """The convention, written out independently: every doc becomes its group; a group is as
    relevant as its best-judged member; a later copy in the ranking is filler (a fresh id that
    nothing judges), so it still takes up a rank."""
    group_grades: dict[str, int] = {}
    for doc, grade in grades.items():
        key = groups.get(doc, doc)
        group_grades[key] = max(grade, group_grades.get(key, grade))
    seen: set[str] = set()
    ranking = []
    for rank, doc in enumerate(retrieved):
        key = groups.get(doc, doc)
        ranking.append(f"filler-{rank}" if key in seen else key)
        seen.add(key)
    return ranking, group_grades


def _seed_recall(retrieved: list[str], relevant: set[str], k: int) -> float:
    # The design seed's formula, written out here independently of pytest_retrieval.
    return sum(1 for d in retrieved[:k] if d in relevant) / len(relevant)


def _seed_precision(retrieved: list[str], relevant: set[str], k: int) -> float:
    return sum(1 for d in retrieved[:k] if d in relevant) / k


def _seed_ndcg(retrieved: list[str], grades: dict[str, int], k: int) -> float:
    def dcg(values: list[int]) -> float:
        return sum((2**g - 1) / math.log2(i + 1) for i, g in enumerate(values, 1))

    seen: set[str] = set()
    actual = []
    for doc in retrieved[:k]:
        actual.append(0 if doc in seen else grades.get(doc, 0))
        seen.add(doc)
    ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:k]
    return dcg(actual) / dcg(ideal)


def _labels() -> dict[str, dict[str, int]]:
    golden = yaml.safe_load((EXAMPLE / "golden" / "acme-help.yaml").read_text())
    labels: dict[str, dict[str, int]] = {}
    for query in golden["queries"]:
        relevant = query["relevant"]
        labels[str(query["id"])] = (
            {str(d): 1 for d in relevant}
            if isinstance(relevant, list)
            else {str(d): int(g) for d, g in relevant.items()}
        )
    return labels


def test_the_numbers_are_real_recomputed_from_the_rankings(
    shipped: tuple[int, str, dict[str, Any]],
) -> None:
    _status, _output, document = shipped
    labels = _labels()
    groups = _declared_groups()  # the example scores per duplicate group (duplicates.tsv)
    recalls, ndcgs = [], []
    for row in document["queries"]:
        if not any(g >= 1 for g in labels[row["id"]].values()):
            continue  # no-answer queries are skipped in the means (the default convention)
        first, grades = _per_group(row["rankings"]["retriever"], labels[row["id"]], groups)
        final, _grades = _per_group(row["rankings"]["reranker"], labels[row["id"]], groups)
        relevant = {d for d, g in grades.items() if g >= 1}
        recalls.append(_seed_recall(first, relevant, 50))
        ndcgs.append(_seed_ndcg(final, grades, 5))
    overall = {(r["stage"], r["column"]): r["metrics"] for r in document["results"]}
    assert len(recalls) == 114
    assert overall[("retriever", "overall")]["recall@50"] == pytest.approx(
        sum(recalls) / len(recalls)
    )
    assert overall[("reranker", "overall")]["ndcg@5"] == pytest.approx(sum(ndcgs) / len(ndcgs))


def _shingles(text: str) -> set[tuple[str, ...]]:
    words = re.findall(r"\w+", text.lower())
    return {tuple(words[i : i + 3]) for i in range(len(words) - 2)}


def test_the_declared_duplicates_inflate_precision_and_are_measured(
    shipped: tuple[int, str, dict[str, Any]],
) -> None:
    _status, output, document = shipped
    # From the corpus: the declared groups are exactly its near-identical pages (word 3-shingle
    # Jaccard >= 0.8; the next most similar pair is below 0.4), computed here pair by pair,
    # without MinHash or the plugin.
    texts = {p.stem: _shingles(p.read_text()) for p in (EXAMPLE / "corpus").glob("*.md")}
    ids = sorted(texts)
    near = set()
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            union = len(texts[a] | texts[b])
            if union and len(texts[a] & texts[b]) / union >= 0.8:
                near.add(frozenset((a, b)))
    groups = _declared_groups()
    declared = {
        frozenset((a, b)) for a in groups for b in groups if a < b and groups[a] == groups[b]
    }
    assert near == declared
    assert len(declared) == 3
    # From the artifact's rankings and the seed's formulas: precision@5 of the final stage,
    # raw (every id its own document) and per duplicate group, and distinct@5.
    labels = _labels()
    raw, deduplicated, distinct = [], [], []
    for row in document["queries"]:
        ranking, grades = row["rankings"]["reranker"], labels[row["id"]]
        # distinct@5 counts the top 5 results as returned: two chunks of one document repeat
        # its id, a copy like a duplicate group's member.
        returned = row.get("returned", {}).get("reranker", ranking)
        keys = [groups.get(d, d) for d in returned[:5]]
        if keys:
            distinct.append(len(set(keys)) / len(keys))
        if not any(g >= 1 for g in grades.values()):
            continue
        raw.append(_seed_precision(ranking, {d for d, g in grades.items() if g >= 1}, 5))
        grouped, group_grades = _per_group(ranking, grades, groups)
        relevant = {d for d, g in group_grades.items() if g >= 1}
        deduplicated.append(_seed_precision(grouped, relevant, 5))
    raw_p5 = sum(raw) / len(raw)
    dedup_p5 = sum(deduplicated) / len(deduplicated)
    distinct_5 = sum(distinct) / len(distinct)
    assert dedup_p5 < raw_p5
    assert distinct_5 < 1.0
    overall = {(r["stage"], r["column"]): r["metrics"] for r in document["results"]}
    assert overall[("reranker", "overall")]["precision@5"] == pytest.approx(dedup_p5)
    assert overall[("reranker", "overall")]["distinct@5"] == pytest.approx(distinct_5)
    assert document["dedup"]["groups"] == 3
    assert "scores are deduplicated: 3 duplicate groups (6 documents)" in output


def test_the_no_answer_column_is_filled(shipped: tuple[int, str, dict[str, Any]]) -> None:
    _status, _output, document = shipped
    results = {(r["stage"], r["column"]): r["metrics"] for r in document["results"]}
    no_answer = results[("retriever", "no-answer")]
    assert no_answer["abstain_rate"] is not None
    assert no_answer["answer_rate"] is None  # answer_rate is defined on answerable queries only
    assert results[("retriever", "overall")]["answer_rate"] is not None
    sweeps = {s["stage"]: s for s in document["abstention"]["sweeps"]}
    assert sweeps["retriever"]["floor"] == 4
    rates = [p["abstain_rate"] for p in sweeps["retriever"]["points"]]
    assert rates == sorted(rates)  # a higher floor abstains more, never less


def _front_matter() -> dict[str, dict[str, str]]:
    """doc id -> its front matter (tenant, superseded_by), read from corpus/ without the
    example's package or the plugin."""
    found: dict[str, dict[str, str]] = {}
    for path in (EXAMPLE / "corpus").glob("*.md"):
        text = path.read_text(encoding="utf-8")
        if text.startswith("---\n"):
            block = text[4:].split("\n---\n", 1)[0]
            found[path.stem] = dict(
                (part.strip() for part in line.split(":", 1)) for line in block.splitlines()
            )
    return found


def _contexts() -> dict[str, dict[str, Any]]:
    golden = yaml.safe_load((EXAMPLE / "golden" / "acme-help.yaml").read_text())
    return {str(q["id"]): q["context"] for q in golden["queries"] if q.get("context")}


def _failed_items(output: str) -> set[str]:
    return set(re.findall(r"^FAILED (\S+)", output, flags=re.M))


def test_as_shipped_no_page_reaches_another_tenant_and_no_superseded_page_is_in_the_top_3(
    shipped: tuple[int, str, dict[str, Any]],
) -> None:
    # From the rankings and the front matter, without the plugin's leak metrics: the tenant
    # filter keeps every customer's page out of the other customers' candidates, and the
    # freshness rule keeps every superseded page out of the final top 3.
    _status, _output, document = shipped
    meta = _front_matter()
    contexts = _contexts()
    tenants = {doc: m["tenant"] for doc, m in meta.items() if "tenant" in m}
    superseded = {doc for doc, m in meta.items() if "superseded_by" in m}
    assert superseded == {
        "refund-policy-2024",
        "data-retention-policy-2023",
        "service-level-agreement-2024",
        "export-data-legacy",
    }
    assert set(tenants.values()) == {"northwind", "initech"}
    rows = {row["id"]: row for row in document["queries"]}
    assert set(contexts) <= set(rows)
    for query_id, context in contexts.items():
        for stage in ("retriever", "reranker"):
            ranking = rows[query_id]["rankings"][stage]
            leaked = [d for d in ranking if tenants.get(d, context["tenant"]) != context["tenant"]]
            assert not leaked, (query_id, stage, leaked)
    for row in document["queries"]:
        assert not superseded.intersection(row["rankings"]["reranker"][:3]), row["id"]
    # The gates say the same, as declared lines of retrieval-gates.yaml.
    gates = {g["name"]: g for g in document["gates"]}
    assert gates["forbidden@10==0"]["value"] == 0.0
    assert gates["stale@3<=0"]["value"] == 0.0


def test_without_the_tenant_filter_the_zero_tolerance_gate_names_each_leaked_page_and_rank(
    tmp_path: Path,
) -> None:
    status, output, document = run_example(tmp_path, env={"ACME_TENANT_FILTER": "off"})
    assert status == 1, output[-3000:]
    # Only the leak gates fail (the declared one and the team's test on the candidates): every
    # plain metric, threshold and budget still passes.
    assert _failed_items(output) == {
        "retrieval-gates.yaml::forbidden_at_10_eq_0",
        "tests/test_retrieval_quality.py::test_no_customer_page_reaches_another_customers_candidates",
    }, output[-3000:]
    assert "forbidden@10 == 0 fails (zero tolerance) [stage=reranker split=overall]" in output
    leaks = re.findall(
        r"^  query ([\w-]+) \(tenant (\w+)\): ([\w-]+) at rank (\d+) \[reranker\]: "
        r"tenant (\w+), the query's is (\w+)$",
        output,
        flags=re.M,
    )
    assert (
        "initech-contract-uptime",
        "initech",
        "northwind-contract-terms",
        "2",
        "northwind",
        "initech",
    ) in leaks, output[-3000:]
    # Each named leak is real: the page is at that rank of that query's final ranking, and its
    # front matter gives it another tenant than the query's context.
    meta = _front_matter()
    rows = {row["id"]: row for row in document["queries"]}
    for query_id, tenant, doc, rank, doc_tenant, _query_tenant in leaks:
        assert rows[query_id]["rankings"]["reranker"][int(rank) - 1] == doc
        assert meta[doc]["tenant"] == doc_tenant != tenant == _contexts()[query_id]["tenant"]
    # The first stage never heard of the tenant, and the run says so.
    assert "none of it reaches the retriever" in output


def test_without_the_freshness_rule_stale_at_3_fails_where_the_plain_metrics_all_pass(
    tmp_path: Path,
) -> None:
    status, output, document = run_example(tmp_path, env={"ACME_FRESHNESS": "off"})
    assert status == 1, output[-3000:]
    assert _failed_items(output) == {
        "retrieval-gates.yaml::stale_at_3_le_0",
        "tests/test_retrieval_quality.py::test_outdated_pages_stay_out_of_the_context",
    }, output[-3000:]
    assert "query refund-window: refund-policy-2024 at rank 1 [reranker]: superseded by " in output
    assert document["queries"][0]["id"] == "refund-window"
    assert document["queries"][0]["rankings"]["reranker"][0] == "refund-policy-2024"


def test_marking_only_refund_policy_2024_superseded_fails_stale_at_3_on_its_queries(
    tmp_path: Path,
) -> None:
    # The case: the same pipeline without the freshness rule, and a corpus whose only
    # superseded page is refund-policy-2024 (its grade 0 costs the plain metrics nothing).
    project = tmp_path / "project"
    project.mkdir()
    for name in ("pyproject.toml", "retrieval-gates.yaml", "conftest.py", "duplicates.tsv"):
        shutil.copy(EXAMPLE / name, project / name)
    shutil.copy(EXAMPLE / "retrieval-baseline.json", project / "retrieval-baseline.json")
    shutil.copytree(EXAMPLE / "golden", project / "golden")
    shutil.copytree(EXAMPLE / "tests", project / "tests")
    lines = []
    for line in (EXAMPLE / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        metadata = record.pop("metadata", {})
        metadata.pop("superseded_by", None) if record["_id"] != "refund-policy-2024" else None
        if metadata:
            record["metadata"] = metadata
        lines.append(json.dumps(record))
    (project / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    status, output, document = run_example(tmp_path, cwd=project, env={"ACME_FRESHNESS": "off"})
    assert status == 1, output[-3000:]
    assert _failed_items(output) == {"retrieval-gates.yaml::stale_at_3_le_0"}, output[-3000:]
    named = re.findall(r"^  query ([\w-]+).*: ([\w-]+) at rank (\d+) \[reranker\]", output, re.M)
    # Hand count from the rankings: refund-policy-2024 is first for refund-window and second
    # for northwind-refund-window; 2 stale pages in 125 top-3 lists = 2 / (125 * 3).
    assert named == [
        ("refund-window", "refund-policy-2024", "1"),
        ("northwind-refund-window", "refund-policy-2024", "2"),
    ], output[-3000:]
    gate = next(g for g in document["gates"] if g["name"] == "stale@3<=0")
    assert gate["value"] == pytest.approx(2 / (125 * 3))


def test_the_corpus_metadata_is_checked_and_exported_and_a_typo_in_it_is_refused(
    tmp_path: Path,
) -> None:
    # corpus.jsonl is written from the front matter: the committed one must be current, or the
    # leak gates would read another corpus than the pipeline searches.
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(EXAMPLE), os.environ.get("PYTHONPATH", "")]),
    }
    for command in (["scripts/export_corpus.py", "--check"], ["scripts/check_golden.py"]):
        result = subprocess.run(
            [sys.executable, *command],
            cwd=EXAMPLE,
            env=environment,
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 0, result.stdout + result.stderr
    from acme_search.corpus import load_corpus

    # A mistyped key must not silently make a customer's page public, nor a typo in the
    # replacement's id leave an outdated page current.
    (tmp_path / "a.md").write_text("---\ntennant: initech\n---\n# A\nText.\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"a: front matter line 'tennant: initech' is not one of"):
        load_corpus(tmp_path)
    (tmp_path / "a.md").write_text(
        "---\nsuperseded_by: refund-polcy\n---\n# A\nText.\n", encoding="utf-8"
    )
    with pytest.raises(ValueError, match=r"a: superseded_by 'refund-polcy' is not in "):
        load_corpus(tmp_path)
