"""Duplicate documents: groups of copies, scoring per group, and ``distinct@K``.

The convention (written once; the README's "No-answer queries and duplicates" section and
:func:`pytest_retrieval.scoring.evaluate.evaluate` point here):

* A **duplicate group** is a set of doc ids holding the same text (or nearly). Groups come from
  a file (``retrieval_duplicates``: doc id → group id) or from the corpus' texts
  (``retrieval_dedup = exact`` on normalised text, ``near`` on the Jaccard similarity of word
  shingles, estimated with MinHash). A doc id in no group is a group of its own.
* With groups, relevance is judged **per group**: a group's grade is the highest grade any of
  its members is judged with (a group with no judged member is unjudged). In a ranking, a
  group counts once, at the rank of its first member; later members of the same group are
  non-relevant filler that still take up a rank. Recall, AP, R-precision and NDCG divide by the
  relevant *groups*; the ideal NDCG ranking holds each group once.
* ``distinct@K`` is the share of the top K results that are not a copy of an earlier result:
  (groups first seen in the top K) / (results in the top K, at most K). ``None`` for an empty
  ranking. It needs no judgments and ignores the ``no_relevant`` convention. Without groups, a
  copy is the same doc id returned twice: ``distinct@K`` is measured over the top K results as
  returned, before the repeated-id rule of :mod:`pytest_retrieval.scoring.evaluate` keeps each id
  once.

:func:`collapse` rewrites a run and its judgments so that the batch kernel scores groups: each
doc id becomes its group's key (the group's smallest doc id, so it cannot collide with a doc
id outside the group). With no groups nothing is rewritten and nothing is slower.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ..errors import InputError, Problem

#: The default Jaccard threshold of ``retrieval_dedup = near``.
DEFAULT_NEAR_THRESHOLD = 0.9
#: Words per shingle for ``near``.
SHINGLE_WORDS = 3
#: MinHash permutations for ``near`` (the estimate's error is about 1/sqrt(128) ≈ 0.09; pairs
#: the index proposes are then checked on their exact Jaccard, so no pair is merged on luck).
MINHASH_PERMUTATIONS = 128
#: How far below the threshold LSH looks for candidate pairs (their exact Jaccard decides).
LSH_MARGIN = 0.15


@dataclass(frozen=True, slots=True)
class DuplicateGroups:
    """Doc id → its group's key, for the doc ids that have a copy (groups of two or more).

    ``source`` says where the groups came from (for the summary and the artifact).
    """

    key_of: Mapping[str, str]
    source: str = ""
    _members: Mapping[str, tuple[str, ...]] = field(default_factory=dict, repr=False)

    @classmethod
    def from_mapping(cls, group_of: Mapping[str, str], *, source: str = "") -> DuplicateGroups:
        """Groups from ``{doc id: group id}``; group ids are any labels (only equality counts).

        Groups of one doc are dropped (a doc is its own group anyway)."""
        by_group: dict[str, list[str]] = {}
        for doc, group in group_of.items():
            by_group.setdefault(str(group), []).append(str(doc))
        return cls.from_groups(by_group.values(), source=source)

    @classmethod
    def from_groups(cls, groups: Iterable[Iterable[str]], *, source: str = "") -> DuplicateGroups:
        """Groups from lists of doc ids that are copies of each other (lists sharing an id are
        one group)."""
        parent: dict[str, str] = {}

        def find(doc: str) -> str:
            root = parent.setdefault(doc, doc)
            while root != parent[root]:
                root = parent[root]
            while parent[doc] != root:  # path compression
                parent[doc], doc = root, parent[doc]
            return root

        for group in groups:
            docs = [str(d) for d in group]
            for doc in docs[1:]:
                a, b = find(docs[0]), find(doc)
                if a != b:
                    parent[max(a, b)] = min(a, b)
            if docs:
                find(docs[0])
        members: dict[str, list[str]] = {}
        for doc in parent:
            members.setdefault(find(doc), []).append(doc)
        kept = {min(docs): tuple(sorted(docs)) for docs in members.values() if len(docs) > 1}
        key_of = {doc: key for key, docs in kept.items() for doc in docs}
        return cls(key_of=key_of, source=source, _members=kept)

    @property
    def groups(self) -> Mapping[str, tuple[str, ...]]:
        """Group key → its members (sorted), for the groups of two or more."""
        return self._members

    def key(self, doc: str) -> str:
        """The group key of a doc id (the id itself when it has no copy)."""
        return self.key_of.get(doc, doc)

    def with_copies(self, ids: Iterable[str]) -> set[str]:
        """``ids`` and every copy of them (the members of their groups): what counts as judged
        when a copy stands for its group (the id checks of a pytest run and of ``evaluate``)."""
        out = set(ids)
        for doc in list(out):
            key = self.key_of.get(doc)
            if key is not None:
                out.update(self._members[key])
        return out

    def __len__(self) -> int:
        return len(self._members)

    @property
    def fingerprint(self) -> str:
        """A short sha256 of the groups (not of the file's bytes): recorded in baselines, so
        that changed groups make a comparison incomparable instead of silently different."""
        import hashlib

        text = "\n".join("\t".join(members) for _key, members in sorted(self._members.items()))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    def describe(self) -> str:
        """``3 duplicate groups (7 documents) from retrieval_duplicates = dups.tsv``."""
        docs = sum(len(m) for m in self._members.values())
        where = f" from {self.source}" if self.source else ""
        return f"{len(self)} duplicate groups ({docs} documents){where}"


#: The fingerprint of no duplicate groups at all.
_NO_GROUPS = DuplicateGroups.from_groups(()).fingerprint


def recorded_groups(value: object) -> object:
    """The duplicate groups a recorded ``dedup`` setting stands for: its fingerprint.

    :func:`pytest_retrieval.regression.recording.snapshot_settings` records ``SOURCE:FINGERPRINT``
    (``file:…`` for ``retrieval_duplicates``, ``exact:…`` or ``near=0.9:…`` for
    ``retrieval_dedup``). The same groups give the same numbers wherever they came from, so
    only the fingerprint counts; no groups at all (an empty file, a corpus without copies)
    score as no deduplication, so they compare as an absent setting (None).
    """
    if not isinstance(value, str) or ":" not in value:
        return value
    fingerprint = value.rpartition(":")[2]
    return None if fingerprint == _NO_GROUPS else fingerprint


def groups_fingerprint(groups: DuplicateGroups | None) -> str | None:
    """What :func:`recorded_groups` gives for a run scored with ``groups``: their fingerprint,
    None for no groups at all."""
    if groups is None or groups.fingerprint == _NO_GROUPS:
        return None
    return groups.fingerprint


def collapse(
    run: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, int]],
    groups: DuplicateGroups,
) -> tuple[dict[str, Sequence[str]], dict[str, dict[str, int]]]:
    """The run and judgments rewritten to group keys (see the module docstring).

    Each judged group takes the highest grade of its judged members; rankings keep their length
    (a later copy stays in place, as its group's key, and the kernel scores it as filler).
    """
    key_of = groups.key_of
    new_run: dict[str, Sequence[str]] = {}
    for qid, ranking in run.items():
        if isinstance(ranking, str):  # let the kernel refuse it with its own message
            new_run[qid] = ranking
            continue
        # map() with dict.get runs at C speed: the ids are rewritten without a Python loop.
        new_run[qid] = list(map(key_of.get, ranking, ranking)) if key_of else ranking
    new_qrels: dict[str, dict[str, int]] = {}
    for qid, judgments in qrels.items():
        merged: dict[str, int] = {}
        for doc, grade in judgments.items():
            key = key_of.get(doc, doc)
            old = merged.get(key)
            if old is None or grade > old:
                merged[key] = grade
        new_qrels[qid] = merged
    return new_run, new_qrels


def distinct_at_k(
    ranking: Sequence[str], k: int, groups: DuplicateGroups | None = None
) -> float | None:
    """``distinct@K``: the share of the top K that is not a copy of an earlier result; ``None``
    for an empty ranking."""
    top = ranking[:k]
    if not top:
        return None
    key_of = groups.key_of if groups is not None else {}
    seen = {key_of.get(doc, doc) for doc in top}
    return len(seen) / len(top)


def distinct_column(
    query_ids: Sequence[str],
    run: Mapping[str, Sequence[str]],
    k: int,
    groups: DuplicateGroups | None,
    *,
    returned: Mapping[str, Sequence[str]] | None = None,
) -> list[float | None]:
    """``distinct@K`` of each query of ``query_ids`` (``None`` when missing or empty), over its
    results as returned: ``returned[qid]`` where given (a ranking whose ids repeat), else
    ``run[qid]``."""
    given = returned or {}
    return [distinct_at_k(given.get(qid) or run.get(qid) or (), k, groups) for qid in query_ids]


# --- groups from a file ---------------------------------------------------------------------


def parse_duplicates(
    text: str, *, source: str, setting: str = "retrieval_duplicates"
) -> DuplicateGroups:
    """Read a duplicates file: JSON (``{"doc": "group", ...}`` or ``[["a", "b"], ...]``) or
    TSV (``doc<TAB>group`` per line; blank lines and ``#`` comments skipped).

    Raises :class:`~pytest_retrieval.errors.InputError` naming the line and the fix.
    """
    where = f"{setting} = {source}" if setting.startswith("retrieval_") else f"{setting} {source}"
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        from ..reading import load_json

        data = load_json(
            text,
            source=source,
            what="duplicates file",
            expected='JSON {"doc-a": "g1", "doc-b": "g1"}, or `doc id<TAB>group id` lines',
        )
        if isinstance(data, dict):
            if all(isinstance(k, str) and isinstance(v, (str, int)) for k, v in data.items()):
                return DuplicateGroups.from_mapping(
                    {k: str(v) for k, v in data.items()}, source=where
                )
        elif isinstance(data, list) and all(
            isinstance(g, list) and all(isinstance(d, (str, int)) for d in g) for g in data
        ):
            return DuplicateGroups.from_groups([[str(d) for d in g] for g in data], source=where)
        raise InputError(
            Problem(
                "a JSON duplicates file is an object of doc id → group id strings, or a list "
                "of lists of doc ids",
                fix=_FILE_FIX,
                source=source,
            )
        )
    mapping: dict[str, str] = {}
    problems: list[Problem] = []
    from ..reading import split_lines

    for number, line in split_lines(text):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = [p.strip() for p in line.split("\t")]
        if len(parts) != 2 or not parts[0] or not parts[1]:
            problems.append(
                Problem(
                    f"expected `doc id<TAB>group id`, got {line.strip()[:60]!r}",
                    fix=_FILE_FIX,
                    source=source,
                    line=number,
                )
            )
            continue
        doc, group = parts
        if doc in mapping and mapping[doc] != group:
            problems.append(
                Problem(
                    f"doc id {doc!r} is in two groups ({mapping[doc]!r} and {group!r})",
                    fix="give each doc id one group (a group can have any number of members)",
                    source=source,
                    line=number,
                )
            )
            continue
        mapping[doc] = group
    if problems:
        raise InputError(problems, title=f"{source}: cannot read the duplicate groups")
    return DuplicateGroups.from_mapping(mapping, source=where)


_FILE_FIX = (
    'write one `doc id<TAB>group id` line per document, or JSON {"doc-a": "g1", "doc-b": "g1"}'
)


#: How to give duplicate groups from Python: what a ValueError about them names.
GROUPS_FIX = (
    "pass DuplicateGroups.from_mapping({doc id: group id}), DuplicateGroups.from_groups([[doc "
    "a, doc b], ...]), a {doc id: group id} dict, or the path of a duplicates file"
)


#: What :func:`as_groups` takes (``evaluate(duplicates=...)``).
GroupsLike = DuplicateGroups | Mapping[str, str] | str | os.PathLike[str]


def as_groups(value: object, *, where: str = "duplicates") -> DuplicateGroups | None:
    """``value`` as duplicate groups, for :func:`.evaluate.evaluate`: a
    :class:`DuplicateGroups` as it is, a ``{doc id: group id}`` mapping
    (:meth:`DuplicateGroups.from_mapping`), a path (``str`` or ``os.PathLike``) of a
    duplicates file as ``retrieval_duplicates`` reads it (:func:`load_duplicates`), or None.
    Anything else is a ValueError naming the constructors."""
    if value is None or isinstance(value, DuplicateGroups):
        return value
    if isinstance(value, Mapping):
        bad = next((d for d in value if not isinstance(d, str)), None)
        if bad is not None:
            raise ValueError(f"{where}: doc ids must be strings, got {bad!r}; {GROUPS_FIX}")
        return DuplicateGroups.from_mapping(dict(value))
    if isinstance(value, (str, os.PathLike)):
        path = os.fspath(value)
        return load_duplicates(path if isinstance(path, str) else path.decode(), setting=where)
    raise ValueError(f"{where} must be duplicate groups, got {type(value).__name__}: {GROUPS_FIX}")


def check_groups(value: object) -> None:
    """Raise ValueError, naming the constructors, unless ``value`` is DuplicateGroups or None
    (``Conventions.duplicates``)."""
    if value is not None and not isinstance(value, DuplicateGroups):
        raise ValueError(
            f"duplicates must be DuplicateGroups, got {type(value).__name__}: " + GROUPS_FIX
        )


def load_duplicates(path: str, *, setting: str = "retrieval_duplicates") -> DuplicateGroups:
    """Read the ``retrieval_duplicates`` file (see :func:`parse_duplicates`)."""
    from ..reading import read_text_file

    try:
        text = read_text_file(path, what="duplicates file")
    except FileNotFoundError:
        raise InputError(
            Problem(
                "duplicates file not found",
                fix=f"check {setting}"
                + (
                    " (relative paths are from the ini file's folder)"
                    if setting.startswith("retrieval_")
                    else ""
                ),
                source=path,
            )
        ) from None
    return parse_duplicates(text, source=path, setting=setting)


# --- groups from texts ----------------------------------------------------------------------

_WORD = re.compile(r"\w+")


def normalise(text: str) -> str:
    """The text ``exact`` compares: NFKC, case-folded, words only, single spaces."""
    return " ".join(_WORD.findall(unicodedata.normalize("NFKC", text).casefold()))


def shingles(text: str, size: int = SHINGLE_WORDS) -> frozenset[str]:
    """The word ``size``-grams of the normalised text (the whole text when shorter)."""
    words = normalise(text).split()
    if len(words) <= size:
        return frozenset([" ".join(words)]) if words else frozenset()
    return frozenset(" ".join(words[i : i + size]) for i in range(len(words) - size + 1))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Shared shingles over all shingles of either (1.0 for two empty sets)."""
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def exact_groups(texts: Mapping[str, str], *, source: str = "") -> DuplicateGroups:
    """Docs whose normalised texts are equal (empty texts are never grouped)."""
    by_text: dict[str, list[str]] = {}
    for doc, text in texts.items():
        key = normalise(text)
        if key:
            by_text.setdefault(key, []).append(doc)
    return DuplicateGroups.from_groups(by_text.values(), source=source)


def near_groups(
    texts: Mapping[str, str],
    threshold: float = DEFAULT_NEAR_THRESHOLD,
    *,
    source: str = "",
) -> DuplicateGroups:
    """Docs whose word-shingle Jaccard similarity is at least ``threshold``, joined
    transitively (a ~ b and b ~ c put a, b and c in one group).

    Candidate pairs come from MinHash LSH (datasketch, the ``pytest-retrieval[dedup]`` extra),
    asked for pairs :data:`LSH_MARGIN` below the threshold so that pairs near it are rarely
    missed; each candidate pair is then kept only if its exact Jaccard reaches the threshold, so
    no pair is merged on an estimate, and reruns give the same groups (fixed seed). LSH can still
    miss a pair (rarely, and only one close to the threshold); ``exact`` never does.
    """
    try:
        from datasketch import MinHash, MinHashLSH
    except ImportError:
        raise InputError(
            Problem(
                "retrieval_dedup = near needs datasketch (MinHash), which is not installed",
                fix="pip install 'pytest-retrieval[dedup]' (or pip install datasketch), or use "
                "retrieval_dedup = exact",
            )
        ) from None
    sets = {doc: shingles(text) for doc, text in texts.items()}
    sets = {doc: s for doc, s in sets.items() if s}
    lsh = MinHashLSH(threshold=max(0.05, threshold - LSH_MARGIN), num_perm=MINHASH_PERMUTATIONS)
    hashes = {}
    for doc in sorted(sets):
        minhash = MinHash(num_perm=MINHASH_PERMUTATIONS, seed=1)
        minhash.update_batch([s.encode("utf-8") for s in sorted(sets[doc])])
        hashes[doc] = minhash
        lsh.insert(doc, minhash)
    pairs: list[list[str]] = []
    for doc in sorted(sets):
        for other in lsh.query(hashes[doc]):
            if other > doc and jaccard(sets[doc], sets[other]) >= threshold:
                pairs.append([doc, other])
    return DuplicateGroups.from_groups(pairs, source=source)


def judged_duplicates(
    judged: Mapping[str, Mapping[str, int]], groups: DuplicateGroups
) -> list[tuple[str, tuple[str, ...], dict[str, dict[str, int]]]]:
    """Groups with two or more judged members: ``(group key, judged members, {query id:
    {member: grade}})`` for ``golden validate``, sorted by key. ``judged`` maps query id →
    judgments."""
    out = []
    for key, members in sorted(groups.groups.items()):
        member_set = set(members)
        per_query: dict[str, dict[str, int]] = {}
        judged_members: set[str] = set()
        for qid, judgments in judged.items():
            grades = {d: g for d, g in judgments.items() if d in member_set}
            if grades:
                per_query[qid] = grades
                judged_members |= grades.keys()
        if len(judged_members) > 1:
            out.append((key, tuple(sorted(judged_members)), per_query))
    return out
