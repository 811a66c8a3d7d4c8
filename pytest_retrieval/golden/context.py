"""A query's context as data: the plain-data check, the frozen form, the canonical text.

A golden-set query may carry a *context* (a tenant, a user, groups, filters, a conversation's
history, a locale, any key) that the retriever is handed with the text
(:mod:`pytest_retrieval.run.retriever.context` says how). It is plain data (:func:`context_problems`
says what that is, and why a value is not), kept read-only in the query (:func:`freeze_context`),
copied fresh for each call (:func:`thaw_context`) and written in one canonical form
(:func:`context_json`, and its sha256 :func:`context_digest`): the form the golden fingerprint,
the retriever-output cache key, the run-file key and the baseline's label hash are computed
from. The model (:mod:`pytest_retrieval.golden.model`) and every reader use these; nothing here
knows a file format.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

from ..text import SURROGATE_FIX, surrogate_problem

#: A query's context: a mapping of names to plain data (:func:`context_problems`).
Context = Mapping[str, Any]

#: How deep a context may nest (a mapping in a list in a mapping ... is three levels).
MAX_CONTEXT_DEPTH = 32

#: Fix for a context that is not a mapping.
CONTEXT_FIX = (
    "write the context as a mapping of names to plain values, e.g. "
    "context: {tenant: acme, groups: [support]}"
)
#: What ``written(container, key)`` says of a key written without a value (``? hr``, or
#: ``{hr, legal}``): YAML's set syntax, which it reads as a mapping whose values are null.
BARE_KEY = "?"
#: Fix for a context mapping written in YAML's set syntax (the list it meant is shown first).
SET_FIX = "or, for a mapping whose values are null, write each as 'name: null'"

#: Fix for a context value that is not plain data.
PLAIN_DATA_FIX = (
    "a context holds only strings, numbers, true/false, null, and lists and mappings of them: "
    "write the value as one of those"
)


def _where(path: tuple[object, ...]) -> str:
    """``context.groups[2]``: where a value sits in a context, for a message."""
    shown = "context"
    for step in path:
        shown += f"[{step}]" if isinstance(step, int) else f".{step}"
    return shown


def _plain_value_problem(value: object, written: str | None = None) -> tuple[str, str] | None:
    """Why a scalar is not plain data, and the fix; None if it is (containers are walked by
    the caller). ``written`` is how a boolean was spelled in its file, when the reader knows."""
    if value is None:
        return None
    if isinstance(value, bool):
        # YAML 1.1 reads yes/no/on/off (any case) as booleans: a locale 'no' or a flag 'on'
        # would silently become false/true. Only true/false (any case) mean a boolean here.
        if written is not None and written.lower() not in ("true", "false"):
            word = "true" if value else "false"
            return (
                f"YAML reads {written} as the boolean {word}, not the text {written!r}",
                f"quote it ({written!r}) if it is the text, or write {word}",
            )
        return None
    if isinstance(value, str):
        bad = surrogate_problem(value, "the text")
        return None if bad is None else (bad, SURROGATE_FIX)
    if isinstance(value, int):
        # A YAML integer remembers how it was written (formats.golden_values.SourceInt): 0012
        # is octal 10 to YAML 1.1, and a tenant id written so would silently become another.
        text = getattr(value, "text", None)
        if isinstance(text, str) and text.lstrip("+-") != str(abs(int(value))):
            return (
                f"YAML reads {text} as the number {int(value)}, not the text {text!r}",
                f"quote it ({text!r}) if it is an id or a code, or write {int(value)}",
            )
        return None
    if isinstance(value, float):
        if math.isfinite(value):
            return None
        return f"{value!r} is not a finite number", "write a finite number, or null"
    if isinstance(value, (datetime.date, datetime.time)):
        shown = value.isoformat()
        return (
            f"the {type(value).__name__} {shown} is not plain data",
            f"quote it ('{shown}') to pass the text",
        )
    return f"{type(value).__name__} {_shown(value)} is not plain data", PLAIN_DATA_FIX


def context_problems(
    value: object,
    written: Callable[[object, object], str | None] | None = None,
) -> Iterator[tuple[object, object, str, str]]:
    """Every reason ``value`` is not a usable context, as ``(container, key, message, fix)``:
    the container and key hold the bad value (a reader locates them in its file), the message
    names where in the context it sits (``context.groups[1]``). ``written(container, key)``, if
    the reader knows it, is how a boolean was spelled: a YAML 1.1 word other than true/false
    (``no``, ``On``) is refused, as an integer written ``0012`` is; and :data:`BARE_KEY` for a
    key written with no value (YAML's set syntax, ``? hr`` or ``{hr, legal}``): such a mapping
    is refused (a set is meant as a list: the fix shows it, and :data:`SET_FIX`), where
    ``hr: null`` is kept.

    A context is a mapping with non-blank string keys whose values are plain data: ``None``,
    ``bool``, ``int``, finite ``float``, ``str`` (no lone surrogate), and lists and mappings
    (string keys) of those, at most :data:`MAX_CONTEXT_DEPTH` levels deep. Anything else (a
    date, bytes, a set, NaN, an object, a cycle) is refused with :data:`PLAIN_DATA_FIX`: the
    context is written back to a file, hashed into keys and handed to the retriever as it is.
    """
    if not isinstance(value, Mapping):
        yield (None, None, f"context must be a mapping, got {_shown(value)}", CONTEXT_FIX)
        return
    yield from _walk(value, (), set(), written)


def _shown(value: object) -> str:
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _walk(
    container: object,
    path: tuple[object, ...],
    open_: set[int],
    written: Callable[[object, object], str | None] | None,
) -> Iterator[tuple[object, object, str, str]]:
    if len(path) >= MAX_CONTEXT_DEPTH:
        yield (
            container,
            None,
            f"{_where(path)} nests more than {MAX_CONTEXT_DEPTH} levels deep",
            "flatten the context: it is data handed to the retriever, not a document",
        )
        return
    if id(container) in open_:
        yield (container, None, f"{_where(path)} contains itself", PLAIN_DATA_FIX)
        return
    open_.add(id(container))
    pairs: Iterable[tuple[object, object]]
    if isinstance(container, Mapping):
        bare = [
            key
            for key, item in container.items()
            if item is None and written is not None and written(container, key) == BARE_KEY
        ]
        if bare:
            # A set written in YAML (untagged): read as {name: None}, a tenant's groups would
            # silently be a mapping no list rule reads (docs/scoped-retrieval.md).
            names = ", ".join(str(key) for key in bare[:5]) + (", ..." if len(bare) > 5 else "")
            named = f"{path[-1]}: " if path and isinstance(path[-1], str) else ""
            yield (
                container,
                bare[0],
                f"{_where(path)} is written as a set ({names}), which YAML reads as a mapping "
                "of each name to null, not a list",
                f"write a list, e.g. {named}[{names}]; {SET_FIX}",
            )
            open_.discard(id(container))
            return
        pairs = container.items()
    else:
        assert isinstance(container, (list, tuple))
        pairs = enumerate(container)
    for key, item in pairs:
        if isinstance(container, Mapping):
            if not isinstance(key, str) or not key.strip():
                yield (
                    container,
                    key,
                    f"{_where(path)} has the key {_shown(key)}: keys must be non-blank strings",
                    "quote the key (YAML reads yes/no/on/off and numbers as other types)",
                )
                continue
            unreadable = surrogate_problem(key, f"the key of {_where(path)}")
            if unreadable is not None:
                yield (container, key, unreadable, SURROGATE_FIX)
                continue
        here = (*path, key)
        if isinstance(item, (Mapping, list, tuple)):
            yield from _walk(item, here, open_, written)
            continue
        spelled = (
            written(container, key) if written is not None and isinstance(item, bool) else None
        )
        bad = _plain_value_problem(item, spelled)
        if bad is not None:
            yield (container, key, f"{_where(here)}: {bad[0]}", bad[1])
    open_.discard(id(container))


def freeze_context(value: Mapping[str, Any]) -> Mapping[str, Any]:
    """A read-only copy of a checked context: mappings read-only, lists as tuples (a query is
    immutable; :func:`thaw_context` gives the retriever plain dicts and lists back)."""

    def freeze(item: Any) -> Any:
        if isinstance(item, Mapping):
            return MappingProxyType({str(k): freeze(v) for k, v in item.items()})
        if isinstance(item, (list, tuple)):
            return tuple(freeze(v) for v in item)
        if isinstance(item, int) and not isinstance(item, bool) and type(item) is not int:
            return int(item)  # a YAML integer that remembers its text: the number it is
        return item

    frozen = freeze(value)
    assert isinstance(frozen, MappingProxyType)
    return frozen


def thaw_context(value: Any) -> Any:
    """A fresh plain copy of a (frozen) context or of one of its values: dicts, lists and
    scalars, as JSON would decode them. Each retriever call gets its own copy, so a retriever
    that changes what it was given changes nothing for the next call."""
    if isinstance(value, Mapping):
        return {k: thaw_context(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw_context(v) for v in value]
    return value


def context_json(context: Mapping[str, Any] | None) -> str | None:
    """The canonical text of a context: compact JSON, keys sorted, UTF-8 unescaped; None for no
    context (an empty mapping is none). ``1``, ``1.0`` and ``true`` are three different texts.
    The one form the fingerprint, the cache key and the run-file key are computed from."""
    if not context:
        return None
    return json.dumps(
        thaw_context(context),
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
    )


def context_digest(context: Mapping[str, Any] | None) -> str | None:
    """sha256 (hex) of :func:`context_json`; None for no context. What a run file records of
    each query's context (``context_sha256``): it identifies the context without showing it."""
    text = context_json(context)
    if text is None:
        return None
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --- slices by context value -----------------------------------------------------------------

#: What marks a context slice: ``tenant:acme`` (a slice name never holds one: slice names are
#: plain identifiers, ``golden.model.is_plain_name``, so the two cannot be confused).
CONTEXT_SLICE_MARK = ":"
#: The value of a context slice that stands for every value present: ``tenant:*``.
EVERY_VALUE = "*"
#: Fix for a context slice without a key or a value.
CONTEXT_SLICE_FIX = (
    "write slice=KEY:VALUE for the queries whose context has KEY == VALUE (slice=tenant:acme), "
    "or slice=KEY:* for one line per value (slice=tenant:*)"
)


def context_slice(name: str | None) -> tuple[str, str] | None:
    """``(key, value)`` of a context slice (``tenant:acme`` → ``("tenant", "acme")``, split at
    the first ``:``, so a value may hold one); None for a plain slice name or none. A key or
    value left blank (``tenant:``, ``:acme``) is a ``ValueError`` (its fix:
    :data:`CONTEXT_SLICE_FIX`)."""
    if name is None or CONTEXT_SLICE_MARK not in name:
        return None
    key, _mark, value = name.partition(CONTEXT_SLICE_MARK)
    if not key.strip() or not value.strip():
        raise ValueError(f"slice {name!r} names no context key or no value")
    return key, value


def slice_values(value: object) -> tuple[str, ...]:
    """The texts a context value answers a context slice to: a string is itself; a number or
    ``true``/``false`` its JSON spelling (``3``, ``0.5``, ``true``: the slice is text, so
    ``priority:3`` selects both ``3`` and ``"3"``); a list each such item of it (``groups:hr``
    selects ``groups: [hr, legal]``); ``null``, a mapping or a list in a list none (a mapping
    is not one value: slice by one of its keys' values in a key of its own)."""
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (bool, int, float)):
        return (json.dumps(value),)
    if isinstance(value, (list, tuple)):
        found: list[str] = []
        for item in value:
            if not isinstance(item, (list, tuple, Mapping)):
                found.extend(slice_values(item))
        return tuple(dict.fromkeys(found))
    return ()


def in_context_slice(context: Mapping[str, Any], key: str, value: str) -> bool:
    """True when ``context`` answers the context slice ``key:value`` (:func:`slice_values`)."""
    return key in context and value in slice_values(context[key])
