"""Sharing the retrieval phase among xdist workers: shards of queries claimed from one SQLite file.

Under ``pytest -n N`` every worker that needs the run opens the same shard store (a SQLite file
in the session's shared temporary folder, named after xdist's run id) and, until no shard is
left unclaimed, claims the next one, runs it and stores its outcomes. So no worker waits while
there is unclaimed work (a worker that starts late, or whose tests need the run later, simply
finds fewer shards left), and each query is sent to the retriever by exactly one worker. When
every shard is done, each worker reads the whole run back in golden-set order: every worker
scores the same run, so the numbers are those of ``-n 0``.

A worker that fails in a shard (the retriever cannot be called, a replay cannot be served)
gives the shard back and raises: the next worker to claim it meets the same error, as each
worker would without sharding. A worker that dies with a claim (``os._exit``, a fatal signal, a
crash in a native library, killed) fails its shard: the next worker to look finds the claim
dead and records each of the shard's queries as failed, "worker crashed", naming the worker
(:func:`crashed_outcomes`); the retriever is not called on them again, since whatever killed one
worker would kill the next, and xdist would replace workers until it gives up.

A dead claimant is told from a live one by a lock only a living process holds (:class:`_Life`):
each store holds an exclusive SQLite lock on a file of its own while it is open, and the
operating system drops it when the process dies, however it dies. A process id would not do: a
crashed xdist worker lingers as a zombie its parent (the controller) has not reaped, and
``kill(pid, 0)`` finds a zombie alive; nor would a heartbeat, which a worker busy in a long
native call would miss.

Exactly one of the processes sharing a run completes its last shard (:meth:`ShardStore.complete`
says which): what must happen once per session after the run, the determinism probe, happens
there.

Outcomes are stored compactly (:func:`encode_outcomes`): one JSON array per shard, one short
array per query, written with json's C encoder.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from .retriever import RETRIEVER_STAGE, QueryOutcome, QueryRequest

#: What a shard's run says about it besides the outcomes (a RunInfo, for the plugin).
Info = TypeVar("Info")

#: How long a waiting worker sleeps between looks at the store (seconds).
POLL = 0.05
#: How long a worker waits for the store's write lock before giving up (seconds).
_BUSY = 120.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS shards (
    id INTEGER PRIMARY KEY,
    start INTEGER NOT NULL,
    stop INTEGER NOT NULL,
    state TEXT NOT NULL,          -- todo, claimed, done
    host TEXT,
    pid INTEGER,
    owner TEXT,                   -- the claimant's life lock (see _Life)
    worker TEXT,                  -- the claimant's name (the xdist worker id)
    outcomes TEXT,
    info TEXT
);
"""


# --- the compact codec ------------------------------------------------------------------------


def _depth_fields(outcome: QueryOutcome) -> dict[str, Any]:
    """The ids as returned, the depth asked and why asking deeper failed, where present."""
    extra: dict[str, Any] = {}
    if outcome.returned:
        extra["returned"] = outcome.returned
    if outcome.asked is not None:
        extra["asked"] = outcome.asked
    if outcome.deeper_error is not None:
        extra["deeper_error"] = outcome.deeper_error
    return extra


def encode_outcome(outcome: QueryOutcome) -> list[Any]:
    """One outcome as a short JSON-ready array (``[id, rankings, latency, error, type, stage,
    scores, depth]``, the trailing fields left out when empty; ``depth`` holds the ids as
    returned where they repeated, the depth asked when it was not the run's, and why asking
    deeper failed)."""
    row: list[Any] = [outcome.query_id, outcome.rankings, outcome.latency_ms]
    extra = _depth_fields(outcome)
    if outcome.error is not None or outcome.scores or extra:
        row += [outcome.error, outcome.error_type, outcome.error_stage]
    if outcome.scores or extra:
        row.append(outcome.scores)
    if extra:
        row.append(extra)
    return row


def decode_outcome(row: Sequence[Any]) -> QueryOutcome:
    """Inverse of :func:`encode_outcome`."""
    error = error_type = error_stage = None
    if len(row) > 3:
        error, error_type, error_stage = row[3], row[4], row[5]
    scores = row[6] if len(row) > 6 else {}
    extra = row[7] if len(row) > 7 else {}
    return QueryOutcome(
        query_id=row[0],
        rankings={stage: tuple(ranking) for stage, ranking in row[1].items()},
        latency_ms=dict(row[2]),
        error=error,
        error_type=error_type,
        error_stage=error_stage,
        scores={stage: tuple(values) for stage, values in scores.items()},
        returned={stage: tuple(ids) for stage, ids in extra.get("returned", {}).items()},
        asked=extra.get("asked"),
        deeper_error=extra.get("deeper_error"),
    )


def encode_outcomes(outcomes: Sequence[QueryOutcome]) -> str:
    """Outcomes as one compact JSON text (C encoder; lone surrogates kept as escapes)."""
    return json.dumps([encode_outcome(o) for o in outcomes], separators=(",", ":"))


def decode_outcomes(text: str) -> list[QueryOutcome]:
    """Inverse of :func:`encode_outcomes`."""
    return [decode_outcome(row) for row in json.loads(text)]


# --- the plan ---------------------------------------------------------------------------------


def shard_size(total: int, workers: int, batch_size: int = 1) -> int:
    """Queries per shard: about 8 shards per worker, so that a worker starting late still gets
    its share and the last shards finish close together; a multiple of ``batch_size`` (a batch
    retriever is called with full batches), at most 1,000 queries."""
    if total <= 0:
        return 1
    size = max(1, -(-total // (max(1, workers) * 8)))
    step = max(1, batch_size)
    size = -(-size // step) * step
    return min(size, max(step, 1000 // step * step))


def run_key(requests: Sequence[QueryRequest], extra: str = "") -> str:
    """A digest of the requests (ids, texts and contexts, in order) and ``extra``: workers
    sharing a store must be running the same run."""
    from ..golden.context import context_json

    digest = hashlib.sha256(extra.encode("utf-8", "backslashreplace"))
    for request in requests:
        digest.update(b"\0" + request.id.encode("utf-8", "backslashreplace"))
        digest.update(b"\1" + request.text.encode("utf-8", "backslashreplace"))
        context = context_json(request.context)
        if context is not None:  # only then: a run without contexts keeps its key
            digest.update(b"\2" + context.encode("utf-8", "backslashreplace"))
    return digest.hexdigest()


#: The error type of the queries of a shard whose worker died.
CRASHED = "WorkerCrashed"


def _queries(count: int) -> str:
    return f"{count} quer{'y' if count == 1 else 'ies'}"


def crashed_outcomes(requests: Sequence[QueryRequest], worker: str) -> list[QueryOutcome]:
    """The outcomes of a shard whose worker died while running it: each query failed, with
    "worker crashed" and the worker's name (no ranking, no latency)."""
    message = (
        f"worker crashed: the xdist worker {worker} died (os._exit, a fatal signal or a native "
        f"crash) while the retriever ran its shard of {_queries(len(requests))}; they were not "
        "run again (run without -n to see the crash)"
    )
    return [
        QueryOutcome(r.id, error=message, error_type=CRASHED, error_stage=RETRIEVER_STAGE)
        for r in requests
    ]


class _Life:
    """A lock held for as long as this process lives: an exclusive SQLite lock on a file of
    its own (``path``), taken when the store opens and dropped when it closes.

    The operating system drops it too when the process dies, however it dies, and whether or
    not its parent has reaped it. Another process asks :func:`alive` of the file: the lock can
    be taken only when its holder is gone. SQLite's lock is an ``fcntl`` lock on POSIX and a
    ``LockFileEx`` lock on Windows, and SQLite keeps it right when one process opens the same
    file twice (a POSIX lock would otherwise drop with the first descriptor closed).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db = sqlite3.connect(str(path), timeout=_BUSY, isolation_level=None)
        self._db.execute("BEGIN EXCLUSIVE")

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self._db.execute("ROLLBACK")
        self._db.close()
        with contextlib.suppress(OSError):
            self.path.unlink()


def alive(lock: Path) -> bool:
    """True while the process holding the life lock ``lock`` (:class:`_Life`) lives.

    A file that is missing is its holder's that closed its store (or never opened it): no one
    holds it. A lock that cannot be tested for another reason counts as held: a live worker's
    shard must never be failed.
    """
    try:
        uri = f"{Path(os.path.abspath(lock)).as_uri()}?mode=rw"  # never creates the file
        db = sqlite3.connect(uri, uri=True, timeout=0, isolation_level=None)
    except sqlite3.OperationalError:
        return lock.exists()  # cannot open a file that exists: assume its holder lives
    try:
        db.execute("BEGIN EXCLUSIVE")
    except sqlite3.OperationalError:  # "database is locked": its holder lives
        return True
    else:
        db.execute("ROLLBACK")
        return False
    finally:
        db.close()


class Claim(NamedTuple):
    """A shard now this process's: its id, the requests' range, and ``crashed``, the name of
    the worker that held it and died (then its queries are to be failed, not run)."""

    shard: int
    start: int
    stop: int
    crashed: str | None = None


# --- the store --------------------------------------------------------------------------------


class ShardStore:
    """The shared claim table of one run (see the module docstring).

    Creating it is idempotent: the first worker lays out the shards, the others find them. A
    store laid out for other requests (another run under the same file name) is an error.
    """

    def __init__(
        self, path: Path, *, key: str, total: int, size: int, worker: str | None = None
    ) -> None:
        self.path = path
        self.host = socket.gethostname()
        self.pid = os.getpid()
        #: How the others name this process when it dies with a claim.
        self.worker = worker or f"(pid {self.pid})"
        #: This store's life lock, named after a fresh token (a pid is reused; a token is not).
        self.owner = uuid.uuid4().hex
        self._life = _Life(self._lock_path(self.owner))
        try:
            self._db = sqlite3.connect(str(path), timeout=_BUSY, isolation_level=None)
        except BaseException:
            self._life.close()
            raise
        try:
            self._open(key, total, size)
        except BaseException:
            self.close()
            raise

    def _lock_path(self, owner: str) -> Path:
        return self.path.with_name(f"{self.path.name}.{owner}.lock")

    def _open(self, key: str, total: int, size: int) -> None:
        path = self.path
        with contextlib.suppress(sqlite3.OperationalError):  # another worker switched it already
            self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        with self._transaction() as db:
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            found = db.execute("SELECT value FROM meta WHERE key = 'run'").fetchone()
            if found is None:
                db.execute("INSERT INTO meta VALUES ('run', ?)", (key,))
                db.executemany(
                    "INSERT INTO shards (id, start, stop, state) VALUES (?, ?, ?, 'todo')",
                    [
                        (i, start, min(start + size, total))
                        for i, start in enumerate(range(0, total, size))
                    ],
                )
            elif found[0] != key:
                raise RuntimeError(
                    f"the shard store {path} belongs to another run (its queries or settings "
                    "differ from this worker's); every xdist worker must see the same golden "
                    "set and settings"
                )

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def close(self) -> None:
        """Close the connection and drop the life lock (the file stays for the other
        workers)."""
        self._db.close()
        self._life.close()

    def __enter__(self) -> ShardStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def claim(self) -> Claim | None:
        """The next unclaimed shard, now this worker's; None when every shard is claimed or
        done. A shard claimed by a process of this host that died is this worker's too, with
        ``crashed`` naming that worker: its queries are to be failed
        (:func:`crashed_outcomes`), not run."""
        with self._transaction() as db:
            row = db.execute(
                "SELECT id, start, stop FROM shards WHERE state = 'todo' ORDER BY id LIMIT 1"
            ).fetchone()
            claim = None if row is None else Claim(int(row[0]), int(row[1]), int(row[2]))
            if claim is None:
                claim = self._orphan(db)
            if claim is None:
                return None
            db.execute(
                "UPDATE shards SET state = 'claimed', host = ?, pid = ?, owner = ?, worker = ? "
                "WHERE id = ?",
                (self.host, self.pid, self.owner, self.worker, claim.shard),
            )
            return claim

    def _orphan(self, db: sqlite3.Connection) -> Claim | None:
        """A shard whose claimant died (its life lock is free), naming the claimant."""
        claimed = db.execute(
            "SELECT id, start, stop, owner, worker, pid FROM shards "
            "WHERE state = 'claimed' AND host = ? ORDER BY id",
            (self.host,),
        ).fetchall()
        for shard, start, stop, owner, worker, pid in claimed:
            if owner != self.owner and not alive(self._lock_path(str(owner))):
                name = worker or f"(pid {pid})"
                return Claim(int(shard), int(start), int(stop), crashed=str(name))
        return None

    def complete(self, shard: int, outcomes: str, info: str) -> bool:
        """Store a claimed shard's outcomes (:func:`encode_outcomes`) and its info (JSON).

        True when it was the run's last shard not done: exactly one process sharing the store
        sees True (the claims are serialised by the store's write lock). A shard another
        process took over meanwhile (it found this one's life lock free) keeps what that one
        stored, so that every process reads the same run.
        """
        with self._transaction() as db:
            stored = db.execute(
                "UPDATE shards SET state = 'done', outcomes = ?, info = ? "
                "WHERE id = ? AND state = 'claimed' AND owner = ?",
                (outcomes, info, shard, self.owner),
            ).rowcount
            left = db.execute("SELECT COUNT(*) FROM shards WHERE state != 'done'").fetchone()
        return stored == 1 and int(left[0]) == 0

    def release(self, shard: int) -> None:
        """Give a claimed shard back (this worker failed in it)."""
        with self._transaction() as db:
            db.execute(
                "UPDATE shards SET state = 'todo', host = NULL, pid = NULL, owner = NULL, "
                "worker = NULL WHERE id = ? AND state = 'claimed'",
                (shard,),
            )

    def finished(self) -> bool:
        """True when every shard is done."""
        row = self._db.execute("SELECT COUNT(*) FROM shards WHERE state != 'done'").fetchone()
        return int(row[0]) == 0

    def results(self) -> tuple[list[str], list[str]]:
        """Every shard's outcomes and info (JSON texts), in shard order."""
        rows = self._db.execute("SELECT outcomes, info FROM shards ORDER BY id").fetchall()
        return [r[0] for r in rows], [r[1] for r in rows]


class Sharded(NamedTuple):
    """What :func:`run_sharded` gives a process: every outcome in order, every shard's info,
    and ``last``: True in exactly one of the processes sharing the run, the one that completed
    its last shard."""

    outcomes: list[QueryOutcome]
    infos: list[Any]
    last: bool


def run_sharded(
    path: Path,
    requests: Sequence[QueryRequest],
    process: Callable[[Sequence[QueryRequest]], tuple[list[QueryOutcome], Info]],
    *,
    size: int,
    info_to_json: Callable[[Info], str],
    info_from_json: Callable[[str], Info],
    crashed_info: Callable[[int], Info],
    extra_key: str = "",
    worker: str | None = None,
    poll: float = POLL,
) -> Sharded:
    """The outcomes of ``requests`` (in order) and every shard's info, computed with the other
    workers sharing ``path``: this worker runs ``process`` on the shards it claims, then waits
    for the shards others are running and reads them all back.

    ``process`` must return one outcome per request, in order. An exception in it gives the
    shard back and is raised. A shard whose worker died is failed (:func:`crashed_outcomes`),
    its info ``crashed_info(number of its queries)``. ``worker`` names this process in the
    message the others write if it dies.
    """
    last = False
    with ShardStore(
        path, key=run_key(requests, extra_key), total=len(requests), size=size, worker=worker
    ) as store:
        while True:
            claimed = store.claim()
            if claimed is None:
                if store.finished():
                    break
                time.sleep(poll)  # the last shards are running in other workers
                continue
            shard, start, stop, crashed = claimed
            part = requests[start:stop]
            try:
                if crashed is not None:
                    outcomes, info = crashed_outcomes(part, crashed), crashed_info(len(part))
                else:
                    outcomes, info = process(part)
                if len(outcomes) != stop - start:  # pragma: no cover - the runner's contract
                    raise RuntimeError(f"{len(outcomes)} outcomes for {stop - start} queries")
                encoded, encoded_info = encode_outcomes(outcomes), info_to_json(info)
            except BaseException:
                store.release(shard)
                raise
            last = store.complete(shard, encoded, encoded_info) or last
        texts, infos = store.results()
    outcomes = [o for text in texts for o in decode_outcomes(text)]
    if [o.query_id for o in outcomes] != [r.id for r in requests]:  # pragma: no cover
        raise RuntimeError("the shard store returned outcomes out of order")
    return Sharded(outcomes, [info_from_json(text) for text in infos], last)
