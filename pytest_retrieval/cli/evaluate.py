"""``pytest-retrieval evaluate``: score a TREC run against TREC qrels."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import InputError, Problem
from ..text import for_terminal
from .args import setting
from .output import echo, echo_json

if TYPE_CHECKING:
    from ..scoring.dedup import DuplicateGroups
    from ..scoring.evaluate import Conventions, Evaluation

DEFAULT_METRICS = ("recall@10", "recall@100", "precision@5", "ndcg@10", "map", "mrr")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``evaluate`` command."""
    parser = subparsers.add_parser(
        "evaluate",
        help="score a TREC run file against a TREC qrels file",
        description=(
            "Score a run (qid Q0 docid rank score tag) against qrels (qid iter docid grade). "
            "The run's order comes from its scores, ties broken by doc id descending, as in "
            "trec_eval."
        ),
    )
    parser.add_argument("--qrels", required=True, metavar="QRELS", help="TREC qrels file")
    parser.add_argument("--run", required=True, metavar="RUN", help="TREC run file")
    parser.add_argument(
        "-m",
        "--metric",
        dest="metrics",
        action="extend",
        nargs="+",
        metavar="METRIC",
        help=(
            "metric(s) to compute, e.g. -m ndcg@10 recall@100 mrr (comma-separated also works; "
            f"default: {' '.join(DEFAULT_METRICS)})"
        ),
    )
    parser.add_argument("--per-query", action="store_true", help="also print every query's values")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--gain",
        choices=("exponential", "linear"),
        default="exponential",
        help="NDCG gain: exponential 2**grade-1 (default) or linear grade (trec_eval's)",
    )
    parser.add_argument(
        "--min-grade",
        type=setting("min_grade"),
        default=1,
        metavar="N",
        help="lowest grade that counts as relevant for the binary metrics (default 1)",
    )
    parser.add_argument(
        "--no-relevant",
        choices=("skip", "zero", "one"),
        default="skip",
        help=(
            "queries with no relevant document: skip them in the means (default), score them "
            "0 (trec_eval) or 1"
        ),
    )
    parser.add_argument(
        "--unjudged",
        choices=("nonrelevant", "skip"),
        default="nonrelevant",
        help=(
            "retrieved documents without a judgment: count them as not relevant (default) or "
            "skip them, removing them from each ranking before scoring (trec_eval -J)"
        ),
    )
    parser.add_argument(
        "--duplicates",
        metavar="FILE",
        help=(
            "duplicate groups (doc<TAB>group per line, or JSON), as retrieval_duplicates: every "
            "metric is scored per group, and distinct@K counts copies"
        ),
    )
    parser.add_argument(
        "--corpus",
        metavar="FILE",
        help=(
            "corpus (.jsonl or BEIR folder) whose 'superseded_by' / 'status: retired' metadata "
            "makes documents stale, for -m stale@K (its tenant and groups rules need a query "
            "context, which qrels lack: list those documents with --forbidden)"
        ),
    )
    parser.add_argument(
        "--forbidden",
        metavar="FILE",
        help=(
            "the documents each query must not be shown, one 'qid docid' line each, for "
            "-m forbidden@K"
        ),
    )
    parser.add_argument(
        "--no-id-check",
        action="store_true",
        help=(
            "score even when (almost) no ranked id is a judged id, or ids differ from judged "
            "ones only in their Unicode normal form (refused by default: every metric would be "
            "0 for a reason that is not retrieval quality)"
        ),
    )
    parser.add_argument(
        "--keep-file-order",
        action="store_true",
        help="rank by the run file's line order instead of its scores",
    )
    parser.set_defaults(func=run)


def _metric_list(raw: list[str] | None) -> list[str]:
    from ..scoring.metrics import MetricSpec

    if not raw:
        return list(DEFAULT_METRICS)
    texts = [part for item in raw for part in item.split(",") if part.strip()]
    specs = []
    for text in texts:
        try:
            specs.append(str(MetricSpec.parse(text)))
        except InputError as exc:
            raise InputError(Problem(str(exc), source="-m/--metric")) from None
    return specs


def run(args: argparse.Namespace) -> int:
    """Score the run and print a table or JSON; return the exit status."""
    from ..formats.trec import read_qrels, read_run
    from ..scoring.evaluate import evaluate_documents

    metrics = _metric_list(args.metrics)
    conventions = _conventions(args)
    qrels = read_qrels(args.qrels)
    ranked = read_run(args.run, keep_file_order=args.keep_file_order)
    if not args.no_id_check:
        refusal, warning = id_check(ranked, qrels, duplicates=conventions.duplicates)
        if refusal is not None:
            echo(f"pytest-retrieval evaluate: error: {refusal}", err=True)
            return 2
        if warning is not None:
            echo(f"pytest-retrieval evaluate: {warning}", err=True)
    # A run file refuses a doc listed twice for one query (trec_eval's rule, the conventions'
    # repeated_ids="refuse"): its rankings are document rankings already.
    leak_data = _leak_arguments(args, metrics, qrels)
    evaluation = evaluate_documents(ranked, qrels, metrics, conventions=conventions, **leak_data)
    leaks = _leak_counts(evaluation, metrics)
    queries = {
        "evaluated": evaluation.evaluated,
        "skipped_no_relevant": len(evaluation.skipped_no_relevant),
        "missing_from_run": len(evaluation.missing_from_run),
        "without_judgments": len(evaluation.without_judgments),
    }
    if args.json:
        document: dict[str, Any] = {"metrics": evaluation.means}
        if leaks:
            document["leaks"] = leaks
        if args.per_query:
            document["per_query"] = evaluation.per_query
        document["queries"] = queries
        echo_json(document, ensure_ascii=True)
        return 0

    from tabulate import tabulate

    def cell(value: float | None) -> str:
        return "—" if value is None else f"{value:.4f}"

    means = evaluation.means
    counts = evaluation.counts
    rows: list[list[Any]]
    if args.per_query:
        rows = [
            [for_terminal(qid), *(cell(values[m]) for m in metrics)]
            for qid, values in evaluation.per_query.items()
        ]
        rows.append(["mean", *(cell(means[m]) for m in metrics)])
        echo(tabulate(rows, headers=["query", *metrics], disable_numparse=True))
    else:
        rows = [[m, cell(means[m]), counts[m]] for m in metrics]
        echo(tabulate(rows, headers=["metric", "mean", "queries"], disable_numparse=True))
    echo()
    for name, count in leaks.items():
        echo(
            f"{name}: {count['documents']} document{'s' if count['documents'] != 1 else ''} in "
            f"the top {name.split('@')[1]} of {count['queries']} "
            f"quer{'y' if count['queries'] == 1 else 'ies'}"
        )
    echo(
        f"queries: {queries['evaluated']} evaluated, "
        f"{queries['skipped_no_relevant']} skipped (no relevant document), "
        f"{queries['missing_from_run']} missing from the run (scored as empty), "
        f"{queries['without_judgments']} in the run without judgments (ignored)"
    )
    return 0


def _leak_arguments(
    args: argparse.Namespace, metrics: Sequence[str], qrels: dict[str, dict[str, int]]
) -> dict[str, Any]:
    """``evaluate_documents``' ``forbidden`` and ``stale`` for ``-m forbidden@K`` /
    ``stale@K``, from ``--forbidden`` and ``--corpus``; a metric that cannot be measured from
    what was given is refused with the flag that gives it (never a silent 0)."""
    from ..scoring.metrics import MetricSpec

    wanted = {MetricSpec.parse(m).name for m in metrics}
    given: dict[str, Any] = {}
    if args.forbidden is not None:
        from ..formats.trec import read_forbidden

        given["forbidden"] = read_forbidden(
            args.forbidden,
            qrels,
            warn=lambda problem: echo(f"pytest-retrieval evaluate: warning: {problem}", err=True),
        )
    rules = None
    if args.corpus is not None:
        from ..formats.corpus import read_access_rules

        rules = read_access_rules(args.corpus)
    if "forbidden" in wanted and args.forbidden is None:
        scoped = rules is not None and (rules.tenants or rules.has_groups)
        raise InputError(
            Problem(
                "forbidden@K needs each query's forbidden documents"
                + (
                    f": {args.corpus} gives documents a tenant or groups, but qrels carry no "
                    "query context to apply them to"
                    if scoped
                    else ""
                ),
                fix="list them with --forbidden FILE (one 'qid docid' line each)",
                source="-m/--metric",
            )
        )
    if "stale" in wanted:
        if rules is None or not rules.has_status:
            raise InputError(
                Problem(
                    "stale@K needs a corpus that marks documents stale"
                    + (
                        f": {args.corpus} gives no document 'superseded_by' or 'status' metadata"
                        if rules is not None
                        else ""
                    ),
                    fix="pass --corpus FILE whose documents carry 'superseded_by: ID' or "
                    "'status: retired'",
                    source="-m/--metric",
                )
            )
        given["stale"] = frozenset(rules.stale)
    return given


def _leak_counts(evaluation: Evaluation, metrics: Sequence[str]) -> dict[str, dict[str, int]]:
    """Per ``forbidden@K`` / ``stale@K`` asked: how many such documents sit in the top K
    (summed over the evaluated queries) and how many queries have one. A query's value is
    its count divided by K, so the count is the value times K."""
    from ..scoring.metrics import MetricSpec

    counts: dict[str, dict[str, int]] = {}
    for name in metrics:
        spec = MetricSpec.parse(name)
        if spec.metric.source != "access" or spec.k is None:
            continue
        per_query = [round(v * spec.k) for v in evaluation.columns[name] if v is not None]
        counts[name] = {
            "documents": sum(per_query),
            "queries": sum(1 for n in per_query if n),
        }
    return counts


def _conventions(args: argparse.Namespace) -> Conventions:
    """The one :class:`~pytest_retrieval.scoring.evaluate.Conventions` of this command, from its
    flags."""
    from ..scoring.evaluate import Conventions

    duplicates = None
    if args.duplicates is not None:
        from ..scoring.dedup import load_duplicates

        duplicates = load_duplicates(args.duplicates, setting="--duplicates")
    return Conventions(
        gain=args.gain,
        min_grade=args.min_grade,
        no_relevant=args.no_relevant,
        unjudged=args.unjudged,
        duplicates=duplicates,
        repeated_ids="refuse",
    )


def id_check(
    ranked: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, int]],
    *,
    duplicates: DuplicateGroups | None = None,
) -> tuple[str | None, str | None]:
    """The run's ids against the judged ids, refused where a pytest run would refuse them
    (:func:`~pytest_retrieval.run.checks.normalisation_pairs`: ids that differ only in their
    Unicode normal form; :func:`~pytest_retrieval.run.checks.id_match`: (almost) no ranking
    of a topic with a relevant document holds a judged id, or none does and run ids equal
    judged ids but for their spelling), with the fix for a run file; on a
    run too small for that refusal, a warning when no such ranking holds a judged id at all.
    With ``duplicates`` (``--duplicates``), a copy of a judged document counts as judged, as in
    a pytest run. Returns (refusal, warning)."""
    from ..run.checks import SPELLING_WORDS, id_match, normalisation_pairs

    rankings = {qid: ranking for qid, ranking in ranked.items() if qid in qrels and ranking}
    judged = {doc for judgments in qrels.values() for doc in judgments}
    if duplicates is not None:
        judged = duplicates.with_copies(judged)
    if not rankings or not judged:
        return None, None
    pairs = normalisation_pairs(rankings, judged)
    if pairs:
        shown = "; ".join(f"run {doc!a}, qrels {match!a}" for doc, match in list(pairs.items())[:3])
        return (
            f"{len(pairs)} run id(s) differ from judged ids only in their Unicode normal form, so "
            f"they would be scored as misses ({shown}): write the ids in one normal form "
            '(unicodedata.normalize("NFC", doc_id)), or pass --no-id-check'
        ), None
    # A no-answer topic's ranking need not hold a judged id: only answerable ones are counted.
    answerable = {
        qid: ranking
        for qid, ranking in rankings.items()
        if any(grade > 0 for grade in qrels[qid].values())
    }
    found = id_match(answerable, judged)
    if found is None or (found.matching and not found.refused):
        return None, None
    facts = (
        f"{found.matching} of {found.ranked} rankings of topics with a relevant document hold a "
        "judged id"
    )
    returned = ", ".join(repr(d) for d in found.returned[:3])
    expected = ", ".join(repr(d) for d in found.expected[:3])
    examples = f"(run ids, e.g. {returned}; judged ids, e.g. {expected})"
    outcome = "every metric would be 0" if not found.matching else "the metrics would be near 0"
    if found.spelling:
        shown = "; ".join(
            f"run {doc!r}, qrels {match!r}" for doc, match in list(found.spelling.items())[:3]
        )
        return (
            f"the run's ids do not match the qrels': {facts}, but {len(found.spelling)} run "
            f"id(s) equal judged ids once {SPELLING_WORDS} is ignored ({shown}), so {outcome} "
            "for a reason that is not retrieval quality: write the run with the ids spelled as "
            "the qrels spell them, or pass --no-id-check"
        ), None
    if found.refused:
        return (
            f"the run's ids do not match the qrels': {facts}, so {outcome} for a reason that is "
            f"not retrieval quality {examples}. Write the run with the document ids the qrels "
            "judge (chunk ids cut to their document, generated ids mapped to it), or pass "
            "--no-id-check"
        ), None
    return None, (
        f"warning: {facts}, so none finds a relevant document {examples}: check that the "
        "run and the qrels name documents alike"
    )
