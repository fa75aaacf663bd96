"""What a link can carry: Streamlit's limits, and a state file for a state too large for any link.

Both are plain link parameters (the page's codec in attnviz/app/state.py reads them), so a state file is validated
exactly like a link. Parsed as JSON, never evaluated. A link over the limits is refused by the share box, named on
the page when Streamlit ignored it, and answered by the proxy with a page of its own: `python -m attnviz.app.links`
prints that page (deploy/nginx/compose/link-too-long.html; `make i18n` writes it).
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from urllib.parse import urlencode

from attnviz.core.errors import AttnvizError, Name
from attnviz.i18n import LANGUAGES, t

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


def ignored_link_warning(characters: int, fields: int) -> AttnvizError:
    """What to tell a student whose link Streamlit ignored (a query string of `characters` and `fields`)."""
    if characters > LINK_MAX_CHARS:
        return AttnvizError("link_ignored_long", count=characters, limit=LINK_MAX_CHARS)
    return AttnvizError("link_ignored_many", count=fields, limit=LINK_MAX_FIELDS)


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
            if content.get("page") in ("self", "cross", "kernel", "model", "faithful", "learned", "modern")
            else "?",
        )
    params = content["params"]
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in params.items()) or len(params) > LINK_MAX_FIELDS:
        raise AttnvizError("file_not_state")
    return params


def link_too_long_page() -> str:
    """The page the proxy answers a link over Streamlit's limits with (before Streamlit would run the page without
    it): what happened and what to do instead, in every interface language, with a link to the page without it."""
    numbers = {"characters": f"{LINK_MAX_CHARS:,}", "fields": f"{LINK_MAX_FIELDS:,}"}
    titles = " · ".join(t("proxy.link_too_long.title", lang) for lang in LANGUAGES)
    sections = []
    for lang in LANGUAGES:
        text = {
            "title": t("proxy.link_too_long.title", lang),
            "body": t("proxy.link_too_long.body", lang, **numbers),
            "advice": t("proxy.link_too_long.advice", lang),
            "open": t("proxy.link_too_long.open", lang),
        }
        text = {key: html.escape(value) for key, value in text.items()}
        sections.append(
            f'<section lang="{lang}">\n<h1>{text["title"]}</h1>\n<p>{text["body"]}</p>\n<p>{text["advice"]}</p>\n'
            f'<p><a href="?">{text["open"]}</a></p>\n</section>'
        )
    style = (
        "body{font-family:system-ui,sans-serif;max-width:42rem;margin:3rem auto;padding:0 1rem;line-height:1.5}"
        "section+section{border-top:1px solid #ccc;margin-top:2rem}h1{font-size:1.4rem}"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>attnviz: {html.escape(titles)}</title>\n<style>{style}</style>\n</head>\n<body>\n"
        + "\n".join(sections)
        + "\n</body>\n</html>\n"
    )


if __name__ == "__main__":
    print(link_too_long_page(), end="")
