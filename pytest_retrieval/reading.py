"""Reading every file a user hands us, and decoding its JSON or YAML: the one safe path.

Two halves, each the one home of its job; every reader of the package goes through them (a test
compares the list of readers with the package, and refuses a raw ``open`` or ``json.loads``
anywhere else).

**The safe reader of side files**: :func:`read_text_file` (the whole file) and
:func:`read_lines` (line by line, for line formats that can be large: TREC runs and qrels,
JSONL run files, corpora). Their rules:

* *Regular files only*: a FIFO, a device (``/dev/zero``) or a socket is refused by name before a
  byte is read (a FIFO with no writer would wait forever, ``/dev/zero`` never ends), unless a
  pipe is meant. A pipe is meant when the path is ``/dev/stdin`` or lies under ``/dev/fd/`` or
  ``/proc/self/fd/``: what ``--run /dev/stdin < run.trec`` and bash's or zsh's
  ``--run <(command)`` give. Such a stream is read once, to its end (each reader reads its
  file once, so a pipe is never found empty on a second look).
* *Bounded*: a whole file at most :func:`max_file_bytes` (512 MiB unless
  ``PYTEST_RETRIEVAL_MAX_FILE_MB`` says otherwise), refused by its size before it is read; a
  stream is cut off at the same size; one line of a line format at most
  :data:`MAX_LINE_BYTES`.
* *UTF-8*, and said where it is not: a bad byte is reported at its line and column, a NUL byte
  (a binary or UTF-16 file) too; a UTF-16 file is named as such. A byte-order mark (U+FEFF, what
  Notepad and Excel put first) at the start of the file, or of a line (two files joined), is
  dropped: it would otherwise become part of the first query id of a TREC run, which would then
  silently miss its judgments.

**The guarded decoders**: :func:`load_json` and, for YAML, :func:`yaml_document` (the node tree,
for readers that report lines) and :func:`load_yaml` (plain values). Whatever the text, they
return values or raise :class:`~pytest_retrieval.errors.InputError`, never ``RecursionError``,
``MemoryError`` or the integer-string ``ValueError``: nesting at most :data:`MAX_DEPTH` levels,
integers at most :data:`MAX_NUMBER_DIGITS` digits (more could not even be converted to a
float), YAML aliases expanding to at most :func:`yaml_expansion_limit` values (an alias bomb,
a billion laughs, is a few hundred bytes), no recursive YAML alias, no YAML tag beyond the plain
ones, no key written twice in one object or mapping (``json`` and the YAML loader would keep the
last one silently). Every error names the file, the line and column where there is one, what
was expected and the fix. :func:`split_lines` splits a whole file's text into lines by the rule
of :func:`read_lines`.

Every error is an :class:`~pytest_retrieval.errors.InputError` (the CLI's exit status 2, a
usage error, exit status 4, under pytest); a missing file is ``FileNotFoundError``, left to the
caller, which knows how the file is made.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from .errors import InputError, Problem

if TYPE_CHECKING:
    import yaml

#: The default largest file :func:`read_text_file` reads (a baseline of 100,000 queries is
#: ~150 MB); ``PYTEST_RETRIEVAL_MAX_FILE_MB`` changes it.
MAX_READ_BYTES = 512 * 1024 * 1024
#: The environment variable that raises (or lowers) the size cap, in MiB.
MAX_FILE_MB_VARIABLE = "PYTEST_RETRIEVAL_MAX_FILE_MB"
_MAX_FILE_MB_RANGE = (1, 1_048_576)  # 1 MiB to 1 TiB
#: The longest line :func:`read_lines` reads (a JSONL run line of 1,000 documents is ~50 kB).
MAX_LINE_BYTES = 64 * 1024 * 1024
#: The deepest nesting of JSON or YAML values any of our files has a use for (ours nest < 10).
MAX_DEPTH = 100
#: The most digits of an integer in JSON or YAML: more could not be converted to a float.
MAX_NUMBER_DIGITS = 300

#: The paths that name a pipe on purpose (bash's and zsh's ``<(command)``, ``/dev/stdin``).
_STREAM_PREFIXES = ("/dev/fd/", "/proc/self/fd/")
_STREAM_PATHS = ("/dev/stdin",)
_PIPE_FIX = (
    "name a plain file; to read from a pipe on purpose, pass /dev/stdin (`< FILE`) or <(command)"
)

_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def max_file_bytes() -> int:
    """The size cap of a whole file: ``PYTEST_RETRIEVAL_MAX_FILE_MB`` MiB when set (1 to
    1,048,576), else :data:`MAX_READ_BYTES`. A bad value is an InputError naming the variable."""
    raw = os.environ.get(MAX_FILE_MB_VARIABLE)
    if raw is None or not raw.strip():
        return MAX_READ_BYTES
    from .text import parse_int

    value = parse_int(raw)
    low, high = _MAX_FILE_MB_RANGE
    if value is None or not low <= value <= high:
        raise InputError(
            Problem(
                f"{raw!r} is not a whole number of MiB from {low} to {high:,}",
                fix="write e.g. 2048 for 2 GiB, or unset it for the default 512",
                source=f"the environment variable {MAX_FILE_MB_VARIABLE}",
            )
        )
    return value * 1024 * 1024


def is_stream_path(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` names a pipe on purpose: ``/dev/stdin``, or a path under ``/dev/fd/``
    or ``/proc/self/fd/`` (what ``<(command)`` gives)."""
    name = os.fspath(path)
    return name in _STREAM_PATHS or name.startswith(_STREAM_PREFIXES)


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a plain file"


def exists(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` names a directory entry, a broken or looping symlink included: a
    reader then says what is wrong with it ("Too many levels of symbolic links", "not a
    regular file"), where ``os.path.exists`` would call a symlink loop "not found". A path
    holding a NUL exists too: its reader names the NUL."""
    name = os.fspath(path)
    return "\x00" in name or os.path.lexists(name)


def not_a_regular_file(path: str | os.PathLike[str]) -> str | None:
    """What ``path`` is when it exists but is neither a regular file nor a folder ("a FIFO
    (named pipe)", "a character device"...; a symlink is followed), else None: for a file
    another library opens (SQLite), which would wait on a FIFO or read a device."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):  # missing, or a NUL in the path: the opener says which
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return _kind(mode)


def _cannot_read(what: str, name: str, exc: OSError) -> InputError:
    import errno

    fix = {
        errno.ELOOP: "the path is a symbolic link loop: point the link at the file",
        errno.EACCES: "make the file readable by this user (chmod), or name another",
        errno.EPERM: "make the file readable by this user (chmod), or name another",
    }.get(exc.errno or 0, "check the path and its permissions")
    return InputError(
        Problem(f"the {what} cannot be read: {exc.strerror or exc}", fix=fix, source=name)
    )


def _open(name: str, what: str) -> tuple[int, os.stat_result, bool]:
    """``(fd, stat, streamed)`` of ``name`` opened for reading, after the regular-file rule."""
    # O_NONBLOCK: opening a FIFO with no writer returns at once (and is then refused) instead of
    # waiting forever for one; it changes nothing for a regular file.
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    flags |= getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(name, flags)
    except FileNotFoundError:
        raise
    except IsADirectoryError:
        raise InputError(
            Problem(f"the {what} path is a directory", fix="name a file", source=name)
        ) from None
    except OSError as exc:
        raise _cannot_read(what, name, exc) from None
    except ValueError:  # "embedded null byte": a path no file system has
        raise InputError(
            Problem(
                f"the {what} path holds a NUL character",
                fix="check the setting's value",
                source=name.replace("\x00", "\\x00"),
            )
        ) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise InputError(
                Problem(f"the {what} path is a directory", fix="name a file", source=name)
            )
        if stat.S_ISREG(info.st_mode):
            return fd, info, False
        if not is_stream_path(name):
            raise InputError(
                Problem(
                    f"the {what} is not a regular file but {_kind(info.st_mode)}, which could "
                    "be read forever or wait forever for a writer",
                    fix=_PIPE_FIX,
                    source=name,
                )
            )
        if sys.platform != "win32":  # a pipe meant: read it blocking, to its end
            import fcntl

            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return fd, info, True
    except BaseException:
        os.close(fd)
        raise


def _size(count: int) -> str:
    mib = 1024 * 1024
    return f"{count // mib:,} MiB" if count % mib == 0 else f"{count:,} bytes"


def _too_large(what: str, name: str, size: str, limit: int) -> InputError:
    return InputError(
        Problem(
            f"the {what} is {size}, more than the {_size(limit)} this run reads",
            fix=f"check that it is the file you meant, or raise {MAX_FILE_MB_VARIABLE} (MiB)",
            source=name,
        )
    )


def read_text_file(
    path: str | os.PathLike[str], *, what: str = "file", limit: int | None = None
) -> str:
    """The whole text of the side file ``path`` (see the module docstring for the rules).

    ``what`` names the file in messages ("baseline", "run file"); ``limit`` overrides the size
    cap (bytes). A missing file raises ``FileNotFoundError`` (callers say how to create it);
    anything else that makes the file unreadable is an InputError naming it.
    """
    name = os.fspath(path)
    cap = max_file_bytes() if limit is None else limit
    fd, info, streamed = _open(name, what)
    chunks: list[bytes] = []
    try:
        if not streamed and info.st_size > cap:
            raise _too_large(what, name, f"{info.st_size:,} bytes", cap)
        size = 0
        while True:
            try:
                chunk = os.read(fd, 1 << 20)
            except OSError as exc:
                raise _cannot_read(what, name, exc) from None
            if not chunk:
                break
            size += len(chunk)
            if size > cap:  # a stream, or a file that grew while read
                raise _too_large(what, name, f"more than {cap:,} bytes", cap)
            chunks.append(chunk)
    finally:
        os.close(fd)
    return decode_text(b"".join(chunks), source=name, what=what)


def _position(raw: bytes, offset: int) -> tuple[int, int]:
    """The 1-based line and column (in characters) of byte ``offset`` of ``raw``."""
    line_start = raw.rfind(b"\n", 0, offset) + 1
    column = len(raw[line_start:offset].decode("utf-8", "replace")) + 1
    return raw.count(b"\n", 0, offset) + 1, column


def decode_text(raw: bytes, *, source: str, what: str = "file", line: int | None = None) -> str:
    """``raw`` as UTF-8 text, a byte-order mark dropped at the start of every line; InputError
    at the line and column of a bad or NUL byte. ``line``: the line ``raw`` is (one line of a
    line format), else its first line is line 1."""
    if raw.startswith(_UTF16_BOMS) and line in (None, 1):
        raise InputError(
            Problem(
                f"the {what} is UTF-16 (it starts with a UTF-16 byte-order mark), not UTF-8",
                fix="save it as UTF-8",
                source=source,
                line=1,
            )
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        at_line, column = _position(raw, exc.start)
        bad = raw[exc.start : exc.start + 1].hex()
        raise InputError(
            Problem(
                f"the {what} is not valid UTF-8 (byte 0x{bad}: {exc.reason})",
                fix="save the file as UTF-8",
                source=source,
                line=at_line if line is None else line,
                column=column,
            )
        ) from None
    nul = text.find("\x00")
    if nul >= 0:
        at_line, column = _position(raw, len(text[:nul].encode("utf-8")))
        raise InputError(
            Problem(
                f"the {what} holds a NUL byte, so it is not a text file (a binary file, or UTF-16)",
                fix="save it as UTF-8 text",
                source=source,
                line=at_line if line is None else line,
                column=column,
            )
        )
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\n\ufeff" in text:  # two files joined, the second one written with a BOM
        text = text.replace("\n\ufeff", "\n")
    return text


def read_lines(path: str | os.PathLike[str], *, what: str = "file") -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of every line of the side file ``path``, read as it goes (the
    file is opened on the first ``next``). Lines end at ``\\n``, ``\\r\\n`` or ``\\r``, as in
    Python's text files; each line keeps no line end. The rules of :func:`read_text_file`,
    line by line, but for the size cap: a regular file is read to its end however large (only
    a pipe stops at the cap); a line longer than :data:`MAX_LINE_BYTES` is an error at its
    line."""
    name = os.fspath(path)
    cap = max_file_bytes()
    fd, _info, streamed = _open(name, what)
    handle = os.fdopen(fd, "rb", buffering=1 << 16)
    number = 0
    size = 0
    with handle:
        while True:
            try:
                raw = handle.readline(MAX_LINE_BYTES + 1)
            except OSError as exc:
                raise _cannot_read(what, name, exc) from None
            if not raw:
                return
            number += 1
            size += len(raw)
            if streamed and size > cap:
                raise _too_large(what, name, f"more than {cap:,} bytes", cap)
            if len(raw) > MAX_LINE_BYTES:
                raise InputError(
                    Problem(
                        f"line {number} of the {what} is longer than "
                        f"{MAX_LINE_BYTES // (1024 * 1024)} MiB: not a line of text",
                        fix="check that it is the file you meant",
                        source=name,
                        line=number,
                    )
                )
            if number == 1 and raw.startswith(_BOM):
                raw = raw[len(_BOM) :]
            text = decode_text(raw, source=name, what=what, line=number)
            text = text.removesuffix("\n").removesuffix("\r")
            if "\r" not in text:
                yield number, text.removeprefix("\ufeff")
                continue
            parts = text.split("\r")  # old Mac line ends: each is a line of its own
            for offset, part in enumerate(parts):
                yield number + offset, part.removeprefix("\ufeff")
            number += len(parts) - 1


_LINE_END = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[tuple[int, str]]:
    """``(line number, line)`` of every line of the whole-file ``text``, by the rule of
    :func:`read_lines`: lines end at ``\\n``, ``\\r\\n`` or ``\\r`` and keep no line end, and
    nothing else ends one. (``str.splitlines`` also splits at U+2028, U+0085, form feeds and
    other separators, which are text inside a JSON string or a TSV cell, and would cut a record
    in two; ``split("\\n")`` leaves old Mac files one line.) A final line end starts no line."""
    lines = _LINE_END.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return list(enumerate(lines, start=1))


def file_digest(path: str | os.PathLike[str], *, what: str = "file") -> str:
    """The sha256 (hex) of the bytes of the regular file ``path`` (the cache key's corpus and
    doc-id map fingerprints). A pipe cannot be fingerprinted (reading it would consume it):
    InputError, as for any other file that is not regular."""
    import hashlib

    name = os.fspath(path)
    fd, _info, streamed = _open(name, what)
    if streamed:
        os.close(fd)
        raise InputError(
            Problem(
                f"the {what} is a pipe, and the retriever-output cache keys on the bytes of "
                "its file",
                fix="name a plain file, or run without the cache",
                source=name,
            )
        )
    digest = hashlib.sha256()
    with os.fdopen(fd, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# --- JSON --------------------------------------------------------------------------------------

_LONG_NUMBER = re.compile(rf"[0-9]{{{MAX_NUMBER_DIGITS + 1},}}")
_CONTAINERS = (dict, list)


class _TooManyDigits(ValueError):
    pass


class _DuplicateKey(Exception):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    mapping = dict(pairs)
    if len(mapping) != len(pairs):
        seen: set[str] = set()
        for key, _value in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return mapping


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_NUMBER_DIGITS:
        raise _TooManyDigits(len(text.lstrip("-")))
    return int(text)


def nesting_depth_exceeds(value: Any, limit: int = MAX_DEPTH) -> bool:
    """True when ``value`` (decoded JSON) nests more than ``limit`` lists and objects deep.

    Level by level, looking into a container only when it holds containers (``set(map(type,
    ...))`` runs in C), so a 100 MB baseline is checked in a fraction of its decoding time.
    """
    return _shape(value, limit)[0]


def _shape(value: Any, limit: int) -> tuple[bool, int]:
    """(whether ``value`` nests more than ``limit`` deep, how many keys its objects hold): one
    walk, level by level (:func:`nesting_depth_exceeds`). The count is -1 when the walk stopped
    at the limit."""
    level = [value] if type(value) in _CONTAINERS else []
    depth = keys = 0
    while level:
        depth += 1
        if depth > limit:
            return True, -1
        deeper: list[Any] = []
        for container in level:
            if type(container) is dict:
                keys += len(container)
                members = container.values()
            else:
                members = container
            kinds = set(map(type, members))
            if dict in kinds or list in kinds:
                deeper.extend(m for m in members if type(m) in _CONTAINERS)
        level = deeper
    return False, keys


def load_json(
    text: str,
    *,
    source: str,
    what: str = "file",
    expected: str = "valid JSON",
    line: int | None = None,
    object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
    fix: str | None = None,
    allow_duplicate_keys: bool = False,
) -> Any:
    """The value of the JSON ``text`` of ``source``, within the limits of the module docstring.

    ``expected`` says what the file should hold ("one JSON object per line: {...}"): the fix of
    every error is to write that, unless ``fix`` says otherwise. ``line``: the line of the file
    ``text`` is (a JSONL line), so errors name it; else JSON's own line numbers are the file's.

    A key written twice in one object is an InputError naming the key: ``json.loads`` would
    keep the last one silently (a JSONL run line with two ``"ranking"`` keys, a worksheet row
    with two grades). ``object_pairs_hook`` (as in ``json.loads``) replaces that check, for a
    reader that lists duplicates itself; ``allow_duplicate_keys=True`` keeps the last one, for the
    files this package writes and reads at scale (baselines, artifacts: the check makes
    decoding their many small objects several times slower, and their content is checked
    field by field after).
    """

    def fail(
        message: str, *, at: int | None = line, column: int | None = None, hint: str = ""
    ) -> InputError:
        said = f"{fix}{hint}" if fix is not None else f"write {expected}{hint}"
        return InputError(Problem(message, fix=said, source=source, line=at, column=column))

    decode: dict[str, Any] = {}
    if object_pairs_hook is not None:
        decode["object_pairs_hook"] = object_pairs_hook
    elif not allow_duplicate_keys:
        decode["object_pairs_hook"] = _unique_keys
    if _LONG_NUMBER.search(text) is not None:  # rare: the bounded (slower) integer parser
        decode["parse_int"] = _bounded_int
    too_deep: bool | None = None
    try:
        if decode.get("object_pairs_hook") is _unique_keys:
            # Decoded without the (Python) hook first: a text with as many ':' as the value has
            # keys has no ':' inside a string and no key twice (each key written is followed by
            # exactly one ':'), so the hook could find nothing. Otherwise decode again with it
            # (the same value, or the duplicate named).
            plain = {k: v for k, v in decode.items() if k != "object_pairs_hook"}
            value = json.loads(text, **plain)
            too_deep, keys = _shape(value, MAX_DEPTH)
            if text.count(":") != keys:
                value = json.loads(text, **decode)
        else:
            value = json.loads(text, **decode)
    except json.JSONDecodeError as exc:
        at = exc.lineno if line is None else line + exc.lineno - 1
        column = exc.colno
        raise fail(
            f"the {what} is not valid JSON ({exc.msg})",
            at=at,
            column=column,
            hint="; look for a missing comma, quote or bracket" if fix is None else "",
        ) from None
    except RecursionError:
        raise fail(f"the {what} nests JSON values more than {MAX_DEPTH} levels deep") from None
    except _DuplicateKey as exc:
        raise InputError(
            Problem(
                f"key {exc.args[0]!r} appears twice in one object (JSON would keep only the last)",
                fix="keep one of the two",
                source=source,
                line=line,
            )
        ) from None
    except ValueError as exc:  # ours, or Python's integer-string limit (4,300 digits)
        digits = exc.args[0] if isinstance(exc, _TooManyDigits) else None
        shown = f"{digits:,}" if isinstance(digits, int) else "thousands of"
        raise fail(
            f"the {what} holds a number of {shown} digits (at most {MAX_NUMBER_DIGITS} are read)",
            hint="; quote long ids as strings",
        ) from None
    except MemoryError:  # pragma: no cover - bounded by the size cap; said, not a traceback
        raise fail(f"the {what} is too large to decode in memory") from None
    if too_deep is None:
        too_deep = nesting_depth_exceeds(value)
    if too_deep:
        raise fail(f"the {what} nests JSON values more than {MAX_DEPTH} levels deep")
    return value


# --- YAML --------------------------------------------------------------------------------------

_PLAIN_COLLECTIONS = ("tag:yaml.org,2002:map", "tag:yaml.org,2002:seq")
_INT_TAG = "tag:yaml.org,2002:int"


def yaml_expansion_limit(distinct: int) -> int:
    """How many values a YAML document of ``distinct`` nodes may expand to through its aliases:
    ten times its own size, plus 10,000 (shared defaults merged into every query fit many times
    over; a billion laughs does not)."""
    return 10 * distinct + 10_000


def yaml_loader(text: str) -> yaml.SafeLoader:
    """The safe YAML loader (libyaml's when installed) over ``text``; the caller disposes it."""
    import yaml

    loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return loader(text)


def _children(node: yaml.Node) -> list[yaml.Node]:
    import yaml

    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _yaml_problem(message: str, fix: str, node: yaml.Node | None, *, source: str) -> InputError:
    mark = node.start_mark if node is not None else None
    return InputError(
        Problem(
            message,
            fix=fix,
            source=source,
            line=mark.line + 1 if mark is not None else None,
            column=mark.column + 1 if mark is not None else None,
        )
    )


_MERGE_TAG = "tag:yaml.org,2002:merge"


def _check_own_keys(node: yaml.MappingNode, *, source: str) -> None:
    """Refuse a key written twice in one YAML mapping (the safe loader keeps the last one
    silently). Keys merged in through ``<<`` may be overridden, as YAML says; only a mapping's
    own keys are compared, as written (tag and text)."""
    import yaml

    first: dict[tuple[str, str], int] = {}
    for key_node, _value in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE_TAG:
            continue
        written = (key_node.tag, str(key_node.value))
        if written in first:
            raise _yaml_problem(
                f"key {str(key_node.value)!r} appears twice in one mapping (first on line "
                f"{first[written]})",
                "keep one of the two",
                key_node,
                source=source,
            )
        first[written] = key_node.start_mark.line + 1


def check_yaml_nodes(root: yaml.Node, *, source: str, what: str = "file") -> None:
    """Refuse a YAML node tree that would blow up whoever builds values from it: a recursive
    alias, nesting deeper than :data:`MAX_DEPTH` (aliases included), aliases expanding to more
    than :func:`yaml_expansion_limit` values, an integer of more than
    :data:`MAX_NUMBER_DIGITS` digits; and a key written twice in one mapping, which the safe
    loader would resolve silently to the last. Without recursion, in one pass over the
    distinct nodes."""
    import yaml

    sizes: dict[int, int] = {}
    heights: dict[int, int] = {}
    entered: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, leaving = stack.pop()
        key = id(node)
        if leaving:
            children = _children(node)
            sizes[key] = 1 + sum(sizes[id(c)] for c in children)
            heights[key] = 1 + max((heights[id(c)] for c in children), default=0)
            if heights[key] > MAX_DEPTH:
                raise _yaml_problem(
                    f"the {what} nests YAML values more than {MAX_DEPTH} levels deep",
                    "flatten it",
                    node,
                    source=source,
                )
            continue
        if key in sizes:
            continue
        if isinstance(node, yaml.ScalarNode):
            digits = str(node.value).lstrip("+-")
            if node.tag == _INT_TAG and len(digits) > MAX_NUMBER_DIGITS:
                raise _yaml_problem(
                    f"the {what} holds a number of {len(digits):,} digits (at most "
                    f"{MAX_NUMBER_DIGITS} are read)",
                    "quote long ids as strings",
                    node,
                    source=source,
                )
            sizes[key], heights[key] = 1, 0
            continue
        if isinstance(node, yaml.MappingNode):
            _check_own_keys(node, source=source)
        entered.add(key)
        stack.append((node, True))
        for child in _children(node):
            child_key = id(child)
            if child_key in entered and child_key not in sizes:
                raise _yaml_problem(
                    f"the {what} has a YAML alias inside the value it names (a recursive "
                    "structure)",
                    "write the value out instead of the alias",
                    child,
                    source=source,
                )
            if child_key not in sizes:
                stack.append((child, False))
    limit = yaml_expansion_limit(len(sizes))
    if sizes[id(root)] > limit:
        raise _yaml_problem(
            f"the {what}'s YAML aliases expand it to {sizes[id(root)]:,} values, more than "
            f"{limit:,} (an alias bomb?)",
            "write the values out instead of the aliases",
            None,
            source=source,
        )


@contextlib.contextmanager
def yaml_document(
    text: str, *, source: str, what: str = "file", expected: str = "valid YAML"
) -> Iterator[tuple[yaml.SafeLoader, yaml.Node | None]]:
    """``(loader, root node)`` of the YAML ``text`` (the node None for an empty document),
    composed with the safe loader and checked by :func:`check_yaml_nodes`; InputError naming
    the line and column of a syntax error. The loader builds scalars
    (``loader.construct_object``) while the block runs, and is disposed after it."""
    import yaml

    loader = yaml_loader(text)
    try:
        try:
            node = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            raise InputError(
                Problem(
                    f"the {what} is not valid YAML ({exc.problem or exc.context})",
                    fix=f"check the indentation, a missing ':' or ']', or quote the value; "
                    f"expected {expected}",
                    source=source,
                    line=mark.line + 1 if mark else None,
                    column=mark.column + 1 if mark else None,
                )
            ) from None
        except yaml.YAMLError as exc:  # the reader's (a character YAML refuses), by offset
            at = getattr(exc, "position", None)
            character = getattr(exc, "character", None)
            line = text.count("\n", 0, at) + 1 if isinstance(at, int) else None
            column = at - text.rfind("\n", 0, at) if isinstance(at, int) else None
            said = f"U+{character:04X}: " if isinstance(character, int) else ""
            raise InputError(
                Problem(
                    f"the {what} is not valid YAML ({said}{getattr(exc, 'reason', exc)})",
                    fix=f"remove the control character; expected {expected}"
                    if said
                    else f"expected {expected}",
                    source=source,
                    line=line,
                    column=column,
                )
            ) from None
        if node is not None:
            check_yaml_nodes(node, source=source, what=what)
        yield loader, node
    finally:
        loader.dispose()


def compose_yaml(
    text: str, *, source: str, what: str = "file", expected: str = "valid YAML"
) -> yaml.Node | None:
    """The checked root node of the YAML ``text`` (:func:`yaml_document`), for a reader that
    reads nodes (their lines) and builds no value; None for an empty document."""
    with yaml_document(text, source=source, what=what, expected=expected) as (_loader, node):
        return node


def yaml_scalar_errors() -> tuple[type[Exception], ...]:
    """What the safe constructors raise on a scalar they cannot build (``2024-13-45`` as a
    date, an unknown ``!tag``): the handler of every scalar built from a node."""
    import yaml

    return (yaml.YAMLError, ValueError, TypeError, OverflowError)


def construct_scalar(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    """The value of one scalar node, built by the safe constructors; raises one of
    :func:`yaml_scalar_errors` when they cannot build it."""
    return loader.construct_object(node, deep=True)


def load_yaml(text: str, *, source: str, what: str = "file", expected: str = "valid YAML") -> Any:
    """The plain value (dicts, lists, scalars) of the YAML ``text``, checked as
    :func:`yaml_document` does; a tag other than the plain ones, a key that is a list or a
    mapping, or a scalar the safe constructors cannot build is an InputError at its line."""
    import yaml

    with yaml_document(text, source=source, what=what, expected=expected) as (loader, root):
        if root is None:
            return None
        built: dict[int, Any] = {}
        scalar_errors = yaml_scalar_errors()

        def fail(message: str, fix: str, node: yaml.Node) -> InputError:
            return _yaml_problem(f"the {what} has {message}", fix, node, source=source)

        def build(node: yaml.Node) -> Any:  # depth <= MAX_DEPTH: checked above
            if id(node) in built:
                return built[id(node)]
            if isinstance(node, yaml.CollectionNode) and node.tag not in _PLAIN_COLLECTIONS:
                raise fail(
                    f"the unsupported YAML tag {node.tag!r}", "write a plain list or mapping", node
                )
            if isinstance(node, yaml.SequenceNode):
                items: list[Any] = []
                built[id(node)] = items
                items.extend(build(child) for child in node.value)
                return items
            if isinstance(node, yaml.MappingNode):
                mapping: dict[Any, Any] = {}
                built[id(node)] = mapping
                try:
                    loader.flatten_mapping(node)
                except yaml.YAMLError as exc:
                    raise fail(
                        f"an invalid merge key ({exc})", "remove the '<<' entry", node
                    ) from None
                for key_node, value_node in node.value:
                    if not isinstance(key_node, yaml.ScalarNode):
                        raise fail(
                            "a key that is a list or a mapping", "write 'key: value'", key_node
                        )
                    mapping[build(key_node)] = build(value_node)
                return mapping
            try:
                value = construct_scalar(loader, node)
            except scalar_errors as exc:
                raise fail(
                    f"a value the safe YAML loader cannot build ({type(exc).__name__})",
                    "write a plain string or number; quote it if in doubt",
                    node,
                ) from None
            built[id(node)] = value
            return value

        return build(root)
