"""Settings of the whole app, kept in every link: language (?lang=), colour palette (?pal=), presentation (?pm=1).

Each page's own state lives in its codec (attnviz/app/state.py); these three apply to every page, so they are carried
from page to page in the session and added to every link the pages publish.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import streamlit as st
from streamlit.errors import StreamlitAPIException

from attnviz.app.ui import offline
from attnviz.core.errors import AttnvizError, render, short
from attnviz.i18n import DEFAULT_LANGUAGE, LANGUAGES, t

# Colour-blind-safe sequential palettes for weights (perceptually uniform, readable in greyscale); Cividis is
# designed for the common colour-vision deficiencies. Diverging data (signed scores) always use RdBu.
PALETTES: dict[str, str] = {"cividis": "Cividis", "viridis": "Viridis", "magma": "Magma", "greys": "Greys"}
PRESENTATION_FONT = 20  # px, figures' text in presentation mode (Plotly's default is 12)
LABELLED_WIDGET_PREFIXES = ("w:",)  # keys of the app's widgets whose options are shown as labels (PageSession.key)


@dataclass(frozen=True)
class Setting:
    """One app-wide setting: its link parameter, default and allowed values."""

    param: str
    default: str
    choices: tuple[str, ...]


LANG = Setting("lang", DEFAULT_LANGUAGE, tuple(LANGUAGES))
PALETTE = Setting("pal", "cividis", tuple(PALETTES))
PRESENTATION = Setting("pm", "0", ("0", "1"))
SETTINGS = (LANG, PALETTE, PRESENTATION)
# The live class (attnviz/app/ui/live.py): ?class=CODE joins a class and stays in the links of a session in one;
# ?teach=SECRET is the teacher's own link, taken into the session and removed from the address at once.
CLASS_PARAM = "class"
TEACH_PARAM = "teach"
CLASS_KEY = "attnviz_live"  # the session's Membership in a class (live.py); its code goes in every link
PARAMS = {setting.param for setting in SETTINGS} | {CLASS_PARAM, TEACH_PARAM}


# The settings of the current script run, read once per run: a page asks for the language dozens of times, and
# every read of st.session_state goes through Streamlit's locked proxy. Each script run (and each fragment rerun)
# starts with `begin_run`; a ContextVar keeps concurrent sessions, which run in their own threads, apart.
_RUN: ContextVar[dict[str, str] | None] = ContextVar("attnviz_settings", default=None)


def begin_run() -> None:
    """Read the settings for this run (after a link or a callback may have changed them)."""
    _RUN.set({s.param: st.session_state.get(s.param, s.default) for s in SETTINGS})
    offline.begin()  # the offline file: a fragment's rerun makes what it drew before out of date


def get(setting: Setting) -> str:
    """The session's value of a setting."""
    run = _RUN.get()
    if run is not None:
        return run[setting.param]
    return st.session_state.get(setting.param, setting.default)


def current_language() -> str:
    """The session's interface language ("en", "zh-Hans" or "zh-Hant")."""
    return get(LANG)


def palette() -> str:
    """The Plotly name of the session's weights palette."""
    return PALETTES[get(PALETTE)]


def presenting() -> bool:
    """True in presentation mode (large type, controls folded away)."""
    return get(PRESENTATION) == "1"


PHONE_WIDTH = 360  # the width a chart is drawn at on a phone (390 px less the page's margins)


def on_a_phone() -> bool:
    """Whether the browser says it is a phone ("Mobi" in its User-Agent, as MDN advises for telling phones apart):
    the modern page then folds its long column of controls, so that its first chart is on the first screen."""
    try:
        agent = st.context.headers.get("User-Agent") or ""
    except (AttributeError, RuntimeError):  # no browser behind this run (a test's own run)
        return False
    return "Mobi" in agent


def tr(key: str, **params: object) -> str:
    """A message of the catalogue in the session's language."""
    return t(key, current_language(), **params)


def labeller(template: str, **params: object) -> Callable[[Any], str]:
    """A `format_func` that shows option `x` as the message `template.format(x)`, in the language of this run.

    The language is fixed when the widget is drawn: Streamlit may call a format_func again after the run."""
    lang = current_language()
    return lambda option: t(template.format(option), lang, **params)


_MD_ESCAPES = str.maketrans({char: "\\" + char for char in "\\`*_{}[]()#+-.!|<>~$:&"})


# What GitHub-flavoured Markdown turns into a link by itself, backslashes or not: a bare URL, www., an e-mail address.
_AUTOLINK = re.compile(r"(?i)(https?://|ftp://|www\.|mailto:|xmpp:|@)")
_BACKTICKS = re.compile(r"`+")


def code_span(text: str, in_table: bool = False) -> str:
    """Text as a Markdown code span: shown literally, never a link, markup or HTML (`in_table`: a pipe stays in
    its cell)."""
    text = " ".join(str(text).splitlines())
    fence = "`" * (1 + max((len(run) for run in _BACKTICKS.findall(text)), default=0))
    padded = f" {text} " if text.startswith("`") or text.endswith("`") or not text.strip() else text
    return fence + (padded.replace("|", "\\|") if in_table else padded) + fence


def md_escape(text: str, in_table: bool = False) -> str:
    """User text made safe for st.markdown, st.warning and st.error: shown literally, never as markup, HTML or a
    link. Markdown links a bare URL even when every character is escaped, so text that would be linked goes in a
    code span."""
    text = str(text)
    if _AUTOLINK.search(text):
        return code_span(text, in_table=in_table)
    return text.translate(_MD_ESCAPES)


def error_text(error: Exception) -> str:
    """An error of the core or a link warning, in the session's language, as Markdown in which every echo of the
    user's text is escaped. Coded errors are translated by code; any other error is shown as its text, escaped."""
    if hasattr(error, "code") and hasattr(error, "params"):
        return render(error, current_language(), escape=md_escape)
    return md_escape(str(error))


SETTING_WARNINGS = "setting_warnings"  # this run's link's bad settings


def from_link() -> list[AttnvizError]:
    """Take the settings of a link into the session; one warning per unknown value (also kept in the session for
    this run, where a page joins them to its own link's warnings: `PageSession.sync_from_link`)."""
    warnings: list[AttnvizError] = []
    for setting in SETTINGS:
        raw = st.query_params.get(setting.param)
        if raw is None:
            continue
        if raw in setting.choices:
            st.session_state[setting.param] = raw
            _RUN.set(None)
        else:
            warnings.append(
                AttnvizError("bad_setting", param=setting.param, value=short(raw), choices=", ".join(setting.choices))
            )
    st.session_state[SETTING_WARNINGS] = warnings
    return warnings


def link_params() -> dict[str, str]:
    """The link's parameters without the app-wide settings (each page's codec reads these)."""
    return {key: value for key, value in st.query_params.to_dict().items() if key not in PARAMS}


def replace_link(params: dict[str, str]) -> None:
    """Put a page's own parameters (and the app settings) in the address bar."""
    full = with_settings(params)
    if st.query_params.to_dict() != full:
        st.query_params.from_dict(full)


def with_settings(params: dict[str, str]) -> dict[str, str]:
    """A page's link parameters plus every setting that is not at its default, and the class the session is in."""
    extra = {s.param: get(s) for s in SETTINGS if get(s) != s.default}
    code = getattr(st.session_state.get(CLASS_KEY), "code", None)
    if code:
        extra[CLASS_PARAM] = code
    return {**params, **extra}


def _store(setting: Setting) -> None:
    """Callback of a setting's widget: remember the value and put it in the link."""
    value = st.session_state[f"w:{setting.param}"]
    value = ("1" if value else "0") if isinstance(value, bool) else value
    st.session_state[setting.param] = value
    _RUN.set(None)
    if value == setting.default:
        st.query_params.pop(setting.param, None)
    else:
        st.query_params[setting.param] = value


def write_back_widgets(skip: frozenset[str] = frozenset()) -> None:
    """Write every widget's current value back into the session state (but the widgets in `skip`): the next run
    sends each widget its value as one the app set, which the browser shows and keeps whatever it held."""
    for key in list(st.session_state):
        if key in skip or not key.startswith(LABELLED_WIDGET_PREFIXES):
            continue
        with contextlib.suppress(StreamlitAPIException):  # buttons, editors, uploaders: not settable, no label
            st.session_state[key] = st.session_state[key]


def _choose_language() -> None:
    """Callback of the language picker.

    A selectbox or radio reports its choice as the label the browser shows, and the labels are about to change
    language: the rerun would read "a sentence" against the Chinese labels and not find it. So every widget's
    current value is written back into the session state first, where it is kept as the value itself."""
    write_back_widgets(skip=frozenset({f"w:{LANG.param}"}))
    _store(LANG)


def sidebar_controls() -> None:
    """Language, palette and presentation mode, at the top of the sidebar."""
    st.session_state[f"w:{LANG.param}"] = get(LANG)
    st.selectbox(
        tr("frame.language"), LANG.choices, format_func=LANGUAGES.get, key=f"w:{LANG.param}", on_change=_choose_language
    )
    st.session_state[f"w:{PALETTE.param}"] = get(PALETTE)
    st.selectbox(
        tr("frame.palette"),
        PALETTE.choices,
        format_func=labeller("palette.{}"),
        key=f"w:{PALETTE.param}",
        on_change=_store,
        args=(PALETTE,),
        help=tr("frame.palette_help"),
    )
    st.session_state[f"w:{PRESENTATION.param}"] = presenting()
    st.toggle(
        tr("frame.presentation"),
        key=f"w:{PRESENTATION.param}",
        on_change=_store,
        args=(PRESENTATION,),
        help=tr("frame.presentation_help"),
    )


# Every page: a wide table (show-your-work with many value columns), and a formula wider than the page (a worked
# vector on a phone), scroll inside their own box instead of pushing the page sideways or being cut off; a table's
# headers stay on one line; compact cells, so that show-your-work's table
# (key, five quantities and eight value columns) fits the page's full width at 1400 px. A button's label and a row
# of pills wrap onto more lines instead of being cut off in a narrow column. A fixed style sheet of the app's
# own, never user text.
PAGE_CSS = """
<style>
  [data-testid="stMarkdownContainer"] table { display: block; max-width: 100%; overflow-x: auto; }
  [data-testid="stMarkdownContainer"] p:has(.katex), [data-testid="stMarkdownContainer"] .katex-display {
    overflow-x: auto; overflow-y: hidden;
  }
  [data-testid="stMarkdownContainer"] th, [data-testid="stMarkdownContainer"] td {
    white-space: nowrap; padding: 0.3rem 0.4rem; font-size: 0.9rem;
  }
  [data-testid="stButton"] [data-testid="stMarkdownContainer"], [data-testid="stButton"] p { white-space: normal; }
  [data-testid="stButtonGroup"] div:has(> button) { flex-wrap: wrap; }
  .st-key-live_student_question [data-testid="InputInstructions"] { display: none; }
</style>
"""

# Larger type for a projector: the app's text, widgets' values and tables (figures get PRESENTATION_FONT in
# `chart`), and less room above the title, so that the first chart starts on a 1280x720 screen. A metric's value
# (the teacher's answer count) is Markdown too: it keeps digits larger than the text, or it would shrink to it.
# A fixed style sheet of the app's own, never user text.
PRESENTATION_CSS = """
<style>
  [data-testid="stMain"] { font-size: 1.3rem; }
  [data-testid="stMainBlockContainer"] { padding-top: 3.5rem; }
  [data-testid="stMain"] h1 { font-size: 2.4rem; padding-top: 0; }
  [data-testid="stMain"] input, [data-testid="stMain"] textarea,
  [data-testid="stMain"] [data-baseweb="select"] { font-size: 1.3rem; }
  [data-testid="stMain"] p, [data-testid="stMain"] li, [data-testid="stMain"] label,
  [data-testid="stMain"] [data-testid="stMarkdownContainer"] { font-size: 1.3rem; }
  [data-testid="stMain"] .katex { font-size: 1.45em; }
  [data-testid="stMain"] [data-testid="stMetricValue"] [data-testid="stMarkdownContainer"],
  [data-testid="stMain"] [data-testid="stMetricValue"] p { font-size: 3rem; line-height: 1.2; }
</style>
"""
