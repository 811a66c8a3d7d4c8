"""A session and the ledger: the baselines it takes from the ledger, the entry it records.

:mod:`pytest_retrieval.regression.ledger_baseline` decides from facts (which entry is a baseline,
how it is re-scored, when a baseline leaves headroom); this module reads those facts from a
:class:`~pytest_retrieval.session.session.RetrievalSession`:

* :func:`merge_base_baseline` and :func:`anchor_baselines`: the baselines a session takes from
  the ledger when it is built (``retrieval_baseline = merge-base``, ``since=`` budgets), each
  entry re-scored with the session's own scoring under today's labels (:func:`rescored`);
* :func:`entry_of`: what a session records (``retrieval_ledger``): its commit, its status
  (``ok``, ``failed``: queries failed in the retriever, ``refused``, ``errored``), and for an
  ``ok`` run its snapshot (per query and stage: every metric, the relevant ranks, the ranking
  to the retrieval depth) and the rankings' scores, never held-out per-query data;
  :func:`record` stores it at the end of the session (the controller only);
* :func:`headroom`: the warning of a baseline left below the pipeline.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..regression import ledger_baseline as runledger
from ..regression.ledger_baseline import LedgerBaseline, LedgerRun
from ..regression.recording import snapshot_settings

if TYPE_CHECKING:
    from ..regression.ledger import LedgerEntry
    from ..regression.snapshot import Snapshot
    from .session import RetrievalSession


def rescored(session: RetrievalSession, entry: LedgerEntry) -> Snapshot:
    """``entry``'s rankings scored with the session's conventions on today's labels, over the
    visible queries whose text, split and slices did not change (:func:`.runledger.rescored`)."""
    return runledger.rescored(
        entry,
        visible=session.visible_golden(),
        specs=session.snapshot_specs(),
        settings=_wanted(session),
        score_run=session.score_run,
    )


def _wanted(session: RetrievalSession) -> dict[str, Any]:
    """The settings the session's snapshot records (what a ledger entry best shares)."""
    depth = session.effective_depth
    return snapshot_settings(session.settings, depth=depth, duplicates=session.duplicates)


def ledger_run(session: RetrievalSession) -> LedgerRun:
    """What the ledger's baselines need of the session (:class:`.runledger.LedgerRun`)."""
    return LedgerRun(
        session.settings,
        session.commit.commit if session.commit is not None else None,
        _wanted(session),
        tuple(runledger.depth_args(session.settings, session.effective_depth)),
        lambda entry: rescored(session, entry),
    )


def merge_base_baseline(session: RetrievalSession, rootdir: str) -> LedgerBaseline:
    """The session's baseline of ``retrieval_baseline = merge-base``
    (:func:`.runledger.merge_base_baseline`)."""
    return runledger.merge_base_baseline(ledger_run(session), rootdir)


def anchor_baselines(session: RetrievalSession, rootdir: str) -> dict[str | None, LedgerBaseline]:
    """The baseline of every ``since=`` anchor the session's budgets name
    (:func:`.runledger.anchor_baselines`)."""
    anchors = [b.since for b in session.budgets if b.since is not None]
    if not anchors:
        return {}
    return runledger.anchor_baselines(ledger_run(session), anchors, rootdir)


def _anchored(session: RetrievalSession) -> set[str]:
    """The budgets judged against an anchor's entry (``since=``), by name."""
    return {b.name for b in session.budgets if b.since is not None}


def headroom(session: RetrievalSession) -> list[str]:
    """The headroom warning of each of the session's budgets (:func:`.runledger.headroom`)."""
    return runledger.headroom(
        session.settings,
        session.commit,
        session.baseline,
        session.regression_outcomes,
        _anchored(session),
    )


def entry_of(
    session: RetrievalSession, *, plugin_version: str, label: str | None = None
) -> LedgerEntry | None:
    """What the session records, or None when there is nothing to key it by (no commit) or
    nothing ran (no test needed the retriever, and no stop)."""
    from ..regression.ledger import FAILED, OK, LedgerEntry, now_utc

    commit = session.commit
    if commit is None:
        return None
    stop = session.stop
    common: dict[str, Any] = {
        "commit": commit,
        "created": now_utc(),
        "plugin_version": plugin_version,
        "index_version": session.settings.index_version,
        "label": label,
    }
    if stop is not None:
        return LedgerEntry(status=stop.status, reason=stop.reason, **common)
    if not session.has_run:
        return None
    snapshot = session.snapshot()
    committed = None if session.settings.merge_base else runledger.committed_id(session.baseline)
    checks = runledger.checks_of(session.regression_outcomes, committed, _anchored(session))
    failed = session.failed_queries()
    if failed:
        redacted = session.scope.redacted
        shown = [o.query_id for o in failed if not redacted(session.golden[o.query_id])]
        ids = ", ".join(shown[:5])
        return LedgerEntry(
            status=FAILED,
            reason=f"{len(failed)} quer{'y' if len(failed) == 1 else 'ies'} failed in the retriever"
            + (f" ({ids})" if ids else ""),
            fingerprint=snapshot.fingerprint,
            settings=snapshot.settings,
            checks=checks,
            **common,
        )
    return LedgerEntry(
        status=OK,
        fingerprint=snapshot.fingerprint,
        settings=snapshot.settings,
        means=snapshot.means_by_column(),
        snapshot=snapshot.to_dict(),
        scores=runledger.scores_of(session.outcomes or {}, snapshot),
        checks=checks,
        **common,
    )


def record(
    session: RetrievalSession, *, plugin_version: str, rootdir: str | None = None
) -> tuple[str, bool]:
    """Record the session's run in ``retrieval_ledger``; (the line to print, whether it is an
    error).

    Never raises for a damaged ledger: the run's verdict stands, the line says what happened."""
    from ..regression.ledger import Ledger, LedgerError

    path = str(session.settings.ledger)
    shown = runledger.ledger_note_path(path, rootdir or os.getcwd())
    label = os.environ.get("PYTEST_RETRIEVAL_LEDGER_LABEL") or None
    entry = entry_of(session, plugin_version=plugin_version, label=label)
    if entry is None:
        if session.commit is None:
            return f"run not recorded in the ledger {shown}: not a git work tree", True
        return f"run not recorded in the ledger {shown}: no test ran the retriever", False
    try:
        with Ledger(path) as ledger:
            stored = ledger.add(entry)
    except LedgerError as exc:
        return f"run not recorded: {exc}", True
    what = f"recorded {stored.commit.short}"
    if stored.commit.branch:
        what += f" ({stored.commit.branch})"
    if stored.status != "ok":
        return (
            f"{what} in the ledger {shown} as {stored.status}: never used as a baseline",
            False,
        )
    if stored.commit.dirty:
        return (
            f"{what} in the ledger {shown} as dirty (uncommitted changes to tracked files): "
            "never used as a baseline",
            False,
        )
    return f"{what} in the ledger {shown} (entry {stored.seq})", False
