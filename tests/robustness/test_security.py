"""Security: what a golden set, a gates file or a query text can make the plugin do, and what its
outputs can give away.

* YAML is only ever read with the safe loader, and nothing is evaluated: no ``eval``/``exec``,
  no pickle. The one dynamic import is the documented one (``retrieval_retriever``,
  ``retrieval_reranker``, ``retrieval_doc_id = module:function`` import and run that code, as a
  conftest.py does).
* A golden set or gates file asking PyYAML to build Python objects is refused, and runs nothing.
* The reports never contain the environment (CI secrets live there).
* The HTML report escapes hostile query ids, texts and doc ids.
"""

from __future__ import annotations

import ast
import uuid
from pathlib import Path

import pytest
from paths import PACKAGE
from plugin_helpers import RetrievalProject, conftest_with

from pytest_retrieval.errors import GoldenSetError
from pytest_retrieval.formats.golden_io import load_golden

SOURCES = sorted(PACKAGE.rglob("*.py"))

#: yaml names the package may use: the safe loaders and dumpers, node classes and errors.
SAFE_YAML = {
    "safe_load",
    "safe_dump",
    "compose",
    "dump",
    "SafeLoader",
    "CSafeLoader",
    "SafeDumper",
    "CSafeDumper",
    "YAMLError",
    "MarkedYAMLError",
    "Node",
    "ScalarNode",
    "CollectionNode",
    "MappingNode",
    "SequenceNode",
}
UNSAFE_MODULES = {"pickle", "cPickle", "dill", "cloudpickle", "marshal", "shelve"}


def _yaml_names(tree: ast.AST) -> list[tuple[str, int]]:
    """Every ``yaml.NAME`` and ``getattr(yaml, "NAME", ...)`` of a module, with its line."""
    names = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "yaml"
        ):
            names.append((node.attr, node.lineno))
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id == "yaml"
            and isinstance(node.args[1], ast.Constant)
        ):
            names.append((str(node.args[1].value), node.lineno))
    return names


def test_the_package_sources_are_found() -> None:
    # The checks below pass vacuously on no files.
    assert PACKAGE / "plugin.py" in SOURCES
    assert PACKAGE / "formats" / "golden_files.py" in SOURCES


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_evaluates_code_unpickles_or_loads_yaml_unsafely(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    for spelling in ("yaml.load(", "yaml.unsafe_load", "yaml.full_load", "yaml.load_all"):
        assert spelling not in text
    tree = ast.parse(text, filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in {"eval", "exec", "compile", "__import__"}, (
                f"{path.name}:{node.lineno}: {node.func.id}()"
            )
        if isinstance(node, ast.Import):
            assert not {a.name.split(".")[0] for a in node.names} & UNSAFE_MODULES
        if isinstance(node, ast.ImportFrom):
            assert (node.module or "").split(".")[0] not in UNSAFE_MODULES
    for name, line in _yaml_names(tree):
        assert name in SAFE_YAML, f"{path.name}:{line}: yaml.{name}"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_every_yaml_compose_or_dump_names_a_safe_loader_or_dumper(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(text)):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "yaml"
            and node.func.attr in {"compose", "dump"}
        ):
            continue
        chosen = {k.arg: ast.get_source_segment(text, k.value) or "" for k in node.keywords}
        which = chosen.get("Loader") or chosen.get("Dumper")
        assert which is not None, f"{path.name}:{node.lineno}: no Loader/Dumper given"
        # The name itself or a variable annotated as one of the safe classes.
        assert "Safe" in which or which in {"loader", "dumper"}, f"{path.name}:{node.lineno}"


def test_the_only_dynamic_import_is_the_documented_module_function_setting() -> None:
    callers = []
    for path in SOURCES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef):
                continue
            for node in ast.walk(function):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name)
                    and node.func.id == "import_module"
                ):
                    callers.append(f"{path.relative_to(PACKAGE).as_posix()}:{function.name}")
    # The one import of a user-given name (run/factories.py), and the lazy re-exports of the
    # public API and of the two documented old paths, from fixed tables of our own modules.
    assert sorted(callers) == [
        "__init__.py:__getattr__",
        "gates/__init__.py:__getattr__",
        "golden/__init__.py:__getattr__",
        "run/factories.py:import_object",
    ]
    import pytest_retrieval
    import pytest_retrieval.formats.golden_io
    import pytest_retrieval.gates
    import pytest_retrieval.gates.gate
    import pytest_retrieval.golden

    modules = {p.relative_to(PACKAGE).with_suffix("").as_posix() for p in SOURCES}
    modules = {m.removesuffix("/__init__").replace("/", ".") for m in modules}
    assert set(pytest_retrieval._EXPORTS.values()) <= modules
    # The old paths resolve to the one object, and nothing else through them.
    assert pytest_retrieval.golden.load_golden is pytest_retrieval.formats.golden_io.load_golden
    assert pytest_retrieval.gates.assert_recall_at is pytest_retrieval.gates.gate.assert_recall_at
    with pytest.raises(AttributeError):
        pytest_retrieval.golden.write_golden  # noqa: B018
    with pytest.raises(AttributeError):
        pytest_retrieval.gates._active  # noqa: B018


HOSTILE_TAGS = [
    "!!python/object/apply:os.system [touch {marker}]",
    "!!python/object/new:os.system [touch {marker}]",
    "!!python/object/apply:subprocess.check_call [[touch, {marker}]]",
    "!!python/name:os.system",
    "!!python/module:os",
]


@pytest.mark.parametrize("tag", HOSTILE_TAGS)
def test_a_golden_set_asking_yaml_for_python_objects_is_refused_and_runs_nothing(
    tmp_path: Path, tag: str
) -> None:
    marker = tmp_path / "pwned"
    value = tag.format(marker=marker)
    golden = tmp_path / "golden.yaml"
    golden.write_text(
        f"version: 1\nqueries:\n  - id: a\n    text: {value}\n    relevant: [x]\n",
        encoding="utf-8",
    )
    with pytest.raises(GoldenSetError) as caught:
        load_golden(golden)
    assert "golden.yaml:4:" in str(caught.value)
    assert not marker.exists()


def test_a_hostile_golden_set_is_a_usage_error_of_the_plugin_that_runs_nothing(
    retrieval_project: RetrievalProject,
) -> None:
    marker = retrieval_project.path / "pwned"
    retrieval_project.write(
        golden=(f"version: 1\nqueries: !!python/object/apply:os.system\n  - touch {marker}\n"),
        tests="def test_run(retrieval_run): pass",
    )
    result = retrieval_project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*golden.yaml:2:*unsupported YAML tag*python/object/apply*"])
    assert not marker.exists()


def test_a_hostile_gates_file_runs_nothing(retrieval_project: RetrievalProject) -> None:
    marker = retrieval_project.path / "pwned"
    retrieval_project.write(tests="def test_run(retrieval_run): pass")
    (retrieval_project.path / "retrieval-gates.yaml").write_text(
        f"version: 1\nthresholds: !!python/object/apply:os.system\n  - touch {marker}\n",
        encoding="utf-8",
    )
    result = retrieval_project.run()
    # The node tree is read, never constructed: the "gate" is the text 'touch ...'.
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*retrieval-gates.yaml:3: 'touch *': is not a gate*"])
    assert not marker.exists()


def test_no_report_contains_the_environment(
    retrieval_project: RetrievalProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = f"s3cr3t-{uuid.uuid4().hex}"
    monkeypatch.setenv("PYTEST_RETRIEVAL_SECRET", secret)
    monkeypatch.setenv("GITHUB_TOKEN", secret)
    retrieval_project.write(
        ini={"retrieval_thresholds": "recall@3 >= 0.9"},  # fails: messages are in the reports
        tests="def test_run(retrieval_run): pass",
    )
    result = retrieval_project.run(
        "--retrieval-json",
        "out.json",
        "--retrieval-markdown",
        "report.md",
        "--retrieval-html",
        "report.html",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    for name in ("out.json", "report.md", "report.html"):
        text = (retrieval_project.path / name).read_text(encoding="utf-8")
        assert "recall@3" in text  # the report was written, and holds the run
        assert secret not in text, name


HOSTILE_ID = "<script>alert('id')</script>"
HOSTILE_TEXT = '</script><script>alert("text")</script>'
HOSTILE_DOC = "<img src=x onerror=alert(1)>"


def test_the_html_report_escapes_hostile_query_ids_texts_and_doc_ids(
    retrieval_project: RetrievalProject,
) -> None:
    golden = (
        "version: 1\nqueries:\n"
        f"  - id: {HOSTILE_ID!r}\n    text: '{HOSTILE_TEXT}'\n    relevant: ['{HOSTILE_DOC}']\n"
        "  - id: plain\n    text: a plain question\n    relevant: [plain-doc]\n"
    )
    # The hostile doc is never retrieved, so the report lists it among the missed documents.
    conftest = conftest_with(
        """
        @pytest.fixture(scope="session")
        def retriever_under_test():
            return lambda text: ["other", "plain-doc"]
        """
    )
    retrieval_project.write(
        golden=golden,
        conftest=conftest,
        ini={"retrieval_thresholds": "recall@1 >= 0.9"},
        tests="def test_run(retrieval_run): pass",
    )
    result = retrieval_project.run("--retrieval-html", "report.html")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    page = (retrieval_project.path / "report.html").read_text(encoding="utf-8")
    for hostile in (HOSTILE_ID, HOSTILE_TEXT, HOSTILE_DOC, "<script>alert", "<img src=x"):
        assert hostile not in page
    assert "&lt;script&gt;alert(" in page  # shown, as text
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
