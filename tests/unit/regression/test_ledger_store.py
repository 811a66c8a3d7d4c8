"""The ledger file: concurrent writers, a killed writer, damage, merging and pruning.

The ledger is real SQLite written by real processes: two processes recording at once must both
land, a writer killed with SIGKILL in the middle of its writes must leave every entry whole or
absent, and a damaged or foreign file must be refused by name, never read as history.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from paths import ROOT

from pytest_retrieval.cli import main
from pytest_retrieval.regression.commitinfo import CommitInfo
from pytest_retrieval.regression.ledger import Ledger, LedgerEntry, LedgerError

WRITER = textwrap.dedent(
    """\
    import sys
    from pytest_retrieval.regression.commitinfo import CommitInfo
    from pytest_retrieval.regression.ledger import Ledger, LedgerEntry

    path, name, count, queries = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    snapshot = {
        "queries": {
            f"q{i}": {"top": {"retriever": [f"{name}-doc-{i}-{j}" for j in range(50)]}}
            for i in range(queries)
        }
    }
    with Ledger(path) as ledger:
        i = 0
        while count == 0 or i < count:
            commit = CommitInfo(commit=f"{name}{i:06d}".ljust(40, "0"), parent=None,
                                branch=name, dirty=False)
            ledger.add(LedgerEntry(commit=commit, status="ok", created="2026-01-01T00:00:00Z",
                                   snapshot=snapshot, uid=f"{name}-{i}"))
            print(i, flush=True)
            i += 1
    """
)


def writer(
    tmp_path: Path, path: Path, name: str, count: int, queries: int
) -> subprocess.Popen[str]:
    script = tmp_path / "writer.py"
    script.write_text(WRITER, encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.Popen(
        [sys.executable, str(script), str(path), name, str(count), str(queries)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )


def entry(name: str, *, commit: str | None = None, status: str = "ok") -> LedgerEntry:
    return LedgerEntry(
        commit=CommitInfo(
            commit=commit or name.ljust(40, "0"), parent=None, branch="main", dirty=False
        ),
        status=status,
        created="2026-01-01T00:00:00Z",
        snapshot={"queries": {}} if status == "ok" else None,
        uid=name,
    )


def test_two_processes_recording_into_one_new_ledger_at_once_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"  # new: both processes race to create it, too
    first = writer(tmp_path, path, "a", 150, 20)
    second = writer(tmp_path, path, "b", 150, 20)
    assert first.wait(timeout=300) == 0
    assert second.wait(timeout=300) == 0
    with Ledger(path, create=False) as ledger:
        ledger.check()
        found = ledger.entries()
    assert sorted(e.uid for e in found) == sorted(
        [f"a-{i}" for i in range(150)] + [f"b-{i}" for i in range(150)]
    )
    # Each writer's own entries are in its order (one transaction per entry).
    for name in "ab":
        mine = [e.uid for e in found if e.commit.branch == name]
        assert mine == [f"{name}-{i}" for i in range(150)]


def test_a_writer_killed_mid_write_leaves_the_ledger_readable_and_each_entry_whole(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.sqlite3"
    # Large entries (3,000 queries x 50 ids each), killed at five different moments: each kill
    # lands in some step of an entry's write (encoding, compressing, SQLite's transaction).
    kept: list[str] = []
    for round, delay in enumerate((0.0, 0.02, 0.05, 0.1, 0.17)):
        name = f"k{round}"
        process = writer(tmp_path, path, name, 0, 3000)
        assert process.stdout is not None
        reported: list[int] = []
        deadline = time.monotonic() + 120
        while len(reported) < 2 and time.monotonic() < deadline:
            line = process.stdout.readline()
            if line:
                reported.append(int(line))
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        assert process.returncode == -signal.SIGKILL
        assert reported == [0, 1]
        with Ledger(path) as ledger:
            ledger.check()  # every row matches its checksum: no half-written entry
            found = [e.uid for e in ledger.entries()]
            for item in ledger.entries():
                assert item.snapshot is not None
                assert len(item.snapshot["queries"]) == 3000
        # Every reported entry is there; a later one is whole or absent.
        mine = [uid for uid in found if uid.startswith(f"{name}-")]
        assert mine[:2] == [f"{name}-0", f"{name}-1"]
        assert mine == [f"{name}-{i}" for i in range(len(mine))]
        assert found[: len(kept)] == kept
        kept = found


def test_a_damaged_or_foreign_file_is_refused_by_name(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.sqlite3"
    garbage.write_bytes(os.urandom(8192))
    with pytest.raises(LedgerError, match="is not an SQLite database"):
        Ledger(garbage)
    foreign = tmp_path / "foreign.sqlite3"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE invoices (id INTEGER)")
    with pytest.raises(LedgerError, match=r"another program \(tables: invoices\)"):
        Ledger(foreign)
    tampered = tmp_path / "tampered.sqlite3"
    with Ledger(tampered) as ledger:
        ledger.add(entry("one"))
    with sqlite3.connect(tampered) as db:
        db.execute("UPDATE entries SET document = X'00'")
    with (
        Ledger(tampered) as ledger,
        pytest.raises(LedgerError, match="does not match its checksum"),
    ):
        ledger.entries()
    folder = tmp_path / "folder"
    folder.mkdir()
    with pytest.raises(LedgerError, match="is a directory"):
        Ledger(folder)


def test_only_ok_runs_on_a_clean_tree_are_usable(tmp_path: Path) -> None:
    with Ledger(tmp_path / "l.sqlite3") as ledger:
        commit = "c" * 40
        ledger.add(entry("ok-1", commit=commit))
        ledger.add(entry("failed", commit=commit, status="failed"))
        ledger.add(entry("refused", commit=commit, status="refused"))
        dirty = entry("dirty", commit=commit)
        ledger.add(
            LedgerEntry(
                commit=CommitInfo(commit=commit, parent=None, branch="main", dirty=True),
                status="ok",
                created=dirty.created,
                snapshot={"queries": {}},
                uid="dirty",
            )
        )
        latest = ledger.latest_usable(commit)
        assert latest is not None
        assert latest.uid == "ok-1"
        assert [e.uid for e in ledger.entries(commits=[commit])] == [
            "ok-1",
            "failed",
            "refused",
            "dirty",
        ]
        assert ledger.recorded_commits([commit, "d" * 40]) == {commit}


def test_merging_two_ledgers_joins_their_entries_once_and_keeps_our_labels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    mine, theirs = tmp_path / "mine.sqlite3", tmp_path / "theirs.sqlite3"
    with Ledger(mine) as ledger:
        ledger.add_many([entry("e1"), entry("e2")])
        ledger.set_label("v1", "a" * 40)
    with Ledger(theirs) as ledger:
        ledger.add_many([entry("e2"), entry("e3")])
        ledger.set_label("v1", "b" * 40)
        ledger.set_label("v2", "c" * 40)
    monkeypatch.chdir(tmp_path)
    assert main(["ledger", "merge", "--ledger", str(mine), str(theirs)]) == 0
    out = capsys.readouterr().out
    assert "1 entry added, 1 already there" in out
    assert "labels kept as they were here (they name another commit there): v1" in out
    with Ledger(mine) as ledger:
        assert [e.uid for e in ledger.entries()] == ["e1", "e2", "e3"]
        assert ledger.labels() == {"v1": "a" * 40, "v2": "c" * 40}


def test_pruning_keeps_the_newest_entries_and_every_labelled_anchor(tmp_path: Path) -> None:
    with Ledger(tmp_path / "l.sqlite3") as ledger:
        ledger.add_many([entry(f"e{i}", commit=str(i) * 40) for i in range(1, 7)])
        ledger.set_label("release", "2" * 40)
        removed = ledger.prune(2, protect=["4" * 40])
        assert removed == 2  # e1 and e3
        assert [e.uid for e in ledger.entries()] == ["e2", "e4", "e5", "e6"]
        ledger.check()
