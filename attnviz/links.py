"""What a link can carry: Streamlit's limits, and a state file for a state too large for any link.

Both are plain link parameters (the page's codec in attnviz/state.py reads them), so a state file is validated
exactly like a link. Parsed as JSON, never evaluated.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from urllib.parse import urlencode

from attnviz.errors import AttnvizError, Name

# Streamlit ignores a whole query string over 512 Ki characters or 1,000 fields, without a word.
LINK_MAX_CHARS = 512 * 1024
LINK_MAX_FIELDS = 1000


def link_problem(params: Mapping[str, str]) -> AttnvizError | None:
    """Why a browser could not bring this state back from its link (None when it can)."""
    query = urlencode(params)
    if len(query) > LINK_MAX_CHARS:
        return AttnvizError("link_too_long", count=len(query), limit=LINK_MAX_CHARS)
    if len(params) > LINK_MAX_FIELDS:
        return AttnvizError("link_too_many", count=len(params), limit=LINK_MAX_FIELDS)
    return None


STATE_FILE_MAX_BYTES = 4 * 1024 * 1024


def state_file(page: str, params: Mapping[str, str]) -> bytes:
    """A page's link parameters as a JSON file that `read_state_file` loads back (validated like a link)."""
    return json.dumps({"app": "attnviz", "page": page, "params": dict(params)}, ensure_ascii=False).encode()


def read_state_file(data: bytes, page: str) -> dict[str, str]:
    """The link parameters in a state file; AttnvizError saying what is wrong with it. Parsed as JSON, never
    evaluated; its parameters then go through the page's codec like any link's."""
    if len(data) > STATE_FILE_MAX_BYTES:
        raise AttnvizError("file_large", count=len(data), limit=STATE_FILE_MAX_BYTES)
    try:
        content = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise AttnvizError("file_not_json") from None
    if not isinstance(content, dict) or content.get("app") != "attnviz" or not isinstance(content.get("params"), dict):
        raise AttnvizError("file_not_state")
    if content.get("page") != page:
        raise AttnvizError(
            "file_other_page",
            page=Name(f"page_{content.get('page')}")
            if content.get("page") in ("self", "cross", "kernel", "model", "learned")
            else "?",
        )
    params = content["params"]
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in params.items()) or len(params) > LINK_MAX_FIELDS:
        raise AttnvizError("file_not_state")
    return params
