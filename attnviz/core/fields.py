"""One declaration per control: a `Field` holds its link key, type, range, default and message ids.

The link codec (`parse`, `format`), the checks (`check`), the widgets (attnviz/app/ui/fieldwidgets.py) and the error
messages all read the same declaration, so a range is written once. Pure Python: no Streamlit, no torch.

Matrices travel in links either as plain text ("1,0;0,2": rows by ';', numbers by ',') or, when that is longer,
packed: "~f4.<rows>x<cols>.<base64url of deflated little-endian float32>", for numbers that are each the shortest
decimal of a float32 (what a student types, and the presets' numbers: see `shortest32`), else "~f8" with float64.
Both read back to exactly the same numbers.
"""

from __future__ import annotations

import base64
import binascii
import functools
import math
import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from attnviz.core.errors import AttnvizError, Name, short

Matrix = tuple[tuple[float, ...], ...]

MAX_ROWS = 64  # tokens or points typed as numbers
MAX_COLS = 256  # features per token (the notes' seq2seq example has 256)
MAX_POINTS = 512  # kernel keys, values and query points
MAX_CELL = 1e6  # |number| in a matrix, a vector or an editor cell
MAX_PARAM = 600_000  # characters of any one link parameter (a packed 64 x 256 matrix is ~90,000)


@dataclass(frozen=True)
class Field:
    """One control: `name` is the page state's attribute, `key` its link parameter."""

    name: str
    key: str
    kind: str  # "int", "float", "bool", "choice", "text", "matrix", "vector" or "ints"
    default: Any = None
    low: float = 0.0
    high: float = 0.0
    choices: tuple[str, ...] = ()
    label: str = ""  # message id of the widget's label
    help: str = ""  # message id of the widget's help
    step: float | None = None
    fmt: str | None = None  # the widget's number format
    max_len: int = 0  # characters of a text; rows of a matrix; items of a vector or of "ints"
    max_cols: int = MAX_COLS  # numbers per matrix row
    exclusive_low: bool = False  # low itself is not allowed (a bandwidth must be > 0)

    # ----- link text -> value ------------------------------------------------------------------------------
    def parse(self, text: str) -> Any:
        """A value from its link text; AttnvizError naming this field on bad text."""
        if self.kind in ("int", "float"):
            return self._number(text)
        if self.kind == "bool":
            if text not in ("0", "1"):
                raise AttnvizError("flag", name=Name(self.name), value=short(text))
            return text == "1"
        if self.kind == "choice":
            return self.check(text)
        if self.kind == "text":
            return self.check(text)
        if self.kind == "matrix":
            return parse_matrix(text, self.name, self.max_len, self.max_cols)
        if self.kind == "vector":
            return (
                parse_matrix(text.replace(";", ","), self.name, 1, self.max_len, one_line=True)[0]
                if text.strip()
                else ()
            )
        if self.kind == "ints":
            return self.check(tuple(self._item(cell, i) for i, cell in enumerate(text.split(","), 1))) if text else ()
        raise AssertionError(self.kind)

    def _number(self, text: str) -> int | float:
        try:
            value = float(text)
        except (TypeError, ValueError):
            raise AttnvizError("not_number", name=Name(self.name), value=short(text)) from None
        return self.check(value, shown=text)

    def _item(self, cell: str, index: int) -> int:
        try:
            value = float(cell)
        except ValueError:
            raise AttnvizError("not_number", name=Name(self.name), value=short(cell)) from None
        if not math.isfinite(value) or value != int(value) or not self.low <= value <= self.high:
            raise AttnvizError("item_between", name=Name(self.name), n=index, low=self.low, high=self.high, value=cell)
        return int(value)

    # ----- value -> link text --------------------------------------------------------------------------------
    def format(self, value: Any) -> str:
        """The link text of a value (`parse(format(v)) == v`)."""
        if self.kind == "bool":
            return "1" if value else "0"
        if self.kind == "int":
            return str(int(value))
        if self.kind == "float":
            return format_number(value)
        if self.kind == "matrix":
            return format_matrix(value)
        if self.kind == "vector":
            return format_matrix((tuple(value),)) if value else ""
        if self.kind == "ints":
            return ",".join(str(int(x)) for x in value)
        return str(value)

    # ----- a Python value (widget, notebook, link) -> checked value ---------------------------------------------
    def check(self, value: Any, shown: Any = None) -> Any:
        """`value` if this field allows it, else AttnvizError naming the field (`shown`: the text the user typed)."""
        shown = short(value if shown is None else shown)
        if self.kind in ("int", "float"):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise AttnvizError("not_number", name=Name(self.name), value=shown)
            low_ok = value > self.low if self.exclusive_low else value >= self.low
            if not (math.isfinite(value) and low_ok and value <= self.high):
                raise AttnvizError("between", name=Name(self.name), low=self.low, high=self.high, value=shown)
            if self.kind == "int":
                if value != int(value):
                    raise AttnvizError("whole", name=Name(self.name), value=shown)
                return int(value)
            return float(value)
        if self.kind == "choice":
            if value not in self.choices:
                raise AttnvizError("unknown", name=Name(self.name), value=shown, choices=", ".join(self.choices))
            return value
        if self.kind == "text":
            if not isinstance(value, str):
                raise AttnvizError("not_text", name=Name(self.name))
            if len(value) > self.max_len:
                raise AttnvizError("text_long", name=Name(self.name), count=len(value), limit=self.max_len)
            return value
        if self.kind == "ints" and len(value) > self.max_len:
            raise AttnvizError("too_many", name=Name(self.name), count=len(value), limit=self.max_len)
        return value

    def options(self) -> list[Any]:
        """A choice's options, as widgets list them."""
        return list(self.choices)


def field(fields: tuple[Field, ...], name: str) -> Field:
    """The field of a page state attribute."""
    for candidate in fields:
        if candidate.name == name:
            return candidate
    raise KeyError(name)


# --- numbers and matrices as link text ------------------------------------------------------------------------


def shortest32(value: float) -> float:
    """The shortest decimal that reads back as the same float32 as `value` (0.16959999501705170 -> 0.1696): how
    a float32 tensor's numbers are shown and kept, so that editors and links show what the notes printed."""
    if not math.isfinite(value) or abs(value) > 3e38:
        return value
    single = struct.unpack("<f", struct.pack("<f", value))[0]
    for digits in range(1, 10):
        shown = float(f"{single:.{digits}g}")
        if struct.unpack("<f", struct.pack("<f", shown))[0] == single:
            return shown
    return single


def format_number(value: float) -> str:
    """The shortest text that reads back as exactly `value` ("0.1", "3", "1e-05")."""
    value = float(value)
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def _plain(matrix: Matrix) -> str:
    return ";".join(",".join(format_number(x) for x in row) for row in matrix)


def _fits_float32(matrix: Matrix) -> bool:
    """Every number is the shortest decimal of a float32, so four bytes each bring it back exactly."""
    return all(shortest32(x) == x for row in matrix for x in row)


def _packed(matrix: Matrix) -> str:
    rows, cols = len(matrix), len(matrix[0]) if matrix else 0
    code = "f4" if _fits_float32(matrix) else "f8"
    data = struct.pack(f"<{rows * cols}{code[0] if code == 'f4' else 'd'}", *(x for row in matrix for x in row))
    body = base64.urlsafe_b64encode(zlib.compress(data, 9)).decode().rstrip("=")
    return f"~{code}.{rows}x{cols}.{body}"


@functools.lru_cache(maxsize=64)  # a page writes its link on every rerun; a preset's matrix has thousands of numbers
def format_matrix(matrix: Matrix) -> str:
    """Link text of a matrix: plain when short, packed when that is shorter."""
    plain = _plain(matrix)
    if len(plain) <= 64:
        return plain
    packed = _packed(matrix)
    return packed if len(packed) < len(plain) else plain


def _unpack(text: str, name: str, max_rows: int, max_cols: int) -> Matrix:
    try:
        code, shape, body = text[1:].split(".", 2)
        rows, cols = (int(n) for n in shape.split("x"))
    except ValueError:
        raise AttnvizError("packed_bad", name=Name(name)) from None
    if code not in ("f4", "f8"):
        raise AttnvizError("packed_bad", name=Name(name))
    if not 1 <= rows <= max_rows:
        raise AttnvizError("rows", name=Name(name), count=rows, limit=max_rows)
    if not 1 <= cols <= max_cols:
        raise AttnvizError("row_long", name=Name(name), row=1, count=cols, limit=max_cols)
    size = 4 if code == "f4" else 8
    expected = rows * cols * size
    try:
        compressed = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        inflater = zlib.decompressobj()
        data = inflater.decompress(compressed, expected + 1)  # never inflate more than the shape needs
    except (binascii.Error, ValueError, zlib.error):
        raise AttnvizError("packed_bad", name=Name(name)) from None
    if len(data) != expected:
        raise AttnvizError("packed_bad", name=Name(name))
    numbers = struct.unpack(f"<{rows * cols}{'f' if code == 'f4' else 'd'}", data)
    if code == "f4":
        numbers = tuple(shortest32(x) for x in numbers)
    matrix = tuple(tuple(float(x) for x in numbers[r * cols : (r + 1) * cols]) for r in range(rows))
    for r, row in enumerate(matrix, start=1):
        for c, x in enumerate(row, start=1):
            if not math.isfinite(x) or abs(x) > MAX_CELL:
                raise AttnvizError("cell_big", name=Name(name), row=r, col=c, value=f"{x:g}")
    return matrix


def parse_matrix(
    text: str, name: str, max_rows: int = MAX_ROWS, max_cols: int = MAX_COLS, one_line: bool = False
) -> Matrix:
    """Plain ("1,0;0,2") or packed ("~f4...") link text -> a rectangular matrix of finite numbers within caps.
    `one_line`: the text is a list of numbers (a vector), so an error names the item, not a row and a column."""
    if not text.strip():
        raise AttnvizError("empty", name=Name(name))
    if text.startswith("~"):
        return _unpack(text, name, max_rows, max_cols)
    rows = text.split(";")
    if len(rows) > max_rows:
        raise AttnvizError("rows", name=Name(name), count=len(rows), limit=max_rows)
    parsed: list[tuple[float, ...]] = []
    for r, row in enumerate(rows, start=1):
        cells = row.split(",")
        if len(cells) > max_cols:
            if one_line:
                raise AttnvizError("items_long", name=Name(name), count=len(cells), limit=max_cols)
            raise AttnvizError("row_long", name=Name(name), row=r, count=len(cells), limit=max_cols)
        values = []
        for c, cell in enumerate(cells, start=1):
            try:
                value = float(cell)
            except ValueError:
                if one_line:
                    raise AttnvizError("item_nan", name=Name(name), n=c, value=short(cell)) from None
                raise AttnvizError("cell_nan", name=Name(name), row=r, col=c, value=short(cell)) from None
            if not math.isfinite(value) or abs(value) > MAX_CELL:
                if one_line:
                    raise AttnvizError("item_big", name=Name(name), n=c, value=short(cell))
                raise AttnvizError("cell_big", name=Name(name), row=r, col=c, value=short(cell))
            values.append(value)
        if parsed and len(values) != len(parsed[0]):
            raise AttnvizError("ragged", name=Name(name), row=r, count=len(values), width=len(parsed[0]))
        parsed.append(tuple(values))
    return tuple(parsed)


# --- a page's link <-> state ---------------------------------------------------------------------------------


def decode_fields(
    params: Mapping[str, Any], fields: tuple[Field, ...], skip: tuple[str, ...] = ()
) -> tuple[dict[str, Any], list[AttnvizError]]:
    """Parse the link parameters of `fields` (except `skip`): (values by attribute, one warning per bad one)."""
    values: dict[str, Any] = {}
    warnings: list[AttnvizError] = []
    for f in fields:
        if f.key not in params or f.key in skip:
            continue
        text = last(params[f.key])
        if len(text) > MAX_PARAM:
            warnings.append(AttnvizError("link_long", param=f.key, count=len(text), limit=MAX_PARAM, name=Name(f.name)))
            continue
        try:
            values[f.name] = f.parse(text)
        except AttnvizError as exc:
            warnings.append(AttnvizError("link", param=f.key, error=exc, name=Name(f.name)))
    return values, warnings


def encode_fields(state: Any, base: Any, fields: tuple[Field, ...], skip: set[str]) -> dict[str, str]:
    """Link parameters for every field whose value differs from `base`'s (except `skip`)."""
    return {
        f.key: f.format(getattr(state, f.name))
        for f in fields
        if f.name not in skip and getattr(state, f.name) != getattr(base, f.name)
    }


def last(value: Any) -> str:
    """A link parameter's text (the last one when it is repeated)."""
    if isinstance(value, list | tuple):
        value = value[-1] if value else ""
    return str(value)
