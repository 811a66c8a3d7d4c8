"""The escaping HTML builder: every text child and attribute value is escaped.

Markup is built only with :func:`el`, so no user text is ever formatted into HTML or SVG.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping

_VOID = frozenset({"meta", "input", "br", "hr", "img", "link"})


class Markup(str):
    """HTML this module built (already escaped); every other ``str`` is text."""

    __slots__ = ()


def escape(value: object) -> Markup:
    """Text as HTML (``&``, ``<``, ``>``, quotes escaped); :class:`Markup` passes through."""
    if isinstance(value, Markup):
        return value
    return Markup(html.escape(str(value), quote=True))


def _flatten(children: Iterable[object]) -> Iterable[object]:
    for child in children:
        if child is None:
            continue
        if isinstance(child, (list, tuple)):
            yield from _flatten(child)
        else:
            yield child


def el(tag: str, attrs: Mapping[str, object] | None = None, *children: object) -> Markup:
    """An element: ``tag`` and attribute names are this module's constants; every attribute
    value and text child is escaped (None and False attributes are left out, True is bare)."""
    parts = [f"<{tag}"]
    for name, value in (attrs or {}).items():
        if value is None or value is False:
            continue
        if value is True:
            parts.append(f" {name}")
        else:
            parts.append(f' {name}="{html.escape(str(value), quote=True)}"')
    parts.append(">")
    if tag in _VOID:
        return Markup("".join(parts))
    parts.extend(escape(child) for child in _flatten(children))
    parts.append(f"</{tag}>")
    return Markup("".join(parts))


def num(value: float) -> str:
    return f"{round(value, 1) + 0.0:g}"
