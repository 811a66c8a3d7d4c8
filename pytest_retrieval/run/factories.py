"""``module:attribute`` settings: the retriever and reranker factories, doc-id functions, the
context-filter function, the ``--prefill`` judge; the one guarded loader of user code.

:func:`import_object` is the one place that imports a module named by the user's
configuration (``retrieval_retriever``, ``retrieval_reranker``, ``retrieval_doc_id``,
``retrieval_context_filter``, the console script's ``--retriever``, ``--reranker``,
``--context-filter`` and ``--prefill``), and :func:`call_user` the
one guard around calling what it found (a factory, a judge). Every way that can go wrong is a
:class:`UserCodeError` (an :class:`~pytest_retrieval.errors.InputError`: exit 4 under pytest,
through the run phase's refusal, and 2 in the console script) naming the setting, the spec and
the cause:

* the spec is not ``module:attribute`` with a dotted module name (a leading dot is a relative
  import, which has no package here; ``a b:c`` is no module name);
* the module cannot be imported: not found (on ``sys.path``), or importing it raised anything
  (a ``SyntaxError``, a missing dependency, ``sys.exit()``);
* the module has no such attribute (``module:Class.method`` walks attributes);
* calling the factory or the judge raised anything.

The message is followed by the user's own traceback, trimmed to their frames (none of this
package's, nor importlib's): the line to fix is the first thing they read.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..errors import InputError, Problem

if TYPE_CHECKING:
    from .retriever.context import ContextUse

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

#: The first line of the trimmed traceback a :class:`UserCodeError` ends with.
TRACE_TITLE = "Traceback of your code (most recent call last):"

_PACKAGE = os.path.dirname(os.path.abspath(__file__))
_IMPORTLIB = os.path.dirname(os.path.abspath(traceback.__file__)) + os.sep + "importlib"


class UserCodeError(InputError):
    """The user's code named by a ``module:attribute`` setting failed to import or to run.

    One problem (the setting, the spec, the cause, the fix), then :attr:`trace`: the user's
    traceback trimmed to their frames (empty when the mistake is the spec itself). The message,
    and the reason of a refused run, is the problem's line followed by the trace; the console
    script prints :attr:`summary` as its error line and the trace under it.
    """

    def __init__(self, problem: Problem, trace: str = "") -> None:
        self.trace = trace
        super().__init__(problem)

    def _render(self) -> str:
        return super()._render() + (f"\n{self.trace}" if self.trace else "")

    def reason_and_fix(self) -> tuple[str, str | None]:
        reason, fix = super().reason_and_fix()
        return reason + (f"\n{self.trace}" if self.trace else ""), fix

    def __reduce__(self) -> tuple[Any, ...]:  # Ray sends it from an actor to the driver
        return (type(self), (self.problems[0], self.trace))

    @property
    def summary(self) -> str:
        """The one line: where, what, and the fix."""
        return str(self.problems[0])


def _ours(filename: str) -> bool:
    path = os.path.abspath(filename)
    return (
        filename.startswith("<frozen ")
        or path.startswith(_PACKAGE + os.sep)
        or path.startswith(_IMPORTLIB)
    )


def user_traceback(exc: BaseException) -> str:
    """``exc``'s traceback with only the user's frames (see the module docstring), ending with
    the exception as Python shows it (for a ``SyntaxError``: the file, the line, the caret)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not _ours(f.filename)]
    lines = [TRACE_TITLE] if frames or isinstance(exc, SyntaxError) else []
    lines += [line.rstrip("\n") for line in traceback.format_list(frames)]
    lines += [line.rstrip("\n") for line in traceback.format_exception_only(type(exc), exc)]
    return "\n".join(lines)


def _failed(what: str, spec: str, summary: str, exc: BaseException, fix: str) -> UserCodeError:
    return UserCodeError(Problem(f"{what} = {spec!r}: {summary}", fix=fix), user_traceback(exc))


def _raised(exc: BaseException) -> str:
    """``Type: first line of the message`` (at most 300 characters of it)."""
    try:
        text = str(exc).split("\n", 1)[0]
    except Exception:  # the user's __str__ raised: the traceback shows what it can
        text = "<its message could not be shown>"
    if len(text) > 300:
        text = text[:300] + "..."
    return type(exc).__name__ + (f": {text}" if text else "")


def _split_spec(spec: str, what: str) -> tuple[str, list[str]]:
    """``(module, [attribute, ...])`` of a well-formed ``module:attribute``, else the error."""
    module_name, colon, attribute = spec.partition(":")
    expected = "expected module:function, e.g. myapp.search:build"
    if not colon or not module_name.strip() or not attribute.strip():
        raise UserCodeError(Problem(f"{what} = {spec!r}: {expected}"))
    if module_name.startswith("."):
        raise UserCodeError(
            Problem(
                f"{what} = {spec!r}: {module_name!r} is a relative module name, and a setting "
                "has no package to be relative to",
                fix="write the module's full dotted name, e.g. myapp.search:build",
            )
        )
    names = module_name.split(".")
    attributes = attribute.split(".")
    bad = [n for n in names + attributes if not n.isidentifier()]
    if bad:
        raise UserCodeError(
            Problem(
                f"{what} = {spec!r}: {bad[0]!r} is not a Python name; {expected}",
                fix="check the spelling (module names are dotted Python names)",
            )
        )
    return module_name, attributes


def import_object(spec: str, what: str) -> Any:
    """The object named by ``module:attribute``; :class:`UserCodeError` naming ``what`` if the
    spec is malformed, the module cannot be imported (whatever it raised) or has no such
    attribute."""
    from importlib import import_module

    module_name, attributes = _split_spec(spec, what)
    try:
        module = import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing and (module_name == missing or module_name.startswith(missing + ".")):
            raise UserCodeError(
                Problem(
                    f"{what} = {spec!r}: cannot import {module_name!r} ({exc})",
                    fix="check the module path and that it is importable from the rootdir "
                    "(for the console script: the current folder)",
                )
            ) from None
        raise _failed(
            what,
            spec,
            f"importing {module_name!r} failed: {_raised(exc)}",
            exc,
            f"install {missing!r}, or fix the import in your module" if missing else "fix it",
        ) from None
    except (Exception, SystemExit) as exc:  # the user's module: anything it raises is theirs
        raise _failed(
            what,
            spec,
            f"importing {module_name!r} raised {_raised(exc)}",
            exc,
            "fix the module: its traceback follows",
        ) from None
    found: Any = module
    for position, name in enumerate(attributes):
        try:
            found = getattr(found, name)
        except Exception:  # a module __getattr__ (the user's) may raise anything: missing
            where = module_name if position == 0 else ".".join(attributes[:position])
            raise UserCodeError(
                Problem(
                    f"{what} = {spec!r}: module {module_name!r} has no attribute "
                    f"{'.'.join(attributes[: position + 1])!r}"
                    + ("" if position == 0 else f" ({where} has no {name!r})"),
                    fix="check the name after the ':'",
                )
            ) from None
    if found is None:
        raise UserCodeError(
            Problem(
                f"{what} = {spec!r}: {'.'.join(attributes)!r} of module {module_name!r} is None",
                fix="name a function, a class or an object",
            )
        )
    return found


def call_user(function: Callable[..., Any], *args: Any, what: str, spec: str) -> Any:
    """``function(*args)``: user code named by ``what = spec``, any exception of which becomes a
    :class:`UserCodeError` with their traceback (a ``KeyboardInterrupt`` stays one)."""
    try:
        return function(*args)
    except (Exception, SystemExit) as exc:  # the user's code: anything it raises is theirs
        name = getattr(function, "__name__", None) or spec.rpartition(":")[2]
        raise _failed(
            what, spec, f"{name}() raised {_raised(exc)}", exc, "fix it: its traceback follows"
        ) from None


def build(spec: str, what: str) -> Any:
    """Call the factory named by ``module:function`` and return what it builds (an object that
    is not callable is returned as is); any exception is a :class:`UserCodeError`."""
    factory = import_object(spec, what)
    return call_user(factory, what=what, spec=spec) if callable(factory) else factory


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
    from ..formats.docmap import load_doc_map

    doc_map: Any = None
    if doc_id and ":" in doc_id:
        doc_map, doc_id = import_object(doc_id, "retrieval_doc_id"), None
    if doc_id_map:
        doc_map = load_doc_map(doc_id_map)
    return doc_id, doc_map


def context_option(
    keys: Iterable[str], spec: str | None, *, what: str = "retrieval_context_filter"
) -> ContextUse:
    """What a run hands its retriever besides the text: the context ``keys`` of the whole
    golden set (held-out queries too, so the calls are planned alike sealed or not) and the
    filter function ``spec`` names (``what`` is the setting, for messages), imported here: a
    spec that does not import, or names no function, is a :class:`UserCodeError`."""
    from .retriever.context import ContextUse

    build = import_object(spec, what) if spec else None
    if build is not None and not callable(build):
        raise UserCodeError(
            Problem(
                f"{what} = {spec!r} is a {type(build).__name__}, not a function",
                fix="name a function of the query's context returning its filter (or None)",
            )
        )
    return ContextUse(tuple(sorted(set(keys))), build, spec)


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
    from ..formats.corpus import read_corpus_ids

    return read_corpus_ids(corpus)
