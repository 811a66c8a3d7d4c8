"""``pytest-retrieval cache show|clear [--cache-dir DIR]``: what the retriever-output cache holds,
and emptying it.

``show`` prints the file, its size, and the entries per stage, retriever and index version, with
the oldest and newest entry; it checks the whole file, so a damaged cache is reported here
(exit 1) before a pytest run would skip it, and a read-only one is shown as such. ``clear``
empties the cache, or deletes the file when it is a damaged cache of ours; another program's
file (or one that is not SQLite at all) and a read-only cache are left as they are (exit 2).
Exit status: 0 done, 1 the cache is damaged or foreign (``show``), 2 usage error.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from ..errors import InputError, Problem
from ..text import for_terminal
from .output import echo

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
        (
            "clear",
            "delete every entry (a damaged cache is deleted; another program's file is kept)",
        ),
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
    from ..settings.resolve import DEFAULT_CACHE_DIR

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
    from ..run.store import CacheCorrupt, RunCache, cache_file

    path = cache_file(_folder(args))
    if not path.exists():
        echo(f"no retrieval cache at {path} (pytest --retrieval-cache=use creates it)")
        return 0
    try:
        with RunCache(path) as cache:
            cache.check()
            stats = cache.stats()
            read_only = cache.read_only
    except CacheCorrupt as exc:
        echo(f"pytest-retrieval cache: {exc}", err=True)
        return 1
    # Every name below comes from the file (retriever names, stages, index versions): echo
    # escapes each line, so none can color the terminal or start a CI workflow command.
    echo(f"retrieval cache {stats.path}: {stats.entries} entries, {_size(stats.file_bytes)}")
    if read_only:
        echo(
            "read-only (its folder or the file cannot be written): pytest reads hits from it "
            "and stores nothing new; `cache clear` cannot empty it"
        )
    if not stats.entries:
        return 0
    echo(f"oldest entry {_when(stats.oldest)}, newest {_when(stats.newest)}")
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
        echo(f"by {title}:")
        shown = {for_terminal(name): count for name, count in counts.items()}
        width = max(len(name) for name in shown)
        for name, count in shown.items():
            echo(f"  {name:<{width}}  {count}")
    return 0


def clear(args: argparse.Namespace) -> int:
    """Empty the cache (delete a damaged file of ours); say how many entries it held. A file
    that is not ours, or a read-only cache, is left as it is: a usage error (2)."""
    from ..run.store import CacheCorrupt, RunCache, cache_file, remove_cache_file

    path = cache_file(_folder(args))
    if not path.exists():
        echo(f"no retrieval cache at {path}: nothing to clear")
        return 0
    try:
        # A sound cache is emptied in a transaction, safe while a pytest run uses it.
        with RunCache(path) as cache:
            held = f"{cache.clear()} entries"
    except CacheCorrupt as exc:
        if not exc.ours:  # another program's file, or a read-only cache: never deleted
            raise InputError(
                Problem(f"{exc.reason}; nothing was cleared ({exc.fix})", source=str(path))
            ) from None
        # A damaged file of ours is exactly what clear is for: delete it and its companions.
        held = "a damaged cache, deleted"
        try:
            remove_cache_file(path)
        except CacheCorrupt as again:
            raise InputError(
                Problem(f"{again.reason}; nothing was cleared ({again.fix})", source=str(path))
            ) from None
        except OSError as error:
            raise InputError(
                Problem(
                    f"cannot delete the cache: {error.strerror or error}",
                    fix="check the folder's permissions",
                    source=str(path),
                )
            ) from None
    echo(f"cleared the retrieval cache {path} ({held})")
    return 0
