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
worker would without sharding. A worker that dies with a claim (killed, crashed) is noticed by
the others (its process is gone) and its shard is claimed again.

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
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from .retriever import QueryOutcome, QueryRequest

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
    outcomes TEXT,
    info TEXT
);
"""


# --- the compact codec ------------------------------------------------------------------------


def encode_outcome(outcome: QueryOutcome) -> list[Any]:
    """One outcome as a short JSON-ready array (``[id, rankings, latency, error, type, stage,
    scores]``, the trailing fields left out when empty)."""
    row: list[Any] = [outcome.query_id, outcome.rankings, outcome.latency_ms]
    if outcome.error is not None or outcome.scores:
        row += [outcome.error, outcome.error_type, outcome.error_stage]
    if outcome.scores:
        row.append(outcome.scores)
    return row


def decode_outcome(row: Sequence[Any]) -> QueryOutcome:
    """Inverse of :func:`encode_outcome`."""
    error = error_type = error_stage = None
    if len(row) > 3:
        error, error_type, error_stage = row[3], row[4], row[5]
    scores = row[6] if len(row) > 6 else {}
    return QueryOutcome(
        query_id=row[0],
        rankings={stage: tuple(ranking) for stage, ranking in row[1].items()},
        latency_ms=dict(row[2]),
        error=error,
        error_type=error_type,
        error_stage=error_stage,
        scores={stage: tuple(values) for stage, values in scores.items()},
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
    """A digest of the requests (ids and texts, in order) and ``extra``: workers sharing a store
    must be running the same run."""
    digest = hashlib.sha256(extra.encode("utf-8", "backslashreplace"))
    for request in requests:
        digest.update(b"\0" + request.id.encode("utf-8", "backslashreplace"))
        digest.update(b"\1" + request.text.encode("utf-8", "backslashreplace"))
    return digest.hexdigest()


def _alive(pid: int) -> bool:
    """True when process ``pid`` (on this host) still exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, owned by someone else
        return True
    except OSError:  # pragma: no cover - e.g. Windows without the process
        return False
    return True


# --- the store --------------------------------------------------------------------------------


class ShardStore:
    """The shared claim table of one run (see the module docstring).

    Creating it is idempotent: the first worker lays out the shards, the others find them. A
    store laid out for other requests (another run under the same file name) is an error.
    """

    def __init__(self, path: Path, *, key: str, total: int, size: int) -> None:
        self.path = path
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self._db = sqlite3.connect(str(path), timeout=_BUSY, isolation_level=None)
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
        """Close the connection (the file stays for the other workers)."""
        self._db.close()

    def __enter__(self) -> ShardStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def claim(self) -> tuple[int, int, int] | None:
        """``(shard, start, stop)`` of the next unclaimed shard, now this worker's; None when
        every shard is claimed or done. A shard claimed by a process of this host that is gone
        is claimed again."""
        with self._transaction() as db:
            row = db.execute(
                "SELECT id, start, stop FROM shards WHERE state = 'todo' ORDER BY id LIMIT 1"
            ).fetchone()
            if row is None:
                row = self._orphan(db)
            if row is None:
                return None
            db.execute(
                "UPDATE shards SET state = 'claimed', host = ?, pid = ? WHERE id = ?",
                (self.host, self.pid, row[0]),
            )
            return int(row[0]), int(row[1]), int(row[2])

    def _orphan(self, db: sqlite3.Connection) -> tuple[int, int, int] | None:
        claimed = db.execute(
            "SELECT id, start, stop, pid FROM shards WHERE state = 'claimed' AND host = ? "
            "ORDER BY id",
            (self.host,),
        ).fetchall()
        for shard, start, stop, pid in claimed:
            if pid != self.pid and not _alive(int(pid)):
                return int(shard), int(start), int(stop)
        return None

    def complete(self, shard: int, outcomes: str, info: str) -> None:
        """Store a claimed shard's outcomes (:func:`encode_outcomes`) and its info (JSON)."""
        with self._transaction() as db:
            db.execute(
                "UPDATE shards SET state = 'done', outcomes = ?, info = ? WHERE id = ?",
                (outcomes, info, shard),
            )

    def release(self, shard: int) -> None:
        """Give a claimed shard back (this worker failed in it)."""
        with self._transaction() as db:
            db.execute(
                "UPDATE shards SET state = 'todo', host = NULL, pid = NULL WHERE id = ? "
                "AND state = 'claimed'",
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


def run_sharded(
    path: Path,
    requests: Sequence[QueryRequest],
    process: Callable[[Sequence[QueryRequest]], tuple[list[QueryOutcome], Info]],
    *,
    size: int,
    info_to_json: Callable[[Info], str],
    info_from_json: Callable[[str], Info],
    extra_key: str = "",
    poll: float = POLL,
) -> tuple[list[QueryOutcome], list[Info]]:
    """The outcomes of ``requests`` (in order) and every shard's info, computed with the other
    workers sharing ``path``: this worker runs ``process`` on the shards it claims, then waits
    for the shards others are running and reads them all back.

    ``process`` must return one outcome per request, in order. An exception in it gives the
    shard back and is raised.
    """
    with ShardStore(
        path, key=run_key(requests, extra_key), total=len(requests), size=size
    ) as store:
        while True:
            claimed = store.claim()
            if claimed is None:
                if store.finished():
                    break
                time.sleep(poll)  # the last shards are running in other workers
                continue
            shard, start, stop = claimed
            try:
                outcomes, info = process(requests[start:stop])
                if len(outcomes) != stop - start:  # pragma: no cover - the runner's contract
                    raise RuntimeError(f"{len(outcomes)} outcomes for {stop - start} queries")
                encoded, encoded_info = encode_outcomes(outcomes), info_to_json(info)
            except BaseException:
                store.release(shard)
                raise
            store.complete(shard, encoded, encoded_info)
        texts, infos = store.results()
    outcomes = [o for text in texts for o in decode_outcomes(text)]
    if [o.query_id for o in outcomes] != [r.id for r in requests]:  # pragma: no cover
        raise RuntimeError("the shard store returned outcomes out of order")
    return outcomes, [info_from_json(text) for text in infos]
