"""Running the retriever over a golden set outside pytest (``pytest-retrieval run``).

Two executors, one result: a list of :class:`~pytest_retrieval.run.retriever.QueryOutcome`, one per
request in order, with each query's rankings, latency and error exactly as the plugin's
in-process runner records them (both call :func:`~pytest_retrieval.run.retriever.run_pipeline`).

* ``local``: this process builds the retriever (and reranker) once from its ``module:factory``
  and runs every query, ``concurrency`` at a time on threads, batch methods given
  ``batch_size`` queries per call.
* ``ray``: Ray Data. The queries become a dataset, and ``map_batches`` sends batches of
  ``batch_size`` queries to a fixed pool of ``concurrency`` actors; each actor builds the
  retriever once from the factory (a model loads once per actor, not once per batch) and runs
  its batches through ``run_pipeline`` one call at a time (a batch method gets the whole batch
  in one call). The same command runs on a laptop (a local Ray instance is started when no
  address is given) or on a cluster (``--ray-address``; the factory's module must be
  importable on its nodes). Ray is imported only here, only when asked for.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import InputError, Problem
from .retriever import QueryOutcome, QueryRequest, RetrieverShapeError
from .shards import decode_outcome, encode_outcome

if TYPE_CHECKING:
    from .retriever.context import ContextUse

#: What ``--executor ray`` says when Ray is not installed.
RAY_MISSING = "--executor ray needs Ray, which is not installed in this environment"
RAY_FIX = (
    "pip install 'pytest-retrieval[ray]' (or pip install 'ray[data]'), or use --executor local"
)


#: What ``--ray-address`` takes (checked before Ray sees it: Ray answers a port out of range by
#: retrying for minutes and then exiting the process).
RAY_ADDRESS_FORMS = "auto, local, HOST:PORT or ray://HOST[:PORT]"
# Host-name labels, underscores allowed (Docker Compose service names have them).
_LABEL = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
_HOST = rf"(?:{_LABEL}(?:\.{_LABEL})*|\[[0-9A-Fa-f:.]+\])"  # a host name, IPv4, or [IPv6]
_RAY_ADDRESS = re.compile(
    rf"(?:ray://{_HOST}(?::(?P<client_port>[0-9]{{1,5}}))?|{_HOST}:(?P<port>[0-9]{{1,5}}))\Z",
    re.ASCII,
)


def ray_address_problem(address: str, source: str = "--ray-address") -> Problem | None:
    """Why ``address`` is not a Ray address (:data:`RAY_ADDRESS_FORMS`), or None; ``source``
    names where it was given (``--ray-address``, or Ray's own ``RAY_ADDRESS``)."""
    if address in ("auto", "local"):
        return None
    match = _RAY_ADDRESS.match(address)
    port = None if match is None else (match.group("port") or match.group("client_port"))
    if match is not None and (port is None or 1 <= int(port) <= 65535):
        return None
    shown = repr(address) if len(address) <= 80 else repr(address[:80]) + "..."
    why = f"port {port} is not in 1..65535" if match is not None else "not a Ray address"
    return Problem(
        f"{shown}: {why}",
        fix=f"give {RAY_ADDRESS_FORMS}, e.g. ray://head-node:10001; or drop it to start a "
        "local Ray instance",
        source=source,
    )


@dataclass(frozen=True, slots=True)
class RunOptions:
    """How each query is called: ``depth`` results asked for, ``timeout`` seconds per query
    (None: no limit), ``batch_size`` queries per batch call (and per Ray batch).
    ``context_keys`` are the context keys of the whole golden set (every batch of every actor
    is planned for all of them) and ``context_filter`` the ``module:function`` that builds each
    query's filter (``--context-filter``), as :mod:`.retriever.context` says."""

    depth: int = 100
    timeout: float | None = 60.0
    batch_size: int = 32
    context_keys: tuple[str, ...] = ()
    context_filter: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Builtins (a Ray actor's constructor arguments)."""
        return {
            "depth": self.depth,
            "timeout": self.timeout,
            "batch_size": self.batch_size,
            "context_keys": list(self.context_keys),
            "context_filter": self.context_filter,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunOptions:
        """Inverse of :meth:`to_dict`."""
        return cls(
            depth=data["depth"],
            timeout=data["timeout"],
            batch_size=data["batch_size"],
            context_keys=tuple(data.get("context_keys", ())),
            context_filter=data.get("context_filter"),
        )


def _build(spec: str | None, what: str) -> Any:
    from .factories import build

    return build(spec, what) if spec else None


def _pipeline(
    requests: Sequence[QueryRequest],
    retriever: Any,
    reranker: Any,
    options: RunOptions,
    *,
    concurrency: int,
    what: str,
    context: ContextUse,
) -> list[QueryOutcome]:
    from .retriever import run_pipeline

    try:
        return run_pipeline(
            requests,
            retriever,
            reranker,
            depth=options.depth,
            concurrency=concurrency,
            timeout=options.timeout,
            batch_size=options.batch_size,
            context=context,
        )
    except RetrieverShapeError as exc:
        # The object came from the --retriever / --reranker factory, not a fixture.
        origin = f"your --{exc.stage} factory"
        raise InputError(Problem(exc.naming(origin), fix=exc.fix, source=what)) from None


def run_local(
    requests: Sequence[QueryRequest],
    *,
    retriever: str,
    reranker: str | None = None,
    options: RunOptions = RunOptions(),
    concurrency: int = 8,
    warn: Callable[[str], None] | None = None,
) -> list[QueryOutcome]:
    """Every request through the retriever built from ``retriever`` (``module:factory``) and
    the optional reranker, in this process, ``concurrency`` queries at a time. ``warn`` gets
    the one warning of contexts that reach no part of the retriever."""
    from .retriever.shapes import context_warning

    built = _build(retriever, "--retriever")
    second = _build(reranker, "--reranker")
    use = _context_use(options)
    scoped = sum(1 for r in requests if r.context)
    unused = context_warning(built, options.depth, use, scoped) if scoped else None
    if unused is not None and warn is not None:
        warn(unused)
    return _pipeline(
        requests, built, second, options, concurrency=concurrency, what="--retriever", context=use
    )


def _context_use(options: RunOptions) -> ContextUse:
    from .factories import context_option

    return context_option(options.context_keys, options.context_filter, what="--context-filter")


class RayRunner:
    """One actor of the pool: builds the retriever once, then runs batch after batch.

    A batch is Ray Data's ``{"position": [...], "query_id": [...], "text": [...], "context":
    [...]}`` (each context as canonical JSON, ``""`` for none); the result
    keeps the positions and gives each query's outcome as compact JSON (:mod:`.shards`' codec),
    so nothing about the rankings depends on how Ray stores columns.
    """

    def __init__(self, retriever: str, reranker: str | None, options: dict[str, Any]) -> None:
        from .factories import UserCodeError
        from .retriever.context import NO_CONTEXT

        self.options = RunOptions.from_dict(options)
        #: A factory that failed here: an actor whose constructor raises dies, and reaches the
        #: driver as Ray's own traceback; kept, it is sent back with the first batch instead.
        self.failure: UserCodeError | None = None
        self.context = NO_CONTEXT
        try:
            self.retriever = _build(retriever, "--retriever")
            self.reranker = _build(reranker, "--reranker")
            self.context = _context_use(self.options)
        except UserCodeError as exc:
            self.failure = exc
            self.retriever = self.reranker = None

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        if self.failure is not None:
            problem = self.failure.problems[0]
            failed = json.dumps({_USER_CODE: [problem.message, problem.fix, self.failure.trace]})
            return {
                "position": list(batch["position"]),
                "outcome": [failed] * len(batch["query_id"]),
            }
        # The context travels as its canonical JSON ("" for none): Ray stores a column of
        # strings as it is, never a column of nested values it would have to type.
        requests = [
            QueryRequest(str(qid), str(text), context=json.loads(str(context)) if context else None)
            for qid, text, context in zip(batch["query_id"], batch["text"], batch["context"])
        ]
        outcomes = _pipeline(
            requests,
            self.retriever,
            self.reranker,
            self.options,
            concurrency=1,
            what="--retriever",
            context=self.context,
        )
        return {
            "position": list(batch["position"]),
            "outcome": [json.dumps(encode_outcome(o), separators=(",", ":")) for o in outcomes],
        }


#: The key of an actor's "the factory failed" answer (an outcome is a JSON array, never this).
_USER_CODE = "user_code_error"


def _decoded(text: str) -> QueryOutcome:
    """An actor's outcome; its factory's failure raised as the usage error it is."""
    data = json.loads(text)
    if isinstance(data, dict) and _USER_CODE in data:
        from .factories import UserCodeError

        message, fix, trace = data[_USER_CODE]
        raise UserCodeError(Problem(message, fix=fix), trace)
    return decode_outcome(data)


def _cause(exc: BaseException) -> BaseException | None:
    """The user's exception inside a Ray error (Ray wraps it, sometimes twice)."""
    seen: BaseException | None = exc
    for _ in range(5):
        if seen is None or isinstance(seen, InputError):
            return seen
        seen = getattr(seen, "cause", None) or seen.__cause__
    return seen


def _import_ray() -> Any:
    try:
        import ray
        import ray.data
    except ImportError as exc:
        raise InputError(
            Problem(f"{RAY_MISSING} ({exc})", fix=RAY_FIX, source="--executor")
        ) from None
    return ray


def _init_ray(ray: Any, kwargs: dict[str, Any]) -> None:
    """``ray.init``; a cluster it cannot reach (or an address it refuses) is a usage error naming
    the address. Ray ends a connection it gave up on with ``sys.exit``: that is caught too, here
    only."""
    address = kwargs.get("address")
    source = "--ray-address"
    if address is None and os.environ.get("RAY_ADDRESS"):
        address, source = os.environ["RAY_ADDRESS"], "RAY_ADDRESS"
    try:
        ray.init(**kwargs)
    except (ConnectionError, TimeoutError, ValueError, RuntimeError, SystemExit) as exc:
        if address is None:
            raise
        detail = str(exc).split("\n", 1)[0][:300] or type(exc).__name__
        raise InputError(
            Problem(
                f"cannot connect to the Ray cluster at {address!r}: {detail}",
                fix="check that the cluster is up and the address is its head node's "
                f"(ray status), or drop {source} to start a local Ray instance",
                source=source,
            )
        ) from None


def run_ray(
    requests: Sequence[QueryRequest],
    *,
    retriever: str,
    reranker: str | None = None,
    options: RunOptions = RunOptions(),
    concurrency: int = 2,
    address: str | None = None,
    num_cpus: int | None = None,
) -> list[QueryOutcome]:
    """Every request through a pool of ``concurrency`` Ray actors (see the module docstring).

    Connects to ``address`` (``auto``, ``ray://host:10001``, ...) or, without one, starts a
    local instance (``num_cpus`` CPUs, no dashboard) and shuts it down afterwards. The factory
    modules are imported here first, so a typo is a usage error before Ray starts.
    """
    from ..golden.context import context_json
    from .factories import import_object

    # Without --ray-address, ray.init() connects to RAY_ADDRESS when it is set.
    given = address or os.environ.get("RAY_ADDRESS") or None
    if given:
        problem = ray_address_problem(given, "--ray-address" if address else "RAY_ADDRESS")
        if problem is not None:
            raise InputError(problem)
    import_object(retriever, "--retriever")
    if reranker:
        import_object(reranker, "--reranker")
    _context_use(options)  # a --context-filter that does not import: before Ray starts
    ray = _import_ray()
    started = False
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
        if address:
            kwargs["address"] = address
        else:
            kwargs["num_cpus"] = num_cpus
            # The actors run in fresh interpreters: they import the factory's module from the
            # same folders as this process (the current folder first, as `python -m` does).
            path = os.pathsep.join([os.getcwd(), *[p for p in sys.path if p]])
            kwargs["runtime_env"] = {"env_vars": {"PYTHONPATH": path}}
        _init_ray(ray, kwargs)
        started = True
    try:
        dataset = ray.data.from_items(
            [
                {
                    "position": i,
                    "query_id": r.id,
                    "text": r.text,
                    "context": context_json(r.context) or "",
                }
                for i, r in enumerate(requests)
            ]
        )
        mapped = dataset.map_batches(
            RayRunner,
            fn_constructor_kwargs={
                "retriever": retriever,
                "reranker": reranker,
                "options": options.to_dict(),
            },
            batch_size=options.batch_size,
            compute=ray.data.ActorPoolStrategy(size=concurrency),
            batch_format="numpy",
        )
        try:
            rows = mapped.take_all()
        except ray.exceptions.RayError as exc:
            # A usage error inside an actor (a retriever it cannot call) is the user's, with
            # our message; anything else is Ray's own story, told by Ray.
            cause = _cause(exc)
            if isinstance(cause, InputError):
                raise cause from None
            raise
    finally:
        if started:
            ray.shutdown()
    by_position = {int(row["position"]): _decoded(row["outcome"]) for row in rows}
    if sorted(by_position) != list(range(len(requests))):  # pragma: no cover - Ray's contract
        raise RuntimeError(f"Ray returned {len(by_position)} outcomes for {len(requests)} queries")
    return [by_position[i] for i in range(len(requests))]
