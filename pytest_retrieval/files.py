"""Writing files so that a crash never leaves a half-written one, and reading side files safely.

Every file the package writes (artifact, baseline, reports, converted golden sets, TREC runs) goes
through :func:`atomic_write`: a temporary file with a unique name (``mkstemp``: created
exclusively, so it never follows a symlink nor clobbers an existing file) in the destination
folder, flushed and fsync'ed, then renamed over the target (an atomic operation on POSIX and
Windows; a symlink at the target is replaced, not written through): a reader sees either the old
file or the new one, never a mix.

Appending (``$GITHUB_STEP_SUMMARY``) cannot be made atomic by a rename, since other steps' text
is already in the file. :func:`append_text` is all-or-nothing instead: the whole text goes in one
``write`` on an ``O_APPEND`` descriptor, and when that comes back short or fails (a full disk),
the file is truncated back to the size it had before, so it never ends with a cut report. (One
job's steps run one after another, so nothing else appends meanwhile.)

:func:`~pytest_retrieval.reading.read_text_file`, the bounded reader of a file we did not
write, is :mod:`pytest_retrieval.reading`'s.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO, overload

from .errors import InputError, Problem


def atomic_write_text(path: str | os.PathLike[str], text: str, *, what: str = "file") -> None:
    """Write ``text`` to ``path`` atomically (temp file + fsync + rename).

    Raises :class:`~pytest_retrieval.errors.InputError` naming the path when it cannot be written
    (missing or unwritable folder, a directory in the way); the old file, if any, is untouched.
    """
    atomic_write(path, lambda out: out.write(text), what=what)


def atomic_write_json(path: str | os.PathLike[str], document: Any, *, what: str = "file") -> None:
    """Write ``document`` as compact JSON (one trailing newline) to ``path`` atomically.

    Compact, because an artifact of 100,000 queries indented would be several times larger and
    slower; in chunks (:func:`write_json`), so the whole text never sits in memory at once.
    """

    def write(out: TextIO) -> None:
        write_json(out, document)
        out.write("\n")

    atomic_write(path, write, what=what)


class LazyList(Sequence[Any]):
    """A read-only list whose items are built on access (``build(i)``), for documents too large
    to hold whole: :func:`write_json` builds, writes and drops them a slice at a time."""

    def __init__(self, length: int, build: Callable[[int], Any]) -> None:
        self._length = length
        self._build = build

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self._build(i) for i in range(*index.indices(self._length))]
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError(index)
        return self._build(index)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, (list, tuple, LazyList)) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]


class LazyMapping(Mapping[str, Any]):
    """A read-only mapping over ``keys`` whose values are built on access (``build(key)``); see
    :class:`LazyList`. ``members`` builds one member of a value alone (``members[name](key)``
    is ``build(key)[name]``), for a reader that needs only that one (:meth:`member`)."""

    def __init__(
        self,
        keys: Sequence[str],
        build: Callable[[str], Any],
        members: Mapping[str, Callable[[str], Any]] | None = None,
    ) -> None:
        self._keys = list(keys)
        self._known = set(self._keys)
        self._build = build
        self._members = dict(members or {})
        # The last value built: a report reads one key a few times in a row (a query's
        # relevant ranks for two cells), and builds it once; one entry, so memory stays flat.
        self._last: tuple[str, Any] | None = None

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._known  # without building the value (Mapping's would)

    def __getitem__(self, key: str) -> Any:
        last = self._last
        if last is not None and last[0] == key:
            return last[1]
        if key not in self._known:
            raise KeyError(key)
        value = self._build(key)
        self._last = (key, value)
        return value

    def member(self, key: str, name: str) -> Any:
        """``self[key].get(name)``, built alone when ``members`` can (None: no such key)."""
        if key not in self._known:
            return None
        build = self._members.get(name)
        if build is None:
            value = self[key]
            return value.get(name) if isinstance(value, Mapping) else None
        return build(key)


#: A container with more members than this is written in slices of this many members.
_CHUNK = 256
#: Containers this deep or deeper are encoded whole (their members are small).
_STREAM_DEPTH = 3


def write_json(out: TextIO, value: Any) -> None:
    """Write ``value`` to ``out`` as compact JSON (``ensure_ascii=False``), exactly the text of
    ``json.dumps(value, ensure_ascii=False, separators=(",", ":"))``.

    ``json.dump`` to a file runs the pure-Python encoder (ten times slower than the C one);
    ``json.dumps`` of a whole artifact would hold all of its text at once. Here the outer
    levels are walked in Python, and every slice of up to :data:`_CHUNK` members of a large
    container (the per-query rows) goes through the C encoder in one call.
    """
    encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

    def key_text(key: Any) -> str:
        if isinstance(key, str):
            return encode(key)
        return encode({key: None})[1:-6]  # json's own key conversion (numbers, bools, None)

    def emit(item: Any, depth: int) -> None:
        if isinstance(item, LazyMapping):
            item = item if depth < _STREAM_DEPTH else dict(item)
        elif isinstance(item, LazyList):
            item = item if depth < _STREAM_DEPTH else list(item)
        if (
            depth >= _STREAM_DEPTH
            or not isinstance(item, (dict, list, tuple, LazyList, LazyMapping))
            or not item
        ):
            out.write(encode(item))
            return
        many = len(item) > _CHUNK
        if isinstance(item, (dict, LazyMapping)):
            out.write("{")
            if many:
                keys = list(item)
                for start in range(0, len(keys), _CHUNK):
                    if start:
                        out.write(",")
                    part = {key: item[key] for key in keys[start : start + _CHUNK]}
                    out.write(encode(part)[1:-1])
            else:
                for position, (key, member) in enumerate(item.items()):
                    out.write(("," if position else "") + key_text(key) + ":")
                    emit(member, depth + 1)
            out.write("}")
            return
        out.write("[")
        if many:
            for start in range(0, len(item), _CHUNK):
                if start:
                    out.write(",")
                out.write(encode(list(item[start : start + _CHUNK]))[1:-1])  # built, then dropped
        else:
            for position, member in enumerate(item):
                if position:
                    out.write(",")
                emit(member, depth + 1)
        out.write("]")

    emit(value, 0)


def atomic_write(
    path: str | os.PathLike[str], write: Callable[[TextIO], object], *, what: str = "file"
) -> None:
    """Call ``write(handle)`` on a temporary file beside ``path``, then rename it over ``path``."""
    target = Path(path)
    problem = path_problem(target, what=what)
    if problem is not None:
        raise InputError(problem)
    folder = target.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise InputError(
            Problem(
                f"cannot write the {what}: {exc.strerror or exc}",
                fix="check that the folder exists and is writable",
                source=str(target),
            )
        ) from None
    try:
        # mkstemp creates the file private (0600); give it the mode the old file had, or the
        # usual one for a new file, so a committed baseline keeps its permissions.
        try:
            mode = target.stat().st_mode & 0o777
        except OSError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(temp_name, mode)
        # backslashreplace: a lone surrogate in user text (an id a retriever returned) is
        # written as \udXXX, which inside a JSON string is the escape of the same code point,
        # instead of failing the whole write.
        with os.fdopen(
            handle, "w", encoding="utf-8", errors="backslashreplace", newline="\n"
        ) as out:
            write(out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp_name, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        if isinstance(exc, OSError):  # e.g. disk full: the old file is intact, say so
            raise InputError(
                Problem(
                    f"cannot write the {what}: {exc.strerror or exc}; the previous file, if "
                    "any, is unchanged",
                    fix="check the free space and permissions of the folder",
                    source=str(target),
                )
            ) from None
        raise


_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def append_text(path: str | os.PathLike[str], text: str) -> None:
    """Append ``text`` to ``path`` (created if missing), all or nothing.

    On a short or failed write (a full disk) the file is truncated back to its size before the
    call and the ``OSError`` is raised: a reader never sees part of ``text``. See the module's
    docstring for why this is sound for ``$GITHUB_STEP_SUMMARY``.
    """
    data = text.encode("utf-8", "backslashreplace")
    # O_NONBLOCK: a FIFO with no reader fails at once (ENXIO) instead of blocking forever.
    fd = os.open(os.fspath(path), os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NONBLOCK, 0o666)
    try:
        info = os.fstat(fd)
        regular = stat.S_ISREG(info.st_mode)
        before = info.st_size
        try:
            written = os.write(fd, data)
            if written != len(data):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            if regular:
                os.fsync(fd)
        except BaseException:
            if regular:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, before)
            raise
    finally:
        os.close(fd)


def path_problem(path: str | os.PathLike[str], *, what: str = "file") -> Problem | None:
    """Why ``path`` can never be written as a file, if the file system already says so: it is a
    directory, one of its folders is a file, or it holds a NUL character (no file system has
    such a name). None otherwise (permissions are the write's)."""
    if "\x00" in os.fspath(path):
        return Problem(
            f"cannot write the {what}: the path holds a NUL character",
            fix="name a file without one",
            source=os.fspath(path).replace("\x00", "\\x00"),
        )
    target = Path(path)
    if target.is_dir():
        return Problem(
            f"cannot write the {what}: the path is a directory",
            fix="name a file",
            source=str(target),
        )
    for folder in target.parents:
        if folder.is_dir():
            return None
        if folder.exists():
            return Problem(
                f"cannot write the {what}: {folder} is a file, not a folder",
                fix="name a path whose folders are folders",
                source=str(target),
            )
    return None


# --- an output is never one of the inputs ------------------------------------------------------

#: ``(what, path)``: a file a command reads or writes, named as its option is (``--output``).
Named = tuple[str, "str | os.PathLike[str] | None"]


def _stat_id(path: str) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except (OSError, ValueError):  # missing, unreadable, or a NUL in the name
        return None
    return info.st_dev, info.st_ino


def _real(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> str | None:
    """How ``a`` and ``b`` name one file, or None when they do not: ``"the same file"`` (one
    resolved path: the same spelling, ``./``, ``..``, a symlinked folder), ``"a symbolic link to
    it"`` (``a`` is a link to ``b``, or the reverse) or ``"a hard link to it"`` (one inode,
    ``(st_dev, st_ino)``, under two names)."""
    first, second = os.fspath(a), os.fspath(b)
    if "\x00" in first or "\x00" in second:  # names no file (path_problem refuses it)
        return None
    if _real(first) == _real(second):
        if os.path.islink(first) or os.path.islink(second):
            return "a symbolic link to it"
        return "the same file"
    found = _stat_id(first)
    return "a hard link to it" if found is not None and found == _stat_id(second) else None


def _inside(output: str, folder: str) -> bool:
    """True when ``output`` is an existing file somewhere inside the input folder ``folder``
    (a BEIR folder's qrels, corpus or queries): writing it would change the input."""
    if "\x00" in output or "\x00" in folder:
        return False
    if not os.path.isdir(folder) or not os.path.isfile(output):
        return False
    real, base = _real(output), _real(folder)
    return real.startswith(base.rstrip(os.sep) + os.sep)


def clobbered_inputs(outputs: Sequence[Named], inputs: Sequence[Named]) -> list[Problem]:
    """Every output (``(what, path)``; None paths are skipped) that is one of the ``inputs``, a
    file inside an input folder, or another output: writing it would replace what was read (or
    what was just written). Compared by resolved path and by ``(st_dev, st_ino)``, so a
    symlink, a hard link or another spelling of the same file is caught."""
    problems: list[Problem] = []
    given = [(what, os.fspath(path)) for what, path in outputs if path is not None]
    read = [(what, os.fspath(path)) for what, path in inputs if path is not None]
    for position, (what, path) in enumerate(given):
        against = read + [(w, p) for w, p in given[:position]]
        for other_what, other in against:
            how = same_file(path, other)
            if how is None and _inside(path, other):
                how = "a file inside it"
            if how is None:
                continue
            kind = "an output too" if (other_what, other) in given else "an input"
            problems.append(
                Problem(
                    f"{what} {path} is {other_what} {other} ({how}): writing it would replace "
                    f"{kind}; nothing was written",
                    fix=f"name a new file for {what}",
                )
            )
            break
    return problems


def refuse_clobbering(outputs: Sequence[Named], inputs: Sequence[Named]) -> None:
    """Raise :class:`~pytest_retrieval.errors.InputError` when an output would replace an input
    or another output (:func:`clobbered_inputs`); call it before anything is written."""
    problems = clobbered_inputs(outputs, inputs)
    if problems:
        raise InputError(problems)
