"""Golden sets as YAML (canonical), JSON and JSONL: readers and writers.

YAML and JSON hold one document ``{version, name, corpus_version, defaults, queries}``. JSONL
holds one query per line, optionally preceded by a header line ``{"version": 1, "name": ...,
"corpus_version": ..., "defaults": ...}`` (an object without ``id``). YAML is read with the safe
loader only, through the node tree so that every problem can name its line and column.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..golden.context import thaw_context
from ..golden.model import DEFAULT_SPLIT, SCHEMA_VERSION, GoldenSet, Query
from ..reading import (
    construct_scalar,
    load_json,
    split_lines,
    yaml_document,
    yaml_scalar_errors,
)
from .golden_parsed import Loc, Marks, Parsed, read_text
from .golden_schema import HEADER_FIELDS, Defaults, SchemaReader
from .golden_values import SourceInt

if TYPE_CHECKING:
    import yaml


def read(path: str, fmt: str) -> Parsed:
    """Read ``path`` as ``fmt`` (``yaml``, ``json`` or ``jsonl``)."""
    readers: dict[str, Callable[[str], Parsed]] = {
        "yaml": read_yaml,
        "json": read_json,
        "jsonl": read_jsonl,
    }
    return readers[fmt](path)


# --- YAML ------------------------------------------------------------------------------------


_PLAIN_COLLECTIONS = ("tag:yaml.org,2002:map", "tag:yaml.org,2002:seq")
_SET_TAG = "tag:yaml.org,2002:set"
_COMMENT = re.compile(r"#[^\n]*")


class _YamlBuilder:
    """Builds plain values from a composed YAML node tree, recording marks as it goes.

    Only the safe constructors are used for scalars. An alias maps to the same Python object;
    the node tree was checked first (:func:`~pytest_retrieval.reading.yaml_document`: no alias
    bomb, no recursive alias, bounded depth). Duplicate keys are problems (PyYAML would silently
    keep the last).
    """

    def __init__(
        self, loader: yaml.SafeLoader, reader: SchemaReader, marks: Marks, text: str = ""
    ) -> None:
        self.loader = loader
        self.reader = reader
        self.marks = marks
        self.built: dict[int, Any] = {}
        #: The document's text: what tells ``? hr`` (no value written) from ``hr:``.
        self.text = text

    @staticmethod
    def _loc(node: yaml.Node) -> Loc:
        return (node.start_mark.line + 1, node.start_mark.column + 1)

    def _fail(self, message: str, fix: str, node: yaml.Node) -> None:
        line, column = self._loc(node)
        self.reader.parsed.fail(message, fix, line=line, column=column)

    def build(self, node: yaml.Node) -> Any:
        import yaml

        if id(node) in self.built:
            return self.built[id(node)]
        if isinstance(node, yaml.CollectionNode) and node.tag not in _PLAIN_COLLECTIONS:
            # e.g. !!python/object/apply: refused outright rather than read as a plain list
            self._fail(
                f"unsupported YAML tag {node.tag!r}",
                "write a list, e.g. [hr, legal]"
                if node.tag == _SET_TAG
                else "remove the tag: write a plain list or mapping",
                node,
            )
            return None
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node)
        if isinstance(node, yaml.SequenceNode):
            items: list[Any] = []
            self.built[id(node)] = items
            self.marks.at[id(items)] = self._loc(node)
            self.marks.items[id(items)] = [self._loc(child) for child in node.value]
            for index, child in enumerate(node.value):
                items.append(self.build(child))
                self._word(items, index, items[index], child)
            return items
        return self._scalar(node)

    def _scalar(self, node: yaml.Node) -> Any:
        try:
            value = construct_scalar(self.loader, node)
        except yaml_scalar_errors() as exc:  # e.g. the date 2024-13-45
            self._fail(
                f"cannot read this YAML value ({exc.__class__.__name__})",
                "write a plain string or number; quote it if in doubt",
                node,
            )
            return None
        if type(value) is int:
            value = SourceInt(value)
            value.text = str(node.value)
        self.built[id(node)] = value
        return value

    def _mapping(self, node: yaml.MappingNode) -> dict[Any, Any]:
        import yaml

        mapping: dict[Any, Any] = {}
        self.built[id(node)] = mapping
        self.marks.at[id(mapping)] = self._loc(node)
        keys: dict[Any, Loc] = {}
        self.marks.keys[id(mapping)] = keys
        # flatten_mapping puts the pairs merged in through '<<' first and the mapping's own
        # pairs last, and YAML lets both own keys and later merges override earlier merged
        # ones; only an own key written twice is a mistake.
        own = sum(1 for key_node, _ in node.value if key_node.tag != "tag:yaml.org,2002:merge")
        try:
            self.loader.flatten_mapping(node)
        except yaml.YAMLError as exc:
            self._fail(f"invalid merge key ({exc})", "remove the '<<' entry", node)
            return mapping
        first_own = len(node.value) - own
        own_keys: set[Any] = set()
        for index, (key_node, value_node) in enumerate(node.value):
            if not isinstance(key_node, yaml.ScalarNode):
                self._fail(
                    "a key must be a plain value, not a list or mapping",
                    "write 'key: value'",
                    key_node,
                )
                continue
            key = self._scalar(key_node)
            try:
                duplicate = key in own_keys
            except TypeError:  # pragma: no cover - the safe constructors build hashable scalars
                self._fail("this key cannot be used", "write a plain string key", key_node)
                continue
            if duplicate:
                self._fail(
                    f"key {str(key)!r} appears twice in one mapping (first on line {keys[key][0]})",
                    "keep one of the two",
                    key_node,
                )
                continue
            if index >= first_own:
                own_keys.add(key)
            keys[key] = self._loc(key_node)
            if self._bare(key_node, value_node):
                self.marks.bare.setdefault(id(mapping), set()).add(key)
            mapping[key] = self.build(value_node)
            self._word(mapping, key, mapping[key], value_node)
        return mapping

    def _bare(self, key_node: yaml.Node, value_node: yaml.Node) -> bool:
        """True for a key written with no value and no ``:`` (``? hr``, ``{hr, legal}``: YAML's
        set syntax); ``hr:`` and ``hr: null`` write one. Comments between are not the ``:``."""
        import yaml

        if not isinstance(value_node, yaml.ScalarNode) or value_node.value != "":
            return False
        start, end = key_node.end_mark.index, value_node.start_mark.index
        if not self.text or value_node.end_mark.index != end or end < start:
            return False
        between = _COMMENT.sub("", self.text[start:end])
        return ":" not in between

    def _word(self, container: object, key: object, value: object, node: yaml.Node) -> None:
        """Remember how a boolean was written (``no``, ``On``): a context refuses the YAML 1.1
        words (:func:`pytest_retrieval.golden.context.context_problems`)."""
        if isinstance(value, bool):
            self.marks.words.setdefault(id(container), {})[key] = str(node.value)


_EXPECTED = f"a golden set: 'version: {SCHEMA_VERSION}' and a 'queries:' list"


def read_yaml(path: str) -> Parsed:
    """Read a canonical YAML golden set: the safe loader only, through the one guarded YAML path
    (:func:`pytest_retrieval.reading.yaml_document`: no alias bomb, no recursive alias, at most
    100 levels deep)."""
    parsed = Parsed(path)
    text = read_text(parsed)
    if text is None:
        return parsed
    marks = Marks()
    reader = SchemaReader(parsed, marks.locate, written=marks.written)
    try:
        with yaml_document(text, source=path, what="golden set", expected=_EXPECTED) as (
            loader,
            node,
        ):
            if node is None:
                parsed.fail(
                    "the file is empty",
                    f"write 'version: {SCHEMA_VERSION}' and a 'queries:' list",
                )
                return parsed
            document = _YamlBuilder(loader, reader, marks, text).build(node)
    except InputError as exc:
        parsed.problems.extend(exc.problems)
        return parsed
    if parsed.problems:
        return parsed
    reader.read_document(document)
    return parsed


# --- JSON and JSONL --------------------------------------------------------------------------


def _pairs_hook(duplicates: list[str]) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        mapping: dict[str, Any] = {}
        for key, value in pairs:
            if key in mapping:
                duplicates.append(key)
            else:
                mapping[key] = value
        return mapping

    return hook


def _duplicate_keys(parsed: Parsed, duplicates: list[str], line: int | None = None) -> None:
    for key in duplicates:
        parsed.fail(f"key {key!r} appears twice in one object", "keep one of the two", line=line)


def read_json(path: str) -> Parsed:
    """Read a JSON golden set: the same document as the YAML one. Problems name the query's
    index (``queries[3].relevant``) since JSON values carry no line numbers here."""
    parsed = Parsed(path)
    text = read_text(parsed)
    if text is None:
        return parsed
    duplicates: list[str] = []
    try:
        document = load_json(
            text,
            source=path,
            what="golden set",
            expected='a golden set: {"version": 1, "queries": [...]}',
            object_pairs_hook=_pairs_hook(duplicates),
        )
    except InputError as exc:
        parsed.problems.extend(exc.problems)
        return parsed
    _duplicate_keys(parsed, duplicates)
    SchemaReader(parsed, paths=True).read_document(document)
    return parsed


def _jsonl_lines(text: str) -> Iterator[tuple[int, str]]:
    for number, line in split_lines(text):
        if line.strip():
            yield number, line


def read_jsonl(path: str) -> Parsed:
    """Read a JSONL golden set: one query object per line, after an optional header line."""
    parsed = Parsed(path)
    text = read_text(parsed)
    if text is None:
        return parsed
    defaults = Defaults()
    current = 0

    def locate(container: object, key: object = None) -> Loc:
        return (current, None)

    reader = SchemaReader(parsed, locate)
    duplicates: list[str] = []
    hook = _pairs_hook(duplicates)
    seen_record = False
    for current, line in _jsonl_lines(text):
        try:
            record = load_json(
                line,
                source=path,
                what="golden set",
                expected='one query per line: {"id": ..., "text": ..., "relevant": [...]}',
                line=current,
                object_pairs_hook=hook,
            )
        except InputError as exc:
            parsed.problems.extend(exc.problems)
            duplicates.clear()
            seen_record = True
            continue
        if duplicates:
            _duplicate_keys(parsed, duplicates, current)
            duplicates.clear()
        if (
            not seen_record
            and isinstance(record, dict)
            and "id" not in record
            and ("version" in record)
        ):
            reader.unknown_keys(record, HEADER_FIELDS, where="the header line")
            defaults = reader.read_header(record, version_required=True)
            seen_record = True
            continue
        seen_record = True
        reader.read_query(record, defaults, record, None)
    if not seen_record:
        parsed.fail(
            "the golden set is empty: the file has no queries",
            'write one query per line: {"id": ..., "text": ..., "relevant": [...]}',
        )
    elif not parsed.queries and not parsed.problems:
        parsed.fail(
            "the golden set is empty: the file has a header but no queries",
            "write one query per line after the header",
        )
    return parsed


# --- writers ---------------------------------------------------------------------------------


def _relevant(query: Query) -> list[str] | dict[str, int]:
    # Binary labels read best as a list; anything graded (or grade 0) needs the mapping.
    if all(grade == 1 for grade in query.judgments.values()):
        return list(query.judgments)
    return dict(query.judgments)


def _record(query: Query, *, compact: bool) -> dict[str, Any]:
    # Keys in QUERY_FIELDS order, the order the schema documents them in.
    record: dict[str, Any] = {"id": query.id, "text": query.text, "relevant": _relevant(query)}
    if query.slices or not compact:
        record["slices"] = list(query.slices)
    if query.split != DEFAULT_SPLIT or not compact:
        record["split"] = query.split
    if query.context:  # only a query that has one: files without contexts are unchanged
        record["context"] = thaw_context(query.context)
    if query.forbidden:
        record["forbidden"] = list(query.forbidden)
    if query.provenance:
        record["provenance"] = {doc: label.to_dict() for doc, label in query.provenance.items()}
    return record


def _header(golden: GoldenSet) -> dict[str, Any]:
    header: dict[str, Any] = {"version": SCHEMA_VERSION}
    if golden.name is not None:
        header["name"] = golden.name
    if golden.corpus_version is not None:
        header["corpus_version"] = golden.corpus_version
    return header


def _yaml_text(golden: GoldenSet) -> str:
    import yaml

    dumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    document = _header(golden)
    document["queries"] = [_record(q, compact=True) for q in golden.queries]
    body = yaml.dump(
        document,
        Dumper=dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=None,  # leaf lists and mappings inline: relevant: [a, b]
        width=1 << 16,  # keep each text on one line
    )
    head = f"# Golden set written by pytest-retrieval.\n# fingerprint: {golden.fingerprint}\n"
    return head + body


def _jsonl_text(golden: GoldenSet) -> str:
    lines = [json.dumps(_header(golden), ensure_ascii=False)]
    lines.extend(json.dumps(_record(q, compact=False), ensure_ascii=False) for q in golden)
    return "\n".join(lines) + "\n"


def _json_text(golden: GoldenSet) -> str:
    document = _header(golden)
    document["queries"] = [_record(q, compact=False) for q in golden.queries]
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


def write(golden: GoldenSet, path: str, fmt: str) -> None:
    """Write ``golden`` to ``path`` as ``fmt`` (``yaml``, ``json`` or ``jsonl``).

    The file is replaced atomically, so a failed write never leaves half a golden set behind.
    """
    render = {"yaml": _yaml_text, "json": _json_text, "jsonl": _jsonl_text}[fmt]
    text = render(golden)
    from ..files import atomic_write_text

    # The one atomic writer: a unique temporary name beside ``path`` (never a fixed
    # ``path.tmp`` that could be someone's file or a symlink), fsync, rename.
    atomic_write_text(path, text, what="golden set")
