"""The package's layers (README, "Development"): imports point down only, lazy ones included; no import circles; the
core loads neither Plotly nor Streamlit. Around the package: tests/ and bench/ share testkit/ and never import each
other, and testkit imports neither.

    lint-imports                     # the contracts in pyproject.toml
    python -m pytest tests/test_layers.py
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent


def circles(package: str) -> list[list[str]]:
    """The import circles among `package`'s modules: each strongly connected group of two or more modules (every
    import counts, also one inside a function)."""
    graph = grimp.build_graph(package, cache_dir=None)
    modules = sorted(graph.modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m) & graph.modules) for m in modules}
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(module: str) -> None:  # Tarjan's strongly connected components
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in edges[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for module in modules:
        if module not in index:
            visit(module)
    return found


def test_the_layer_contracts_hold():
    lint = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    done = subprocess.run([lint, "--no-cache"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "4 kept, 0 broken" in done.stdout


@pytest.mark.parametrize("package", ["attnviz", "bench", "testkit"])
def test_no_import_circles(package):
    assert circles(package) == []


def test_a_circle_is_found():
    """The check itself: two modules that import each other (inside a function too) are a circle."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        package = Path(folder) / "circled"
        package.mkdir()
        (package / "__init__.py").write_text("")
        (package / "a.py").write_text("from circled import b\n")
        (package / "b.py").write_text("def f():\n    from circled import a\n")
        (package / "c.py").write_text("from circled import a\n")
        sys.path.insert(0, folder)
        try:
            assert circles("circled") == [["circled.a", "circled.b"]]
        finally:
            sys.path.remove(folder)


def imported_modules(path: Path, root: Path = ROOT) -> set[str]:
    """Every module the file at `path` imports, as absolute names: imports inside functions too, relative ones resolved
    against the file's package, and the constant names given to importlib.import_module or __import__."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    package = parts[:-1]  # a module's package, or for an __init__.py its own package
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found |= {module} if node.module else {f"{module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                found.add(node.args[0].value)
    return found


def forbidden_imports(folder: str, forbidden: set[str], root: Path = ROOT) -> list[str]:
    """`path: module` for each import under `folder` of a module in one of the `forbidden` top-level packages."""
    return [
        f"{path.relative_to(root)}: {module}"
        for path in sorted((root / folder).rglob("*.py"))
        for module in sorted(imported_modules(path, root))
        if module.split(".")[0] in forbidden
    ]


@pytest.mark.parametrize(
    ("folder", "forbidden"),
    [("tests", {"bench"}), ("bench", {"tests"}), ("testkit", {"tests", "bench"})],
)
def test_tests_and_bench_never_import_each_other(folder, forbidden):
    """What both need (the server runner, the nginx fixture, the websocket clients) is in testkit (issue 37)."""
    assert (ROOT / folder).is_dir()
    assert forbidden_imports(folder, forbidden) == []


def test_a_forbidden_import_is_found(tmp_path):
    """The check itself: top-level, lazy and importlib imports of `tests` are seen; bench's own bench.tests, reached
    by a relative import, is not `tests`."""
    (tmp_path / "bench" / "tools").mkdir(parents=True)
    (tmp_path / "bench" / "ok.py").write_text("from bench import run\nfrom .tests import helpers\n")
    (tmp_path / "bench" / "tools" / "a.py").write_text(
        "import tests.browser\n"
        "from .. import tests\n"
        "def f():\n    from tests.deploy import x\n"
        "def g():\n    import importlib\n    importlib.import_module('tests.loop')\n"
        "def h():\n    return __import__('tests')\n"
    )
    assert imported_modules(tmp_path / "bench" / "ok.py", tmp_path) == {"bench", "bench.tests"}
    assert forbidden_imports("bench", {"tests"}, tmp_path) == [
        "bench/tools/a.py: tests",
        "bench/tools/a.py: tests.browser",
        "bench/tools/a.py: tests.deploy",
        "bench/tools/a.py: tests.loop",
    ]


@pytest.mark.parametrize(
    "code",
    [
        "import attnviz, torch; attnviz.attend(torch.ones(1, 2), torch.ones(3, 2), torch.ones(3, 1))",
        "import attnviz, torch; attnviz.self_attention(torch.ones(4, 8), num_heads=2, projections='random')",
        "import attnviz.models.bert, attnviz.lessons.explain, attnviz.models.learned.train",
        "import attnviz.app.state, attnviz.app.links, attnviz.figures.style",
    ],
)
def test_the_core_loads_neither_plotly_nor_streamlit(code):
    check = f"import sys; {code}; print(sorted({{'plotly', 'streamlit', 'pandas'}} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def test_every_page_loads_pandas_with_the_frame_not_lazily_in_a_script_thread():
    """Two sessions' first runs importing pandas at once (Streamlit does it lazily) left one with a partially
    initialised module; the frame every page imports first loads it under the import lock."""
    check = "import sys, attnviz.app.ui.common; print('pandas' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.stdout.strip() == "True", done.stderr[-2000:]
