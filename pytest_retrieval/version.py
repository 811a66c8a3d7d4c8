"""The installed version of pytest-retrieval, read from the package metadata on first use."""

from __future__ import annotations

from typing import Any

#: Declared for type checkers; the value is read on first access (see ``__getattr__``).
__version__: str


def _read() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pytest-retrieval")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0+unknown"


def __getattr__(name: str) -> Any:
    # Reading the metadata costs a few milliseconds; only the artifact and --version need it.
    if name == "__version__":
        value = _read()
        globals()["__version__"] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
