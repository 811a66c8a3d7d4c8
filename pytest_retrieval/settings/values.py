"""How the text of one setting becomes its value: one parser per kind of setting.

Each parser takes the raw text of a flag or an ini key and returns the typed value, or raises
:class:`InvalidValue` saying what was expected (``'ten' is not a positive integer``);
:func:`pytest_retrieval.settings.resolve.resolve` adds where the value came from. The option table
(:mod:`pytest_retrieval.settings.options`) names a parser for every setting and loads in every
pytest run, so this module imports nothing heavy (difflib only for an error message).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ..errors import InputError
from ..scoring.metrics import METRIC_NAMES, SAFE_TOP_GRADE, MetricSpec, check_gain
from ..text import parse_int


class InvalidValue(ValueError):
    """A value that does not parse; its message says what was expected."""


# The legal ranges of the numeric settings: far beyond any real use, short of what would
# crash (a thread per query in flight, a numpy array per resample, a wait too long for the
# clock: OverflowError) or silently mean nothing.
#: The largest cutoff K and retrieval depth.
MAX_DEPTH = 1_000_000
#: The most queries in flight at once (each a thread, for a synchronous retriever).
MAX_CONCURRENCY = 1_000
#: The most queries per batch call.
MAX_BATCH_SIZE = 100_000
#: The longest per-query timeout in seconds (a day; 0 means no limit).
MAX_TIMEOUT_S = 86_400.0
#: The most bootstrap and randomization resamples (each a row of numbers per query).
MAX_RESAMPLES = 1_000_000
#: The largest seed (numpy's 32-bit range, as most tools write seeds).
MAX_SEED = 2**32 - 1
#: The most worst queries a failure message lists.
MAX_WORST = 10_000
#: The most queries the determinism probe re-runs.
MAX_PROBE = 100_000
#: The most runs a baseline is averaged over (each calls the retriever on every query).
MAX_BASELINE_RUNS = 100
#: The highest grade a golden set holds (``golden.MAX_GRADE``): the largest ``min_grade``.
MAX_GRADE = SAFE_TOP_GRADE


def parse_count(low: int, high: int) -> Callable[[str], int]:
    """The parser of an integer setting from ``low`` (0 or 1) to ``high``: ASCII digits only
    ("²" passes ``str.isdigit()``, "1_0" ``int()``), the range in the message."""
    below = "a positive integer" if low == 1 else f"an integer >= {low}"

    def parse(text: str) -> int:
        stripped = text.strip()
        value = parse_int(stripped)
        if value is None or value < low:
            raise InvalidValue(f"{stripped!r} is not {below}")
        if value > high:
            raise InvalidValue(f"{stripped!r} is more than {high:,}, the largest accepted")
        return value

    parse.__doc__ = f"An integer from {low} to {high:,}."
    return parse


def _number(text: str) -> float:
    # float() also reads "1_0", non-ASCII digits and "infinity": a setting is plain ASCII.
    try:
        if not text.strip().isascii():
            raise ValueError(text)
        return float(text)
    except ValueError:
        raise InvalidValue(f"{text!r} is not a number") from None


def parse_seconds(text: str) -> float:
    """A timeout: seconds from 0 (no limit) to :data:`MAX_TIMEOUT_S` (a day)."""
    value = _number(text)
    if math.isnan(value) or value < 0:
        raise InvalidValue(f"{text!r} is not a number >= 0")
    if math.isinf(value):
        raise InvalidValue(f"{text!r} is not a finite number of seconds; 0 means no limit")
    if value > MAX_TIMEOUT_S:
        raise InvalidValue(
            f"{text!r} is more than {MAX_TIMEOUT_S:,.0f} seconds (a day); 0 means no limit"
        )
    return value


def parse_probability(text: str) -> float:
    value = _number(text)
    if not 0.0 < value < 1.0:
        raise InvalidValue(f"{text!r} is not a number strictly between 0 and 1")
    return value


def parse_split_list(text: str) -> list[str]:
    return [part.strip() for part in text.replace("\n", ",").split(",") if part.strip()]


def parse_ks(text: str) -> tuple[int, ...]:
    cutoff = parse_count(1, MAX_DEPTH)
    values = [cutoff(part) for part in parse_split_list(text)]
    if not values:
        raise InvalidValue("no cutoff given; write e.g. 1,5,10,50")
    return tuple(sorted(set(values)))


def parse_metrics(text: str) -> tuple[str, ...]:
    """Metric families (``recall``, computed at every K) or full spellings (``r_precision``)."""
    names: list[str] = []
    for part in parse_split_list(text):
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
                raise InvalidValue(
                    f"{part!r} is not a metric; did you mean {close[0]!r}? (known: "
                    f"{', '.join(METRIC_NAMES)}, or one cutoff such as ndcg@10)"
                ) from None
            raise InvalidValue(str(exc)) from None
        names.append(str(spec))
    if not names:
        raise InvalidValue("no metric given; write e.g. recall, ndcg, mrr")
    return tuple(dict.fromkeys(names))


def parse_choice(*choices: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = text.strip().lower()
        if value not in choices:
            import difflib  # only for the error message: this module loads in every run

            close = difflib.get_close_matches(value, choices, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise InvalidValue(f"{text!r} is not one of {', '.join(choices)}{hint}")
        return value

    return parse


def parse_gain(text: str) -> str:
    try:
        return check_gain(text.strip().lower())
    except ValueError as exc:
        raise InvalidValue(str(exc)) from None


def parse_text(text: str) -> str:
    value = text.strip()
    if not value:
        raise InvalidValue("is empty")
    return value


def parse_bool(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise InvalidValue(f"{text!r} is not true or false")


def parse_lines(text: str) -> tuple[str, ...]:
    return tuple(line.strip() for line in text.splitlines() if line.strip())


_RUN_STAGES = ("retriever", "reranker")


def parse_run_sources(text: str) -> tuple[tuple[str, str], ...]:
    """``STAGE=PATH`` or ``PATH`` (the retriever stage), one per line: ``((stage, path), ...)``.

    A prefix before ``=`` that looks like a name is a stage and must be a known one, so a typo
    (``rerankr=run.jsonl``) is an error rather than a file called ``rerankr=run.jsonl``.
    """
    sources: dict[str, str] = {}
    for line in parse_lines(text):
        stage, path = "retriever", line
        head, equals, tail = line.partition("=")
        if equals and head.strip().replace("_", "").replace("-", "").isalnum():
            stage, path = head.strip().lower(), tail.strip()
            if stage not in _RUN_STAGES:
                raise InvalidValue(
                    f"{line!r}: unknown stage {head.strip()!r}; write PATH (the retriever "
                    f"stage) or STAGE=PATH with STAGE one of {', '.join(_RUN_STAGES)}"
                )
            if not path:
                raise InvalidValue(f"{line!r}: no path after {head.strip()}=")
        if stage in sources:
            raise InvalidValue(
                f"two runs for the {stage} stage ({sources[stage]} and {path}); give one run "
                "per stage"
            )
        sources[stage] = path
    if not sources:
        raise InvalidValue("no run file given; write PATH or STAGE=PATH")
    return tuple(sources.items())


def parse_score_floor(text: str) -> tuple[tuple[str, float], ...]:
    """``0.5`` (every stage), ``retriever=0.5, reranker=0.2`` (per stage; a bare value among
    them is the default of the others), or ``empty`` in place of a number (only an empty
    ranking abstains): ``(("", default), (stage, floor), ...)``."""
    from ..scoring.abstention import ANY_RESULT

    floors: dict[str, float] = {}
    for part in parse_split_list(text):
        stage, equals, value = part.partition("=")
        if not equals:
            stage, value = "", part
        stage = stage.strip().lower()
        if equals and stage not in _RUN_STAGES:
            raise InvalidValue(
                f"{part!r}: unknown stage {stage!r}; write a score (every stage) or STAGE=SCORE "
                f"with STAGE one of {', '.join(_RUN_STAGES)}"
            )
        value = value.strip()
        if value.lower() == "empty":
            floor = ANY_RESULT
        else:
            floor = _number(value)
            if not math.isfinite(floor):
                raise InvalidValue(f"{value!r} is not a finite score; write a number or empty")
        if stage in floors:
            raise InvalidValue(f"two floors for {stage or 'every stage'}; give one")
        floors[stage] = floor
    if not floors:
        raise InvalidValue("no floor given; write e.g. 0.5 or retriever=0.5, reranker=0.2")
    return tuple(floors.items())


def parse_dedup(text: str) -> str:
    """``off``, ``exact``, ``near`` or ``near=T`` (T the Jaccard threshold, 0 < T <= 1)."""
    value = text.strip().lower().replace(" ", "")
    if value in ("off", "exact", "near"):
        return value
    head, equals, threshold = value.partition("=")
    if head == "near" and equals:
        number = _number(threshold)
        if not 0.0 < number <= 1.0:
            raise InvalidValue(f"{threshold!r} is not a Jaccard threshold in (0, 1]")
        return f"near={number:g}"
    raise InvalidValue(f"{text!r} is not one of off, exact, near, near=THRESHOLD (e.g. near=0.8)")
