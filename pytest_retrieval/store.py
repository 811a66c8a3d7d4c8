"""The retriever-output cache: one SQLite file of rankings, keyed by everything that made them.

Calling an embedding API or re-embedding a golden set on every pytest run costs money and
minutes. The cache stores, per (stage, query), the ranking the retriever returned, so that a run
whose inputs did not change can be scored without calling it again.

Each row holds a :class:`~pytest_retrieval.cachekey.CacheKey`'s digest (any change of what made a
ranking is a miss, never a stale hit), the :class:`~pytest_retrieval.cachekey.CacheEntry` stored
under it and a checksum of both; what the key holds, and the entry's stored text, are
:mod:`pytest_retrieval.cachekey`'s. The names of that module are importable from here too.

Modes (``retrieval_cache``), implemented by the caller with :func:`mode_reads` and
:func:`mode_writes`:

* ``off`` (default): the cache file is not opened.
* ``use``: a hit is served from the cache (the retriever is not called, its latency is not
  measured); a miss calls the retriever and records the answer. A query whose retriever call
  failed is not recorded, so it is retried next time.
* ``refresh``: the retriever is called for every query and every answer overwrites its entry.
* ``replay``: the retriever is never called; every query must have an entry, otherwise the run
  stops before any gate naming the queries without one (:meth:`RunCache.missing`).

Concurrency: WAL mode with a busy timeout, each :meth:`RunCache.put_many` one transaction, so
pytest-xdist workers and two pytest processes can read and write one file at once; rows are
written with ``INSERT OR REPLACE`` on the key hash, so two writers of one key leave one row.

Damage: a file that is not an SQLite database (random bytes), an SQLite database of another
program, a cache of an unknown schema version, or a damaged file (truncated, a row whose checksum
does not match) raises :class:`CacheCorrupt` naming the file and the fix (delete it or run
``pytest-retrieval cache clear``). Nothing is ever returned from such a file; :meth:`RunCache.
rebuild` moves it aside and starts an empty cache.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from .cachekey import SCHEMA_VERSION as SCHEMA_VERSION
from .cachekey import CacheEntry as CacheEntry
from .cachekey import CacheKey as CacheKey
from .cachekey import corpus_fingerprint as corpus_fingerprint
from .cachekey import doc_id_fingerprint as doc_id_fingerprint
from .cachekey import entry_from_value, row_checksum
from .cachekey import keys_for as keys_for
from .cachekey import retriever_identity as retriever_identity
from .settings import DEFAULT_CACHE_DIR as DEFAULT_CACHE_DIR  # the folder's one definition

CacheMode = Literal["off", "use", "refresh", "replay"]
CACHE_MODES: tuple[CacheMode, ...] = ("off", "use", "refresh", "replay")

#: The file inside ``retrieval_cache_dir``.
CACHE_FILE_NAME = "runs.sqlite3"

#: ``PRAGMA application_id``: marks the file as ours ("prtv"), so a foreign database is refused.
APPLICATION_ID = 0x70727476
#: How long a writer waits for another process' lock before giving up (seconds).
BUSY_TIMEOUT_S = 60.0

_K = TypeVar("_K")


class CacheCorrupt(Exception):
    """The cache file cannot be trusted; its message names the file and the fix.

    The caller turns it into a warning and runs without the cache (or calls
    :meth:`RunCache.rebuild`); it is never read as results.
    """

    def __init__(
        self, path: str | os.PathLike[str], reason: str, *, fix: str | None = None
    ) -> None:
        self.path = os.fspath(path)
        self.reason = reason
        if fix is None:
            fix = (
                "delete the file or run `pytest-retrieval cache clear --cache-dir "
                f"{Path(self.path).parent}`"
            )
        self.fix = fix
        super().__init__(f"retrieval cache {self.path}: {reason}; it was not used ({fix})")


def mode_reads(mode: str) -> bool:
    """True when ``mode`` serves hits from the cache (``use``, ``replay``)."""
    return mode in ("use", "replay")


def mode_writes(mode: str) -> bool:
    """True when ``mode`` records the retriever's answers (``use``, ``refresh``)."""
    return mode in ("use", "refresh")


def cache_file(cache_dir: str | os.PathLike[str]) -> Path:
    """The cache file inside ``cache_dir`` (``retrieval_cache_dir``)."""
    return Path(cache_dir) / CACHE_FILE_NAME


# --- the store -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CacheStats:
    """What a cache holds, for ``pytest-retrieval cache show``."""

    path: str
    entries: int
    file_bytes: int
    by_stage: dict[str, int]
    by_retriever: dict[str, int]
    by_index_version: dict[str | None, int]
    oldest: float | None
    newest: float | None


_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS entries ("
    " key TEXT PRIMARY KEY,"
    " stage TEXT NOT NULL,"
    " retriever TEXT NOT NULL,"
    " index_version TEXT,"
    " key_json TEXT NOT NULL,"
    " value TEXT NOT NULL,"
    " checksum TEXT NOT NULL,"
    " created REAL NOT NULL"
    ") WITHOUT ROWID"
)

#: How many keys one SELECT asks for (well under SQLite's bound-parameter limit).
_CHUNK = 500


def _switch_to_wal(connection: sqlite3.Connection) -> str:
    """Switch the file to WAL and return the mode it is in. Switching needs no other connection
    in a transaction, and SQLite answers "locked" at once, without its busy timeout, while
    another process opens the same new file (xdist workers starting together): try again, for
    up to the busy timeout."""
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


class RunCache:
    """The cache file at ``path`` (created with its folder when missing).

    Raises :class:`CacheCorrupt` when the file is not a cache of this schema version or is
    damaged, here or from any later call. Use as a context manager or call :meth:`close`.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._connection: sqlite3.Connection | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CacheCorrupt(
                self.path, f"its folder cannot be created ({exc.strerror or exc})"
            ) from None
        if self.path.is_dir():
            raise CacheCorrupt(self.path, "is a directory, not a cache file")
        from .reading import not_a_regular_file

        kind = not_a_regular_file(self.path)
        if kind is not None:  # SQLite would wait on a FIFO, or read a device
            raise CacheCorrupt(self.path, f"is not a regular file but {kind}")
        self._connection = self._open()

    # Opening, with every way a file can fail to be ours turned into CacheCorrupt.

    def _open(self) -> sqlite3.Connection:
        try:
            # isolation_level=None: transactions are explicit (BEGIN IMMEDIATE below), so a
            # writer takes the write lock up front and waits on the busy timeout, instead of
            # deadlocking on a read lock upgraded to a write lock.
            connection = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise CacheCorrupt(self.path, f"cannot be opened ({exc})") from None
        try:
            self._check_and_initialise(connection)
        except BaseException:
            connection.close()
            raise
        return connection

    def _check_and_initialise(self, connection: sqlite3.Connection) -> None:
        with self._translating_errors():
            connection.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            # One read transaction, so the three reads see one state of the file: read one by
            # one, a cache another process creates meanwhile could show its tables without its
            # application id (read before it committed) and look like another program's file.
            connection.execute("BEGIN")
            try:
                application_id, version, tables = self._identity(connection)
            finally:
                connection.execute("COMMIT")
            if application_id == 0 and not tables:
                # A new (or empty) file: make it ours, once, under the write lock; another
                # process may be doing the same, hence the second look inside the lock.
                connection.execute("BEGIN IMMEDIATE")
                try:
                    application_id, version, tables = self._identity(connection)
                    if application_id == 0 and not tables:
                        connection.execute(_SCHEMA)
                        connection.execute(
                            "CREATE INDEX IF NOT EXISTS entries_stage ON entries(stage)"
                        )
                        connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                        connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                        application_id, version = APPLICATION_ID, SCHEMA_VERSION
                    connection.execute("COMMIT")
                except BaseException:
                    connection.execute("ROLLBACK")
                    raise
            if application_id != APPLICATION_ID:
                listed = ", ".join(sorted(tables)[:5]) or "none"
                raise CacheCorrupt(
                    self.path,
                    f"is an SQLite database of another program (tables: {listed}), not a "
                    "pytest-retrieval cache",
                )
            page_size = int(connection.execute("PRAGMA page_size").fetchone()[0])
            size = _file_bytes(self.path, wal=False)
            if size % page_size:
                # SQLite reads a cut last page as zeros and may not notice; we do.
                raise CacheCorrupt(
                    self.path,
                    f"is damaged: truncated ({size} bytes, not a whole number of "
                    f"{page_size}-byte pages)",
                )
            if version != SCHEMA_VERSION:
                raise CacheCorrupt(
                    self.path,
                    f"was written with cache schema version {version}; this version of "
                    f"pytest-retrieval reads version {SCHEMA_VERSION}",
                )
            # WAL: readers do not block the writer nor the writer the readers. The mode stays
            # with the file: only its first opener switches.
            mode = connection.execute("PRAGMA journal_mode").fetchone()[0]
            if str(mode).lower() != "wal":
                mode = _switch_to_wal(connection)
            if str(mode).lower() != "wal":  # pragma: no cover - e.g. a file system without mmap
                connection.execute("PRAGMA journal_mode = DELETE")
            connection.execute("PRAGMA synchronous = NORMAL")

    @staticmethod
    def _identity(connection: sqlite3.Connection) -> tuple[int, int, set[str]]:
        application_id = connection.execute("PRAGMA application_id").fetchone()[0]
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        tables = {
            row[0]
            for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"
            )
        }
        return int(application_id), int(version), tables

    @contextlib.contextmanager
    def _translating_errors(self) -> Iterator[None]:
        """Turn SQLite's "not a database" / "malformed" into CacheCorrupt naming the file."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                raise CacheCorrupt(
                    self.path,
                    f"stayed locked by another process for {BUSY_TIMEOUT_S:.0f} s ({exc})",
                    fix="look for a hung pytest process using the same cache, or try again",
                ) from None
            message = str(exc)
            if "not a database" in message:
                reason = "is not an SQLite database (a damaged or foreign file)"
            elif "malformed" in message or "corrupt" in message:
                reason = f"is damaged, e.g. truncated ({message})"
            else:
                reason = f"cannot be read ({message})"
            raise CacheCorrupt(self.path, reason) from None

    @property
    def _db(self) -> sqlite3.Connection:
        if self._connection is None:
            raise ValueError(f"the retrieval cache {self.path} is closed")
        return self._connection

    def close(self) -> None:
        """Close the file (idempotent)."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def __enter__(self) -> RunCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # Reading and writing.

    def get(self, key: CacheKey) -> CacheEntry | None:
        """The entry stored under ``key``, or None (a miss)."""
        return self.get_many({0: key}).get(0)

    def get_many(self, keys: Mapping[_K, CacheKey]) -> dict[_K, CacheEntry]:
        """The hits among ``keys`` (``{label: key}``), by label; misses are absent."""
        by_digest: dict[str, list[_K]] = {}
        for label, key in keys.items():
            by_digest.setdefault(key.digest, []).append(label)
        found: dict[_K, CacheEntry] = {}
        digests = list(by_digest)
        with self._translating_errors():
            for start in range(0, len(digests), _CHUNK):
                chunk = digests[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT key, value, checksum, created FROM entries WHERE key IN ({marks})",
                    chunk,
                ).fetchall()
                for digest, value, checksum, created in rows:
                    entry = self._verified(digest, value, checksum, created)
                    for label in by_digest[digest]:
                        found[label] = entry
        return found

    def _verified(self, digest: str, value: Any, checksum: Any, created: Any) -> CacheEntry:
        if not isinstance(value, str) or checksum != row_checksum(digest, value):
            raise CacheCorrupt(
                self.path, f"is damaged: the entry {digest[:12]} does not match its checksum"
            )
        try:
            return entry_from_value(value, created)
        except (ValueError, TypeError) as exc:
            raise CacheCorrupt(
                self.path, f"is damaged: the entry {digest[:12]} cannot be read ({exc})"
            ) from None

    def missing(self, keys: Mapping[_K, CacheKey]) -> list[_K]:
        """The labels of ``keys`` that have no entry, in the order given (for ``replay``)."""
        hits = self.get_many(keys)
        return [label for label in keys if label not in hits]

    def put(self, key: CacheKey, entry: CacheEntry) -> None:
        """Store ``entry`` under ``key``, replacing any entry there."""
        self.put_many([(key, entry)])

    def put_many(self, items: Iterable[tuple[CacheKey, CacheEntry]]) -> int:
        """Store every (key, entry) in one transaction; return how many were written."""
        now = time.time()
        rows = []
        for key, entry in items:
            digest, value = key.digest, entry.to_value()
            key_json = json.dumps(key.to_dict(), sort_keys=True, ensure_ascii=False)
            rows.append(
                (
                    digest,
                    key.stage,
                    key.retriever,
                    key.index_version,
                    key_json,
                    value,
                    row_checksum(digest, value),
                    now,
                )
            )
        if not rows:
            return 0
        with self._translating_errors():
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(
                    "INSERT OR REPLACE INTO entries (key, stage, retriever, index_version, "
                    "key_json, value, checksum, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )
                self._db.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
                raise
        return len(rows)

    def __len__(self) -> int:
        with self._translating_errors():
            return int(self._db.execute("SELECT COUNT(*) FROM entries").fetchone()[0])

    def stats(self) -> CacheStats:
        """Counts per stage, retriever identity and index version; oldest/newest entry."""

        def counts(column: str) -> dict[Any, int]:
            rows = self._db.execute(
                f"SELECT {column}, COUNT(*) FROM entries GROUP BY {column} ORDER BY {column}"
            )
            return {value: int(n) for value, n in rows}

        with self._translating_errors():
            total, oldest, newest = self._db.execute(
                "SELECT COUNT(*), MIN(created), MAX(created) FROM entries"
            ).fetchone()
            by_stage = counts("stage")
            by_retriever = counts("retriever")
            by_version = counts("index_version")
        return CacheStats(
            path=str(self.path),
            entries=int(total),
            file_bytes=_file_bytes(self.path),
            by_stage=by_stage,
            by_retriever=by_retriever,
            by_index_version=by_version,
            oldest=oldest,
            newest=newest,
        )

    def check(self) -> None:
        """A full integrity check of the file (slow on a big cache: for ``cache show``)."""
        with self._translating_errors():
            rows = [row[0] for row in self._db.execute("PRAGMA quick_check")]
            if rows != ["ok"]:
                raise CacheCorrupt(self.path, f"is damaged ({'; '.join(map(str, rows[:3]))})")
            for digest, value, checksum, created in self._db.execute(
                "SELECT key, value, checksum, created FROM entries"
            ):
                self._verified(digest, value, checksum, created)

    def clear(self) -> int:
        """Delete every entry; return how many there were."""
        with self._translating_errors():
            self._db.execute("BEGIN IMMEDIATE")
            try:
                count = int(self._db.execute("SELECT COUNT(*) FROM entries").fetchone()[0])
                self._db.execute("DELETE FROM entries")
                self._db.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
                raise
            self._db.execute("VACUUM")
        return count

    @classmethod
    def rebuild(cls, path: str | os.PathLike[str]) -> RunCache:
        """Move a damaged file aside (``<name>.corrupt``, replacing an older one) and open an
        empty cache in its place. Only for a file :class:`CacheCorrupt` was raised about."""
        target = Path(path)
        remove_cache_file(target, keep_as=target.with_name(target.name + ".corrupt"))
        return cls(target)


def remove_cache_file(path: str | os.PathLike[str], *, keep_as: Path | None = None) -> bool:
    """Delete the cache file and its WAL/shared-memory companions, whatever their state; or
    rename the main file to ``keep_as``. Return whether a main file was there."""
    target = Path(path)
    existed = target.exists()
    if existed:
        if keep_as is not None:
            os.replace(target, keep_as)
        else:
            target.unlink()
    for suffix in ("-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            target.with_name(target.name + suffix).unlink()
    return existed


def _file_bytes(path: Path, *, wal: bool = True) -> int:
    total = 0
    for candidate in (path, path.with_name(path.name + "-wal"))[: 2 if wal else 1]:
        with contextlib.suppress(OSError):
            total += candidate.stat().st_size
    return total
