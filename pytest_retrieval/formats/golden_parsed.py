"""What a golden-set reader produces, and where each decoded value came from.

A reader reads its file's text (:func:`read_text`), decodes it into plain Python values,
records where each came from in a :class:`Marks`, and collects the queries, their lines and
every problem in a :class:`Parsed`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import Problem
from ..golden.context import BARE_KEY, context_json
from ..golden.model import Query

#: ``(line, column)``, 1-based, either unknown (None).
Loc = tuple[int | None, int | None]
#: ``locate(container, key)``: where ``container[key]`` (or the container itself, key None) is.
Locate = Callable[[object, object], Loc]
#: ``written(container, key)``: how the boolean ``container[key]`` was written, or
#: :data:`~pytest_retrieval.golden.context.BARE_KEY` for a key written without a value; None
#: if not known.
Written = Callable[[object, object], "str | None"]


class Marks:
    """Where decoded values came from, keyed by the identity of their containers.

    ``at[id(c)]`` is where container ``c`` starts; ``keys[id(d)][k]`` where key ``k`` of mapping
    ``d`` is written; ``items[id(s)][i]`` where item ``i`` of list ``s`` is; ``words[id(c)][k]``
    the text a boolean ``c[k]`` was written as (``no``, ``On``: YAML 1.1 reads more words than
    true/false as booleans, and a bool cannot remember its text the way
    :class:`~.golden_values.SourceInt` does). The decoded tree must stay alive while the marks
    are used, since ids of dead objects are reused. ``bare[id(d)]`` holds the keys of mapping
    ``d`` written with no value at all (``? hr``, ``{hr, legal}``: YAML's set syntax), which
    YAML reads as null, as it does ``hr:``.
    """

    __slots__ = ("at", "bare", "items", "keys", "words")

    def __init__(self) -> None:
        self.at: dict[int, Loc] = {}
        self.keys: dict[int, dict[Any, Loc]] = {}
        self.items: dict[int, list[Loc]] = {}
        self.words: dict[int, dict[Any, str]] = {}
        self.bare: dict[int, set[Any]] = {}

    def written(self, container: object, key: object) -> str | None:
        """The text the boolean ``container[key]`` was written as, or
        :data:`~pytest_retrieval.golden.context.BARE_KEY` for a key written without a value;
        None if not recorded."""
        if key in self.bare.get(id(container), ()):
            return BARE_KEY
        return self.words.get(id(container), {}).get(key)

    def locate(self, container: object, key: object = None) -> Loc:
        """Where ``container[key]`` is, else where ``container`` starts, else unknown."""
        if key is not None:
            if isinstance(container, Mapping):
                found = self.keys.get(id(container), {}).get(key)
                if found is not None:
                    return found
            elif isinstance(container, list) and isinstance(key, int):
                items = self.items.get(id(container))
                if items is not None and 0 <= key < len(items):
                    return items[key]
        return self.at.get(id(container), (None, None))


def read_text(parsed: Parsed, path: str | None = None, *, what: str = "golden set") -> str | None:
    """The text of ``path`` (default: the parsed source) through the one safe reader
    (:func:`pytest_retrieval.reading.read_text_file`: a regular file, bounded, UTF-8, a
    byte-order mark dropped); None after recording why it cannot be read."""
    from ..errors import InputError
    from ..reading import read_text_file

    name = parsed.source if path is None else path
    try:
        return read_text_file(name, what=what)
    except FileNotFoundError:
        parsed.fail("file not found", "check the path", source=name)
    except InputError as exc:
        parsed.problems.extend(exc.problems)
    return None


@dataclass(slots=True)
class Parsed:
    """What a reader produced: queries with their lines, problems, and document metadata."""

    source: str
    queries: list[Query] = field(default_factory=list)
    lines: list[int | None] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    name: str | None = None
    corpus_version: str | None = None
    #: The file that ``lines`` refer to, when not ``source`` itself (a BEIR folder).
    line_source: str | None = None
    #: ``(id, text, split, context_json)`` of every query with a usable id, valid or not, for
    #: the cross-query checks; ``entry_lines`` holds their lines.
    entries: list[tuple[str, str | None, str | None, str | None]] = field(default_factory=list)
    entry_lines: list[int | None] = field(default_factory=list)

    def add(self, query: Query, line: int | None) -> None:
        """Append a valid query read from ``line``."""
        self.queries.append(query)
        self.lines.append(line)
        self.note(query.id, query.text, query.split, line, context_json(query.context))

    def note(
        self,
        query_id: str,
        text: str | None,
        split: str | None,
        line: int | None,
        context: str | None = None,
    ) -> None:
        """Remember a query for the cross-query checks even if it is invalid (``context``: its
        context's canonical JSON, None when it has none or it is invalid)."""
        self.entries.append((query_id, text, split, context))
        self.entry_lines.append(line)

    def fail(self, message: str, fix: str | None = None, **where: Any) -> None:
        """Record a problem in this file (or in ``where["source"]``)."""
        where.setdefault("source", self.source)
        self.problems.append(Problem(message, fix, **where))
