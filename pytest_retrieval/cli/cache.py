"""``pytest-retrieval cache show|clear [--cache-dir DIR]``: what the retriever-output cache holds,
and emptying it.

``show`` prints the file, its size, and the entries per stage, retriever and index version, with
the oldest and newest entry; it checks the whole file, so a damaged cache is reported here
(exit 1) before a pytest run would skip it. ``clear`` empties the cache, or deletes the file
when it is damaged or foreign.
Exit status: 0 done, 1 the cache is damaged or foreign (``show``), 2 usage error.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ..errors import InputError, Problem

#: Where the cache lives when --cache-dir is not given, relative to the current folder (the
#: plugin's default is the same folder name in the rootdir).
_DEFAULT_HELP = ".retrieval-cache in the current folder"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``cache`` command and its ``show`` and ``clear`` subcommands."""
    parser = subparsers.add_parser(
        "cache",
        help="show what the retriever-output cache holds, or clear it",
        description=(
            "Inspect or empty the retriever-output cache that pytest --retrieval-cache=use "
            "fills (one SQLite file in the cache folder)."
        ),
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    for name, text in (
        ("show", "entries per stage, retriever and index version; checks the file"),
        ("clear", "delete every entry (a damaged or foreign file is deleted)"),
    ):
        sub = actions.add_parser(name, help=text, description=text)
        sub.add_argument(
            "--cache-dir",
            metavar="DIR",
            default=None,
            help=f"the cache folder (retrieval_cache_dir; default {_DEFAULT_HELP})",
        )
        sub.set_defaults(func=show if name == "show" else clear)
    parser.set_defaults(func=_no_action)


def _no_action(args: argparse.Namespace) -> int:
    raise InputError(
        Problem(
            "no action given",
            fix="use `pytest-retrieval cache show` or `pytest-retrieval cache clear`",
        )
    )


def _folder(args: argparse.Namespace) -> Path:
    from ..store import DEFAULT_CACHE_DIR

    folder = Path(args.cache_dir) if args.cache_dir else Path(DEFAULT_CACHE_DIR)
    if folder.exists() and not folder.is_dir():
        raise InputError(
            Problem(
                "the cache folder is a file",
                fix="pass the folder that holds the cache (retrieval_cache_dir)",
                source=str(folder),
            )
        )
    return folder


def _when(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(seconds))


def _size(count: int) -> str:
    value = float(count)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{count} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def show(args: argparse.Namespace) -> int:
    """Print what the cache holds; exit 1 when the file is damaged or foreign."""
    from ..store import CacheCorrupt, RunCache, cache_file

    path = cache_file(_folder(args))
    if not path.exists():
        print(f"no retrieval cache at {path} (pytest --retrieval-cache=use creates it)")
        return 0
    try:
        with RunCache(path) as cache:
            cache.check()
            stats = cache.stats()
    except CacheCorrupt as exc:
        print(f"pytest-retrieval cache: {exc}", file=sys.stderr)
        return 1
    print(f"retrieval cache {stats.path}: {stats.entries} entries, {_size(stats.file_bytes)}")
    if not stats.entries:
        return 0
    print(f"oldest entry {_when(stats.oldest)}, newest {_when(stats.newest)}")
    sections: list[tuple[str, dict[str, int]]] = [
        ("stage", stats.by_stage),
        ("retriever", stats.by_retriever),
        (
            "index version",
            {
                "(none)" if version is None else version: count
                for version, count in stats.by_index_version.items()
            },
        ),
    ]
    for title, counts in sections:
        print(f"by {title}:")
        width = max(len(name) for name in counts)
        for name, count in counts.items():
            print(f"  {name:<{width}}  {count}")
    return 0


def clear(args: argparse.Namespace) -> int:
    """Empty the cache (delete a damaged file); say how many entries it held."""
    from ..store import CacheCorrupt, RunCache, cache_file, remove_cache_file

    path = cache_file(_folder(args))
    if not path.exists():
        print(f"no retrieval cache at {path}: nothing to clear")
        return 0
    try:
        # A sound cache is emptied in a transaction, safe while a pytest run uses it.
        with RunCache(path) as cache:
            held = f"{cache.clear()} entries"
    except CacheCorrupt:
        # A damaged file is exactly what clear is for: delete it and its WAL companions.
        held = "a damaged cache, deleted"
        try:
            remove_cache_file(path)
        except OSError as exc:
            raise InputError(
                Problem(
                    f"cannot delete the cache: {exc.strerror or exc}",
                    fix="check the folder's permissions",
                    source=str(path),
                )
            ) from None
    print(f"cleared the retrieval cache {path} ({held})")
    return 0
