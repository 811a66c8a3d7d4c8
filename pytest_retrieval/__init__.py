"""pytest-retrieval: retrieval quality as a pytest regression gate."""

from __future__ import annotations

from typing import Any

__all__ = ["__version__"]


def __getattr__(name: str) -> Any:
    # The version is read from the installed metadata only when asked for, so that importing the
    # package (which pytest does for every run through the plugin entry point) stays cheap.
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("pytest-retrieval")
        except PackageNotFoundError:  # pragma: no cover - running from a source tree
            return "0+unknown"
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
