"""The start of a session: from resolved settings to a ready :class:`RetrievalSession`.

Everything that can be refused before the retriever runs is refused here, with an
:class:`~pytest_retrieval.errors.InputError` naming the setting and the fix: unwritable report
paths, golden-set files, declared gates and budgets, the baseline file, a held-out split that
matches no query. The plugin turns the error into a usage error (exit status 4); nothing here
knows pytest.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from ..errors import InputError, Problem
from ..session.session import RetrievalSession
from ..settings.resolve import Settings

if TYPE_CHECKING:
    from ..golden.access import AccessRules
    from ..golden.model import GoldenSet
    from ..regression.commitinfo import CommitInfo
    from ..regression.snapshot import Snapshot
    from ..scoring.dedup import DuplicateGroups


UNSEALED_OUTSIDE_CI = (
    "pytest-retrieval: the held-out split is unsealed outside CI; every look at the held-out "
    "numbers makes them less trustworthy"
)


def unsealed_warning(settings: Settings, *, is_worker: bool) -> str | None:
    """The warning of a run that unseals the held-out split outside CI (once: not in each
    xdist worker), or None."""
    if settings.heldout and not os.environ.get("CI") and not is_worker:
        return UNSEALED_OUTSIDE_CI
    return None


def start(
    option: Callable[[str], Any],
    ini: Callable[[str], Any],
    *,
    inipath: Path | None,
    rootpath: Path,
    cli_base: Path,
    on_skip: Callable[[str], NoReturn],
    on_sealed: Callable[[str], NoReturn],
) -> RetrievalSession:
    """The session a pytest run configures: every setting from its flag (``option(dest)``, None
    when not given) or its ini key (``ini(key)``), resolved (relative paths against the ini
    file's folder, or the rootdir without one, and the invocation folder for flags), then
    :func:`build_session`. Raises InputError."""
    from ..settings.options import OPTIONS
    from ..settings.preflight import overridden_keys
    from ..settings.resolve import resolve

    settings = resolve(
        {o.name: option(f"retrieval_{o.name}") for o in OPTIONS if o.flag},
        {o.name: ini(o.ini) for o in OPTIONS if not o.flag_only},
        ini_source=inipath.name if inipath else "the ini file",
        ini_base=inipath.parent if inipath else rootpath,
        cli_base=cli_base,
        overridden=overridden_keys(option("override_ini")),
    )
    return build_session(
        settings, rootdir=rootpath, on_skip=on_skip, on_sealed=on_sealed, config_file=inipath
    )


def header(session: RetrievalSession) -> str:
    """The report header's line: the effective golden set (path, queries, fingerprint) and
    whether the held-out split is sealed."""
    golden = session.golden
    state = session.scope.state
    # The fingerprint of every query (a baseline records the non-held-out ones'): the
    # label says which, so two different hashes of one file are not a mystery.
    return (
        f"retrieval: golden set {golden.source} ({len(golden)} queries, fingerprint "
        f"{golden.short_fingerprint} of all {len(golden)}), held-out split "
        f"{session.scope.heldout!r} {state}"
    )


def build_session(
    settings: Settings,
    *,
    rootdir: Path,
    on_skip: Callable[[str], NoReturn],
    on_sealed: Callable[[str], NoReturn],
    config_file: Path | None = None,
) -> RetrievalSession:
    """Load and check everything the settings name; the session that will gate the run.
    ``config_file`` (the ini file) is one more input no report may be written over."""
    from ..formats.golden_io import load_golden_files
    from ..gates.declared import load_budgets, load_declared_gates

    check_outputs(settings, config_file=config_file)
    golden = load_golden_files(
        settings.golden,
        format=settings.golden_format,
        corpus=settings.corpus,
        heldout_split=settings.heldout_split,
    )
    thresholds = load_declared_gates(settings, golden, rootdir=rootdir)
    budgets = load_budgets(settings, golden, rootdir=rootdir)
    baseline = load_baseline_setting(settings)
    _check_heldout(settings, golden)
    from ..run.source import load_runs

    runs = load_runs(settings)
    duplicates = load_duplicate_groups(settings)
    session = RetrievalSession(
        settings=settings,
        golden=golden,
        baseline=baseline,
        thresholds=tuple(thresholds),
        budgets=tuple(budgets),
        on_skip=on_skip,
        on_sealed=on_sealed,
        run_files=runs,
        duplicates=duplicates,
        commit=commit_of(settings, rootdir),
        access_rules=load_access_rules(settings),
    )
    session.access  # noqa: B018 - built now: an unknown tenant is refused before the run
    if settings.merge_base or any(b.since is not None for b in session.budgets):
        from ..session.ledger import anchor_baselines, merge_base_baseline

        # The merge-base first: a shallow clone's usage error (fetch-depth: 0) is the one to
        # see, before an anchor's tag that the shallow clone lacks.
        merge_base = merge_base_baseline(session, str(rootdir)) if settings.merge_base else None
        found = anchor_baselines(session, str(rootdir))
        if merge_base is not None:
            found[None] = merge_base
        session.ledger_baselines = found
    return session


def load_access_rules(settings: Settings) -> AccessRules | None:
    """The access metadata of ``retrieval_corpus`` (tenant, groups, superseded_by, status);
    None without a corpus, or for a file of bare ids (which has no place for any)."""
    if settings.corpus is None:
        return None
    from ..formats.corpus import read_access_rules

    return read_access_rules(settings.corpus)


def commit_of(settings: Settings, rootdir: Path) -> CommitInfo | None:
    """The commit the run measures (None outside a git work tree); with a ledger, a work
    tree with a commit is required (an entry is keyed by it), and the merge-base with the
    target branch is recorded when it can be found."""
    from ..regression import commitinfo

    if not settings.ledger:
        return commitinfo.describe(rootdir)
    commitinfo.require_repository(rootdir, needed_by="retrieval_ledger")
    found = commitinfo.describe(rootdir, target=commitinfo.target_branch(settings.target_branch))
    if found is None:
        raise commitinfo.GitError(
            Problem(
                "retrieval_ledger keys each run by its commit, and HEAD names no commit",
                fix="commit first (git commit)",
                source=str(rootdir),
            )
        )
    return found


def load_duplicate_groups(settings: Settings) -> DuplicateGroups | None:
    """The duplicate groups the metrics are scored by: ``retrieval_duplicates`` (a file) or
    ``retrieval_dedup`` (computed from ``retrieval_corpus`` texts); None when neither is set."""
    from ..scoring import dedup

    if settings.duplicates is not None:
        return dedup.load_duplicates(settings.duplicates)
    if settings.dedup == "off" or settings.corpus is None:
        return None
    from ..formats.corpus import read_corpus_texts

    texts = read_corpus_texts(settings.corpus)
    source = f"retrieval_dedup = {settings.dedup} over {settings.corpus}"
    if settings.dedup == "exact":
        return dedup.exact_groups(texts, source=source)
    _near, _equals, threshold = settings.dedup.partition("=")
    return dedup.near_groups(
        texts, float(threshold) if threshold else dedup.DEFAULT_NEAR_THRESHOLD, source=source
    )


def check_outputs(settings: Settings, *, config_file: Path | None = None) -> None:
    """Refuse a report path that can never be written (a directory, or a path through a file),
    or that is one of the run's inputs (the golden set, the gates file, a run file, the
    baseline, ...: by resolved path and by inode, :func:`~pytest_retrieval.files.
    clobbered_inputs`; ``config_file``, the ini file, too), before the retriever runs, not
    after a long run. (Whether a baseline
    to update can be written is checked when it is written: the run's verdict is shown first.)"""
    from ..files import path_problem, refuse_clobbering
    from ..report.write import ReportTargets

    outputs = ReportTargets.from_settings(settings).files()
    problems = [path_problem(path, what=kind.what) for kind, path in outputs]
    found = [p for p in problems if p is not None]
    if found:
        raise InputError(found)
    refuse_clobbering(
        [(f"the {kind.what} ({kind.setting})", path) for kind, path in outputs]
        + [
            (
                "the baseline to update",
                (settings.baseline or None) if settings.update_baseline else None,
            )
        ],
        [
            *(("the golden set", path) for path in settings.golden),
            ("retrieval_corpus", settings.corpus),
            ("retrieval_duplicates", settings.duplicates),
            ("retrieval_doc_id_map", settings.doc_id_map),
            ("retrieval_gates_file", settings.gates_file),
            *((f"the {stage} run file", path) for stage, path in settings.run),
            ("the baseline", None if settings.update_baseline else (settings.baseline or None)),
            ("the pytest configuration file", config_file),
        ],
    )


def load_baseline_setting(settings: Settings) -> Snapshot | None:
    """The committed baseline (None when missing: the regression gates then say how to make it).

    A corrupt or foreign file is an InputError. Updating needs a path to write to.
    """
    from ..regression.baseline import load_baseline
    from ..regression.ledger_baseline import check_usage

    check_usage(settings)
    if settings.merge_base:
        return None  # the baseline is the merge-base's ledger entry (build_session)
    if settings.update_baseline and not settings.baseline:
        raise InputError(
            Problem(
                "--retrieval-update-baseline needs to know where the baseline lives",
                fix="pass --retrieval-baseline=PATH or set retrieval_baseline = PATH",
            )
        )
    if not settings.baseline or settings.update_baseline:
        return None
    try:
        return load_baseline(settings.baseline)
    except FileNotFoundError:
        return None


def _check_heldout(settings: Settings, golden: GoldenSet) -> None:
    from ..golden.model import DEFAULT_HELDOUT_SPLIT

    heldout, splits = golden.heldout(), golden.splits

    if settings.heldout and not heldout:
        raise InputError(
            f"--retrieval-heldout: the golden set has no query in the held-out split "
            f"{settings.heldout_split!r} (splits: {', '.join(splits)}); set "
            "retrieval_heldout_split to the split you hold out"
        )
    if settings.heldout_split != DEFAULT_HELDOUT_SPLIT and not heldout:
        # A renamed held-out split that matches no query seals nothing: the queries meant to
        # be held out would be scored and shown like any other (a typo must not leak them).
        raise InputError(
            f"retrieval_heldout_split = {settings.heldout_split}: the golden set has no query "
            f"in this split (splits: {', '.join(splits)}), so nothing is held out; name "
            "the split your held-out queries are in, or remove the setting (default: heldout)"
        )
