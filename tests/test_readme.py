"""The README's "use it from Python" example runs and prints the notes' numbers."""

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_python_example_reproduces_the_notes():
    code = re.search(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S).group(1)
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(code, "README.md", "exec"), {})  # our own README, not user input
    printed = output.getvalue()
    assert "tensor([45.5000])" in printed
    assert "[[ 2.0000,  3.0000,  4.0000,  5.0000]]" in printed
    assert "[[10.0000, 11.0000, 12.0000, 13.0000]]" in printed
