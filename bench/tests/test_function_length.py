"""The load tools' functions stay short (DESIGN: "no function over ~60 lines without a reason"): every function of
bench/, its tests included, nested ones and methods too, is at most MAX_LINES lines from its `def` to its last line,
docstring and comments counted. A longer one is named in LONGER, with its reason. The counting is
testkit/functionlength.py's, the same as for the app's pages and figures (tests/test_short_functions.py)."""

from __future__ import annotations

from pathlib import Path

from testkit.functionlength import MAX_LINES, long_functions, too_long

ROOT = Path(__file__).resolve().parents[2]

# (module, function): why it may be longer. Keep it short; an entry that is no longer needed fails the test too.
LONGER: dict[tuple[str, str], str] = {}


def bench_modules(root: Path = ROOT) -> list[Path]:
    return sorted((root / "bench").rglob("*.py"))


def test_no_load_tool_function_is_longer_than_the_limit_without_a_reason():
    found = too_long(ROOT, bench_modules(), LONGER)
    assert found == {}, f"split these (at most {MAX_LINES} lines), or name them in LONGER with a reason"
    for module, name in LONGER:  # an entry whose function was split or removed is dropped
        still = dict(long_functions((ROOT / module).read_text(encoding="utf-8")))
        assert name in still, f"{module}:{name} is {MAX_LINES} lines or fewer now (or gone): remove it from LONGER"


def test_a_long_function_in_bench_is_found_unless_named_with_a_reason(tmp_path):
    """The check itself, on a bench/ of its own: a 61-line method in a subpackage is found, a 60-line function is
    not, and naming the long one in LONGER lets it pass."""
    (tmp_path / "bench" / "tool").mkdir(parents=True)
    short = "def short():\n" + "".join(f"    y{i} = {i}\n" for i in range(59))  # 60 lines
    long = "class Report:\n    def markdown(self):\n" + "".join(f"        x{i} = {i}\n" for i in range(60))  # 61
    (tmp_path / "bench" / "short.py").write_text(short)
    (tmp_path / "bench" / "tool" / "report.py").write_text(long)
    modules = bench_modules(tmp_path)
    assert [path.relative_to(tmp_path).as_posix() for path in modules] == ["bench/short.py", "bench/tool/report.py"]
    assert too_long(tmp_path, modules, {}) == {"bench/tool/report.py:markdown": 61}
    assert too_long(tmp_path, modules, {("bench/tool/report.py", "markdown"): "a reason"}) == {}
