"""The table of every setting: :data:`OPTIONS`, one :class:`Option` per ini key and flag.

Each setting is an ini key ``retrieval_<name>`` and, where it makes sense per run, a flag
``--retrieval-<name>`` with the same help text, a default and the parser of its value
(:mod:`pytest_retrieval.settings.values`). ``plugin.py`` registers the table in every pytest run
(``pytest_addoption``), so this module imports nothing heavy;
:func:`pytest_retrieval.settings.resolve.resolve` reads it to turn flags and ini values into
:class:`~pytest_retrieval.settings.resolve.Settings`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ..scoring.metrics import METRIC_NAMES, SUMMARY_METRICS
from .values import (
    MAX_BASELINE_RUNS,
    MAX_BATCH_SIZE,
    MAX_CONCURRENCY,
    MAX_DEPTH,
    MAX_GRADE,
    MAX_PROBE,
    MAX_RESAMPLES,
    MAX_SEED,
    MAX_WORST,
    parse_bool,
    parse_choice,
    parse_count,
    parse_dedup,
    parse_gain,
    parse_ks,
    parse_lines,
    parse_metrics,
    parse_probability,
    parse_run_sources,
    parse_score_floor,
    parse_seconds,
    parse_split_list,
    parse_text,
)

IniType = Literal["string", "linelist", "bool"]


@dataclass(frozen=True, slots=True)
class Option:
    """One setting: its ini key, its flag (if any), its help text, default and parser."""

    name: str
    help: str
    default: Any
    parse: Callable[[str], Any]
    ini_type: IniType = "string"
    flag: bool = True
    metavar: str | None = None
    is_path: bool = False
    store_true: bool = False
    flag_only: bool = False
    #: The flag may be given several times (``action="append"``); the values are joined
    #: one per line, like the ini's line list.
    repeatable: bool = False
    #: The value is a comma-separated list (``retrieval_ks = 1,3``): a TOML array in
    #: pyproject.toml (``retrieval_ks = [1, 3]``) is read as one.
    listed: bool = False
    #: An empty value (``--retrieval-gates-file=``, or the ini key written with nothing after
    #: ``=``) turns the setting off instead of being refused: the setting is then ``""``, not
    #: its default (which may be a file found by itself).
    empty_is_off: bool = False

    @property
    def ini(self) -> str:
        """The ini key, e.g. ``retrieval_ks``."""
        return f"retrieval_{self.name}"

    @property
    def flag_name(self) -> str:
        """The command-line flag, e.g. ``--retrieval-ks``."""
        return "--retrieval-" + self.name.replace("_", "-")

    @property
    def dest(self) -> str:
        """Where the flag's value is kept (``config.getoption("retrieval_ks")``)."""
        return f"retrieval_{self.name}"

    def addini_kwargs(self) -> dict[str, Any]:
        """The ini key as ``parser.addini`` registers it. A bool is read as text and parsed by
        the setting itself: pytest's own bool parsing fails with an INTERNALERROR on a value
        such as "maybe", where ours names the key."""
        ini_type = "string" if self.ini_type == "bool" else self.ini_type
        return {"name": self.ini, "help": self.help, "type": ini_type, "default": None}

    def addoption_kwargs(self) -> dict[str, Any]:
        """The flag as ``group.addoption`` registers it (a repeatable flag keeps every value:
        every ``--retrieval-run``, not only the last)."""
        kind: dict[str, Any] = (
            {"action": "store_true"} if self.store_true else {"metavar": self.metavar}
        )
        if self.repeatable:
            kind["action"] = "append"
        return {"default": None, "dest": self.dest, "help": self.help, **kind}


DEFAULT_KS = (1, 3, 5, 10, 20, 50, 100)
DEFAULT_METRICS = SUMMARY_METRICS
_OTHER_METRICS = tuple(name for name in METRIC_NAMES if name not in DEFAULT_METRICS)

# The statistics' defaults, in one place: the settings below and :class:`.settings.Settings`
# default to them, and so does a comparison (``CompareOptions``) of a stored run that records
# none, and a report of an artifact written before it recorded them.
#: The significance level of a regression check (family-wise, under ``retrieval_multiplicity``).
DEFAULT_ALPHA = 0.05
#: The confidence level of the bootstrap intervals.
DEFAULT_CONFIDENCE = 0.95
#: The seed of the bootstrap and the randomization tests: the same run gives the same verdict.
DEFAULT_SEED = 0
#: Bootstrap and randomization resamples.
DEFAULT_RESAMPLES = 10_000
#: The family-wise control of the regression checks.
DEFAULT_MULTIPLICITY = "maxt"
#: What a regression check tests.
DEFAULT_BUDGET_TEST = "drop"

#: Every setting, in the order ``pytest --help`` lists them.
OPTIONS: tuple[Option, ...] = (
    Option(
        "golden",
        "golden set file(s) or BEIR folder; turns the plugin on",
        (),
        parse_split_list,
        metavar="PATH[,PATH]",
        is_path=True,
        listed=True,
    ),
    Option(
        "golden_format",
        "golden set format when the file name does not tell (yaml, json, jsonl, csv, trec, beir)",
        None,
        parse_choice("yaml", "json", "jsonl", "csv", "trec", "beir"),
        metavar="FORMAT",
    ),
    Option(
        "corpus",
        "file of the corpus' document ids (one per line, optionally id<TAB>text) or a BEIR "
        "corpus.jsonl: every judged id must exist in it",
        None,
        parse_text,
        metavar="PATH",
        is_path=True,
    ),
    Option(
        "ks",
        f"cutoffs K for the summary table (default {','.join(map(str, DEFAULT_KS))})",
        DEFAULT_KS,
        parse_ks,
        metavar="K[,K]",
        listed=True,
    ),
    Option(
        "metrics",
        f"metrics in the summary table, each at every K (default {','.join(DEFAULT_METRICS)}; "
        f"{', '.join(_OTHER_METRICS)} and single spellings such as ndcg@10 also allowed)",
        DEFAULT_METRICS,
        parse_metrics,
        metavar="NAME[,NAME]",
        listed=True,
    ),
    Option(
        "gain",
        "NDCG gain: exponential (2**grade-1, default) or linear (grade, trec_eval's)",
        "exponential",
        parse_gain,
        metavar="GAIN",
    ),
    Option(
        "min_grade",
        "lowest grade that counts as relevant for the binary metrics (default 1)",
        1,
        parse_count(1, MAX_GRADE),
        metavar="N",
    ),
    Option(
        "no_relevant",
        "queries with no relevant document: skip them in means (default), "
        "or score them zero or one",
        "skip",
        parse_choice("skip", "zero", "one"),
        metavar="MODE",
    ),
    Option(
        "score_floor",
        "score at or above which a result is a confident answer (abstain_rate, answer_rate): "
        "SCORE, STAGE=SCORE[, STAGE=SCORE], or empty (only an empty ranking abstains)",
        (),
        parse_score_floor,
        metavar="[STAGE=]SCORE",
        listed=True,
    ),
    Option(
        "duplicates",
        "file of duplicate groups (TSV doc<TAB>group, or JSON): metrics are scored per group",
        None,
        parse_text,
        metavar="PATH",
        is_path=True,
    ),
    Option(
        "dedup",
        "compute duplicate groups from retrieval_corpus texts: off (default), exact "
        "(normalised text) or near[=JACCARD] (word shingles, MinHash; pytest-retrieval[dedup])",
        "off",
        parse_dedup,
        metavar="MODE",
    ),
    Option(
        "unjudged",
        "retrieved documents without a judgment: nonrelevant (default: they count as not "
        "relevant) or skip (removed from each ranking before scoring, trec_eval -J)",
        "nonrelevant",
        parse_choice("nonrelevant", "skip"),
        metavar="nonrelevant|skip",
    ),
    Option(
        "retriever",
        "factory of the retriever under test, module:function (imports and runs "
        "that code); or override the retriever_under_test fixture",
        None,
        parse_text,
        metavar="MODULE:FUNCTION",
        flag=False,
    ),
    Option(
        "reranker",
        "factory of an optional second stage, module:function; or override the "
        "reranker_under_test fixture",
        None,
        parse_text,
        metavar="MODULE:FUNCTION",
        flag=False,
    ),
    Option(
        "doc_id",
        "where a returned item keeps its document id: a key/attribute path such as "
        "metadata.source, or module:function mapping each returned (chunk) id to its "
        "document id, chunks of one document collapsing to its best rank",
        None,
        parse_text,
        metavar="PATH",
        flag=False,
    ),
    Option(
        "context_filter",
        "module:function building each query's filter from its golden-set context: the "
        "filter= of a LangChain vector-store retriever (a function of a Document for "
        "InMemoryVectorStore, a dict for most stores) and the filters= of a Haystack retriever",
        None,
        parse_text,
        metavar="MODULE:FUNCTION",
        flag=False,
    ),
    Option(
        "doc_id_map",
        "JSON or TSV file mapping chunk ids to document ids",
        None,
        parse_text,
        metavar="PATH",
        flag=False,
        is_path=True,
    ),
    Option(
        "doc_id_separator",
        "split returned chunk ids such as doc#3 or doc::3 at the last SEP; the part before it "
        "is the document id (chunks of one document collapse to its best rank)",
        None,
        parse_text,
        metavar="SEP",
        flag=False,
    ),
    Option(
        "short_rankings",
        "rankings shorter than the cutoffs scored: warn (default), error (fail the run), off",
        "warn",
        parse_choice("warn", "error", "off"),
        metavar="warn|error|off",
    ),
    Option(
        "id_check",
        "stop when (almost) no returned id is ever a judged id, or ids differ from judged ones "
        "only in their Unicode normal form: on (default) or off",
        "on",
        parse_choice("on", "off"),
        metavar="on|off",
    ),
    Option(
        "depth",
        "how many results to ask the retriever for first (default: the largest K, or as many "
        "as it was built to return if more); a query whose results collapse into fewer "
        "documents than the largest K is asked again deeper",
        None,
        parse_count(1, MAX_DEPTH),
        metavar="N",
    ),
    Option(
        "max_depth",
        "how deep a query is asked again when its results collapse into fewer documents than "
        "the largest K (default 10 x the first depth)",
        None,
        parse_count(1, MAX_DEPTH),
        metavar="N",
    ),
    Option(
        "cutoff_unit",
        "what K counts: documents (default; chunks of one document count once, at their best "
        "rank, and queries are asked deeper to fill K) or results (the K results as returned, "
        "collapsed within them)",
        "documents",
        parse_choice("documents", "results"),
        metavar="documents|results",
    ),
    Option(
        "cache",
        "retriever-output cache: off (default), use (read hits, record misses), refresh "
        "(call the retriever for every query and overwrite) or replay (never call it; every "
        "query must be cached)",
        "off",
        parse_choice("off", "use", "refresh", "replay"),
        metavar="MODE",
    ),
    Option(
        "cache_dir",
        "folder of the retriever-output cache (default .retrieval-cache in the rootdir)",
        None,
        parse_text,
        metavar="PATH",
        is_path=True,
    ),
    Option(
        "index_version",
        "version of the index the retriever searches, part of the cache key and recorded in "
        "the artifact and baseline: change it whenever the index is rebuilt",
        None,
        parse_text,
        metavar="VERSION",
    ),
    Option(
        "run",
        "gate a stored run instead of calling the retriever: a TREC or JSONL run file, PATH "
        "(the retriever stage) or STAGE=PATH; repeatable, one per stage",
        (),
        parse_run_sources,
        ini_type="linelist",
        metavar="[STAGE=]PATH",
        is_path=True,
        repeatable=True,
    ),
    Option(
        "concurrency",
        "queries in flight at once (default 8)",
        8,
        parse_count(1, MAX_CONCURRENCY),
        metavar="N",
    ),
    Option(
        "timeout",
        "seconds one query may take before it counts as failed (default 60; 0 = no limit)",
        60.0,
        parse_seconds,
        metavar="SECONDS",
    ),
    Option(
        "batch_size",
        "queries per call for retrievers with a batch method (default 32)",
        32,
        parse_count(1, MAX_BATCH_SIZE),
        metavar="N",
    ),
    Option(
        "heldout_split",
        "name of the held-out split (default heldout)",
        "heldout",
        parse_text,
        metavar="NAME",
    ),
    Option(
        "heldout",
        "unseal the held-out split: score it (aggregates only)",
        False,
        parse_bool,
        ini_type="bool",
        store_true=True,
    ),
    Option(
        "heldout_details",
        "with --retrieval-heldout, also show held-out per-query details",
        False,
        parse_bool,
        ini_type="bool",
        store_true=True,
    ),
    Option(
        "thresholds",
        "gates as lines: 'recall@50 >= 0.90 [stage=..] [split=..] [slice=..]'",
        (),
        parse_lines,
        ini_type="linelist",
        flag=False,
    ),
    Option(
        "gates_file",
        "YAML file of gates (default: retrieval-gates.yaml in the rootdir when it exists; "
        "empty: no gates file)",
        None,
        parse_text,
        metavar="PATH",
        is_path=True,
        empty_is_off=True,
    ),
    Option(
        "summary",
        "the terminal summary: compact (default: overall scores as metric x K, slices on the "
        "headline and gated metrics) or full (every metric at every K by slice; also -v)",
        "compact",
        parse_choice("compact", "full"),
        metavar="compact|full",
    ),
    Option(
        "worst",
        "how many worst queries a failure message lists (default 5)",
        5,
        parse_count(1, MAX_WORST),
        metavar="N",
    ),
    Option(
        "json",
        "write the JSON artifact to this path",
        None,
        parse_text,
        metavar="PATH",
        is_path=True,
    ),
    Option(
        "markdown",
        "write the Markdown report (for pull requests) to this path",
        None,
        parse_text,
        metavar="PATH",
        is_path=True,
    ),
    Option(
        "html",
        "write the HTML report (one self-contained page with plots) to this path",
        None,
        parse_text,
        metavar="PATH",
        is_path=True,
    ),
    Option(
        "step_summary",
        "append the Markdown report to $GITHUB_STEP_SUMMARY when that variable is set "
        "(default true)",
        True,
        parse_bool,
        ini_type="bool",
        metavar="BOOL",
    ),
    Option(
        "alpha",
        f"significance level of the regression test (default {DEFAULT_ALPHA})",
        DEFAULT_ALPHA,
        parse_probability,
        metavar="ALPHA",
    ),
    Option(
        "confidence",
        f"confidence level of the bootstrap intervals (default {DEFAULT_CONFIDENCE})",
        DEFAULT_CONFIDENCE,
        parse_probability,
        metavar="LEVEL",
    ),
    Option(
        "seed",
        f"seed of the bootstrap and randomization tests (default {DEFAULT_SEED})",
        DEFAULT_SEED,
        parse_count(0, MAX_SEED),
        metavar="N",
    ),
    Option(
        "resamples",
        f"bootstrap and randomization resamples (default {DEFAULT_RESAMPLES})",
        DEFAULT_RESAMPLES,
        parse_count(1, MAX_RESAMPLES),
        metavar="N",
    ),
    Option(
        "baseline",
        "the committed baseline file to check regressions against, or merge-base: the "
        "merge-base's run in retrieval_ledger (a file of that name: ./merge-base); empty: "
        "none for this run",
        None,
        parse_text,
        metavar="PATH|merge-base",
        is_path=True,
        empty_is_off=True,
    ),
    Option(
        "ledger",
        "record every run in this ledger file (SQLite; default off; empty: off), the "
        "history retrieval_baseline = merge-base and since= budgets read",
        None,
        parse_text,
        metavar="PATH",
        is_path=True,
        empty_is_off=True,
    ),
    Option(
        "target_branch",
        "the branch a merge-base baseline is taken with (default: the CI's base-ref variable, "
        "GITHUB_BASE_REF or CI_MERGE_REQUEST_TARGET_BRANCH_NAME, then main)",
        None,
        parse_text,
        metavar="BRANCH",
    ),
    Option(
        "update_baseline",
        "write the baseline file from this run (review and commit it)",
        False,
        parse_bool,
        ini_type="bool",
        store_true=True,
        flag_only=True,
    ),
    Option(
        "baseline_mode",
        "when the golden set changed since the baseline: strict (default: incomparable), "
        "intersect (compare the unchanged queries) or rescore (re-score the baseline's stored "
        "rankings against the current labels)",
        "strict",
        parse_choice("strict", "intersect", "rescore"),
        metavar="MODE",
    ),
    Option(
        "multiplicity",
        "family-wise control of the regression checks: maxt (default, Westfall-Young "
        "step-down over joint sign flips), minp, holm, or none (each check alone at alpha)",
        DEFAULT_MULTIPLICITY,
        parse_choice("maxt", "minp", "holm", "none"),
        metavar="METHOD",
    ),
    Option(
        "budget_test",
        "what a regression check tests: drop (default: the drop exceeds the budget and is "
        "significant) or beyond-budget (the drop is significantly larger than the budget); "
        "for forbidden@K and stale@K the rise",
        DEFAULT_BUDGET_TEST,
        parse_choice("drop", "beyond-budget"),
        metavar="MODE",
    ),
    Option(
        "determinism_probe",
        "when a baseline is compared against or written, re-run this many queries after the "
        "run (once per session under xdist) and report how many rankings changed, and which "
        "cached ones are stale (default 5; 0 = off)",
        5,
        parse_count(0, MAX_PROBE),
        metavar="N",
    ),
    Option(
        "baseline_runs",
        "with --retrieval-update-baseline: run the retriever N times and record per-query "
        "means and spread (default 1)",
        1,
        parse_count(1, MAX_BASELINE_RUNS),
        metavar="N",
    ),
    Option(
        "regression",
        "regression budgets as lines: 'ndcg@10 0.02 [stage=..] [split=..] [slice=..]' or "
        "'recall@50 2%' (relative); default: recall@<largest K> on the retriever, ndcg@10 and "
        "mrr, 0.01 each",
        (),
        parse_lines,
        ini_type="linelist",
        flag=False,
    ),
)
