"""A run and the ledger: the baselines taken from the ledger, and what a recorded entry keeps.

Nothing here takes a session: each function takes the run's facts (:class:`LedgerRun`: its
settings, commit, snapshot settings, how an entry is re-scored; its regression outcomes).
:mod:`pytest_retrieval.session.ledger` applies them to a session, and builds the entry a session
records (``retrieval_ledger``: its commit, its status, for an ``ok`` run its snapshot and the
rankings' scores, never held-out per-query data).

* :func:`merge_base_baseline`: ``retrieval_baseline = merge-base``: the target branch's
  merge-base with HEAD (:func:`pytest_retrieval.regression.commitinfo.merge_base`), its entry (else
  the nearest recorded first-parent ancestor, saying which and how far), re-scored under today's
  labels (:func:`rescored`). Never an entry of HEAD's own commit: on the target branch the
  nearest recorded strict ancestor. Of a commit's entries, :func:`best_entry` (this run's
  settings and depth first). With no entry at all the budgets are skipped with the fix
  (:func:`record_command`: ``pytest-retrieval ledger record --at REV``), never red.

**Re-scoring an entry.** An entry holds rankings, not just numbers: :func:`rescored` scores the
entry's rankings (whole, as they were scored) with the run's own scoring (a session's
:meth:`~pytest_retrieval.session.session.RetrievalSession.score_run`: gain, grades, zero-relevant
queries, duplicate groups, the score floor with the stored scores, unjudged documents), over
the queries whose text, split and slices did not change, so a query whose ranking did not move
gets exactly this run's value. The comparison then pairs the queries both runs have (queries
added or changed since the entry are left out, and every message says so): a computed baseline
cannot be refreshed in the pull request that adds queries, so a strict mode would only turn
such a pull request red.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from ..errors import InputError, Problem
from ..verdict import Status

if TYPE_CHECKING:
    from ..gates.declared import Budget
    from ..golden.model import GoldenSet
    from ..run.retriever import QueryOutcome
    from ..scoring.evaluate import Evaluation
    from ..scoring.metrics import MetricSpec
    from ..settings.resolve import Settings
    from .commitinfo import CommitInfo
    from .ledger import Ledger, LedgerEntry
    from .outcome import BaselineRef, RegressionOutcome
    from .snapshot import Snapshot

#: Scores a run's outcomes at one stage on some metrics, as the run scores its own
#: (``score_run(outcomes, stage, specs)``: a session's conventions).
ScoreRun = Callable[["Mapping[str, QueryOutcome]", str, "Sequence[MetricSpec]"], "Evaluation"]

#: How far back the first-parent chain is searched for the nearest recorded ancestor.
ANCESTOR_SEARCH = 200
#: The ledger file ``pytest-retrieval ledger`` uses without ``--ledger`` (in the folder it is
#: run from), the name the docs suggest for ``retrieval_ledger``.
DEFAULT_LEDGER = ".retrieval-ledger.sqlite3"
#: The command that fills a ledger with a baseline, for fixes.
RECORD_COMMAND = "pytest-retrieval ledger record --at"


@dataclass(frozen=True, slots=True)
class LedgerBaseline:
    """A baseline taken from the ledger, or why there is none."""

    #: The entry's snapshot re-scored under today's labels (None: no entry to compare with).
    snapshot: Snapshot | None
    #: How the messages name it: ``the ledger entry of merge-base 1a2b3c4d5e6f``.
    label: str
    #: Said once in the summary and under each check (which commit, how far, re-scored).
    note: str | None = None
    #: Why every budget using it is skipped (no entry), with the fix; None when it can compare.
    skip: str | None = None
    #: The entry's uid (the headroom warning tells baselines apart by it).
    uid: str | None = None
    #: Which entry, structured (the artifact's ``baseline`` of each check judged against it).
    ref: BaselineRef | None = None
    #: How an incomparable check says to make this baseline again (``pytest-retrieval
    #: ledger record --at REV -- ...``); None: the default fix.
    refresh: str | None = None


@dataclass(frozen=True, slots=True)
class LedgerRun:
    """What the ledger's baselines need of a run: its settings (the ledger, the target branch),
    its commit (None outside a work tree), the snapshot settings an entry is best recorded
    with (:func:`best_entry`), the pytest arguments that record another commit at its depth
    (:func:`depth_args`) and how an entry's rankings are re-scored (:func:`rescored`)."""

    settings: Settings
    head: str | None
    wanted: Mapping[str, Any]
    depth_args: tuple[str, ...]
    rescore: Callable[[LedgerEntry], Snapshot]

    @property
    def path(self) -> str:
        """The ledger file (``retrieval_ledger``)."""
        return str(self.settings.ledger)


def ledger_note_path(path: str, rootdir: os.PathLike[str] | str) -> str:
    """The ledger as a message shows it: relative to the rootdir when inside it."""
    try:
        relative = os.path.relpath(path, rootdir)
    except ValueError:  # another drive
        return path
    return path if relative.startswith("..") else relative


# --- re-scoring an entry ---------------------------------------------------------------------


def rescored(
    entry: LedgerEntry,
    *,
    visible: GoldenSet,
    specs: Sequence[MetricSpec],
    settings: Mapping[str, Any],
    score_run: ScoreRun,
) -> Snapshot:
    """``entry``'s rankings scored by ``score_run`` (the run's conventions) on today's labels,
    over the ``visible`` queries whose text (and context), split and slices did not change (see
    the module docstring), on ``specs``; ``settings`` are the run's snapshot settings (its depth
    included)."""
    from ..golden.context import context_json
    from ..run.retriever import QueryOutcome
    from .recording import ranking_of, returned_of
    from .snapshot import QuerySnapshot, Snapshot, build_snapshot, text_hash

    assert entry.snapshot is not None
    stored = Snapshot.from_dict(entry.snapshot)
    depth = settings["depth"]
    raw = stored.settings.get("depth")
    stored_depth = raw if type(raw) is int and raw > 0 else None
    kept: list[str] = []
    changed: dict[str, QuerySnapshot] = {}
    for query in visible:
        before = stored.queries.get(query.id)
        if before is None:
            continue
        if (before.text, before.split, tuple(before.slices)) == (
            text_hash(query.text, context_json(query.context)),
            query.split,
            tuple(query.slices),
        ):
            kept.append(query.id)
        else:
            changed[query.id] = before  # not the same query: compared as changed, left out
    outcomes = {}
    for qid in kept:
        entry_query = stored.queries[qid]
        scores = entry.scores.get(qid, {})
        # The rankings whole, as they were scored (a metric without a cutoff reads all of
        # them), with the ids as returned where they repeated: scored as a fresh run would be.
        outcomes[qid] = QueryOutcome(
            qid,
            rankings={stage: tuple(entry_query.top.get(stage, ())) for stage in stored.stages},
            scores={stage: tuple(scores[stage]) for stage in stored.stages if stage in scores},
            returned={stage: tuple(ids) for stage, ids in entry_query.returned.items()},
        )
    per_stage = {stage: score_run(outcomes, stage, specs) for stage in stored.stages}
    wanted = set(kept)
    recorded = dict(settings)
    if stored_depth is not None and stored_depth != depth:
        # Rankings stored to another depth are not what this run could hold: shallower ones
        # are too short, deeper ones reach past this run's list (MRR, the reranker's pool).
        # The comparison says the depth differs (incomparable, with the fix), never a number
        # scored on a list of another depth.
        recorded["depth"] = stored_depth
    snapshot = build_snapshot(
        visible.where(lambda q: q.id in wanted),
        per_stage,
        partial(ranking_of, outcomes),
        metric_names=[str(s) for s in specs],
        settings=recorded,
        index_version=stored.index_version,
        returned_of=partial(returned_of, outcomes),
    )
    queries = {**snapshot.queries, **changed}
    whole = not changed and len(kept) == len(visible)
    return Snapshot(
        # The same queries with the same labels: the run's own fingerprint, so the comparison
        # is strict; otherwise the entry's, and the queries both have are compared.
        fingerprint=visible.fingerprint if whole else stored.fingerprint,
        settings=snapshot.settings,
        stages=snapshot.stages,
        metrics=snapshot.metrics,
        queries=queries,
        plugin_version=entry.plugin_version,
        created=entry.created,
        index_version=stored.index_version,
    )


# --- the merge-base baseline -----------------------------------------------------------------


def record_command(rev: str, path: str, rootdir: str, pytest_args: Sequence[str] = ()) -> str:
    """The command that records ``rev``'s run in the ledger at ``path``, as a fix says it:
    ``--ledger PATH`` when ``path`` is not the command's default (``.retrieval-ledger.sqlite3``
    in the folder it is run from: the rootdir), so that the command run as printed records
    into the ledger this run reads; ``pytest_args`` after ``--``."""
    import shlex

    command = f"{RECORD_COMMAND} {rev}"
    if os.path.abspath(path) != os.path.abspath(os.path.join(rootdir, DEFAULT_LEDGER)):
        command += f" --ledger {shlex.quote(ledger_note_path(path, rootdir))}"
    if pytest_args:
        command += " -- " + " ".join(shlex.quote(a) for a in pytest_args)
    return command


def depth_args(settings: Settings, depth: int) -> list[str]:
    """The pytest arguments that make a run at another commit record a run's retrieval
    ``depth``: ``--retrieval-ks=`` when the depth is its largest K, else
    ``--retrieval-depth=``."""
    if settings.depth is None and max(settings.ks) == depth:
        return [f"--retrieval-ks={','.join(str(k) for k in settings.ks)}"]
    return [f"--retrieval-depth={depth}"]


def best_entry(ledger: Ledger, commit: str, wanted: Mapping[str, Any]) -> LedgerEntry | None:
    """The entry of ``commit`` a run with the snapshot settings ``wanted`` is compared with:
    among its usable entries, the newest recorded with the same settings (the retrieval depth
    included), else the newest at the same depth, else the newest (whose settings then make
    the comparison incomparable, with the fix: never a number scored on a list this run could
    not have held). None when it has no usable entry."""
    from .pairs import setting_differs

    found = ledger.entries(commits=[commit], usable=True)
    if not found:
        return None

    def same(entry: LedgerEntry) -> bool:
        keys = set(entry.settings) | set(wanted)
        return not any(setting_differs(k, entry.settings.get(k), wanted.get(k)) for k in keys)

    for matches in (same, lambda e: e.settings.get("depth") == wanted.get("depth")):
        chosen = [e for e in found if matches(e)]
        if chosen:
            return chosen[-1]
    return found[-1]


#: How a message says why a recorded run is no baseline.
_UNUSABLE = {
    "failed": ("failed", "failed"),
    "refused": ("was refused", "were refused"),
    "errored": ("errored", "errored"),
    "dirty": ("was made on a dirty work tree", "were made on a dirty work tree"),
}


def why_unusable(entries: Sequence[LedgerEntry]) -> str:
    """``no recorded run``, or ``no usable run (its run failed)``: what a commit's entries
    (none of them usable) are, as a message says it."""
    if not entries:
        return "no recorded run"
    reasons = list(dict.fromkeys("dirty" if e.status == "ok" else e.status for e in entries))
    plural = len(entries) > 1
    verbs = [_UNUSABLE.get(r, (r, r))[plural] for r in reasons]
    said = verbs[0] if len(verbs) == 1 else ", ".join(verbs[:-1]) + " or " + verbs[-1]
    whose = f"its {len(entries)} runs" if plural else "its run"
    return f"no usable run ({whose} {said})"


def _chosen(
    run: LedgerRun,
    entry: LedgerEntry,
    label: str,
    note: str,
    ref: BaselineRef | None = None,
    *,
    refresh: str | None = None,
) -> LedgerBaseline:
    snapshot = run.rescore(entry)
    return LedgerBaseline(
        snapshot=snapshot,
        label=label,
        note=(
            f"{note}; its stored rankings re-scored under the current labels (the queries "
            "both runs have are compared)"
        ),
        uid=entry.uid,
        ref=ref,
        refresh=refresh,
    )


def merge_base_baseline(run: LedgerRun, rootdir: str) -> LedgerBaseline:
    """The baseline of ``retrieval_baseline = merge-base`` (see the module docstring).

    A run is never judged against an entry of its own commit: on the target branch (HEAD is
    its own merge-base) the nearest recorded *strict* first-parent ancestor is the baseline,
    so a re-run of a failed job is judged as the first attempt was.

    Raises :class:`~pytest_retrieval.regression.commitinfo.GitError` (a usage error) for a shallow
    clone, an unknown target branch, or no repository;
    :class:`~pytest_retrieval.regression.ledger.LedgerError` for a damaged ledger."""
    from . import commitinfo
    from .ledger import Ledger
    from .outcome import BaselineRef

    commitinfo.require_repository(rootdir, needed_by="retrieval_baseline = merge-base")
    target = commitinfo.target_branch(run.settings.target_branch)
    base = commitinfo.merge_base(
        rootdir, target, source=commitinfo.target_source(run.settings.target_branch)
    )
    own = base == run.head  # the target branch itself: this run is the merge-base's run
    path = run.path
    shown = ledger_note_path(path, rootdir)
    wanted = run.wanted

    def refresh(rev: str) -> str:
        command = record_command(rev, path, rootdir, run.depth_args)
        return f"record {rev}'s run at this run's settings: `{command}`"

    fix = (
        f"record it: `{record_command(base[:12], path, rootdir)}` (or let the {target} "
        f"branch's CI record its runs with --retrieval-ledger={shown})"
    )
    if not os.path.exists(path):
        return LedgerBaseline(
            None,
            label=f"merge-base {base[:12]}",
            skip=(
                f"no baseline: the ledger {shown} does not exist yet, so the merge-base "
                f"{base[:12]} of HEAD and {target} has no recorded run; {fix}"
            ),
        )
    with Ledger(path) as ledger:
        if not own:
            entry = best_entry(ledger, base, wanted)
            if entry is not None:
                return _chosen(
                    run,
                    entry,
                    f"the ledger entry of merge-base {base[:12]}",
                    f"baseline: the merge-base {base[:12]} of HEAD and {target}, recorded "
                    f"{entry.created} in {shown}",
                    BaselineRef("merge-base", base, 0, target, base),
                    refresh=refresh(base[:12]),
                )
        chain = commitinfo.first_parent_chain(rootdir, base, ANCESTOR_SEARCH)
        # Never the merge-base itself here: it has no usable entry, or it is HEAD.
        ancestors = chain[1:]
        recorded = ledger.recorded_commits(ancestors)
        unusable = why_unusable(ledger.entries(commits=[base])) if not own else ""
        for distance, commit in enumerate(chain):
            if distance == 0 or commit not in recorded:
                continue
            found = best_entry(ledger, commit, wanted)
            assert found is not None
            plural = "s" if distance != 1 else ""
            if own:
                return _chosen(
                    run,
                    found,
                    f"the ledger entry of {commit[:12]}, the nearest recorded ancestor of HEAD",
                    f"baseline: HEAD is on {target} (its own merge-base), so it is "
                    f"compared with its nearest recorded ancestor {commit[:12]}, {distance} "
                    f"commit{plural} before it on {target}'s first-parent history (recorded "
                    f"{found.created}; a run is never compared with a run of its own commit)",
                    BaselineRef("ancestor", commit, distance, target, base),
                    refresh=refresh(commit[:12]),
                )
            return _chosen(
                run,
                found,
                f"the ledger entry of {commit[:12]}, the nearest recorded ancestor of "
                f"merge-base {base[:12]}",
                f"baseline: the merge-base {base[:12]} of HEAD and {target} has {unusable}; "
                f"its nearest recorded ancestor is {commit[:12]}, {distance} commit{plural} "
                f"before it on {target}'s first-parent history (recorded {found.created}); "
                f"{fix} to compare with the merge-base itself",
                BaselineRef("ancestor", commit, distance, target, base),
                refresh=refresh(base[:12]),
            )
    searched = len(ancestors)
    if own:
        what = (
            f"the merge-base {base[:12]} of HEAD and {target} is HEAD itself (a run is never "
            "compared with a run of its own commit), and "
            + (
                f"none of its {searched} first-parent ancestors searched has a usable run"
                if searched
                else "it is a root commit: there is no ancestor to compare with"
            )
        )
        record = ancestors[0][:12] if ancestors else None
        own_fix = (
            f"record its parent: `{record_command(record, path, rootdir)}`"
            if record
            else "nothing to record before a root commit"
        )
        return LedgerBaseline(
            None,
            label=f"merge-base {base[:12]}",
            skip=(
                f"no baseline: {what} in {shown} (runs that were refused, errored, failed or "
                f"made on a dirty work tree never count); {own_fix}"
            ),
        )
    what = (
        f"neither the merge-base {base[:12]} of HEAD and {target}, which has {unusable}, nor "
        f"any of the {searched} first-parent ancestors searched has a usable run"
        if searched
        else f"the merge-base {base[:12]} of HEAD and {target} (a root commit) has {unusable}"
    )
    return LedgerBaseline(
        None,
        label=f"merge-base {base[:12]}",
        skip=(
            f"no baseline: {what} in {shown} (runs that were refused, errored, failed or made "
            f"on a dirty work tree never count); {fix}"
        ),
    )


# --- anchored budgets (since=) ---------------------------------------------------------------


def resolve_anchor(labels: Mapping[str, str], rootdir: str, anchor: str) -> str:
    """The commit ``since=ANCHOR`` names: a ledger label (``labels``) first, else a tag,
    branch or commit; a usage error naming both ways to name one otherwise (in a shallow
    clone, which lacks the tags and most commits, the shallow clone's fix)."""
    from .commitinfo import SHALLOW_FIX, GitError, is_shallow, resolve

    labelled = labels.get(anchor)
    if labelled is not None:
        return labelled
    found = resolve(rootdir, anchor)
    if found is None:
        if is_shallow(rootdir):
            raise GitError(
                Problem(
                    f"since={anchor}: {anchor!r} is not in this shallow clone (its history "
                    "stops short, without the tags and commits an anchor names)",
                    fix=SHALLOW_FIX,
                    source="retrieval_regression",
                )
            )
        raise GitError(
            Problem(
                f"since={anchor}: no ledger label, tag, branch or commit is called {anchor!r}",
                fix=f"tag the release (git tag {anchor} REV) or label it in the ledger "
                f"(pytest-retrieval ledger label {anchor} REV)",
                source="retrieval_regression",
            )
        )
    return found


def anchor_baselines(
    run: LedgerRun, anchors: Sequence[str], rootdir: str
) -> dict[str | None, LedgerBaseline]:
    """The baseline of every ``since=`` anchor (``anchors``, as the budgets name them): the
    anchor commit's usable entry (:func:`best_entry`), re-scored under today's labels; skipped
    with the fix when it has none (a ledger that does not exist yet has none)."""
    from .ledger import Ledger
    from .outcome import BaselineRef

    anchors = list(dict.fromkeys(anchors))
    if not anchors:
        return {}
    path = run.path
    shown = ledger_note_path(path, rootdir)
    wanted = run.wanted
    found: dict[str | None, LedgerBaseline] = {}
    ledger = Ledger(path) if os.path.exists(path) else None
    try:
        labels = ledger.labels() if ledger is not None else {}
        for anchor in anchors:
            commit = resolve_anchor(labels, rootdir, anchor)
            entry = best_entry(ledger, commit, wanted) if ledger is not None else None
            label = f"the ledger entry of since={anchor} ({commit[:12]})"
            if entry is None:
                recorded = ledger.entries(commits=[commit]) if ledger is not None else None
                unusable = why_unusable(recorded) if recorded is not None else ""
                found[anchor] = LedgerBaseline(
                    None,
                    label=label,
                    skip=(
                        f"no anchor: since={anchor} is {commit[:12]}, which has "
                        f"{unusable or 'no recorded run'} in {shown} (runs that were refused, "
                        "errored, failed or made on a dirty work tree never count); record "
                        f"it: `{record_command(anchor, path, rootdir)}`"
                    ),
                )
                continue
            command = record_command(anchor, path, rootdir, run.depth_args)
            found[anchor] = _chosen(
                run,
                entry,
                label,
                f"anchor: since={anchor} is {commit[:12]}, recorded {entry.created} in {shown}: "
                "the total drift since then is judged",
                BaselineRef("anchor", commit, label=anchor),
                refresh=f"record {anchor}'s run at this run's settings: `{command}`",
            )
    finally:
        if ledger is not None:
            ledger.close()
    return found


# --- the headroom warning --------------------------------------------------------------------

#: How many recorded runs in a row (this one included) significantly above the baseline make
#: the headroom warning.
HEADROOM_RUNS = 3


def committed_id(baseline: Snapshot | None) -> str | None:
    """Which committed baseline file a check was judged against (its stamp)."""
    return None if baseline is None else f"{baseline.created}:{baseline.fingerprint[:12]}"


def headroom(
    settings: Settings,
    commit: CommitInfo | None,
    baseline: Snapshot | None,
    outcomes: Sequence[RegressionOutcome],
    anchored: Collection[str] = (),
) -> list[str]:
    """The warning for each budget this run (at ``commit``, its regression ``outcomes``) and
    the :data:`HEADROOM_RUNS` - 1 runs recorded before it (ancestors of HEAD) all passed as a
    significant improvement over the same committed ``baseline``: a stale baseline leaves
    headroom through which a real drop passes unseen. Only for the baseline file (a merge-base
    or an anchor moves by design: the ``anchored`` budgets' names are left out)."""
    from .commitinfo import is_ancestor
    from .ledger import Ledger

    if not settings.ledger or settings.merge_base or commit is None or baseline is None:
        return []
    improved = [o for o in outcomes if o.status is Status.IMPROVEMENT and o.name not in anchored]
    path = str(settings.ledger)
    if not improved or not os.path.exists(path):
        return []
    committed = committed_id(baseline)
    cwd = os.path.dirname(settings.golden[0]) if settings.golden else os.getcwd()
    try:
        with Ledger(path) as ledger:
            recent = ledger.entries(usable=True, last=20)
    except InputError:  # a damaged ledger: recording says so, in red
        return []
    previous = []
    for entry in reversed(recent):
        if entry.commit.commit == commit.commit:
            continue  # a re-run of this commit is not an earlier run
        if is_ancestor(cwd, entry.commit.commit, commit.commit):
            previous.append(entry)
        if len(previous) == HEADROOM_RUNS - 1:
            break
    if len(previous) < HEADROOM_RUNS - 1:
        return []
    lines = []
    for outcome in improved:
        if all(
            any(
                c.get("name") == outcome.name
                and c.get("status") == Status.IMPROVEMENT
                and c.get("baseline") == committed
                for c in entry.checks
            )
            for entry in previous
        ):
            shown = ", ".join(e.short for e in previous)
            lines.append(
                f"headroom: {outcome.name} has been significantly above the baseline in the "
                f"last {HEADROOM_RUNS} recorded runs (this one, {shown}): a baseline left below "
                "the pipeline lets a real drop pass unseen; refresh it from several runs "
                f"(pytest --retrieval-update-baseline --retrieval-baseline-runs 5)"
            )
    return lines


def skipped(budget: Budget, message: str) -> RegressionOutcome:
    """The outcome of a budget that has no baseline to compare with (a ledger without the
    entry): skipped, never red, with the fix in its message."""
    from .outcome import RegressionOutcome

    return RegressionOutcome.of_budget(
        budget, Status.SKIPPED, message, stage=budget.selection.stage
    )


# --- what an entry keeps --------------------------------------------------------------------


def scores_of(
    outcomes: Mapping[str, QueryOutcome], snapshot: Snapshot
) -> dict[str, dict[str, list[Any]]]:
    """query id -> stage -> the ranking's scores (whole, aligned with the stored ranking), for
    the ``snapshot``'s queries, from the run's ``outcomes``."""
    out: dict[str, dict[str, list[Any]]] = {}
    for qid in snapshot.queries:
        outcome = outcomes.get(qid)
        if outcome is None or not outcome.scores:
            continue
        out[qid] = {stage: list(values) for stage, values in outcome.scores.items()}
    return out


def checks_of(
    outcomes: Sequence[RegressionOutcome], committed: str | None, anchored: Collection[str] = ()
) -> list[dict[str, Any]]:
    """The run's regression checks (``outcomes``) as an entry keeps them; ``baseline`` names
    the ``committed`` baseline a check was judged against (:func:`committed_id`; None: a ledger
    entry's, as every ``anchored`` budget's is)."""
    return [
        {
            "name": outcome.name,
            "status": outcome.status,
            "delta": outcome.delta,
            "p_value": outcome.p_value,
            "baseline": None if outcome.name in anchored else committed,
        }
        for outcome in outcomes
    ]


def ledger_usage_problems(settings: Any) -> list[Problem]:
    """What a merge-base baseline needs that the settings do not give."""
    problems = []
    if settings.merge_base and not settings.ledger:
        problems.append(
            Problem(
                "retrieval_baseline = merge-base takes its baseline from the run ledger, but "
                "retrieval_ledger is not set",
                fix="set retrieval_ledger = PATH (the file the target branch's CI records into)",
                source="retrieval_baseline",
            )
        )
    if settings.merge_base and settings.update_baseline:
        problems.append(
            Problem(
                "--retrieval-update-baseline writes a baseline file, and retrieval_baseline = "
                "merge-base has none: the baseline is the merge-base's entry in the ledger",
                fix=f"record a commit's run with `{RECORD_COMMAND} REV` (or run pytest with "
                "--retrieval-ledger=PATH on the target branch)",
                source="--retrieval-update-baseline",
            )
        )
    return problems


def check_usage(settings: Any) -> None:
    """Raise the usage error of :func:`ledger_usage_problems`, if any."""
    problems = ledger_usage_problems(settings)
    if problems:
        raise InputError(problems, title="pytest-retrieval: the ledger settings")
