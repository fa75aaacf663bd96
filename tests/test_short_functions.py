"""Functions stay short where the pages and the figures are built (DESIGN: "no function over ~60 lines without a
reason"): every function of attnviz/app/ui and attnviz/figures, nested ones and methods included, is at most
MAX_LINES lines from its `def` to its last line, docstring and comments counted. A longer one is named in LONGER,
with its reason."""

from __future__ import annotations

from pathlib import Path

from testkit.functionlength import MAX_LINES, long_functions, too_long

ROOT = Path(__file__).resolve().parent.parent
CHECKED = ("attnviz/app/ui", "attnviz/figures")

# (module, function): why it may be longer. Keep it short; an entry that is no longer needed fails the test too.
LONGER: dict[tuple[str, str], str] = {}


def checked_modules() -> list[Path]:
    return sorted(path for folder in CHECKED for path in (ROOT / folder).rglob("*.py"))


def test_no_function_is_longer_than_the_limit_without_a_reason():
    found = too_long(ROOT, checked_modules(), LONGER)
    assert found == {}, f"split these (at most {MAX_LINES} lines), or name them in LONGER with a reason"


def test_every_longer_function_named_is_still_there_and_still_long():
    """An entry of LONGER whose function was split or removed is dropped, so the list stays the list of exceptions."""
    for module, name in LONGER:
        found = dict(long_functions((ROOT / module).read_text(encoding="utf-8")))
        assert name in found, f"{module}:{name} is {MAX_LINES} lines or fewer now (or gone): remove it from LONGER"


def test_the_check_counts_a_functions_lines_from_def_to_its_end():
    """The check itself: 61 lines is too long (nested and async functions too), 60 is not."""
    body = "".join(f"    x{i} = {i}\n" for i in range(59))
    short = f"def short():\n{body}"  # 60 lines
    long = f"def long():\n{body}    return x0\n"  # 61 lines
    nested = "class C:\n    def method(self):\n        async def inner():\n" + "".join(
        f"            y{i} = {i}\n" for i in range(60)
    )
    assert long_functions(short) == []
    assert long_functions(long) == [("long", 61)]
    assert long_functions(nested) == [("method", 62), ("inner", 61)]
    assert checked_modules(), "the checked folders hold modules"
