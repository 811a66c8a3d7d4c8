"""Guards of the house (docs/architecture.md): a pytest-free core, one-way imports, cohesion.

Each guard is a function over a package's files, run on the package and, in a test of its own,
on a small package planted in ``tmp_path`` with the violation it must find:

* every module but ``plugin.py`` imports with pytest blocked;
* no import cycle and no import up the layer order documented in docs/architecture.md, between
  packages and inside one, counting function-level imports and those under ``TYPE_CHECKING``
  (a type-only import of a module above is still a dependency on it);
* nothing below ``session/`` takes a ``RetrievalSession`` (no import of it, no annotation or
  parameter naming it): what needs a session's facts takes the facts;
* no module imports another module's ``_private`` name (``from x import _y``, ``x._y``);
* ``name as name`` re-exports and ``__all__`` lists of imported names only in a package
  ``__init__.py``;
* ``plugin.py`` at most :data:`PLUGIN_LIMIT` lines: the one hard size cap;
* a soft size report, never failing: modules over :data:`MODULE_SOFT_LIMIT` lines and
  functions over :data:`FUNCTION_SOFT_LIMIT` lines that the "Large by design" table of
  docs/architecture.md does not list are named in a ``UserWarning`` (the suite's warnings
  summary); ``PYTHONPATH=tests/helpers python tests/guards/test_architecture.py`` prints the
  whole report. The table's rows must name modules and functions that exist;
* the public API is exactly the documented list, and each name resolves.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from paths import ROOT

PACKAGE = ROOT / "pytest_retrieval"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
API_PAGE = ROOT / "docs" / "api.md"


def package_modules(package: Path) -> dict[str, Path]:
    """Every module of ``package`` (a folder), by dotted name (``pytest_retrieval.x.y``)."""
    modules = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


MODULES = package_modules(PACKAGE)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def resolve_from(name: str, path: Path, node: ast.ImportFrom) -> str:
    """The dotted module an ``import from`` of module ``name`` (at ``path``) reads from."""
    if not node.level:
        return node.module or ""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(
    name: str,
    path: Path,
    *,
    type_checking: bool = False,
    modules: dict[str, Path] = MODULES,
) -> set[str]:
    """The package modules ``name`` imports at run time (module or function level); with
    ``type_checking``, those under ``if TYPE_CHECKING:`` too."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child) and not type_checking:
                for other in child.orelse:
                    visit(other)
                continue
            if isinstance(child, ast.ImportFrom):
                target = resolve_from(name, path, child)
                submodules = {f"{target}.{a.name}" for a in child.names} & set(modules)
                # `from . import stats` imports the module stats, not the package's __init__.
                found.update(submodules or {target})
            elif isinstance(child, ast.Import):
                found.update(a.name for a in child.names)
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return {m for m in found if m in modules and m != name}


def import_graph(modules: dict[str, Path], *, type_checking: bool = True) -> dict[str, set[str]]:
    """Each module's imports of the package's modules (type-only ones too, by default)."""
    return {
        name: imports_of(name, path, type_checking=type_checking, modules=modules)
        for name, path in modules.items()
    }


GRAPH = import_graph(MODULES, type_checking=False)
#: Every import, type-only ones included: what the layer and cycle guards read.
TYPED_GRAPH = import_graph(MODULES)


def documented_layers() -> list[list[str]]:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    match = re.search(r"<!-- layers: the test reads this block -->\n```text\n(.*?)```", text, re.S)
    assert match, "docs/architecture.md has no layers block"
    return [line.split() for line in match.group(1).splitlines() if line.strip()]


def layer_of(name: str, layers: list[list[str]]) -> int | None:
    short = name.removeprefix("pytest_retrieval").lstrip(".")
    top = short.split(".")[0] if short else ""
    for index, members in enumerate(layers):
        if top in members:
            return index
    return None


def test_every_module_but_the_plugin_imports_with_pytest_blocked() -> None:
    # (`__main__` runs the console script when imported: it is the entry point, not a module.)
    names = [n for n in MODULES if n != "pytest_retrieval.plugin" and not n.endswith("__main__")]
    code = (
        "import importlib, json, sys\n"
        "sys.modules['pytest'] = None\n"
        "sys.modules['_pytest'] = None\n"
        "failed = []\n"
        f"for name in {names!r}:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except ImportError as exc:\n"
        "        failed.append(f'{name}: {exc}')\n"
        "print(json.dumps(failed))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []
    assert len(names) > 40  # the walk found the package


def test_the_pytest_block_would_notice_a_module_that_imports_pytest() -> None:
    code = "import sys\nsys.modules['pytest'] = None\nimport pytest_retrieval.plugin\n"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode != 0
    assert "pytest" in result.stderr


def test_every_package_module_has_a_documented_layer() -> None:
    layers = documented_layers()
    undocumented = [n for n in MODULES if n != "pytest_retrieval" and layer_of(n, layers) is None]
    assert undocumented == []


def upward_edges(graph: dict[str, set[str]], layers: list[list[str]]) -> set[tuple[str, str]]:
    """Every import of ``graph`` against the layer order (or of the public API module)."""
    upward = set()
    for name, targets in graph.items():
        if name == "pytest_retrieval":
            continue
        here = layer_of(name, layers)
        assert here is not None, name
        for target in targets:
            there = layer_of(target, layers)
            if target == "pytest_retrieval" or there is None or there > here:
                upward.add((name, target))
    return upward


def test_no_import_goes_up_the_documented_layers() -> None:
    assert sorted(upward_edges(GRAPH, documented_layers())) == []


def test_no_import_goes_up_the_documented_layers_even_counting_type_only_imports() -> None:
    # The type-only edges that went up (the session circle, gateitems -> session) are gone
    # since the packages (issue 24): no allow-list is left.
    assert sorted(upward_edges(TYPED_GRAPH, documented_layers())) == []


def plant(root: Path, files: dict[str, str]) -> dict[str, Path]:
    """A fake ``pytest_retrieval`` package under ``root``: ``files`` by path inside it."""
    package = root / "pytest_retrieval"
    for relative, text in {"__init__.py": "", **files}.items():
        path = package / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return package_modules(package)


def test_the_layer_guard_counts_a_type_only_import(tmp_path: Path) -> None:
    # A planted violation: a bottom-layer module naming the session for an annotation only.
    layers = documented_layers()
    bottom = next(m for m in layers[0] if f"pytest_retrieval.{m}" in MODULES)
    source = tmp_path / "probe.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from pytest_retrieval.session.session import RetrievalSession\n",
        encoding="utf-8",
    )
    name = f"pytest_retrieval.{bottom}"
    planted = {name: imports_of(name, source, type_checking=True)}
    assert upward_edges(planted, layers) == {(name, "pytest_retrieval.session.session")}
    assert upward_edges({name: imports_of(name, source)}, layers) == set()


def test_the_public_api_module_imports_nothing_when_it_runs() -> None:
    assert GRAPH["pytest_retrieval"] == set()


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*stack[stack.index(target) :], target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_package_has_no_import_cycle() -> None:
    assert find_cycle(GRAPH) is None


def test_the_package_has_no_import_cycle_even_counting_type_only_imports() -> None:
    # The session circle (session -> runchecks, runbaseline, runsource, summary, ... -> the
    # session, named back for annotations) is gone: no module below the session names it.
    assert find_cycle(TYPED_GRAPH) is None


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """``graph`` between the top-level entries of the package (``scoring``, ``errors``, ...):
    an edge wherever a module of one imports a module of another."""

    def top(name: str) -> str:
        return name.split(".")[1] if "." in name else name

    packages: dict[str, set[str]] = {}
    for name, targets in graph.items():
        packages.setdefault(top(name), set()).update(top(t) for t in targets if top(t) != top(name))
    return packages


def test_no_two_packages_import_each_other_even_counting_type_only_imports() -> None:
    # The layer guard lets a layer's entries import each other (``errors``, ``verdict``, ...
    # share one); between packages there is no cycle either.
    assert find_cycle(package_graph(TYPED_GRAPH)) is None


def test_the_package_cycle_check_would_find_two_packages_importing_each_other(
    tmp_path: Path,
) -> None:
    # Planted: a.x imports b.y at module level, b.z imports a.w in a function (no module cycle).
    plant(
        tmp_path,
        {
            "a/__init__.py": "",
            "a/w.py": "",
            "a/x.py": "from ..b import y\n",
            "b/__init__.py": "",
            "b/y.py": "",
            "b/z.py": "def f():\n    from pytest_retrieval.a import w\n",
        },
    )
    graph = import_graph(package_modules(tmp_path / "pytest_retrieval"))
    assert find_cycle(graph) is None
    assert find_cycle(package_graph(graph)) == ["a", "b", "a"]


def test_the_cycle_check_would_find_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_import_walk_sees_function_level_imports_and_skips_type_checking(
    tmp_path: Path,
) -> None:
    source = tmp_path / "probe.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from pytest_retrieval.session.session import RetrievalSession\n"
        "def f():\n"
        "    from pytest_retrieval.scoring import stats\n"
        "    from pytest_retrieval.report.phrases import fmt\n",
        encoding="utf-8",
    )
    assert imports_of("pytest_retrieval.probe", source) == {
        "pytest_retrieval.scoring.stats",
        "pytest_retrieval.report.phrases",
    }


def documented_api() -> list[str]:
    text = API_PAGE.read_text(encoding="utf-8")
    match = re.search(
        r"<!-- public API: the test reads this list -->\n(.*?)(?:\n\n|\Z)", text, re.S
    )
    assert match, "docs/api.md has no public API list"
    return sorted(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", match.group(1)))


def test_the_public_api_is_exactly_the_documented_list() -> None:
    import pytest_retrieval

    assert sorted(pytest_retrieval.__all__) == documented_api()


def test_every_public_name_resolves_and_comes_from_its_owner() -> None:
    import pytest_retrieval
    from pytest_retrieval.gates.gate import assert_recall_at as from_gates

    for name in pytest_retrieval.__all__:
        assert getattr(pytest_retrieval, name) is not None, name
    from pytest_retrieval import assert_recall_at

    assert assert_recall_at is from_gates
    assert isinstance(pytest_retrieval.__version__, str)


def test_an_unknown_public_name_is_an_attribute_error() -> None:
    import pytest_retrieval

    with pytest.raises(AttributeError, match="no attribute 'assert_recal_at'"):
        pytest_retrieval.assert_recal_at  # noqa: B018


def test_the_two_documented_old_paths_keep_working() -> None:
    import pytest_retrieval
    from pytest_retrieval.formats.golden_io import load_golden as new
    from pytest_retrieval.gates import GateUsageError, Selection, assert_recall_at
    from pytest_retrieval.golden import load_golden as old

    assert old is new
    assert assert_recall_at is pytest_retrieval.assert_recall_at
    assert Selection is pytest_retrieval.Selection
    assert GateUsageError is pytest_retrieval.GateUsageError


def test_the_public_evaluate_is_the_function_even_after_its_module_is_imported() -> None:
    # Before the packages, importing the module ``pytest_retrieval.evaluate`` bound the package
    # attribute ``evaluate`` to the module, so ``from pytest_retrieval import evaluate`` returned
    # a module. No public name is a top-level module's name now.
    code = (
        "import pytest_retrieval.scoring.evaluate, pytest_retrieval.session.session\n"
        "from pytest_retrieval import evaluate\n"
        "print(callable(evaluate) and not hasattr(evaluate, '__path__'), type(evaluate).__name__)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "function"]
    import pytest_retrieval

    tops = {p.stem for p in PACKAGE.iterdir() if p.suffix == ".py" or p.is_dir()}
    assert sorted(set(pytest_retrieval.__all__) & tops) == []


def test_importing_the_public_api_imports_no_submodule() -> None:
    code = (
        "import sys, json\n"
        "import pytest_retrieval\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('pytest_retrieval.'))))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


def layer_index(layers: list[list[str]], entry: str) -> int:
    return next(i for i, members in enumerate(layers) if entry in members)


def _names_the_session(node: ast.expr | None) -> bool:
    if node is None:
        return False
    for part in ast.walk(node):
        if isinstance(part, ast.Name | ast.Attribute) and (
            getattr(part, "id", None) == "RetrievalSession"
            or getattr(part, "attr", None) == "RetrievalSession"
        ):
            return True
        if (
            isinstance(part, ast.Constant)
            and isinstance(part.value, str)
            and re.search(r"\bRetrievalSession\b", part.value)
        ):
            return True
    return False


def session_takers(modules: dict[str, Path], layers: list[list[str]]) -> list[str]:
    """Where a module of a layer below ``session/`` takes a session: an import of the
    ``session`` package (type-only too), an annotation naming ``RetrievalSession`` (strings
    too) or a parameter called ``session``."""
    below = layer_index(layers, "session")
    found = []
    for name, path in modules.items():
        here = layer_of(name, layers)
        if name == "pytest_retrieval" or here is None or here >= below:
            continue
        for target in sorted(imports_of(name, path, type_checking=True, modules=modules)):
            if layer_of(target, layers) == below:
                found.append(f"{name} imports {target}")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.arg) and (
                node.arg == "session" or _names_the_session(node.annotation)
            ):
                found.append(f"{name}:{node.lineno} takes {node.arg}")
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _names_the_session(
                node.returns
            ):
                found.append(f"{name}:{node.lineno} {node.name} returns a session")
            elif isinstance(node, ast.AnnAssign) and _names_the_session(node.annotation):
                found.append(f"{name}:{node.lineno} annotates a session")
    return found


def test_nothing_below_the_session_takes_a_session() -> None:
    assert session_takers(MODULES, documented_layers()) == []


def test_the_session_guard_would_name_each_way_of_taking_a_session(tmp_path: Path) -> None:
    modules = plant(
        tmp_path,
        {
            "session/__init__.py": "",
            "session/session.py": "class RetrievalSession: ...\n",
            "run/__init__.py": "",
            "run/typed.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from ..session.session import RetrievalSession\n"
            ),
            "run/named.py": "def f(s: 'RetrievalSession') -> None: ...\n",
            "run/param.py": "def g(session, /) -> None: ...\n",
            "run/facts.py": "def h(outcomes: list[str]) -> None: ...\n",
            "report/__init__.py": "",
            "report/view.py": "def v(session: 'RetrievalSession') -> None: ...\n",
        },
    )
    assert session_takers(modules, documented_layers()) == [
        "pytest_retrieval.run.named:1 takes s",
        "pytest_retrieval.run.param:1 takes session",
        "pytest_retrieval.run.typed imports pytest_retrieval.session.session",
    ]


def private_imports(modules: dict[str, Path]) -> list[str]:
    """Every ``_private`` name a module takes from another module of the package:
    ``from x import _y`` and ``m._y`` on a module ``m`` it imported (dunders are not private)."""

    def private(attr: str) -> bool:
        return attr.startswith("_") and not attr.endswith("__")

    found = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bound: dict[str, str] = {}  # a local name (or dotted path) -> the module it is
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                target = resolve_from(name, path, node)
                for alias in node.names:
                    full = f"{target}.{alias.name}"
                    if full in modules:
                        bound[alias.asname or alias.name] = full
                    elif target in modules and private(alias.name):
                        found.append(f"{name}:{node.lineno} imports {full}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in modules:
                        bound[alias.asname or alias.name] = alias.name
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and private(node.attr):
                owner = bound.get(ast.unparse(node.value))
                if owner is not None and owner != name:
                    found.append(f"{name}:{node.lineno} uses {owner}.{node.attr}")
    return sorted(set(found))


def test_no_module_takes_another_modules_private_name() -> None:
    assert private_imports(MODULES) == []


def test_the_private_name_guard_would_name_an_import_and_an_attribute(tmp_path: Path) -> None:
    modules = plant(
        tmp_path,
        {
            "a.py": "_hidden = 1\nshown = 2\n__version__ = '1'\n",
            "b.py": "from .a import _hidden, shown, __version__\n",
            "c.py": "import pytest_retrieval.a as a\n\ndef f():\n    return a._hidden, a.shown\n",
            "d.py": "from . import a\nfrom os import _exit\nx = a._hidden\n",
            "e.py": "_mine = 1\nclass K:\n    _own = 2\ny = K._own\n",
        },
    )
    assert private_imports(modules) == [
        "pytest_retrieval.b:1 imports pytest_retrieval.a._hidden",
        "pytest_retrieval.c:4 uses pytest_retrieval.a._hidden",
        "pytest_retrieval.d:3 uses pytest_retrieval.a._hidden",
    ]


def reexports(modules: dict[str, Path]) -> list[str]:
    """Re-exports outside a package ``__init__.py``: ``import x as x`` / ``from m import x as
    x``, and an ``__all__`` naming a name the module imported."""
    found = []
    for name, path in modules.items():
        if path.name == "__init__.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for alias in node.names:
                    bound = alias.asname or alias.name.split(".")[0]
                    imported.add(bound)
                    if alias.asname is not None and alias.asname == alias.name:
                        found.append(f"{name}:{node.lineno} re-exports {alias.name}")
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else []
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                listed = ast.literal_eval(node.value)  # type: ignore[union-attr]
                found.extend(
                    f"{name}:{node.lineno} lists imported {n} in __all__"
                    for n in listed
                    if n in imported
                )
    return found


def test_only_a_package_init_re_exports() -> None:
    assert reexports(MODULES) == []


def test_the_re_export_guard_would_name_an_alias_and_an_all_list(tmp_path: Path) -> None:
    modules = plant(
        tmp_path,
        {
            "__init__.py": "from .a import shown as shown\n__all__ = ['shown']\n",
            "a.py": "shown = 1\n",
            "b.py": "from .a import shown as shown\nimport json as json\nimport re as regex\n",
            "c.py": "from .a import shown\n\ndef own(): ...\n\n__all__ = ['own', 'shown']\n",
        },
    )
    assert reexports(modules) == [
        "pytest_retrieval.b:1 re-exports shown",
        "pytest_retrieval.b:2 re-exports json",
        "pytest_retrieval.c:5 lists imported shown in __all__",
    ]


#: The one hard size cap: the plugin is wiring (hooks, fixtures, the declared-gate items), and
#: the work it delegates lives in the core.
PLUGIN_LIMIT = 450
#: The soft size report's thresholds (never failing): past them a module or a function is named
#: unless the "Large by design" table of docs/architecture.md lists it with its one job.
MODULE_SOFT_LIMIT = 800
FUNCTION_SOFT_LIMIT = 100


def lines_of(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def plugin_over_cap(package: Path) -> str | None:
    lines = lines_of(package / "plugin.py")
    return f"plugin.py: {lines} lines (limit {PLUGIN_LIMIT})" if lines > PLUGIN_LIMIT else None


def test_the_plugin_stays_thin_wiring() -> None:
    assert plugin_over_cap(PACKAGE) is None


def test_the_plugin_cap_would_name_a_plugin_one_line_too_long(tmp_path: Path) -> None:
    (tmp_path / "plugin.py").write_text("x = 1\n" * PLUGIN_LIMIT, encoding="utf-8")
    assert plugin_over_cap(tmp_path) is None
    (tmp_path / "plugin.py").write_text("x = 1\n" * (PLUGIN_LIMIT + 1), encoding="utf-8")
    assert plugin_over_cap(tmp_path) == "plugin.py: 451 lines (limit 450)"


def large_things(package: Path) -> Iterator[tuple[str, int]]:
    """Every module of ``package`` and every function or method in it, by the name the
    "Large by design" table uses (``scoring/evaluate.py``, ``regression/rule.py::compare``,
    ``run/store.py::RunCache.get``), with its length in lines."""

    def functions(body: list[ast.stmt], prefix: str) -> Iterator[tuple[str, int]]:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                yield prefix + node.name, (node.end_lineno or node.lineno) - node.lineno + 1
                yield from functions(node.body, f"{prefix}{node.name}.")
            elif isinstance(node, ast.ClassDef):
                yield from functions(node.body, f"{prefix}{node.name}.")

    for path in sorted(package.rglob("*.py")):
        module = path.relative_to(package).as_posix()
        yield module, lines_of(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function, lines in functions(tree.body, ""):
            yield f"{module}::{function}", lines


def large_by_design(text: str) -> dict[str, str]:
    """The rows of the "Large by design" table of docs/architecture.md: name -> its one job."""
    match = re.search(r"(?:^|\n)## Large by design\n(.*?)(?:\n## |\Z)", text, re.S)
    assert match, "docs/architecture.md has no 'Large by design' section"
    rows = re.findall(r"^\| `([^`]+)` \| (.+?) \|$", match.group(1), re.M)
    return dict(rows)


def size_report(package: Path, listed: dict[str, str]) -> list[str]:
    """The modules over :data:`MODULE_SOFT_LIMIT` lines and functions over
    :data:`FUNCTION_SOFT_LIMIT` lines that ``listed`` does not name."""
    report = []
    for name, lines in large_things(package):
        limit = FUNCTION_SOFT_LIMIT if "::" in name else MODULE_SOFT_LIMIT
        if lines > limit and name not in listed:
            report.append(f"{name}: {lines} lines (over {limit}, not listed as large by design)")
    return report


def unknown_rows(package: Path, listed: dict[str, str]) -> list[str]:
    known = {name for name, _ in large_things(package)}
    return sorted(set(listed) - known)


def test_the_large_by_design_table_names_existing_modules_and_functions() -> None:
    listed = large_by_design(ARCHITECTURE.read_text(encoding="utf-8"))
    assert listed, "the table has no rows"
    assert unknown_rows(PACKAGE, listed) == []


def test_the_soft_size_report_names_what_the_table_does_not_list() -> None:
    # Soft by design: a long module or function is a question (does it hold a second job?),
    # not a failure. What is seen: one UserWarning per unlisted item in the warnings summary.
    listed = large_by_design(ARCHITECTURE.read_text(encoding="utf-8"))
    for line in size_report(PACKAGE, listed):
        warnings.warn(f"size report: {line}", UserWarning, stacklevel=1)


def test_the_size_report_would_name_a_long_module_and_function_and_a_stale_row(
    tmp_path: Path,
) -> None:
    long_function = "def long():\n" + "    x = 1\n" * FUNCTION_SOFT_LIMIT
    listed_function = "class K:\n    def listed(self):\n" + "        x = 1\n" * 120
    plant(
        tmp_path,
        {
            "big.py": "x = 1\n" * (MODULE_SOFT_LIMIT + 1),
            "fits.py": "x = 1\n" * MODULE_SOFT_LIMIT,
            "f.py": long_function + listed_function,
        },
    )
    package = tmp_path / "pytest_retrieval"
    text = (
        "## Large by design\n\n| module or function | its one job |\n|---|---|\n"
        "| `f.py::K.listed` | one job |\n| `gone.py::old` | moved away |\n"
    )
    listed = large_by_design(text)
    assert size_report(package, listed) == [
        "big.py: 801 lines (over 800, not listed as large by design)",
        "f.py::long: 101 lines (over 100, not listed as large by design)",
    ]
    assert unknown_rows(package, listed) == ["gone.py::old"]


def documented_packages(text: str) -> list[str]:
    """The rows of the package table of docs/architecture.md (``scoring/``, ``errors.py``)."""
    match = re.search(r"(?:^|\n)## Packages\n(.*?)(?:\n## |\Z)", text, re.S)
    assert match, "docs/architecture.md has no 'Packages' section"
    return re.findall(r"^\| `([a-z_]+/|[a-z_]+\.py)` \|", match.group(1), re.M)


def package_entries(package: Path) -> list[str]:
    """The top-level entries of ``package``: its sub-packages and its modules (no
    ``__init__``)."""
    folders = [f"{p.name}/" for p in package.iterdir() if (p / "__init__.py").is_file()]
    files = [p.name for p in package.glob("*.py") if p.name != "__init__.py"]
    return sorted(folders + files)


def test_the_package_rows_of_the_architecture_page_are_the_folders() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    rows = documented_packages(text)
    assert len(rows) == len(set(rows)), "a package has two rows"
    assert sorted(rows) == package_entries(PACKAGE)
    layered = sorted(
        f"{m}/" if (PACKAGE / m).is_dir() else f"{m}.py"
        for line in documented_layers()
        for m in line
    )
    assert layered == package_entries(PACKAGE)


def test_every_package_init_says_what_each_of_its_modules_owns() -> None:
    # The module-by-module map lives in each package's docstring: one line per module.
    missing = []
    for init in sorted(PACKAGE.rglob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        for entry in sorted(init.parent.iterdir()):
            stem = entry.stem if entry.suffix == ".py" else entry.name
            is_module = entry.suffix == ".py" and entry.name not in {"__init__.py", "__main__.py"}
            is_package = (entry / "__init__.py").is_file()
            if (is_module or is_package) and not re.search(rf"``{stem}/?``", doc):
                missing.append(entry.relative_to(PACKAGE).as_posix())
    assert missing == []


if __name__ == "__main__":
    # The soft size report, in full: everything over the thresholds, listed or not.
    rows = large_by_design(ARCHITECTURE.read_text(encoding="utf-8"))
    for thing, length in large_things(PACKAGE):
        cap = FUNCTION_SOFT_LIMIT if "::" in thing else MODULE_SOFT_LIMIT
        if length > cap:
            mark = "listed" if thing in rows else "NOT LISTED"
            print(f"{length:5d}  {thing}  ({mark}{': ' + rows[thing] if thing in rows else ''})")
    for thing in unknown_rows(PACKAGE, rows):
        print(f"stale row: {thing} does not exist")
