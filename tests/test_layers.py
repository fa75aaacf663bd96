"""The package's layers (README, "Development"): imports point down only, lazy ones included; no import circles; the
core loads neither Plotly nor Streamlit.

    lint-imports                     # the contracts in pyproject.toml
    python -m pytest tests/test_layers.py
"""

from __future__ import annotations

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
    assert "3 kept, 0 broken" in done.stdout


@pytest.mark.parametrize("package", ["attnviz", "bench"])
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
