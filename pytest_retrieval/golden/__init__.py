"""The labelled data, without a file format: ``Query``, ``GoldenSet`` and their rules
(``model``), the held-out policy (``scope``) and the leakage guard (``leakage``).

``pytest_retrieval.golden.load_golden`` is a documented old path: it resolves on first use
(PEP 562) from :mod:`pytest_retrieval.formats.golden_io`, where the loader lives with the file
formats (which sit above this package and import it).

Modules:

* ``model``: ``Query``, ``GoldenSet``, the query rules, the fingerprint, joining sets; imports
  no format.
* ``access``: who may see what: the corpus's access rules (tenant, groups) against a query's
  context and its forbidden documents (``AccessRules.denial``, one document at a time), and the
  stale documents (``superseded_by``, ``status: retired``); ``access_problems`` (the one home
  of the checks, which ``build_access`` raises and ``golden validate --corpus`` prints) finds an
  unknown tenant, a tenant that is not a string, groups that are no list of names and a denied
  document judged relevant.
* ``context``: a query's context as data: the plain-data check (``context_problems``), the
  frozen form and a fresh copy per call (``freeze_context``, ``thaw_context``), the canonical
  text and its digest (``context_json``, ``context_digest``) that the fingerprint, the cache
  key, the run-file key and the baseline's label hash are computed from; what a context slice
  (``slice=tenant:acme``) is and which queries answer it (``context_slice``, ``slice_values``,
  ``in_context_slice``).
* ``scope``: the held-out policy (``Scope``: which queries are scorable, visible, redacted,
  which split is sealed) and its one wording (``SEALED_REASON``, the state phrase every report
  says, the hint that shows details).
* ``leakage``: the leakage guard, the checks across a set's queries: duplicate ids, one text
  (``normalise_text``) in two splits.

Decisions that live here:

* the held-out policy and wording: ``scope.Scope`` (a session's: ``RetrievalSession.scope``;
  an artifact's: ``Scope.from_dict``);
* the canonical form of a context: ``context.context_json``;
* which context value a context slice selects (a list by its items, a number by its JSON
  spelling): ``context.slice_values``; which slice names exist, and the message for one that
  selects nothing: ``model.GoldenSet.slice_problem``.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name != "load_golden":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = import_module("pytest_retrieval.formats.golden_io").load_golden
    globals()[name] = value  # resolved once; later lookups skip this function
    return value
