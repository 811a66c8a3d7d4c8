"""What a ledger entry holds: the held-out seal holds in the ledger too, and a refused run is
recorded as such with no numbers."""

from __future__ import annotations

import sqlite3
import zlib
from pathlib import Path

from ledger_helpers import GOLDEN, GOOD, GitProject

from pytest_retrieval.regression.ledger import Ledger

HELDOUT = (
    "  - id: qzebra\n    text: question number zebra\n    relevant: [dzebra]\n    split: heldout\n"
)


def documents(path: Path) -> list[str]:
    """Every entry's stored document, decompressed, as text."""
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT document FROM entries ORDER BY seq").fetchall()
    return [zlib.decompress(row[0]).decode("utf-8") for row in rows]


def test_held_out_queries_never_enter_the_ledger_with_per_query_detail(tmp_path: Path) -> None:
    project = GitProject.create(
        tmp_path / "repo", tmp_path / "home", rankings={**GOOD, "qzebra": ["dzebra", "x"]}
    )
    (project.path / "golden.yaml").write_text(GOLDEN + HELDOUT, encoding="utf-8")
    project.commit("a held-out query")
    sealed = project.pytest()
    assert sealed.returncode == 0, sealed.stdout
    unsealed = project.pytest("--retrieval-heldout")
    assert unsealed.returncode == 0, unsealed.stdout
    stored = documents(project.path / ".retrieval-ledger.sqlite3")
    assert len(stored) == 2
    for text in stored:
        assert "qzebra" not in text
        assert "dzebra" not in text
        assert "zebra" not in text
    with Ledger(project.path / ".retrieval-ledger.sqlite3") as ledger:
        first, second = ledger.entries()
    assert first.snapshot is not None
    assert second.snapshot is not None
    assert sorted(first.snapshot["queries"]) == [f"q{i}" for i in range(1, 9)]
    assert first.snapshot["heldout"] == {}
    # Unsealed: the held-out split's means only (one query, RR 1).
    assert second.snapshot["heldout"]["retriever"]["n"] == 1
    assert second.snapshot["heldout"]["retriever"]["means"]["mrr"] == 1.0


def test_a_refused_run_is_recorded_with_its_reason_and_no_numbers(tmp_path: Path) -> None:
    # No retriever_under_test fixture and no retrieval_retriever: the run is refused (exit 4).
    project = GitProject.create(tmp_path / "repo", tmp_path / "home")
    (project.path / "conftest.py").write_text("", encoding="utf-8")
    project.commit("the retriever fixture is gone")
    run = project.pytest()
    assert run.returncode == 4, run.stdout
    assert "in the ledger .retrieval-ledger.sqlite3 as refused: never used as a baseline" in (
        run.stdout
    )
    with Ledger(project.path / ".retrieval-ledger.sqlite3") as ledger:
        (entry,) = ledger.entries()
    assert (entry.status, entry.snapshot, entry.means, entry.usable) == ("refused", None, {}, False)
    assert entry.reason is not None
    assert "retriever" in entry.reason
