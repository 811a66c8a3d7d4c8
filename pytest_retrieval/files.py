"""Writing files so that a crash never leaves a half-written one.

Every artifact and baseline is written to a temporary file in the same folder, flushed and
fsync'ed, then renamed over the target (an atomic operation on POSIX and Windows): a reader sees
either the old file or the new one, never a mix.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from .errors import InputError, Problem

__all__ = ["atomic_write_text", "file_lock"]


def atomic_write_text(path: str | os.PathLike[str], text: str, *, what: str = "file") -> None:
    """Write ``text`` to ``path`` atomically (temp file + fsync + rename).

    Raises :class:`~pytest_retrieval.errors.InputError` naming the path when it cannot be written
    (missing or unwritable folder, a directory in the way); the old file, if any, is untouched.
    """
    target = Path(path)
    if target.is_dir():
        raise InputError(
            Problem(
                f"cannot write the {what}: the path is a directory",
                fix="name a file",
                source=str(target),
            )
        )
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
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp_name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise


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
