"""No handler broader than the errors it means: ``except Exception`` only where user code runs.

A bad input is an :class:`~pytest_retrieval.errors.InputError` raised by the reader that found
it; a broad handler anywhere else would turn our own bug into a silent wrong number, or a
user's ``RecursionError`` into something that looks handled. So every broad handler of the
package (``except Exception``, ``except BaseException``, a bare ``except``, or a tuple holding
one) is listed here, found by ``ast``, and the list must match exactly: a new one fails the
test until it is justified here. Two kinds are allowed:

* around user code, which may raise anything: the retriever calls (``retriever``), the run
  phase that builds and runs it (``runphase``), and the user-code loader (``specs``, any
  function: it imports and calls the user's ``module:function``);
* cleanup that re-raises (a bare ``raise`` in the handler): a temporary file removed, a
  transaction rolled back, a lock released, whatever the error was.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterator

from paths import PACKAGE

_BROAD = {"Exception", "BaseException"}

#: The user-code loader: every broad handler in it is around the user's import or call.
USER_CODE_MODULES = {"pytest_retrieval.run.factories"}

#: (module, function, the broad name, whether it re-raises) -> how many, and why.
ALLOWED: dict[tuple[str, str, str, bool], tuple[int, str]] = {
    # Around user code: a retriever may raise anything, SystemExit and KeyboardInterrupt
    # included; each is recorded as that query's error (or the run's), never swallowed.
    ("pytest_retrieval.run.retriever.calling", "_run_threads.work", "BaseException", False): (
        1,
        "a sync retriever call in a worker thread: its error becomes the query's",
    ),
    ("pytest_retrieval.run.retriever.calling", "_run_inline", "BaseException", False): (
        1,
        "a sync retriever call in pytest's thread (no timeout, one at a time): its error becomes "
        "the query's; a KeyboardInterrupt is re-raised before it",
    ),
    ("pytest_retrieval.run.retriever.calling", "_run_async.call", "BaseException", False): (
        1,
        "an async retriever call: its error becomes the query's",
    ),
    (
        "pytest_retrieval.run.retriever.calling",
        "_run_async.start_loop.runner",
        "BaseException",
        False,
    ): (
        1,
        "the event loop running the async retriever: a failure is surfaced, never a hang",
    ),
    ("pytest_retrieval.run.retriever.calling", "_batch_results", "BaseException", False): (
        1,
        "a lazy result of a batch retriever raising while consumed: that query only",
    ),
    (
        "pytest_retrieval.run.retriever.calling",
        "run_pipeline.first_stage.on_result",
        "BaseException",
        False,
    ): (
        1,
        "a user doc_id / doc_map callable applied to a result: that query's error",
    ),
    ("pytest_retrieval.run.retriever.context", "_built_filter", "Exception", False): (
        1,
        "the user's retrieval_context_filter function: its error, named, becomes the query's",
    ),
    ("pytest_retrieval.run.retriever.shapes", "_int_attribute", "Exception", False): (
        1,
        "a property of the user's retriever object that fails: its depth is unknown",
    ),
    ("pytest_retrieval.phases.retrieve", "RunPhase.ensure", "Exception", True): (
        1,
        "the run (the user's fixtures and retriever): recorded as errored, then re-raised",
    ),
    ("pytest_retrieval.phases.retrieve", "RunPhase._build", "Exception", True): (
        1,
        "the user's retriever fixture: recorded as errored, then re-raised",
    ),
    # Cleanup that re-raises.
    ("pytest_retrieval.files", "atomic_write", "BaseException", True): (
        1,
        "the temporary file removed; an OSError said as the write's, anything else re-raised",
    ),
    ("pytest_retrieval.files", "append_text", "BaseException", True): (
        1,
        "the appended file truncated back to its size before",
    ),
    ("pytest_retrieval.reading", "_open", "BaseException", True): (1, "the descriptor closed"),
    ("pytest_retrieval.run.shards", "ShardStore.__init__", "BaseException", True): (
        2,
        "the life lock and the connection closed",
    ),
    ("pytest_retrieval.run.shards", "ShardStore._transaction", "BaseException", True): (
        1,
        "the transaction rolled back",
    ),
    ("pytest_retrieval.run.shards", "run_sharded", "BaseException", True): (
        1,
        "the claimed shard released to the others",
    ),
    ("pytest_retrieval.run.store", "RunCache._open", "BaseException", True): (
        1,
        "the connection closed",
    ),
    ("pytest_retrieval.run.store", "RunCache._check_and_initialise", "BaseException", True): (
        1,
        "the schema transaction rolled back",
    ),
    ("pytest_retrieval.run.store", "RunCache.put_many", "BaseException", True): (
        1,
        "the write transaction rolled back",
    ),
    ("pytest_retrieval.run.store", "RunCache.clear", "BaseException", True): (
        1,
        "the delete transaction rolled back",
    ),
    (
        "pytest_retrieval.run.retriever.calling",
        "run_pipeline.second_stage",
        "BaseException",
        False,
    ): (
        1,
        "the user's reranker (or a doc_id callable on its items), SystemExit included: its "
        "error becomes that query's",
    ),
    ("pytest_retrieval.regression.ledger", "Ledger.__init__", "BaseException", True): (
        1,
        "closes the SQLite connection when the ledger's checks refuse it, and re-raises",
    ),
    ("pytest_retrieval.regression.ledger", "Ledger._initialise", "BaseException", True): (
        1,
        "rolls the schema transaction back, whatever stopped it, and re-raises",
    ),
    ("pytest_retrieval.regression.ledger", "Ledger._writing", "BaseException", True): (
        1,
        "rolls a write back (a kill between statements leaves the ledger whole) and re-raises",
    ),
    ("pytest_retrieval.plugin", "RetrievalPlugin.pytest_runtest_call", "BaseException", True): (
        1,
        "notes whether the test failed (a Score compared in it counts only then) and re-raises",
    ),
}


def _caught(node: ast.expr | None) -> set[str]:
    if node is None:
        return {"bare"}
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Attribute):
        return {node.attr}
    if isinstance(node, ast.Tuple):
        return set().union(*(_caught(item) for item in node.elts))
    return set()


def _handlers(module: str, node: ast.AST, scope: list[str]) -> Iterator[tuple[str, str, str, bool]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield from _handlers(module, child, [*scope, child.name])
            continue
        if isinstance(child, ast.ExceptHandler):
            broad = _caught(child.type) & (_BROAD | {"bare"})
            if broad:
                reraises = any(
                    isinstance(inner, ast.Raise) and inner.exc is None for inner in ast.walk(child)
                )
                yield module, ".".join(scope), sorted(broad)[0], reraises
        yield from _handlers(module, child, scope)


def broad_handlers(source: str, module: str) -> Counter[tuple[str, str, str, bool]]:
    """Every broad handler of ``source`` (the code of ``module``), counted."""
    return Counter(_handlers(module, ast.parse(source), []))


def _package_handlers() -> Counter[tuple[str, str, str, bool]]:
    found: Counter[tuple[str, str, str, bool]] = Counter()
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        module = ".".join(parts)
        if module in USER_CODE_MODULES:
            continue
        found += broad_handlers(path.read_text(encoding="utf-8"), module)
    return found


def test_every_broad_handler_of_the_package_is_around_user_code_or_re_raises() -> None:
    found = _package_handlers()
    allowed = Counter({key: count for key, (count, _why) in ALLOWED.items()})
    assert found - allowed == Counter(), "a new broad handler: narrow it, or justify it here"
    assert allowed - found == Counter(), "a listed handler is gone: remove it from ALLOWED"


def test_the_guard_sees_every_spelling_of_a_broad_handler() -> None:
    source = (
        "def f():\n"
        "    try:\n        pass\n    except Exception:\n        pass\n"
        "    try:\n        pass\n    except:\n        raise\n"
        "    try:\n        pass\n    except (ValueError, BaseException):\n        pass\n"
        "    try:\n        pass\n    except ValueError:\n        pass\n"
    )
    assert broad_handlers(source, "m") == Counter(
        {
            ("m", "f", "Exception", False): 1,
            ("m", "f", "bare", True): 1,
            ("m", "f", "BaseException", False): 1,
        }
    )
