"""The checks of every pytest run, golden set or not: settings pytest misread, and a flag
given while the plugin is off.

pytest looks for its ini file before it knows the plugin's flags, and only warns about an
unknown ini key after the run: either way a run could silently drop every declared gate. The
plugin asks :func:`refusal` in ``pytest_configure``; this module imports nothing heavy, as it
loads in every pytest run of the environment (the option table is loaded there anyway).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError, Problem
from .options import OPTIONS


def refusal(
    args: Sequence[str],
    unknown_keys: Iterable[str],
    *,
    getoption: Callable[[str], Any],
    golden: bool,
    invocation_dir: Path,
    rootpath: Path,
    inipath: Path | None,
) -> str | None:
    """The usage error of this run before anything else happens, or None: pytest misread our
    settings (:func:`misread_settings`; ``unknown_keys`` are the ini keys pytest did not
    recognise), else a ``--retrieval-*`` flag is given without a golden set (``golden``: one is
    configured; ``getoption`` is pytest's): staying off would silently drop every declared
    gate."""
    keys = [k for k in unknown_keys if k.startswith("retrieval_")]
    message = misread_settings(
        args,
        keys,
        invocation_dir=invocation_dir,
        rootpath=rootpath,
        inipath=inipath,
        overridden=overridden_keys(getoption("override_ini")),
    )
    if message is not None or golden:
        return message
    given = [o.flag_name for o in OPTIONS if o.flag and getoption(o.dest)]
    if not given:
        return None
    return flag_without_golden(given[0], rootpath, inipath or "none found")


def flag_without_golden(flag: str, rootdir: object, ini: object) -> str:
    """The usage error for a ``--retrieval-*`` flag given while no golden set is configured (so
    the plugin is off and would silently drop every declared gate)."""
    return (
        f"{flag} is given but no golden set is configured, so pytest-retrieval is off "
        f"(rootdir {rootdir}, ini file {ini}); set retrieval_golden = PATH in the ini "
        "file or pass --retrieval-golden PATH. If the ini file does set it, pytest did not read "
        f"it: it takes an existing path after a plugin's flag for a test path when it looks for "
        f"the ini file, so write {flag}=PATH"
    )


def overridden_keys(overrides: object) -> frozenset[str]:
    """The ini keys given on the command line with ``-o``/``--override-ini`` (pytest's
    ``override_ini`` option: ``KEY=VALUE`` items, from the arguments, ``addopts`` or
    ``PYTEST_ADDOPTS``)."""
    if not isinstance(overrides, (list, tuple)):
        return frozenset()
    return frozenset(
        item.split("=", 1)[0].strip() for item in overrides if isinstance(item, str) and "=" in item
    )


#: Where a setting given with ``-o`` comes from, in messages.
OVERRIDE_SOURCE = "-o/--override-ini"


def unknown_ini_keys(
    keys: Iterable[str], source: str, *, overridden: Collection[str] = ()
) -> str | None:
    """The usage error for ``retrieval_*`` ini keys that are no setting (``retrieval_threshold``,
    singular): pytest only warns about an unknown key at the end, after a run that silently
    dropped what the key meant (every declared gate, say). None when every key is known.
    ``source`` is the ini file's name; a key in ``overridden`` came from ``-o`` instead."""
    import difflib

    known = [o.ini for o in OPTIONS if not o.flag_only]
    unknown = sorted(k for k in keys if k.startswith("retrieval_") and k not in known)
    if not unknown:
        return None
    problems = []
    for key in unknown:
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        flag_only = [o.flag_name for o in OPTIONS if o.flag_only and o.ini == key]
        fix = (
            f"it is a flag only: pass {flag_only[0]}"
            if flag_only
            else f"did you mean {close[0]}?"
            if close
            else '`pytest --help` lists every key under "retrieval quality gates"'
        )
        where = f"{OVERRIDE_SOURCE} {key}=..." if key in overridden else source
        problems.append(Problem(f"unknown ini key {key}", fix=fix, source=where))
    return str(InputError(problems, title="pytest-retrieval: unknown settings"))


#: The files pytest reads its configuration from, with the text that makes each one count.
_INI_FILES = (
    ("pytest.toml", ""),
    (".pytest.toml", ""),
    ("pytest.ini", ""),
    (".pytest.ini", ""),
    ("pyproject.toml", "[tool.pytest"),
    ("tox.ini", "[pytest]"),
    ("setup.cfg", "[tool:pytest]"),
)


def _ini_from(folder: Path) -> Path | None:
    """The ini file pytest finds from ``folder`` upwards (its search, by file name and
    section), or None."""
    for base in (folder, *folder.parents):
        for name, marker in _INI_FILES:
            candidate = base / name
            if not candidate.is_file():
                continue
            if not marker:
                return candidate
            from ..reading import read_text_file

            try:
                text = read_text_file(candidate, what="ini file")
            except (OSError, InputError):  # pytest reports a broken ini file itself
                continue
            if marker in text:
                return candidate
    return None


def misread_flag_path(
    args: Sequence[str],
    *,
    flags: Collection[str],
    invocation_dir: Path,
    rootpath: Path,
    inipath: Path | None,
) -> str | None:
    """The usage error when a ``--retrieval-* PATH`` flag in the space form made pytest read
    another ini file (or none): pytest looks for the ini file before it knows the plugin's
    flags, takes an existing path after a flag for a test path, and a path outside the
    invocation folder then moves its search elsewhere. None when no flag was misread so.

    ``flags`` are the flags that take a value; ``inipath`` and ``rootpath`` what pytest chose.
    """
    for index, arg in enumerate(args[:-1]):
        value = args[index + 1]
        if arg not in flags or value.startswith("-"):
            continue
        path = Path(os.path.abspath(invocation_dir / value))
        if not path.exists() or path == invocation_dir or invocation_dir in path.parents:
            continue
        expected = _ini_from(invocation_dir)
        if expected == inipath:
            continue  # the same ini file either way: nothing went wrong
        read = f"read {inipath}" if inipath is not None else "read no ini file"
        instead = f" instead of {expected}" if expected is not None else ""
        return (
            f"pytest-retrieval: {arg} {value}: pytest took {value} for a test path when it "
            f"looked for the ini file, so it {read}{instead} (rootdir {rootpath}) and every "
            f"ini setting is ignored; write {arg}={value}"
        )
    return None


def misread_settings(
    args: Sequence[str],
    unknown_keys: Iterable[str],
    *,
    invocation_dir: Path,
    rootpath: Path,
    inipath: Path | None,
    overridden: Collection[str] = (),
) -> str | None:
    """The usage error when pytest misread our settings: a ``--retrieval-* PATH`` flag in the
    space form that made it read another ini file (:func:`misread_flag_path`), else
    ``retrieval_*`` ini keys that are no setting (``unknown_keys``, what pytest did not
    recognise: :func:`unknown_ini_keys`; ``overridden``: the keys given with ``-o``). None when
    neither happened."""
    if any(a.startswith("--retrieval-") and "=" not in a for a in args):
        message = misread_flag_path(
            args,
            flags={o.flag_name for o in OPTIONS if o.flag and not o.store_true},
            invocation_dir=invocation_dir,
            rootpath=rootpath,
            inipath=inipath,
        )
        if message is not None:
            return message
    keys = list(unknown_keys)
    if keys:
        return unknown_ini_keys(
            keys, inipath.name if inipath else "the ini file", overridden=overridden
        )
    return None
