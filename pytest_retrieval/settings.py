"""Every setting of the plugin, declared once, resolved once into a frozen :class:`Settings`.

Each setting is an ini key ``retrieval_<name>`` (pytest.ini, tox.ini, setup.cfg or
``[tool.pytest.ini_options]`` in pyproject.toml) and, where it makes sense per run, a flag
``--retrieval-<name>`` with the same help text. Precedence: command line > ini > default. A bad
value is rejected with where it came from (``retrieval_ks = 5,ten in pyproject.toml: 'ten' is not
a positive integer``). This module does not import pytest: ``plugin.py`` registers the options
from :data:`OPTIONS` and hands the raw values to :func:`resolve`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal

from .errors import InputError, Problem
from .metrics import METRIC_NAMES, MetricSpec, check_gain, takes_cutoff
from .text import parse_int

IniType = Literal["string", "linelist", "bool"]


class _Invalid(ValueError):
    """A value that does not parse; its message says what was expected."""


def _positive_int(text: str) -> int:
    text = text.strip()
    value = parse_int(text)  # ASCII digits only: "²" passes str.isdigit() but not int()
    if value is None or value < 1:
        raise _Invalid(f"{text!r} is not a positive integer")
    return value


def _non_negative_int(text: str) -> int:
    text = text.strip()
    value = parse_int(text)
    if value is None:
        raise _Invalid(f"{text!r} is not an integer >= 0")
    return value


def _number(text: str) -> float:
    # float() also reads "1_0", non-ASCII digits and "infinity": a setting is plain ASCII.
    try:
        if not text.strip().isascii():
            raise ValueError(text)
        return float(text)
    except ValueError:
        raise _Invalid(f"{text!r} is not a number") from None


def _seconds(text: str) -> float:
    value = _number(text)
    if math.isnan(value) or value < 0:
        raise _Invalid(f"{text!r} is not a number >= 0")
    if math.isinf(value):
        raise _Invalid(f"{text!r} is not a finite number of seconds; 0 means no limit")
    return value


def _probability(text: str) -> float:
    value = _number(text)
    if not 0.0 < value < 1.0:
        raise _Invalid(f"{text!r} is not a number strictly between 0 and 1")
    return value


def _split_list(text: str) -> list[str]:
    return [part.strip() for part in text.replace("\n", ",").split(",") if part.strip()]


def _ks(text: str) -> tuple[int, ...]:
    values = [_positive_int(part) for part in _split_list(text)]
    if not values:
        raise _Invalid("no cutoff given; write e.g. 1,5,10,50")
    return tuple(sorted(set(values)))


def _metrics(text: str) -> tuple[str, ...]:
    """Metric families (``recall``, computed at every K) or full spellings (``r_precision``)."""
    names: list[str] = []
    for part in _split_list(text):
        lowered = part.lower()
        if lowered in METRIC_NAMES:
            names.append(lowered)
            continue
        try:
            spec = MetricSpec.parse(part)
        except InputError as exc:
            import difflib  # only for the error message: this module loads in every run

            close = difflib.get_close_matches(lowered, METRIC_NAMES, n=1)
            # A misspelt family: suggest the family, not one cutoff of it. With a cutoff
            # (recal@5, recall@0) the spec's own message says which part is wrong.
            if close and "@" not in part:
                raise _Invalid(
                    f"{part!r} is not a metric; did you mean {close[0]!r}? (known: "
                    f"{', '.join(METRIC_NAMES)}, or one cutoff such as ndcg@10)"
                ) from None
            raise _Invalid(str(exc)) from None
        names.append(spec.name if spec.k is None and spec.name != "r_precision" else str(spec))
    if not names:
        raise _Invalid("no metric given; write e.g. recall, ndcg, mrr")
    return tuple(dict.fromkeys(names))


def _choice(*choices: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = text.strip().lower()
        if value not in choices:
            import difflib  # only for the error message: this module loads in every run

            close = difflib.get_close_matches(value, choices, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise _Invalid(f"{text!r} is not one of {', '.join(choices)}{hint}")
        return value

    return parse


def _gain(text: str) -> str:
    try:
        return check_gain(text.strip().lower())
    except ValueError as exc:
        raise _Invalid(str(exc)) from None


def _text(text: str) -> str:
    value = text.strip()
    if not value:
        raise _Invalid("is empty")
    return value


def _bool(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise _Invalid(f"{text!r} is not true or false")


def _lines(text: str) -> tuple[str, ...]:
    return tuple(line.strip() for line in text.splitlines() if line.strip())


_RUN_STAGES = ("retriever", "reranker")


def _run_sources(text: str) -> tuple[tuple[str, str], ...]:
    """``STAGE=PATH`` or ``PATH`` (the retriever stage), one per line: ``((stage, path), ...)``.

    A prefix before ``=`` that looks like a name is a stage and must be a known one, so a typo
    (``rerankr=run.jsonl``) is an error rather than a file called ``rerankr=run.jsonl``.
    """
    sources: dict[str, str] = {}
    for line in _lines(text):
        stage, path = "retriever", line
        head, equals, tail = line.partition("=")
        if equals and head.strip().replace("_", "").replace("-", "").isalnum():
            stage, path = head.strip().lower(), tail.strip()
            if stage not in _RUN_STAGES:
                raise _Invalid(
                    f"{line!r}: unknown stage {head.strip()!r}; write PATH (the retriever "
                    f"stage) or STAGE=PATH with STAGE one of {', '.join(_RUN_STAGES)}"
                )
            if not path:
                raise _Invalid(f"{line!r}: no path after {head.strip()}=")
        if stage in sources:
            raise _Invalid(
                f"two runs for the {stage} stage ({sources[stage]} and {path}); give one run "
                "per stage"
            )
        sources[stage] = path
    if not sources:
        raise _Invalid("no run file given; write PATH or STAGE=PATH")
    return tuple(sources.items())


def _score_floor(text: str) -> tuple[tuple[str, float], ...]:
    """``0.5`` (every stage), ``retriever=0.5, reranker=0.2`` (per stage; a bare value among
    them is the default of the others), or ``empty`` in place of a number (only an empty
    ranking abstains): ``(("", default), (stage, floor), ...)``."""
    from .abstention import ANY_RESULT

    floors: dict[str, float] = {}
    for part in _split_list(text):
        stage, equals, value = part.partition("=")
        if not equals:
            stage, value = "", part
        stage = stage.strip().lower()
        if equals and stage not in _RUN_STAGES:
            raise _Invalid(
                f"{part!r}: unknown stage {stage!r}; write a score (every stage) or STAGE=SCORE "
                f"with STAGE one of {', '.join(_RUN_STAGES)}"
            )
        value = value.strip()
        if value.lower() == "empty":
            floor = ANY_RESULT
        else:
            floor = _number(value)
            if not math.isfinite(floor):
                raise _Invalid(f"{value!r} is not a finite score; write a number or empty")
        if stage in floors:
            raise _Invalid(f"two floors for {stage or 'every stage'}; give one")
        floors[stage] = floor
    if not floors:
        raise _Invalid("no floor given; write e.g. 0.5 or retriever=0.5, reranker=0.2")
    return tuple(floors.items())


def _dedup(text: str) -> str:
    """``off``, ``exact``, ``near`` or ``near=T`` (T the Jaccard threshold, 0 < T <= 1)."""
    value = text.strip().lower().replace(" ", "")
    if value in ("off", "exact", "near"):
        return value
    head, equals, threshold = value.partition("=")
    if head == "near" and equals:
        number = _number(threshold)
        if not 0.0 < number <= 1.0:
            raise _Invalid(f"{threshold!r} is not a Jaccard threshold in (0, 1]")
        return f"near={number:g}"
    raise _Invalid(f"{text!r} is not one of off, exact, near, near=THRESHOLD (e.g. near=0.8)")


#: The cache folder's default, beside the rootdir (``retrieval_cache_dir``).
DEFAULT_CACHE_DIR = ".retrieval-cache"


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

    @property
    def ini(self) -> str:
        """The ini key, e.g. ``retrieval_ks``."""
        return f"retrieval_{self.name}"

    @property
    def flag_name(self) -> str:
        """The command-line flag, e.g. ``--retrieval-ks``."""
        return "--retrieval-" + self.name.replace("_", "-")


DEFAULT_KS = (1, 3, 5, 10, 20, 50, 100)
DEFAULT_METRICS = ("recall", "precision", "hit_rate", "ndcg", "map", "mrr")

#: Every setting, in the order ``pytest --help`` lists them.
OPTIONS: tuple[Option, ...] = (
    Option(
        "golden",
        "golden set file(s) or BEIR folder; turns the plugin on",
        (),
        _split_list,
        metavar="PATH[,PATH]",
        is_path=True,
    ),
    Option(
        "golden_format",
        "golden set format when the file name does not tell (yaml, json, jsonl, csv, trec, beir)",
        None,
        _choice("yaml", "json", "jsonl", "csv", "trec", "beir"),
        metavar="FORMAT",
    ),
    Option(
        "corpus",
        "file of the corpus' document ids (one per line, optionally id<TAB>text) or a BEIR "
        "corpus.jsonl: every judged id must exist in it",
        None,
        _text,
        metavar="PATH",
        is_path=True,
    ),
    Option(
        "ks",
        f"cutoffs K for the summary table (default {','.join(map(str, DEFAULT_KS))})",
        DEFAULT_KS,
        _ks,
        metavar="K[,K]",
    ),
    Option(
        "metrics",
        f"metrics in the summary table, each at every K (default "
        f"{','.join(DEFAULT_METRICS)}; r_precision also allowed)",
        DEFAULT_METRICS,
        _metrics,
        metavar="NAME[,NAME]",
    ),
    Option(
        "gain",
        "NDCG gain: exponential (2**grade-1, default) or linear (grade, trec_eval's)",
        "exponential",
        _gain,
        metavar="GAIN",
    ),
    Option(
        "min_grade",
        "lowest grade that counts as relevant for the binary metrics (default 1)",
        1,
        _positive_int,
        metavar="N",
    ),
    Option(
        "no_relevant",
        "queries with no relevant document: skip them in means (default), "
        "or score them zero or one",
        "skip",
        _choice("skip", "zero", "one"),
        metavar="MODE",
    ),
    Option(
        "score_floor",
        "score at or above which a result is a confident answer (abstain_rate, answer_rate): "
        "SCORE, STAGE=SCORE[, STAGE=SCORE], or empty (only an empty ranking abstains)",
        (),
        _score_floor,
        metavar="[STAGE=]SCORE",
    ),
    Option(
        "duplicates",
        "file of duplicate groups (TSV doc<TAB>group, or JSON): metrics are scored per group",
        None,
        _text,
        metavar="PATH",
        is_path=True,
    ),
    Option(
        "dedup",
        "compute duplicate groups from retrieval_corpus texts: off (default), exact "
        "(normalised text) or near[=JACCARD] (word shingles, MinHash; pytest-retrieval[dedup])",
        "off",
        _dedup,
        metavar="MODE",
    ),
    Option(
        "unjudged",
        "retrieved documents without a judgment: nonrelevant (default: they count as not "
        "relevant) or skip (removed from each ranking before scoring, trec_eval -J)",
        "nonrelevant",
        _choice("nonrelevant", "skip"),
        metavar="nonrelevant|skip",
    ),
    Option(
        "retriever",
        "factory of the retriever under test, module:function (imports and runs "
        "that code); or override the retriever_under_test fixture",
        None,
        _text,
        metavar="MODULE:FUNCTION",
        flag=False,
    ),
    Option(
        "reranker",
        "factory of an optional second stage, module:function; or override the "
        "reranker_under_test fixture",
        None,
        _text,
        metavar="MODULE:FUNCTION",
        flag=False,
    ),
    Option(
        "doc_id",
        "where a returned item keeps its document id: a key/attribute path such as "
        "metadata.source, or module:function mapping each returned (chunk) id to its "
        "document id, chunks of one document collapsing to its best rank",
        None,
        _text,
        metavar="PATH",
        flag=False,
    ),
    Option(
        "doc_id_map",
        "JSON or TSV file mapping chunk ids to document ids",
        None,
        _text,
        metavar="PATH",
        flag=False,
        is_path=True,
    ),
    Option(
        "doc_id_separator",
        "split returned chunk ids such as doc#3 or doc::3 at the last SEP; the part before it "
        "is the document id (chunks of one document collapse to its best rank)",
        None,
        _text,
        metavar="SEP",
        flag=False,
    ),
    Option(
        "short_rankings",
        "rankings shorter than the cutoffs scored: warn (default), error (fail the run), off",
        "warn",
        _choice("warn", "error", "off"),
        metavar="warn|error|off",
    ),
    Option(
        "id_check",
        "stop when (almost) no returned id is ever a judged id: on (default) or off",
        "on",
        _choice("on", "off"),
        metavar="on|off",
    ),
    Option(
        "depth",
        "how many results to ask the retriever for (default: the largest K)",
        None,
        _positive_int,
        metavar="N",
    ),
    Option(
        "cache",
        "retriever-output cache: off (default), use (read hits, record misses), refresh "
        "(call the retriever for every query and overwrite) or replay (never call it; every "
        "query must be cached)",
        "off",
        _choice("off", "use", "refresh", "replay"),
        metavar="MODE",
    ),
    Option(
        "cache_dir",
        "folder of the retriever-output cache (default .retrieval-cache in the rootdir)",
        None,
        _text,
        metavar="PATH",
        is_path=True,
    ),
    Option(
        "index_version",
        "version of the index the retriever searches, part of the cache key and recorded in "
        "the artifact and baseline: change it whenever the index is rebuilt",
        None,
        _text,
        metavar="VERSION",
    ),
    Option(
        "run",
        "gate a stored run instead of calling the retriever: a TREC or JSONL run file, PATH "
        "(the retriever stage) or STAGE=PATH; repeatable, one per stage",
        (),
        _run_sources,
        ini_type="linelist",
        metavar="[STAGE=]PATH",
        is_path=True,
        repeatable=True,
    ),
    Option("concurrency", "queries in flight at once (default 8)", 8, _positive_int, metavar="N"),
    Option(
        "timeout",
        "seconds one query may take before it counts as failed (default 60; 0 = no limit)",
        60.0,
        _seconds,
        metavar="SECONDS",
    ),
    Option(
        "batch_size",
        "queries per call for retrievers with a batch method (default 32)",
        32,
        _positive_int,
        metavar="N",
    ),
    Option(
        "heldout_split",
        "name of the held-out split (default heldout)",
        "heldout",
        _text,
        metavar="NAME",
    ),
    Option(
        "heldout",
        "unseal the held-out split: score it (aggregates only)",
        False,
        _bool,
        ini_type="bool",
        store_true=True,
    ),
    Option(
        "heldout_details",
        "with --retrieval-heldout, also show held-out per-query details",
        False,
        _bool,
        ini_type="bool",
        store_true=True,
    ),
    Option(
        "thresholds",
        "gates as lines: 'recall@50 >= 0.90 [stage=..] [split=..] [slice=..]'",
        (),
        _lines,
        ini_type="linelist",
        flag=False,
    ),
    Option(
        "gates_file",
        "YAML file of gates (default: retrieval-gates.yaml in the rootdir when it exists)",
        None,
        _text,
        metavar="PATH",
        is_path=True,
    ),
    Option(
        "summary",
        "the terminal summary: compact (default: overall scores as metric x K, slices on the "
        "headline and gated metrics) or full (every metric at every K by slice; also -v)",
        "compact",
        _choice("compact", "full"),
        metavar="compact|full",
    ),
    Option(
        "worst",
        "how many worst queries a failure message lists (default 5)",
        5,
        _positive_int,
        metavar="N",
    ),
    Option(
        "json", "write the JSON artifact to this path", None, _text, metavar="PATH", is_path=True
    ),
    Option(
        "markdown",
        "write the Markdown report (for pull requests) to this path",
        None,
        _text,
        metavar="PATH",
        is_path=True,
    ),
    Option(
        "html",
        "write the HTML report (one self-contained page with plots) to this path",
        None,
        _text,
        metavar="PATH",
        is_path=True,
    ),
    Option(
        "step_summary",
        "append the Markdown report to $GITHUB_STEP_SUMMARY when that variable is set "
        "(default true)",
        True,
        _bool,
        ini_type="bool",
        metavar="BOOL",
    ),
    Option(
        "alpha",
        "significance level of the regression test (default 0.05)",
        0.05,
        _probability,
        metavar="ALPHA",
    ),
    Option(
        "confidence",
        "confidence level of the bootstrap intervals (default 0.95)",
        0.95,
        _probability,
        metavar="LEVEL",
    ),
    Option(
        "seed",
        "seed of the bootstrap and randomization tests (default 0)",
        0,
        _non_negative_int,
        metavar="N",
    ),
    Option(
        "resamples",
        "bootstrap and randomization resamples (default 10000)",
        10_000,
        _positive_int,
        metavar="N",
    ),
    Option(
        "baseline",
        "the committed baseline file to check regressions against",
        None,
        _text,
        metavar="PATH",
        is_path=True,
    ),
    Option(
        "update_baseline",
        "write the baseline file from this run (review and commit it)",
        False,
        _bool,
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
        _choice("strict", "intersect", "rescore"),
        metavar="MODE",
    ),
    Option(
        "multiplicity",
        "family-wise control of the regression checks: maxt (default, Westfall-Young "
        "step-down over joint sign flips), minp, holm, or none (each check alone at alpha)",
        "maxt",
        _choice("maxt", "minp", "holm", "none"),
        metavar="METHOD",
    ),
    Option(
        "budget_test",
        "what a regression check tests: drop (default: the drop exceeds the budget and is "
        "significant) or beyond-budget (the drop is significantly larger than the budget)",
        "drop",
        _choice("drop", "beyond-budget"),
        metavar="MODE",
    ),
    Option(
        "determinism_probe",
        "when a baseline is configured, re-run this many queries after the run and report "
        "how many rankings changed (default 5; 0 = off)",
        5,
        _non_negative_int,
        metavar="N",
    ),
    Option(
        "baseline_runs",
        "with --retrieval-update-baseline: run the retriever N times and record per-query "
        "means and spread (default 1)",
        1,
        _positive_int,
        metavar="N",
    ),
    Option(
        "regression",
        "regression budgets as lines: 'ndcg@10 0.02 [stage=..] [split=..] [slice=..]' or "
        "'recall@50 2%' (relative); default: recall@<largest K> on the retriever, ndcg@10 and "
        "mrr, 0.01 each",
        (),
        _lines,
        ini_type="linelist",
        flag=False,
    ),
)

_BY_NAME = {option.name: option for option in OPTIONS}


@dataclass(frozen=True, slots=True)
class Settings:
    """The resolved settings of one run (command line > ini > default). Immutable."""

    golden: tuple[str, ...] = ()
    golden_format: str | None = None
    corpus: str | None = None
    ks: tuple[int, ...] = DEFAULT_KS
    metrics: tuple[str, ...] = DEFAULT_METRICS
    gain: str = "exponential"
    min_grade: int = 1
    no_relevant: str = "skip"
    score_floor: tuple[tuple[str, float], ...] = ()
    duplicates: str | None = None
    dedup: str = "off"
    unjudged: str = "nonrelevant"
    retriever: str | None = None
    reranker: str | None = None
    doc_id: str | None = None
    doc_id_map: str | None = None
    doc_id_separator: str | None = None
    short_rankings: str = "warn"
    id_check: str = "on"
    depth: int | None = None
    cache: str = "off"
    cache_dir: str | None = None
    index_version: str | None = None
    run: tuple[tuple[str, str], ...] = ()
    concurrency: int = 8
    timeout: float = 60.0
    batch_size: int = 32
    heldout_split: str = "heldout"
    heldout: bool = False
    heldout_details: bool = False
    thresholds: tuple[str, ...] = ()
    gates_file: str | None = None
    summary: str = "compact"
    worst: int = 5
    json: str | None = None
    markdown: str | None = None
    html: str | None = None
    step_summary: bool = True
    alpha: float = 0.05
    confidence: float = 0.95
    seed: int = 0
    resamples: int = 10_000
    baseline: str | None = None
    update_baseline: bool = False
    baseline_mode: str = "strict"
    regression: tuple[str, ...] = ()
    multiplicity: str = "maxt"
    budget_test: str = "drop"
    determinism_probe: int = 5
    baseline_runs: int = 1

    @property
    def active(self) -> bool:
        """True when a golden set is configured: the plugin is in use."""
        return bool(self.golden)

    @property
    def metric_specs(self) -> tuple[MetricSpec, ...]:
        """Every metric of the summary table: each family at every K, full spellings as given."""
        specs: list[MetricSpec] = []
        for name in self.metrics:
            if name in METRIC_NAMES and not takes_cutoff(name):
                specs.append(MetricSpec(name))
            elif name in METRIC_NAMES:
                specs.extend(MetricSpec(name, k) for k in self.ks)
            else:
                specs.append(MetricSpec.parse(name))
        # A floor makes abstention measurable, duplicate groups make redundancy meaningful:
        # the table shows them without being asked.
        if self.score_floor:
            specs += [MetricSpec("abstain_rate"), MetricSpec("answer_rate")]
        if self.deduplicating:
            specs.extend(MetricSpec("distinct", k) for k in self.ks)
        return tuple(dict.fromkeys(specs))

    @property
    def deduplicating(self) -> bool:
        """True when metrics are scored per duplicate group (a file or ``dedup``)."""
        return self.duplicates is not None or self.dedup != "off"

    def floor_for(self, stage: str) -> float | None:
        """The score floor of ``stage`` (its own, else the default one); None when unset.
        ``-inf`` is ``empty`` (any result answers)."""
        floors = dict(self.score_floor)
        return floors.get(stage, floors.get(""))

    def floors_dict(self) -> dict[str, float | str]:
        """The floors as builtins (``"*"`` for every stage, ``"empty"`` for -inf)."""
        return {
            (stage or "*"): ("empty" if math.isinf(floor) else floor)
            for stage, floor in self.score_floor
        }

    @property
    def retrieval_depth(self) -> int:
        """How many results to ask for: ``depth`` if set, else the largest K."""
        return self.depth if self.depth is not None else max(self.ks)

    def cache_directory(self, rootdir: Path) -> Path:
        """The cache folder: ``cache_dir`` (already absolute) or ``.retrieval-cache`` in the
        rootdir."""
        return Path(self.cache_dir) if self.cache_dir is not None else rootdir / DEFAULT_CACHE_DIR

    @property
    def runs(self) -> dict[str, str]:
        """``{stage: run file path}`` of ``retrieval_run`` (absolute paths)."""
        return dict(self.run)

    def affecting_numbers(self) -> dict[str, Any]:
        """The settings that change metric values (recorded in baselines and artifacts)."""
        """The settings that change metric values (recorded in baselines and artifacts).

        ``unjudged`` is recorded only when it is not the default, so baselines written before
        the setting existed (which scored unjudged documents as non-relevant) stay comparable.
        """
        out: dict[str, Any] = {
            "gain": self.gain,
            "min_grade": self.min_grade,
            "no_relevant": self.no_relevant,
        }
        # Only when set, so that baselines written before these settings stay comparable.
        if self.score_floor:
            out["score_floor"] = self.floors_dict()
        if self.deduplicating:
            out["dedup"] = "file" if self.duplicates is not None else self.dedup
        if self.unjudged != "nonrelevant":
            out["unjudged"] = self.unjudged
        return out

    def to_dict(self) -> dict[str, Any]:
        """Builtins only, for the JSON artifact."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "run":
                out[f.name] = [{"stage": stage, "path": path} for stage, path in value]
                continue
            if f.name == "score_floor":
                out[f.name] = self.floors_dict()
                continue
            out[f.name] = list(value) if isinstance(value, tuple) else value
        return out


def resolve(
    cli: Mapping[str, Any],
    ini: Mapping[str, Any],
    *,
    ini_source: str = "the ini file",
    ini_base: Path | None = None,
    cli_base: Path | None = None,
) -> Settings:
    """Resolve raw values into :class:`Settings` (command line > ini > default).

    ``cli`` maps option name → the flag's raw value (``None`` when not given); ``ini`` maps option
    name → the ini value (``None``/empty when unset). Relative paths are resolved against the ini
    file's folder (``ini_base``) or the invocation folder (``cli_base``). Every bad value is
    reported in one :class:`~pytest_retrieval.errors.InputError`.
    """
    values: dict[str, Any] = {}
    problems: list[Problem] = []
    for option in OPTIONS:
        raw: Any = None
        source = ""
        base: Path | None = None
        cli_value = cli.get(option.name)
        if cli_value is not None and cli_value is not False:
            raw = cli_value
            source = option.flag_name
            base = cli_base
        else:
            ini_value = ini.get(option.name)
            if ini_value not in (None, "", [], ()):
                raw = ini_value
                source = f"{option.ini} in {ini_source}"
                base = ini_base
        if raw is None:
            continue
        if isinstance(raw, bool):
            values[option.name] = raw
            continue
        text = "\n".join(raw) if isinstance(raw, (list, tuple)) else str(raw)
        try:
            value = option.parse(text)
        except _Invalid as exc:
            shown = text.replace("\n", "; ")
            from_ini = source != option.flag_name
            where = f"`{option.ini} = {shown}` in {ini_source}" if from_ini else f"{source} {shown}"
            named = option.flag_name if option.flag else option.ini
            problems.append(Problem(str(exc), fix=f"see `pytest --help` for {named}", source=where))
            continue
        if option.is_path and base is not None:
            value = _resolve_paths(value, base)
        values[option.name] = value
    depth, ks = values.get("depth"), values.get("ks", DEFAULT_KS)
    if depth is not None and depth < max(ks):
        problems.append(
            Problem(
                f"retrieval_depth = {depth} is below the largest cutoff in retrieval_ks "
                f"({max(ks)}): metrics at K > {depth} would be scored on a shorter list",
                fix=f"raise retrieval_depth to at least {max(ks)}, or drop the larger cutoffs",
                source="retrieval_depth",
            )
        )
    if values.get("duplicates") is not None and values.get("dedup", "off") != "off":
        problems.append(
            Problem(
                "retrieval_duplicates and retrieval_dedup both say where duplicate groups come "
                "from",
                fix="keep one: the groups file, or groups computed from retrieval_corpus",
                source="retrieval_dedup",
            )
        )
    if values.get("dedup", "off") != "off" and values.get("corpus") is None:
        problems.append(
            Problem(
                f"retrieval_dedup = {values['dedup']} computes duplicate groups from the corpus' "
                "texts, but retrieval_corpus is not set",
                fix="set retrieval_corpus to a BEIR corpus.jsonl or an id<TAB>text file, or "
                "declare the groups with retrieval_duplicates = PATH",
                source="retrieval_dedup",
            )
        )
    if problems:
        raise InputError(problems, title="pytest-retrieval: invalid settings")
    return Settings(**values)


def _resolve_paths(value: Any, base: Path) -> Any:
    # abspath, not Path.resolve(): resolving follows symlinks, so an output path that is a link
    # became its target, and the atomic writer then replaced the user's file it pointed to.
    if isinstance(value, tuple) and value and isinstance(value[0], tuple):  # (stage, path)
        return tuple((stage, _resolve_paths(path, base)) for stage, path in value)
    if isinstance(value, list):
        return tuple(
            os.path.abspath(base / item) if not Path(item).is_absolute() else item for item in value
        )
    if isinstance(value, str):
        return os.path.abspath(base / value) if not Path(value).is_absolute() else value
    return value


def option(name: str) -> Option:
    """The :class:`Option` called ``name``."""
    return _BY_NAME[name]
