"""The run ledger: one SQLite file of recorded runs, keyed by commit.

A run recorded with ``--retrieval-ledger=PATH`` (``retrieval_ledger``) becomes one
:class:`LedgerEntry`: the commit and where it came from
(:class:`~pytest_retrieval.regression.commitinfo.CommitInfo`: parent, branch, merge-base, dirty
flag, the CI run's id and attempt), the run's status, the golden fingerprint, the index
version, the settings that change numbers, the means, and the run's snapshot
(:mod:`pytest_retrieval.regression.snapshot`: per query and stage
every metric, the relevant ranks and the ranking to the retrieval depth, so an entry can be
re-scored under new labels) with each ranking's scores. Per-query data is kept only for the queries
a baseline may hold: the held-out split enters by its means, and only when it was unsealed.

**Which entries can be a baseline.** Only a run that scored every query (``status`` ``ok``) on a
clean work tree (:attr:`LedgerEntry.usable`). Refused, errored and failed runs are recorded,
with their status and reason, so the history shows them; a run on a dirty tree is recorded with
``dirty`` set. Neither is ever chosen as a baseline or an anchor.

**The file.** SQLite in WAL mode with a busy timeout; every write is one ``BEGIN IMMEDIATE``
transaction, so two processes (or two CI jobs on one machine) recording at once both land, and
a writer killed mid-write leaves the entry whole or absent (SQLite's journal). Each row holds
its document compressed (zlib) and a checksum over it: a row that does not match, a file that is
not SQLite, another program's database or another schema version raises :class:`LedgerError`
naming the file and the fix; nothing is read from such a file. The first opener of a new file
creates the schema under the write lock and looks again inside it, so two processes creating
the same file at once do not take each other's tables for a foreign database.

**Labels.** A label names a commit (``pytest-retrieval ledger label v1.2 REV``), for
``since=`` budgets whose anchor is not a tag.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import time
import uuid
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import InputError, Problem
from .commitinfo import CommitInfo

#: ``PRAGMA application_id`` of a ledger ("prtl"): a foreign database is refused.
APPLICATION_ID = 0x7072746C
#: The ledger's schema version (``PRAGMA user_version``).
SCHEMA_VERSION = 1
#: The version of an entry's document.
ENTRY_VERSION = 1
#: How long a writer waits for another process' lock (seconds).
BUSY_TIMEOUT_S = 60.0

#: A run's status in the ledger: ``ok`` scored every query; the others never make a baseline.
OK = "ok"
FAILED = "failed"
STATUSES = (OK, FAILED, "refused", "errored")

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS entries ("
    " seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    " uid TEXT NOT NULL UNIQUE,"
    " commit_id TEXT NOT NULL,"
    " branch TEXT,"
    " status TEXT NOT NULL,"
    " dirty INTEGER NOT NULL,"
    " created TEXT NOT NULL,"
    " document BLOB NOT NULL,"
    " checksum TEXT NOT NULL"
    ")",
    "CREATE INDEX IF NOT EXISTS entries_commit ON entries(commit_id)",
    "CREATE TABLE IF NOT EXISTS labels ("
    " name TEXT PRIMARY KEY,"
    " commit_id TEXT NOT NULL,"
    " created TEXT NOT NULL"
    ")",
)


class LedgerError(InputError):
    """The ledger cannot be used: damaged, foreign, locked, or a path that is no file."""


def now_utc() -> str:
    """The current UTC time as the ledger writes it (``2026-12-01T09:30:00Z``)."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """One recorded run."""

    commit: CommitInfo
    status: str
    created: str
    plugin_version: str = ""
    fingerprint: str | None = None
    index_version: str | None = None
    #: The settings that change numbers (with the retrieval depth and the duplicate groups).
    settings: Mapping[str, Any] = field(default_factory=dict)
    #: stage -> "overall" / "slice:<name>" -> metric -> mean (``ok`` entries only).
    means: Mapping[str, Mapping[str, Mapping[str, float | None]]] = field(default_factory=dict)
    #: The run's snapshot document (:meth:`.Snapshot.to_dict`), ``ok`` entries only.
    snapshot: Mapping[str, Any] | None = None
    #: query id -> stage -> the ranking's scores (where the retriever gave them).
    scores: Mapping[str, Mapping[str, Sequence[float | None]]] = field(default_factory=dict)
    #: Why a refused, errored or failed run has no baseline-worthy numbers.
    reason: str | None = None
    #: What the run was recorded as (``ledger record --at v1.2``: ``v1.2``), if anything.
    label: str | None = None
    #: The run's regression checks: name, status, delta and which baseline (the headroom
    #: warning reads them).
    checks: Sequence[Mapping[str, Any]] = ()
    uid: str = field(default_factory=lambda: uuid.uuid4().hex)
    #: The row's position in its ledger (None before it is stored).
    seq: int | None = None

    @property
    def usable(self) -> bool:
        """True when the entry can be a baseline: it scored every query on a clean tree."""
        return self.status == OK and not self.commit.dirty and self.snapshot is not None

    @property
    def short(self) -> str:
        return self.commit.short

    def to_dict(self) -> dict[str, Any]:
        """The entry's document (builtins)."""
        return {
            "version": ENTRY_VERSION,
            "uid": self.uid,
            "commit": self.commit.to_dict(),
            "status": self.status,
            "created": self.created,
            "plugin_version": self.plugin_version,
            "fingerprint": self.fingerprint,
            "index_version": self.index_version,
            "settings": dict(self.settings),
            "means": self.means,
            "snapshot": self.snapshot,
            "scores": self.scores,
            "reason": self.reason,
            "label": self.label,
            "checks": list(self.checks),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, seq: int | None = None) -> LedgerEntry:
        """Inverse of :meth:`to_dict` (KeyError/TypeError/ValueError on a foreign shape)."""
        if data.get("version") != ENTRY_VERSION:
            raise ValueError(f"entry version {data.get('version')!r}")
        status = str(data["status"])
        if status not in STATUSES:
            raise ValueError(f"unknown status {status!r}")
        snapshot = data.get("snapshot")
        if snapshot is not None and not isinstance(snapshot, Mapping):
            raise TypeError("snapshot is not an object")
        return cls(
            commit=CommitInfo.from_dict(data["commit"]),
            status=status,
            created=str(data["created"]),
            plugin_version=str(data.get("plugin_version") or ""),
            fingerprint=data.get("fingerprint"),
            index_version=data.get("index_version"),
            settings=dict(data.get("settings") or {}),
            means=dict(data.get("means") or {}),
            snapshot=snapshot,
            scores=dict(data.get("scores") or {}),
            reason=data.get("reason"),
            label=data.get("label"),
            checks=tuple(data.get("checks") or ()),
            uid=str(data["uid"]),
            seq=seq,
        )


def _encode(entry: LedgerEntry) -> bytes:
    text = json.dumps(entry.to_dict(), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return zlib.compress(text.encode("utf-8"), 6)


def _checksum(uid: str, document: bytes) -> str:
    return hashlib.sha256(uid.encode("utf-8") + b"\0" + document).hexdigest()


def _switch_to_wal(connection: sqlite3.Connection) -> str:
    """Switch to WAL; SQLite answers "locked" at once (without its busy timeout) while another
    process opens the same new file, so try again for up to the busy timeout."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    delay = 0.005
    while True:
        try:
            return str(connection.execute("PRAGMA journal_mode = WAL").fetchone()[0])
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.1)


class Ledger:
    """The ledger file at ``path`` (created with its folder unless ``create`` is false).

    Raises :class:`LedgerError` when the file is not a ledger of this schema version or is
    damaged. Use as a context manager or call :meth:`close`.
    """

    def __init__(self, path: str | os.PathLike[str], *, create: bool = True) -> None:
        self.path = Path(path)
        self._connection: sqlite3.Connection | None = None
        if self.path.is_dir():
            raise self._error("is a directory, not a ledger file", fix="name a file")
        if not create and not self.path.exists():
            raise self._error(
                "does not exist",
                fix="record a run first (pytest --retrieval-ledger=PATH, or "
                "pytest-retrieval ledger record --at REV)",
            )
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise self._error(f"its folder cannot be created ({exc.strerror or exc})") from None
        try:
            # isolation_level=None: explicit transactions (BEGIN IMMEDIATE takes the write lock
            # up front and waits on the busy timeout instead of deadlocking on an upgrade).
            connection = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise self._error(f"cannot be opened ({exc})") from None
        try:
            self._initialise(connection)
        except BaseException:
            connection.close()
            raise
        self._connection = connection

    def _error(self, reason: str, *, fix: str | None = None) -> LedgerError:
        return LedgerError(
            Problem(
                f"the run ledger {reason}",
                fix=fix
                or "restore it (a CI cache or artifact) or move it aside; a new ledger starts "
                "empty, and `pytest-retrieval ledger record --at REV` fills in a baseline",
                source=str(self.path),
            )
        )

    @staticmethod
    def _identity(connection: sqlite3.Connection) -> tuple[int, int, set[str]]:
        application_id = int(connection.execute("PRAGMA application_id").fetchone()[0])
        version = int(connection.execute("PRAGMA user_version").fetchone()[0])
        tables = {
            row[0]
            for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"
            )
        }
        return application_id, version, tables

    def _initialise(self, connection: sqlite3.Connection) -> None:
        with self._translating():
            connection.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            # One read transaction: the identity of one state of the file (read piecemeal, a
            # ledger being created by another process could show tables without its id).
            connection.execute("BEGIN")
            try:
                application_id, version, tables = self._identity(connection)
            finally:
                connection.execute("COMMIT")
            if application_id == 0 and not tables:
                connection.execute("BEGIN IMMEDIATE")
                try:
                    application_id, version, tables = self._identity(connection)
                    if application_id == 0 and not tables:  # still new, under the lock
                        for statement in _SCHEMA:
                            connection.execute(statement)
                        connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                        connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                        application_id, version = APPLICATION_ID, SCHEMA_VERSION
                    connection.execute("COMMIT")
                except BaseException:
                    with contextlib.suppress(sqlite3.Error):
                        connection.execute("ROLLBACK")
                    raise
            if application_id != APPLICATION_ID:
                listed = ", ".join(sorted(tables)[:5]) or "none"
                raise self._error(
                    f"is an SQLite database of another program (tables: {listed}), not a "
                    "pytest-retrieval ledger",
                    fix="point retrieval_ledger at another file",
                )
            if version != SCHEMA_VERSION:
                raise self._error(
                    f"was written with ledger schema version {version}; this version of "
                    f"pytest-retrieval reads version {SCHEMA_VERSION}",
                    fix="use the pytest-retrieval version that wrote it, or start a new ledger",
                )
            page_size = int(connection.execute("PRAGMA page_size").fetchone()[0])
            size = self.path.stat().st_size if self.path.exists() else 0
            if size % page_size:  # SQLite may read a cut last page as zeros; we do not
                raise self._error(
                    f"is damaged: truncated ({size} bytes, not a whole number of "
                    f"{page_size}-byte pages)"
                )
            mode = str(connection.execute("PRAGMA journal_mode").fetchone()[0]).lower()
            if mode != "wal":
                mode = _switch_to_wal(connection).lower()
            if mode != "wal":  # pragma: no cover - a file system without shared memory
                connection.execute("PRAGMA journal_mode = DELETE")
            # FULL: a recorded entry survives a power cut (a ledger is history, not a cache).
            connection.execute("PRAGMA synchronous = FULL")

    @contextlib.contextmanager
    def _translating(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.DatabaseError as exc:
            message = str(exc)
            if isinstance(exc, sqlite3.OperationalError) and "locked" in message:
                raise self._error(
                    f"stayed locked by another process for {BUSY_TIMEOUT_S:.0f} s ({message})",
                    fix="look for a hung process recording into the same ledger, or try again",
                ) from None
            if "not a database" in message:
                reason = "is not an SQLite database (a damaged or foreign file)"
            elif "malformed" in message or "corrupt" in message:
                reason = f"is damaged ({message})"
            else:
                reason = f"cannot be read ({message})"
            raise self._error(reason) from None

    @property
    def _db(self) -> sqlite3.Connection:
        if self._connection is None:
            raise ValueError(f"the ledger {self.path} is closed")
        return self._connection

    def close(self) -> None:
        """Close the file (idempotent)."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        with self._translating():
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
                raise

    # --- entries ----------------------------------------------------------------------------

    def add(self, entry: LedgerEntry) -> LedgerEntry:
        """Store ``entry`` (one transaction) and return it with its position."""
        return self.add_many([entry])[0]

    def add_many(self, entries: Iterable[LedgerEntry]) -> list[LedgerEntry]:
        """Store every entry in one transaction; entries whose uid is already stored are
        skipped (what ``ledger merge`` relies on). Returns the stored ones."""
        stored: list[LedgerEntry] = []
        with self._writing() as db:
            for entry in entries:
                document = _encode(entry)
                cursor = db.execute(
                    "INSERT OR IGNORE INTO entries (uid, commit_id, branch, status, dirty, "
                    "created, document, checksum) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        entry.uid,
                        entry.commit.commit,
                        entry.commit.branch,
                        entry.status,
                        int(entry.commit.dirty),
                        entry.created,
                        document,
                        _checksum(entry.uid, document),
                    ),
                )
                if cursor.rowcount:
                    stored.append(replace(entry, seq=cursor.lastrowid))
        return stored

    def _decoded(self, seq: int, uid: Any, document: Any, checksum: Any) -> LedgerEntry:
        if not isinstance(document, bytes) or checksum != _checksum(str(uid), document):
            raise self._error(f"is damaged: entry {seq} does not match its checksum")
        try:
            data = json.loads(zlib.decompress(document).decode("utf-8"))
            entry = LedgerEntry.from_dict(data, seq=seq)
        except (ValueError, TypeError, KeyError, zlib.error, RecursionError) as exc:
            raise self._error(f"is damaged: entry {seq} cannot be read ({exc})") from None
        if entry.uid != uid:
            raise self._error(f"is damaged: entry {seq} holds another entry's document")
        return entry

    def entries(
        self,
        *,
        commits: Sequence[str] | None = None,
        usable: bool = False,
        branch: str | None = None,
        last: int | None = None,
    ) -> list[LedgerEntry]:
        """Entries in recording order (oldest first): of ``commits`` only, ``usable`` ones only,
        of one ``branch``; ``last``: only the newest N of those."""
        where: list[str] = []
        params: list[Any] = []
        if commits is not None:
            if not commits:
                return []
            where.append(f"commit_id IN ({','.join('?' * len(commits))})")
            params.extend(commits)
        if usable:
            where.append("status = ? AND dirty = 0")
            params.append(OK)
        if branch is not None:
            where.append("branch = ?")
            params.append(branch)
        query = "SELECT seq, uid, document, checksum FROM entries"
        if where:
            query += " WHERE " + " AND ".join(where)
        query += " ORDER BY seq DESC"
        if last is not None:
            query += f" LIMIT {int(last)}"
        with self._translating():
            rows = self._db.execute(query, params).fetchall()
        found = [self._decoded(*row) for row in reversed(rows)]
        return [e for e in found if e.usable] if usable else found

    def latest_usable(self, commit: str) -> LedgerEntry | None:
        """The newest entry of ``commit`` that can be a baseline, or None."""
        found = self.entries(commits=[commit], usable=True)
        return found[-1] if found else None

    def recorded_commits(self, commits: Sequence[str]) -> set[str]:
        """Which of ``commits`` have a usable entry (one query for a whole chain)."""
        found: set[str] = set()
        with self._translating():
            for start in range(0, len(commits), 500):
                chunk = list(commits[start : start + 500])
                rows = self._db.execute(
                    f"SELECT DISTINCT commit_id FROM entries WHERE status = ? AND dirty = 0 "
                    f"AND commit_id IN ({','.join('?' * len(chunk))})",
                    [OK, *chunk],
                ).fetchall()
                found.update(str(r[0]) for r in rows)
        return found

    def __len__(self) -> int:
        with self._translating():
            return int(self._db.execute("SELECT COUNT(*) FROM entries").fetchone()[0])

    def check(self) -> None:
        """Read every row back (SQLite's integrity check, then each row's checksum)."""
        with self._translating():
            rows = [row[0] for row in self._db.execute("PRAGMA quick_check")]
            if rows != ["ok"]:
                raise self._error(f"is damaged ({'; '.join(map(str, rows[:3]))})")
            for row in self._db.execute("SELECT seq, uid, document, checksum FROM entries"):
                self._decoded(*row)

    # --- labels -----------------------------------------------------------------------------

    def set_label(self, name: str, commit: str) -> None:
        """Name ``commit`` ``name`` (replacing what the name pointed to)."""
        with self._writing() as db:
            db.execute(
                "INSERT OR REPLACE INTO labels (name, commit_id, created) VALUES (?, ?, ?)",
                (name, commit, now_utc()),
            )

    def labels(self) -> dict[str, str]:
        """Every label and the commit it names."""
        with self._translating():
            rows = self._db.execute("SELECT name, commit_id FROM labels ORDER BY name").fetchall()
        return {str(name): str(commit) for name, commit in rows}

    # --- upkeep -----------------------------------------------------------------------------

    def merge_from(self, other: Ledger) -> tuple[int, int, list[str]]:
        """Copy ``other``'s entries and labels into this ledger (every row checked first).
        Returns (entries added, entries already here, labels kept as they were here because
        they name another commit in ``other``)."""
        incoming = other.entries()
        stored = self.add_many(incoming)
        mine = self.labels()
        conflicts = []
        with self._writing() as db:
            for name, commit in other.labels().items():
                if name in mine and mine[name] != commit:
                    conflicts.append(name)
                    continue
                db.execute(
                    "INSERT OR IGNORE INTO labels (name, commit_id, created) VALUES (?, ?, ?)",
                    (name, commit, now_utc()),
                )
        return len(stored), len(incoming) - len(stored), conflicts

    def prune(self, keep: int, *, protect: Iterable[str] = ()) -> int:
        """Delete all but the newest ``keep`` entries, except the newest usable entry of each
        labelled commit and of each commit in ``protect`` (tagged ones: an anchor is never
        pruned away); return how many were deleted."""
        labelled = set(self.labels().values()) | set(protect)
        with self._writing() as db:
            newest = {
                int(row[0])
                for row in db.execute(
                    "SELECT seq FROM entries ORDER BY seq DESC LIMIT ?", (max(keep, 0),)
                )
            }
            anchors = set()
            for commit in labelled:
                row = db.execute(
                    "SELECT MAX(seq) FROM entries WHERE commit_id = ? AND status = ? AND dirty = 0",
                    (commit, OK),
                ).fetchone()
                if row and row[0] is not None:
                    anchors.add(int(row[0]))
            doomed = [
                int(row[0])
                for row in db.execute("SELECT seq FROM entries")
                if int(row[0]) not in newest | anchors
            ]
            for start in range(0, len(doomed), 500):
                chunk = doomed[start : start + 500]
                db.execute(
                    f"DELETE FROM entries WHERE seq IN ({','.join('?' * len(chunk))})", chunk
                )
        if doomed:
            with self._translating():
                self._db.execute("VACUUM")
        return len(doomed)
