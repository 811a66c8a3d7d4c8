"""Every setting of the plugin resolved once into a frozen :class:`Settings`.

Each setting is an ini key ``retrieval_<name>`` (pytest.ini, tox.ini, setup.cfg or
``[tool.pytest.ini_options]`` in pyproject.toml) and, where it makes sense per run, a flag
``--retrieval-<name>`` with the same help text. Precedence: command line > ini > default. A bad
value is rejected with where it came from (``retrieval_ks = 5,ten in pyproject.toml: 'ten' is not
a positive integer``). The settings are declared once, in :data:`OPTIONS` (the table in
:mod:`pytest_retrieval.settings.options`): ``plugin.py`` registers them
with pytest, and :func:`pytest_retrieval.phases.start.start` hands their raw values to
:func:`resolve`. This module does not import pytest.
"""

from __future__ import annotations

import math
import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass, fields
from functools import partial
from pathlib import Path
from typing import Any

from ..errors import InputError, Problem
from ..scoring.metrics import METRIC_NAMES, MetricSpec, takes_cutoff
from .options import (
    DEFAULT_ALPHA,
    DEFAULT_BUDGET_TEST,
    DEFAULT_CONFIDENCE,
    DEFAULT_KS,
    DEFAULT_METRICS,
    DEFAULT_MULTIPLICITY,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    OPTIONS,
    Option,
)
from .values import InvalidValue

#: The cache folder's default, beside the rootdir (``retrieval_cache_dir``).
DEFAULT_CACHE_DIR = ".retrieval-cache"
#: The keyword of ``retrieval_baseline`` that takes the baseline from the run ledger; read
#: before paths are resolved (a file of that name is written ``./merge-base``).
MERGE_BASE = "merge-base"


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
    context_filter: str | None = None
    doc_id_map: str | None = None
    doc_id_separator: str | None = None
    short_rankings: str = "warn"
    id_check: str = "on"
    depth: int | None = None
    max_depth: int | None = None
    cutoff_unit: str = "documents"
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
    #: The gates file: None finds retrieval-gates.yaml in the rootdir, "" is none at all.
    gates_file: str | None = None
    summary: str = "compact"
    worst: int = 5
    json: str | None = None
    markdown: str | None = None
    html: str | None = None
    step_summary: bool = True
    alpha: float = DEFAULT_ALPHA
    confidence: float = DEFAULT_CONFIDENCE
    seed: int = DEFAULT_SEED
    resamples: int = DEFAULT_RESAMPLES
    baseline: str | None = None
    update_baseline: bool = False
    baseline_mode: str = "strict"
    regression: tuple[str, ...] = ()
    multiplicity: str = DEFAULT_MULTIPLICITY
    budget_test: str = DEFAULT_BUDGET_TEST
    determinism_probe: int = 5
    baseline_runs: int = 1
    ledger: str | None = None
    target_branch: str | None = None

    @property
    def merge_base(self) -> bool:
        """True when the baseline is the merge-base's run in the ledger
        (``retrieval_baseline = merge-base``), not a file."""
        return self.baseline == MERGE_BASE

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
        """The settings that change metric values (recorded in baselines and artifacts).

        ``unjudged`` and ``cutoff_unit`` are recorded only when they are not the default, so
        baselines written before the settings existed (which scored unjudged documents as
        non-relevant, K in documents) stay comparable.
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
        if self.cutoff_unit != "documents":
            out["cutoff_unit"] = self.cutoff_unit
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
    overridden: Collection[str] = (),
) -> Settings:
    """Resolve raw values into :class:`Settings` (command line > ini > default).

    ``cli`` maps option name → the flag's raw value (``None`` when not given); ``ini`` maps option
    name → the ini value (``None``/empty when unset): text, or what pyproject.toml's TOML gives
    (an array for a list, a number, a boolean). Relative paths are resolved against the ini
    file's folder (``ini_base``) or the invocation folder (``cli_base``). ``overridden``: the
    ini keys given with ``-o`` (their values are named as coming from it, not from
    ``ini_source``). Every bad value is reported in one
    :class:`~pytest_retrieval.errors.InputError`.
    """
    values: dict[str, Any] = {}
    problems: list[Problem] = []
    for option in OPTIONS:
        raw: Any = None
        from_ini = False
        base: Path | None = None
        cli_value = cli.get(option.name)
        if cli_value is not None and cli_value is not False:
            raw = cli_value
            base = cli_base
        else:
            ini_value = ini.get(option.name)
            # pytest gives None for a key the ini file lacks, "" for one written empty.
            if ini_value not in (None, "", [], ()) or (option.empty_is_off and ini_value == ""):
                raw = ini_value
                from_ini = True
                base = ini_base
        if raw is None:
            continue
        if option.empty_is_off and isinstance(raw, str) and not raw.strip():
            values[option.name] = ""  # off: not the default, which may find a file by itself
            continue
        named = option.flag_name if option.flag else option.ini
        where = partial(_where, option, from_ini=from_ini, overridden=overridden, ini=ini_source)
        if isinstance(raw, bool) and (option.ini_type == "bool" or not from_ini):
            values[option.name] = raw
            continue
        text, wrong = _raw_text(raw, option)
        if wrong is not None:
            problems.append(
                Problem(wrong, fix=f"see `pytest --help` for {named}", source=where(repr(raw)))
            )
            continue
        try:
            value = option.parse(text)
        except InvalidValue as exc:
            shown = text.replace("\n", "; ")
            problems.append(
                Problem(str(exc), fix=f"see `pytest --help` for {named}", source=where(shown))
            )
            continue
        if option.name == "baseline" and value == MERGE_BASE:
            pass  # the keyword, never a path
        elif option.is_path and base is not None:
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
    max_depth = values.get("max_depth")
    if max_depth is not None and max_depth < max(depth or 0, max(ks)):
        wanted = max(depth or 0, max(ks))
        problems.append(
            Problem(
                f"retrieval_max_depth = {max_depth} is below the depth of the first call "
                f"({wanted}): no query could be asked again deeper",
                fix=f"raise retrieval_max_depth above {wanted} (default 10 x the first depth), "
                "or remove it",
                source="retrieval_max_depth",
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
    runs = values.get("baseline_runs", 1)
    stored = "retrieval_run" if values.get("run") else None
    if stored is None and values.get("cache") == "replay":
        stored = "retrieval_cache = replay"
    if runs > 1 and stored is not None and values.get("update_baseline"):
        problems.append(
            Problem(
                f"retrieval_baseline_runs = {runs} averages {runs} calls of the retriever on "
                f"every query, but {stored} serves stored rankings: every run would be the same "
                "one, and the baseline would claim a spread it never measured",
                fix="drop --retrieval-baseline-runs (one stored run is one run), or call the "
                "retriever (no retrieval_run; retrieval_cache off, use or refresh)",
                source="retrieval_baseline_runs",
            )
        )
    if problems:
        raise InputError(problems, title="pytest-retrieval: invalid settings")
    return Settings(**values)


def _where(
    option: Option, shown: str, *, from_ini: bool, overridden: Collection[str], ini: str
) -> str:
    """Where a setting's value was given: its flag, ``-o`` or the ini file."""
    if not from_ini:
        return f"{option.flag_name} {shown}"
    if option.ini in overridden:
        return f"`-o {option.ini}={shown}`"
    return f"`{option.ini} = {shown}` in {ini}"


def _raw_text(raw: Any, option: Option) -> tuple[str, str | None]:
    """The text of a raw setting value, or why it cannot be one (second item). A TOML array is a
    list where the setting takes one (comma-separated ``retrieval_ks = [1, 3]`` is ``1,3``, a
    line list one item per line), and refused where it takes a single value."""
    if isinstance(raw, (list, tuple)):
        items = list(raw)
        bad = [i for i in items if isinstance(i, (bool, list, tuple, dict)) or i is None]
        if bad:
            return "", f"{bad[0]!r} is not a value of this setting (a list holds numbers or text)"
        texts = [str(i) for i in items]
        if option.ini_type == "linelist" or option.repeatable:
            return "\n".join(texts), None
        if option.listed:
            return ",".join(texts), None
        if len(texts) == 1:
            return texts[0], None
        return "", "is a list, and this setting takes one value"
    if isinstance(raw, bool):
        return "", f"is the boolean {str(raw).lower()}, and this setting is not true/false"
    if isinstance(raw, dict):
        return "", "is a TOML table, and this setting takes a value"
    return str(raw), None


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


_BY_NAME = {option.name: option for option in OPTIONS}


def option(name: str) -> Option:
    """The :class:`Option` called ``name``."""
    return _BY_NAME[name]
