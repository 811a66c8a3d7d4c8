"""Writing files so that a crash never leaves a half-written one.

Every artifact and baseline is written to a temporary file in the same folder, flushed and
fsync'ed, then renamed over the target (an atomic operation on POSIX and Windows): a reader sees
either the old file or the new one, never a mix.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

from .errors import InputError, Problem


def atomic_write_text(path: str | os.PathLike[str], text: str, *, what: str = "file") -> None:
    """Write ``text`` to ``path`` atomically (temp file + fsync + rename).

    Raises :class:`~pytest_retrieval.errors.InputError` naming the path when it cannot be written
    (missing or unwritable folder, a directory in the way); the old file, if any, is untouched.
    """
    atomic_write(path, lambda out: out.write(text), what=what)


def atomic_write_json(path: str | os.PathLike[str], document: Any, *, what: str = "file") -> None:
    """Stream ``document`` as compact JSON (one trailing newline) to ``path`` atomically.

    Compact, because an artifact of 100,000 queries indented would be several times larger and
    slower; streamed, so the whole text never sits in memory at once.
    """

    def write(out: TextIO) -> None:
        json.dump(document, out, ensure_ascii=False, separators=(",", ":"))
        out.write("\n")

    atomic_write(path, write, what=what)


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
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as out:
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


def path_problem(path: str | os.PathLike[str], *, what: str = "file") -> Problem | None:
    """Why ``path`` can never be written as a file, if the file system already says so: it is a
    directory, or one of its folders is a file. None otherwise (permissions are the write's)."""
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


@contextlib.contextmanager
def file_lock(path: str | os.PathLike[str]) -> Iterator[None]:
    """An exclusive lock on ``path`` across processes (xdist workers), released on exit."""
    handle = open(path, "a+b")  # noqa: SIM115 - closed in the finally below
    try:
        if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
            import msvcrt

            handle.seek(0)
            while True:
                try:
                    msvcrt.locking(handle.fileno(), msvcrt.LK_LOCK, 1)
                    break
                except OSError:
                    continue
            try:
                yield
            finally:
                handle.seek(0)
                msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)
        else:
            import fcntl

            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    finally:
        handle.close()
