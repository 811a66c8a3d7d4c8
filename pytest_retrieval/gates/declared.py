"""Declared gates: threshold and regression-budget lines from the ini file and the gates file.

Ini keys ``retrieval_thresholds`` and ``retrieval_regression`` hold one line each; the gates
file (``retrieval-gates.yaml`` in the rootdir, or ``retrieval_gates_file``) holds::

    version: 1
    thresholds:
      - recall@50 >= 0.90
      - ndcg@10 >= 0.60 slice=*
    regressions:
      - ndcg@10 0.02

This module is the one home of the line grammar: :func:`parse_threshold` reads
``METRIC OP VALUE [stage=S] [split=S] [slice=S]`` (OP one of ``>= > <= <``, and ``==`` only
as the zero-tolerance gate ``forbidden@10 == 0``; a lower-is-better metric takes ``<=``/``<``)
and :func:`parse_budget` reads ``METRIC[:] BUDGET[%] [stage=S] [split=S] [slice=S]``; both
read their options with the same rules (each key at most once, known keys only) and are used
by the plugin and the console script alike. Every problem (with its file and line) is reported
at once. ``slice=*`` expands to one line per slice that has a query to score, and
``slice=KEY:*`` to one line per value of the queries' ``context[KEY]`` (``slice=tenant:acme``
selects the queries whose context's tenant is ``acme``: docs/scoped-retrieval.md).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, TypeVar

from ..errors import InputError, Problem
from ..golden.context import CONTEXT_SLICE_MARK, EVERY_VALUE, slice_values
from ..run.retriever import RERANKER_STAGE, RETRIEVER_STAGE
from ..scoring.abstention import is_answerable
from ..scoring.metrics import MetricSpec
from ..text import plural
from .gate import GateUsageError, Selection, check_threshold, direction_problem, threshold_fix

Declared = TypeVar("Declared", bound=Any)
Entry = tuple[str, "str | None", "int | None"]


# --- the line grammar ------------------------------------------------------------------------

#: The budget when a regression line gives none, and of the default checks.
DEFAULT_BUDGET = 0.01
_OPTION_KEYS = ("stage", "split", "slice")


def _options(
    rest: str, problem: Callable[[str, str], InputError], *, budget: bool = False
) -> dict[str, str]:
    """The ``stage=.. split=.. slice=..`` options after a gate or budget (and ``since=..``
    after a budget): each key at most once, known keys only."""
    options: dict[str, str] = {}
    keys = (*_OPTION_KEYS, "since") if budget else _OPTION_KEYS
    for token in rest.split():
        key, sep, value = token.partition("=")
        if key == "since" and sep and not budget:
            raise problem(
                "since= anchors a regression budget, not a threshold",
                "write it under regressions: (retrieval_regression), e.g. ndcg@10 0.02 since=v1.0",
            )
        if not sep or key not in keys or not value:
            raise problem(
                f"cannot read {token!r}",
                "options are stage=NAME, split=NAME and slice=NAME (slice=* for every slice, "
                "slice=KEY:VALUE by context value)"
                + (", and since=ANCHOR (a tag, commit or ledger label)" if budget else ""),
            )
        if key in options:
            raise problem(f"{key} is given twice", f"keep one {key}=...")
        options[key] = value
    return options


def _selection(rest: str, problem: Callable[[str, str], InputError]) -> Selection:
    """The ``stage=.. split=.. slice=..`` options after a gate: each key at most once."""
    options = _options(rest, problem)
    return Selection(options.get("stage"), options.get("split"), options.get("slice"))


def _where(selection: Selection) -> list[tuple[str, object]]:
    return [
        ("stage", selection.stage or "default"),
        ("split", selection.split or "overall"),
        ("slice", selection.slice or "all"),
    ]


#: How a comparison is spelt in an item name (``>=`` is not valid in a ``-k`` expression).
_OP_WORDS = {">=": "ge", ">": "gt", "<=": "le", "<": "lt", "==": "eq"}


def _keyword(text: str) -> str:
    """User text as a ``-k`` word: letters, digits, ``_``, ``.`` and ``-`` kept, others ``_``."""
    return re.sub(r"[^\w.\-]", "_", text)


def _item_words(spec: MetricSpec, selection: Selection) -> tuple[str, str]:
    """(metric, options) of an item name: ``recall_at_50`` and ``-stage_x-split_y-slice_z``."""
    options = "".join(
        f"-{key}_{_keyword(value)}"
        for key, value in (
            ("stage", selection.stage),
            ("split", selection.split),
            ("slice", selection.slice),
        )
        if value
    )
    return str(spec).replace("@", "_at_"), options


def _plain(value: float) -> str:
    """A number as a budget line writes it: no exponent (``0.00001``, not ``1e-05``), and no
    float noise (``7``, not ``7.000000000000001``)."""
    return format(Decimal(f"{value:.12g}"), "f")


@dataclass(frozen=True, slots=True)
class Threshold:
    """A declared gate: ``recall@50 >= 0.90 slice=multi-hop``."""

    spec: MetricSpec
    op: str
    value: float
    selection: Selection = field(default_factory=Selection)
    #: Where it was declared: the gates file's path, or ``retrieval_thresholds`` (the ini).
    origin: str | None = field(default=None, compare=False)
    line_number: int | None = field(default=None, compare=False)

    @property
    def item_name(self) -> str:
        """Its test item's name, valid as a ``-k`` word and in a shell without quotes:
        ``recall_at_50_ge_0.9-slice_multi-hop`` for ``recall@50 >= 0.9 slice=multi-hop``."""
        metric, options = _item_words(self.spec, self.selection)
        return f"{metric}_{_OP_WORDS.get(self.op, 'op')}_{self.value:g}{options}"

    @property
    def name(self) -> str:
        """The readable name in messages and reports: ``recall@50>=0.9[slice=multi-hop]``."""
        label = self.selection.label().replace(" ", ",")
        return f"{self.spec}{self.op}{self.value:g}" + (f"[{label}]" if label else "")

    def __str__(self) -> str:
        label = self.selection.label()
        return f"{self.spec} {self.op} {self.value:g}" + (f" {label}" if label else "")

    def properties(self) -> list[tuple[str, object]]:
        """The JUnit properties of its gate item: what it checks, and where."""
        head: list[tuple[str, object]] = [
            ("metric", str(self.spec)),
            ("op", self.op),
            ("threshold", self.value),
        ]
        return [*head, *_where(self.selection)]


_THRESHOLD = re.compile(
    r"^\s*(?P<metric>[^\s<>=]+)\s*(?P<op>>=|<=|==|>|<)\s*(?P<value>\S+)(?P<rest>.*)$"
)


def parse_threshold(
    line: str, *, source: str | None = None, line_number: int | None = None
) -> Threshold:
    """Parse ``METRIC OP VALUE [stage=S] [split=S] [slice=S]``; InputError naming the fix."""

    def problem(message: str, fix: str) -> InputError:
        return InputError(
            Problem(f"{line.strip()!r}: {message}", fix=fix, source=source, line=line_number)
        )

    match = _THRESHOLD.match(line)
    if match is None:
        raise problem(
            "is not a gate",
            "write METRIC OP VALUE [stage=NAME] [split=NAME] [slice=NAME], e.g. recall@50 >= 0.90",
        )
    try:
        spec = MetricSpec.parse(match["metric"])
    except InputError as exc:
        raise problem(str(exc.problems[0].message), exc.problems[0].fix or "") from None
    try:
        value = float(match["value"])
    except ValueError:
        raise problem(
            f"threshold {match['value']!r} is not a number",
            "write a number between 0 and 1, e.g. 0.90",
        ) from None
    try:
        value = check_threshold(value)
    except GateUsageError:
        # Said once, with the number as written (check_threshold's text would add its own fix
        # and show the parsed float: "got 90.0").
        raise problem(
            f"threshold {match['value']} is not between 0 and 1", threshold_fix(value)
        ) from None
    wrong_way = direction_problem(spec, match["op"], value)
    if wrong_way is not None:
        raise problem(*wrong_way)
    return Threshold(spec, match["op"], value, _selection(match["rest"], problem))


# The amount ends at a space or the end of the line: "0.02%stage=x" is not read as 0.02%.
_BUDGET = re.compile(
    r"^\s*(?P<metric>[^\s:]+)\s*:?\s+(?P<amount>[0-9.]+)(?P<pct>%?)(?P<rest>(?:\s.*)?)$"
)


@dataclass(frozen=True, slots=True)
class Budget:
    """How much a metric may drop before it counts: ``ndcg@10 2% slice=multi-hop``."""

    spec: MetricSpec
    amount: float
    relative: bool = False
    selection: Selection = field(default_factory=Selection)
    #: Where it was declared: the gates file's path, ``retrieval_regression`` (the ini), or
    #: None for the default checks.
    origin: str | None = field(default=None, compare=False)
    line_number: int | None = field(default=None, compare=False)
    #: The anchor (``since=v1.0``: a tag, commit or ledger label) whose ledger entry this
    #: budget is judged against, so the total drift since it is gated; None: the baseline.
    since: str | None = None

    @property
    def item_name(self) -> str:
        """Its test item's name, valid as a ``-k`` word: ``ndcg_at_10-budget_2pct-slice_x``
        (``-since_v1.0`` for an anchored budget)."""
        metric, options = _item_words(self.spec, self.selection)
        amount = f"{_plain(self.amount * 100)}pct" if self.relative else _plain(self.amount)
        since = f"-since_{_keyword(self.since)}" if self.since else ""
        return f"{metric}-budget_{amount}{options}{since}"

    def _label(self) -> str:
        label = self.selection.label()
        return f"{label} since={self.since}".strip() if self.since else label

    @property
    def name(self) -> str:
        """Item name: ``ndcg@10[budget=2%,slice=multi-hop]`` (``...,since=v1.0]``)."""
        label = self._label().replace(" ", ",")
        shown = self._amount()
        return f"{self.spec}[budget={shown}{',' + label if label else ''}]"

    @property
    def line(self) -> str:
        """The budget in the grammar :func:`parse_budget` reads back."""
        amount = self._amount()
        label = self._label()
        return f"{self.spec} {amount}" + (f" {label}" if label else "")

    def _amount(self) -> str:
        return f"{_plain(self.amount * 100)}%" if self.relative else _plain(self.amount)

    def allowed(self, baseline_mean: float) -> float:
        """The change for the worse allowed, in metric units: a drop, or a rise for a
        lower-is-better metric (``stale@3 0.02``). A relative budget is that share of the
        baseline mean in either direction (``stale@3 10%`` allows a rise of a tenth of the
        baseline's stale@3), so over a baseline at 0 it allows none: any significant rise
        fails (write an absolute budget for a tolerance)."""
        return self.amount * baseline_mean if self.relative else self.amount

    def describe(self) -> str:
        """``0.02`` or ``2% (0.0162)`` style text."""
        return f"{self._amount()} of the baseline" if self.relative else self._amount()

    def properties(self) -> list[tuple[str, object]]:
        """The JUnit properties of its regression item: what it checks, and where (and since
        when, for an anchored budget)."""
        since: list[tuple[str, object]] = [("since", self.since)] if self.since else []
        return [
            ("metric", str(self.spec)),
            ("budget", self.describe()),
            *_where(self.selection),
            *since,
        ]


def parse_budget(line: str, *, source: str | None = None, line_number: int | None = None) -> Budget:
    """Parse ``METRIC[:] BUDGET[%] [stage=S] [split=S] [slice=S] [since=ANCHOR]``."""

    def problem(message: str, fix: str) -> InputError:
        return InputError(
            Problem(f"{line.strip()!r}: {message}", fix=fix, source=source, line=line_number)
        )

    text = line.strip()
    if " " not in text and ":" not in text:
        text = f"{text} {DEFAULT_BUDGET}"
    match = _BUDGET.match(text)
    if match is None:
        raise problem(
            "is not a regression budget",
            "write METRIC BUDGET [stage=..] [split=..] [slice=..], e.g. recall@50 0.02 "
            "or ndcg@10 2%",
        )
    try:
        spec = MetricSpec.parse(match["metric"])
    except InputError as exc:
        raise problem(exc.problems[0].message, exc.problems[0].fix or "") from None
    try:
        amount = float(match["amount"])
    except ValueError:
        raise problem(
            f"budget {match['amount']!r} is not a number", "write e.g. 0.02 or 2%"
        ) from None
    relative = bool(match["pct"])
    if relative:
        amount /= 100.0
    if math.isnan(amount) or not 0.0 <= amount <= 1.0:
        raise problem("the budget must be between 0 and 1 (or 0% and 100%)", "write e.g. 0.02")
    options = _options(match["rest"], problem, budget=True)
    selection = Selection(options.get("stage"), options.get("split"), options.get("slice"))
    return Budget(spec, amount, relative, selection, since=options.get("since"))


def default_budgets(ks: Sequence[int], stages_hint: Sequence[str] = ()) -> list[Budget]:
    """The checks made when a baseline is set but no budget is configured.

    Candidate recall at the largest K on the first stage, NDCG@10 (or the largest K below it) and
    MRR on the final stage, each with :data:`DEFAULT_BUDGET`.
    """
    largest = max(ks)
    ndcg_k = max((k for k in ks if k <= 10), default=largest)
    return [
        Budget(MetricSpec("recall", largest), DEFAULT_BUDGET, False, Selection(stage="retriever")),
        Budget(MetricSpec("ndcg", ndcg_k), DEFAULT_BUDGET),
        Budget(MetricSpec("mrr"), DEFAULT_BUDGET),
    ]


GATES_FILE_NAME = "retrieval-gates.yaml"
#: Every stage a run can have.
STAGES = (RETRIEVER_STAGE, RERANKER_STAGE)


def gates_file_entries(
    path: str,
) -> tuple[list[tuple[str, int | None]], list[tuple[str, int | None]]]:
    """The threshold and regression lines of a gates file, each with its line number."""
    import yaml

    from ..reading import compose_yaml, read_text_file

    expected = "a mapping with 'version: 1' and a 'thresholds:' list of gate lines"
    try:
        text = read_text_file(path, what="gates file")
    except FileNotFoundError:
        raise InputError(
            Problem("gates file not found", fix="check retrieval_gates_file", source=path)
        ) from None
    # The one guarded YAML path: syntax errors at their line and column, no alias bomb.
    root = compose_yaml(text, source=path, what="gates file", expected=expected)
    if not isinstance(root, yaml.MappingNode):
        raise InputError(Problem(f"expected {expected}", source=path, line=1))
    entries: list[tuple[str, int | None]] = []
    budgets: list[tuple[str, int | None]] = []
    problems: list[Problem] = []
    known = ("version", "thresholds", "regressions")
    for key_node, value_node in root.value:
        key = key_node.value
        line = key_node.start_mark.line + 1
        if key not in known:
            import difflib

            close = difflib.get_close_matches(str(key), known, n=1)
            problems.append(
                Problem(
                    f"unknown key {key!r}",
                    source=path,
                    line=line,
                    fix=f"did you mean {close[0]!r}?"
                    if close
                    else f"known keys: {', '.join(known)}",
                )
            )
        elif key == "version" and value_node.value != "1":
            problems.append(
                Problem(
                    f"unknown version {value_node.value!r}",
                    fix="write version: 1",
                    source=path,
                    line=line,
                )
            )
        elif key in ("thresholds", "regressions"):
            target = entries if key == "thresholds" else budgets
            example = "- recall@50 >= 0.9" if key == "thresholds" else "- ndcg@10 0.02"
            if not isinstance(value_node, yaml.SequenceNode):
                problems.append(
                    Problem(
                        f"{key} must be a list of lines",
                        source=path,
                        line=line,
                        fix=f"write one '{example}' per line",
                    )
                )
                continue
            for item in value_node.value:
                if not isinstance(item, yaml.ScalarNode):
                    problems.append(
                        Problem(
                            "a gate must be one line of text",
                            source=path,
                            line=item.start_mark.line + 1,
                            fix="write e.g. - ndcg@10 >= 0.6 slice=multi-hop",
                        )
                    )
                    continue
                target.append((item.value, item.start_mark.line + 1))
    if problems:
        raise InputError(
            problems, title=f"{path}: {plural(len(problems), 'problem')} in the gates file"
        )
    return entries, budgets


def gates_file_path(settings: Any, rootdir: Any) -> str | None:
    """The gates file in use: the configured one, else retrieval-gates.yaml in the rootdir;
    None when there is none, or it is turned off (``retrieval_gates_file`` set empty)."""
    import os

    if settings.gates_file == "":
        return None
    if settings.gates_file is not None:
        return str(settings.gates_file)
    candidate = os.path.join(str(rootdir), GATES_FILE_NAME)
    # lexists: a FIFO or a dangling link there is refused by name, never silently skipped
    return candidate if os.path.lexists(candidate) else None


def expand_slices(
    item: Declared,
    slices: Sequence[str],
    context_values: Callable[[str], Sequence[str]] | None = None,
) -> list[Declared]:
    """``slice=*`` as one copy of a gate or budget per slice in ``slices``, and ``slice=KEY:*``
    as one per value of ``context_values(KEY)`` (``slice=tenant:acme``, ...); else the item.

    The one expansion, used by the plugin and the console script (which has no contexts: it
    passes no ``context_values``, and a ``KEY:*`` line stays one line, refused where it is
    scored).
    """
    selection: Selection = item.selection
    if selection.slice == "*":
        names = list(slices)
    else:
        wanted = selection.context_slice
        if wanted is None or wanted[1] != EVERY_VALUE or context_values is None:
            return [item]
        names = [f"{wanted[0]}{CONTEXT_SLICE_MARK}{value}" for value in context_values(wanted[0])]
    return [
        dataclasses.replace(item, selection=Selection(selection.stage, selection.split, name))
        for name in names
    ]


def _scorable(settings: Any, members: Sequence[Any]) -> bool:
    # A slice whose queries have no relevant document (none graded min_grade or above) has no
    # value under no_relevant=skip: left out of "*" (and of "KEY:*").
    return settings.no_relevant != "skip" or any(
        is_answerable(q.judgments, settings.min_grade) for q in members
    )


def _scorable_slices(settings: Any, golden: Any) -> list[str]:
    return [
        name
        for name in golden.slices
        if _scorable(settings, [q for q in golden if name in q.slices])
    ]


def _scorable_values(settings: Any, golden: Any, key: str) -> list[str]:
    """The values of ``context[key]`` whose queries have one to score (what ``KEY:*`` expands
    to), sorted."""
    return [
        value
        for value in golden.context_values(key)
        if _scorable(
            settings,
            [q for q in golden if key in q.context and value in slice_values(q.context[key])],
        )
    ]


def _unknown_names(
    line: str, selection: Selection, golden: Any, source: str | None, number: int | None
) -> Problem | None:
    if selection.split is not None and selection.split not in golden.splits:
        return Problem(
            f"{line.strip()!r}: unknown split {selection.split!r}",
            fix=f"the golden set has: {', '.join(golden.splits)}",
            source=source,
            line=number,
        )
    found = golden.slice_problem(selection.slice) if selection.slice is not None else None
    if found is not None:
        return Problem(f"{line.strip()!r}: {found[0]}", fix=found[1], source=source, line=number)
    # Whether the reranker stage runs is only known once the run starts; a name that is no
    # stage at all is a typo that can be refused now.
    if selection.stage is not None and selection.stage not in STAGES:
        return Problem(
            f"{line.strip()!r}: unknown stage {selection.stage!r}",
            fix=f"the stages are {' and '.join(STAGES)}",
            source=source,
            line=number,
        )
    return None


#: Said under a gates-file line whose names the golden set lacks: the file is found in the
#: rootdir whatever golden set the run is given (``--retrieval-golden=other.yaml``).
GATES_FILE_OFF = (
    "; if the gates file is for another golden set, give this one its own "
    "(--retrieval-gates-file=PATH) or none (--retrieval-gates-file=)"
)


def _expand(
    entries: Sequence[tuple[str, str | None, int | None]],
    parse: Callable[..., Declared],
    settings: Any,
    golden: Any,
    what: str,
    gates_file: str | None = None,
) -> list[Declared]:
    """Parse every line, check its split and slice names, expand ``slice=*``."""
    items: list[Declared] = []
    problems: list[Problem] = []
    for line, source, number in entries:
        try:
            item = parse(line, source=source, line_number=number)
        except InputError as exc:
            problems.extend(exc.problems)
            continue
        selection: Selection = item.selection
        problem = _unknown_names(line, selection, golden, source, number)
        if problem is not None:
            if source is not None and source == gates_file:
                problem = dataclasses.replace(problem, fix=f"{problem.fix}{GATES_FILE_OFF}")
            problems.append(problem)
            continue
        item = dataclasses.replace(item, origin=source, line_number=number)
        items.extend(
            expand_slices(
                item,
                _scorable_slices(settings, golden),
                lambda key: _scorable_values(settings, golden, key),
            )
        )
    if problems:
        raise InputError(problems, title=f"pytest-retrieval: {len(problems)} invalid {what}")
    return items


def load_declared_gates(settings: Any, golden: Any, *, rootdir: Any) -> list[Threshold]:
    """Every declared gate: ini ``retrieval_thresholds`` lines, then the gates file.

    ``slice=*`` expands to one gate per slice with a query to score (a slice of no-answer
    queries has no value under no_relevant=skip, so it is left out rather than failed). Unknown
    slice, split or stage names are errors that list the known ones; whether the reranker stage
    ran is checked when the gate runs.
    """
    entries: list[tuple[str, str | None, int | None]] = [
        (line, "retrieval_thresholds", None) for line in settings.thresholds
    ]
    path = gates_file_path(settings, rootdir)
    if path is not None:
        entries += [(line, path, number) for line, number in gates_file_entries(path)[0]]
    return _expand(entries, parse_threshold, settings, golden, "gate(s)", path)


def load_budgets(settings: Any, golden: Any, *, rootdir: Any) -> list[Budget]:
    """Every regression budget: ini ``retrieval_regression`` lines, then the gates file's
    ``regressions:``; the default checks when a baseline is set and none is declared.

    Budgets without a baseline are a usage error (they could never be checked), unless the
    baseline is turned off (``retrieval_baseline`` set empty: ``--retrieval-baseline=``): then
    only the anchored ones (``since=``) are kept.
    """
    entries: list[tuple[str, str | None, int | None]] = [
        (line, "retrieval_regression", None) for line in settings.regression
    ]
    path = gates_file_path(settings, rootdir)
    if path is not None:
        entries += [(line, path, number) for line, number in gates_file_entries(path)[1]]
    if not entries:
        return list(default_budgets(settings.ks)) if settings.baseline else []
    budgets = _expand(entries, parse_budget, settings, golden, "budget(s)", path)
    # A budget is judged against the baseline, an anchored one (since=) against the ledger.
    plain = [b for b in budgets if b.since is None]
    if plain and settings.baseline == "":
        # The baseline is turned off for this run (--retrieval-baseline=): no budget is
        # judged against it; the anchored ones (since=) read the ledger, as before.
        return [b for b in budgets if b.since is not None]
    if plain and not settings.baseline:
        raise InputError(
            Problem(
                "regression budgets are declared but no baseline is set",
                fix="set retrieval_baseline = PATH or merge-base (or pass "
                "--retrieval-baseline=PATH)",
                source=plain[0].origin,
                line=plain[0].line_number,
            )
        )
    anchored = [b for b in budgets if b.since is not None]
    if anchored and not settings.ledger:
        first = anchored[0]
        raise InputError(
            Problem(
                f"{first.line!r} is judged against the run ledger's entry of "
                f"{first.since}, but retrieval_ledger is not set",
                fix="set retrieval_ledger = PATH (since= budgets read the anchor's recorded "
                "run from it)",
                source=first.origin,
                line=first.line_number,
            )
        )
    return budgets
