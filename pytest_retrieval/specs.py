"""``module:attribute`` settings: the retriever and reranker factories, doc-id functions.

:func:`import_object` is the one place that imports a module named by the user's
configuration (``retrieval_retriever``, ``retrieval_reranker``, ``retrieval_doc_id``); every
mistake is an :class:`~pytest_retrieval.errors.InputError` naming the setting and the fix.
"""

from __future__ import annotations

from typing import Any

from .errors import InputError, Problem

CONFTEST_SNIPPET = """\
# conftest.py
import pytest

@pytest.fixture(scope="session")
def retriever_under_test():
    from myapp.search import search      # your code: query text -> ranked doc ids
    return search
"""

#: A retrieval fixture asked for without a golden set.
NO_GOLDEN = (
    "pytest-retrieval has no golden set: set retrieval_golden = PATH in your pytest "
    "configuration (e.g. [tool.pytest.ini_options] in pyproject.toml) or pass "
    "--retrieval-golden PATH"
)
#: The message when no retriever is configured.
NO_RETRIEVER = "no retriever to test"
#: How to give it one.
NO_RETRIEVER_FIX = (
    "define the retriever_under_test fixture:\n\n"
    + CONFTEST_SNIPPET
    + "\nor name a factory in your pytest configuration: "
    "retrieval_retriever = myapp.search:build\n(Declared gates, the retrieval-gates.yaml::... "
    "items, see the fixtures of the rootdir's conftest.py: define it there.)"
)


def import_object(spec: str, what: str) -> Any:
    """The object named by ``module:attribute``; InputError naming ``what`` if there is none."""
    from importlib import import_module

    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise InputError(f"{what} = {spec!r}: expected module:function, e.g. myapp.search:build")
    try:
        module = import_module(module_name)
    except ImportError as exc:
        raise InputError(
            Problem(
                f"{what} = {spec!r}: cannot import {module_name!r} ({exc})",
                fix="check the module path and that it is importable from the rootdir",
            )
        ) from None
    found = getattr(module, attribute, None)
    if found is None:
        raise InputError(
            Problem(
                f"{what} = {spec!r}: module {module_name!r} has no attribute {attribute!r}",
                fix="check the name after the ':'",
            )
        )
    return found


def build(spec: str, what: str) -> Any:
    """Call the factory named by ``module:function`` and return what it builds."""
    factory = import_object(spec, what)
    return factory() if callable(factory) else factory


def describe_callable(obj: Any) -> str:
    """``module.qualname`` of a retriever (an instance: of its class), for the artifact."""
    if obj is None:
        return "None"
    name = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    module = getattr(obj, "__module__", None) or type(obj).__module__
    return f"{module}.{name}"


def doc_id_option(doc_id: str | None, doc_id_map: str | None) -> tuple[str | None, Any]:
    """``(path, mapping)`` for the runner from ``retrieval_doc_id`` and ``retrieval_doc_id_map``.

    ``retrieval_doc_id`` is either a key/attribute path to the id inside each returned item, or
    ``module:function`` mapping each returned id (a chunk id) to its document id; a map file
    (JSON or TSV) is a mapping too.
    """
    from .formats.docmap import load_doc_map

    doc_map: Any = None
    if doc_id and ":" in doc_id:
        doc_map, doc_id = import_object(doc_id, "retrieval_doc_id"), None
    if doc_id_map:
        doc_map = load_doc_map(doc_id_map)
    return doc_id, doc_map


#: Stands for the number of results in a depth hint (:func:`depth_hint`).
DEPTH_MARK = "{depth}"
_PROBE = 918_273_645  # a depth no hint contains otherwise


def depth_hint(retriever: Any) -> str | None:
    """How to ask this retriever for more results (its framework's knob), when known, with
    :data:`DEPTH_MARK` where the number goes (see :func:`hint_for`)."""
    from .retriever import RetrieverShapeError, describe_retriever

    try:
        shape = describe_retriever(retriever, _PROBE)
    except RetrieverShapeError:  # the runner refuses it with its own message
        return None
    return shape.depth_hint.replace(str(_PROBE), DEPTH_MARK) if shape.depth_hint else None


def hint_for(template: str | None, depth: int) -> str | None:
    """A :func:`depth_hint` for ``depth`` results."""
    return None if template is None else template.replace(DEPTH_MARK, str(depth))


def corpus_ids(corpus: Any) -> frozenset[str] | None:
    """The ids of ``retrieval_corpus`` (None without one), for the returned-id check."""
    if not corpus:
        return None
    from .formats.corpus import read_corpus_ids

    return read_corpus_ids(corpus)
