"""The retriever-output cache: one SQLite file of rankings, keyed by everything that made them.

Calling an embedding API or re-embedding a golden set on every pytest run costs money and
minutes. The cache stores, per (stage, query), the ranking the retriever returned, so that a run
whose inputs did not change can be scored without calling it again.

Each row holds a :class:`~pytest_retrieval.run.cachekey.CacheKey`'s digest (any change of what made
a ranking is a miss, never a stale hit), the :class:`~pytest_retrieval.run.cachekey.CacheEntry`
stored under it and a checksum of both; what the key holds, and the entry's stored text, are
:mod:`pytest_retrieval.run.cachekey`'s.

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
does not match) raises :class:`CacheCorrupt` naming the file, what it is (:attr:`CacheCorrupt.
kind`) and the fix. Nothing is ever returned from such a file.

Ownership: pytest-retrieval deletes or moves aside only a file it can tell it wrote: an SQLite
file carrying its ``application_id`` in the header (:func:`is_our_cache`), damaged or of
another schema version (``kind == "damaged"``; :meth:`RunCache.rebuild`, ``cache clear``).
Another program's SQLite database (``"foreign"``) and a file that is not SQLite at all
(``"unknown"``: nothing says whose it is) are never deleted nor moved: the message says to move
it away or to point ``retrieval_cache_dir`` at another folder.

Read-only: a cache in a folder (or a file) that cannot be written is opened read-only
(:attr:`RunCache.read_only`): hits are served, nothing is stored, and the messages say
"read-only", never "damaged". A cache that does not exist yet in a read-only folder is
``kind == "read-only"``: there is nothing to read, and it cannot be created.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sqlite3
import stat
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from .cachekey import (
    SCHEMA_VERSION,
    CacheEntry,
    CacheKey,
    entry_from_value,
    row_checksum,
)

CacheMode = Literal["off", "use", "refresh", "replay"]
CACHE_MODES: tuple[CacheMode, ...] = ("off", "use", "refresh", "replay")

#: The file inside ``retrieval_cache_dir``.
CACHE_FILE_NAME = "runs.sqlite3"

#: ``PRAGMA application_id``: marks the file as ours ("prtv"), so a foreign database is refused.
APPLICATION_ID = 0x70727476
#: How long a writer waits for another process' lock before giving up (seconds).
BUSY_TIMEOUT_S = 60.0

_K = TypeVar("_K")


#: What a :class:`CacheCorrupt` is about: ``damaged`` (ours, broken or of another schema
#: version: it may be deleted or moved aside), ``foreign`` (another program's SQLite database),
#: ``unknown`` (not an SQLite database: whose, nothing says), ``read-only``, ``locked``,
#: ``unusable`` (its folder cannot be created, a directory is in its place).
CacheProblem = Literal["damaged", "foreign", "unknown", "read-only", "locked", "unusable"]


class CacheCorrupt(Exception):
    """The cache file cannot be used as it is; its message names the file, what is wrong and
    the fix, which depends on :attr:`kind` (only a ``damaged`` file, one of ours, is ever
    deleted or moved: :attr:`ours`).

    The caller turns it into a warning and runs without the cache (or, for a damaged file,
    calls :meth:`RunCache.rebuild`); it is never read as results.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        reason: str,
        *,
        fix: str | None = None,
        kind: CacheProblem = "damaged",
    ) -> None:
        self.path = os.fspath(path)
        self.reason = reason
        self.kind: CacheProblem = kind
        if fix is None:
            fix = _default_fix(Path(self.path), kind)
        self.fix = fix
        super().__init__(f"retrieval cache {self.path}: {reason}; it was not used ({fix})")

    @property
    def ours(self) -> bool:
        """True when the file is a cache pytest-retrieval wrote (damaged): the one kind that
        ``cache clear`` deletes and ``refresh`` moves aside."""
        return self.kind == "damaged"


def _default_fix(path: Path, kind: CacheProblem) -> str:
    if kind == "damaged":
        return f"delete the file or run `pytest-retrieval cache clear --cache-dir {path.parent}`"
    if kind in ("foreign", "unknown"):
        return (
            "it is not a file pytest-retrieval wrote, so it was left as it is: move it out "
            "of the folder, or set retrieval_cache_dir (--cache-dir) to another folder"
        )
    if kind == "read-only":
        return (
            "make the folder writable, or set retrieval_cache_dir to a writable folder; "
            "the retriever is called for what the cache cannot serve"
        )
    return "set retrieval_cache_dir to a folder of its own"


#: The first 16 bytes of every SQLite database file.
_SQLITE_MAGIC = b"SQLite format 3\x00"


def is_our_cache(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is an SQLite file whose header carries our ``application_id``
    (bytes 68..71, big-endian): a cache pytest-retrieval created, whatever state it is in now
    (truncated, damaged rows, another schema version). An SQLite file cut inside its header,
    before the application id, counts too: nothing any program wrote survives in it."""
    header = _header(path)
    if not header.startswith(_SQLITE_MAGIC):
        return False
    return len(header) < 72 or int.from_bytes(header[68:72], "big") == APPLICATION_ID


def _header(path: str | os.PathLike[str]) -> bytes:
    """The first 100 bytes of a regular file (b"" for anything else: a FIFO would block)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError:
        return b""
    try:
        return os.read(fd, 100) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    except OSError:
        return b""
    finally:
        os.close(fd)


def _writable(path: Path) -> bool:
    """Whether the cache at ``path`` can be written: its folder (SQLite creates its journal
    and WAL files there) and the file itself, if it exists."""
    folder = path.parent
    if not os.access(folder, os.W_OK | os.X_OK):
        return False
    return not path.exists() or os.access(path, os.W_OK)


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
                self.path,
                f"its folder cannot be created ({exc.strerror or exc})",
                kind="read-only" if exc.errno in (errno.EACCES, errno.EROFS) else "unusable",
            ) from None
        if self.path.is_dir():
            raise CacheCorrupt(self.path, "is a directory, not a cache file", kind="unusable")
        from ..reading import not_a_regular_file

        kind = not_a_regular_file(self.path)
        if kind is not None:  # SQLite would wait on a FIFO, or read a device
            raise CacheCorrupt(self.path, f"is not a regular file but {kind}", kind="unusable")
        #: True when the folder or the file cannot be written: hits are read, nothing is stored.
        self.read_only = not _writable(self.path)
        if self.read_only and not self.path.exists():
            raise CacheCorrupt(
                self.path,
                f"does not exist, and its folder {self.path.parent} is read-only, so it cannot "
                "be created",
                kind="read-only",
            )
        self._connection = self._open()

    # Opening, with every way a file can fail to be ours turned into CacheCorrupt.

    def _open(self) -> sqlite3.Connection:
        target: str | Path = self.path
        if self.read_only:
            # Read-only, SQLite cannot create the shared-memory file WAL readers need: the file
            # is opened immutable (nothing can write it meanwhile, its folder being read-only),
            # unless a write-ahead log holds entries not yet in the file.
            wal = self.path.with_name(self.path.name + "-wal")
            immutable = "" if wal.exists() and wal.stat().st_size else "&immutable=1"
            target = f"{self.path.resolve().as_uri()}?mode=ro{immutable}"
        try:
            # isolation_level=None: transactions are explicit (BEGIN IMMEDIATE below), so a
            # writer takes the write lock up front and waits on the busy timeout, instead of
            # deadlocking on a read lock upgraded to a write lock.
            connection = sqlite3.connect(
                target,
                timeout=BUSY_TIMEOUT_S,
                isolation_level=None,
                check_same_thread=False,
                uri=self.read_only,
            )
        except sqlite3.Error as exc:
            raise CacheCorrupt(self.path, f"cannot be opened ({exc})", kind="unusable") from None
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
            if application_id == 0 and not tables and self.read_only:
                raise CacheCorrupt(
                    self.path,
                    "is empty and read-only: there is nothing to read, and nothing can be stored",
                    kind="read-only",
                )
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
                    kind="foreign",
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
            if self.read_only:
                return
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
            ours = is_our_cache(self.path)
            kind: CacheProblem = "damaged" if ours else "unknown"
            if "readonly" in message.replace(" ", "") or "read-only" in message:
                reason = f"is read-only ({message}): nothing can be stored in it"
                kind = "read-only"
            elif "not a database" in message:
                reason = (
                    "is damaged (its header says it is a pytest-retrieval cache, and SQLite "
                    "cannot read it)"
                    if ours
                    else "is not an SQLite database, so not a cache pytest-retrieval wrote"
                )
            elif "malformed" in message or "corrupt" in message:
                reason = f"is damaged, e.g. truncated ({message})"
            else:
                reason = f"cannot be read ({message})"
            raise CacheCorrupt(self.path, reason, kind=kind) from None

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
        """Store every (key, entry) in one transaction; return how many were written. A
        read-only cache raises :class:`CacheCorrupt` (``kind == "read-only"``)."""
        if self.read_only:
            raise CacheCorrupt(
                self.path,
                f"is read-only (its folder {self.path.parent} or the file cannot be written): "
                "nothing was stored",
                kind="read-only",
            )
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
        """Delete every entry; return how many there were. A read-only cache raises
        :class:`CacheCorrupt` (``kind == "read-only"``) and keeps them."""
        if self.read_only:
            raise CacheCorrupt(
                self.path,
                f"is read-only (its folder {self.path.parent} or the file cannot be written)",
                fix="make the folder and the file writable to clear it",
                kind="read-only",
            )
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
        """Move a damaged file of ours aside (``<name>.corrupt``, replacing an older one) and
        open an empty cache in its place. Only for a file :class:`CacheCorrupt` was raised
        about with :attr:`~CacheCorrupt.ours`; any other file raises :class:`CacheCorrupt`
        again and is left as it is (see :func:`remove_cache_file`)."""
        target = Path(path)
        remove_cache_file(target, keep_as=target.with_name(target.name + ".corrupt"))
        return cls(target)


def remove_cache_file(path: str | os.PathLike[str], *, keep_as: Path | None = None) -> bool:
    """Delete the cache file and its WAL/shared-memory companions, whatever their state; or
    rename the main file to ``keep_as``. Return whether a main file was there.

    Only a file of ours (:func:`is_our_cache`) is deleted or moved: any other one (another
    program's database, a file that is not SQLite) raises :class:`CacheCorrupt` naming it,
    and it and its companions are left as they are."""
    target = Path(path)
    existed = target.exists()
    if keep_as is not None and keep_as.exists() and not is_our_cache(keep_as):
        raise CacheCorrupt(
            keep_as,
            "is in the way of the damaged cache it would keep, and it is not a file "
            "pytest-retrieval wrote",
            kind="unusable",
            fix="move it away, then run again",
        )
    if existed and not is_our_cache(target):
        sqlite = _header(target).startswith(_SQLITE_MAGIC)
        raise CacheCorrupt(
            target,
            "is an SQLite database of another program, not a pytest-retrieval cache"
            if sqlite
            else "is not an SQLite database, so not a cache pytest-retrieval wrote",
            kind="foreign" if sqlite else "unknown",
        )
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
