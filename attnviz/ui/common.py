"""Page frame, URL <-> state synchronisation, charts and small shared widgets."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from dataclasses import fields
from typing import Any

import plotly.graph_objects as go
import streamlit as st
from streamlit.errors import StreamlitAPIException

from attnviz.figures import chart_config
from attnviz.i18n import DEFAULT_LANGUAGE, LANGUAGES, t
from attnviz.i18n.errors import translate_error

LANG_PARAM = "lang"  # the interface language in every link, e.g. ?lang=zh-Hant; no parameter means English
PAGES = (  # (script, icon, catalogue name): the sidebar's links, in the interface language
    ("app.py", "🔍", "home"),
    ("pages/1_Self_attention.py", "🔁", "self"),
    ("pages/2_Cross_attention.py", "🔀", "cross"),
    ("pages/3_Kernel_attention.py", "📈", "kernel"),
    ("pages/4_Pretrained_model.py", "🧠", "model"),
)
LABELLED_WIDGET_PREFIXES = ("w:", "workhead:")  # keys of the app's widgets whose options are shown as labels

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


def md_escape(text: str) -> str:
    """User text made safe for st.markdown: shown literally, never as markup or HTML."""
    return _MD_SPECIAL.sub(r"\\\1", str(text))


def current_language() -> str:
    """The session's interface language ("en", "zh-Hans" or "zh-Hant")."""
    return st.session_state.get(LANG_PARAM, DEFAULT_LANGUAGE)


def tr(key: str, **params: object) -> str:
    """A message of the catalogue in the session's language."""
    return t(key, current_language(), **params)


def labeller(template: str, **params: object) -> Callable[[Any], str]:
    """A `format_func` that shows option `x` as the message `template.format(x)`, in the language of this run.

    The language is fixed when the widget is drawn: Streamlit may call a format_func again after the run."""
    lang = current_language()
    return lambda option: t(template.format(option), lang, **params)


def error_text(error: Exception | str) -> str:
    """An error or warning of the core, in the session's language (see attnviz.i18n.errors)."""
    return translate_error(str(error), current_language())


def _language_from_link() -> str | None:
    """Take the language of a link (?lang=...) into the session; a warning for an unknown one."""
    raw = st.query_params.get(LANG_PARAM)
    if raw is None:
        return None
    if raw in LANGUAGES:
        st.session_state[LANG_PARAM] = raw
        return None
    return tr("frame.bad_language", value=str(raw)[:40], choices=", ".join(LANGUAGES))


def _choose_language() -> None:
    """Callback of the language picker: remember the choice and put it in the link.

    A selectbox or radio reports its choice as the label the browser shows, and the labels are about to change
    language: the rerun would read "a sentence" against the Chinese labels and not find it. So every widget's
    current value is written back into the session state first, where it is kept as the value itself."""
    for key in list(st.session_state):
        if key == f"w:{LANG_PARAM}" or not key.startswith(LABELLED_WIDGET_PREFIXES):
            continue
        with contextlib.suppress(StreamlitAPIException):  # buttons, editors, uploaders: not settable, no label
            st.session_state[key] = st.session_state[key]
    lang = st.session_state[f"w:{LANG_PARAM}"]
    st.session_state[LANG_PARAM] = lang
    if lang == DEFAULT_LANGUAGE:
        st.query_params.pop(LANG_PARAM, None)
    else:
        st.query_params[LANG_PARAM] = lang


def page_frame(page: str, icon: str) -> None:
    """Page config, title and the shared sidebar (language picker first); every page (and a cold deep link) calls
    this first. `page` names the catalogue's "<page>.title" and "<page>.intro"."""
    warning = _language_from_link()
    st.set_page_config(page_title=f"{tr(page + '.title')} · attnviz", page_icon=icon, layout="wide")
    st.title(tr(page + ".title"))
    st.caption(tr(page + ".intro"))
    with st.sidebar:
        st.session_state[f"w:{LANG_PARAM}"] = current_language()
        st.selectbox(
            tr("frame.language"),
            list(LANGUAGES),
            format_func=LANGUAGES.get,
            key=f"w:{LANG_PARAM}",
            on_change=_choose_language,
        )
        _page_links()
        st.caption(tr("frame.sidebar"))
    if warning:
        st.warning(warning, icon="⚠️")


def _page_links() -> None:
    """Links to every page, titled in the interface language (Streamlit's own list shows file names)."""
    for path, icon, name in PAGES:
        try:
            st.page_link(path, label=tr(f"{name}.title"), icon=icon)
        except StreamlitAPIException:  # a page file run as the entry point itself (`streamlit run pages/...`)
            return


def link_params() -> dict[str, str]:
    """The link's parameters without the language (each page's codec reads these)."""
    return {key: value for key, value in st.query_params.to_dict().items() if key != LANG_PARAM}


def widget_key(page: str, name: str) -> str:
    """Session-state key of the widget bound to state field `name`."""
    return f"w:{page}:{name}"


def push_state(page: str, state: Any, convert: dict[str, Callable[[Any], Any]] | None = None) -> None:
    """Write every field of `state` into its widget's session-state key (before widgets are drawn)."""
    convert = convert or {}
    for f in fields(state):
        value = getattr(state, f.name)
        st.session_state[widget_key(page, f.name)] = convert.get(f.name, lambda v: v)(value)
    st.session_state[f"state:{page}"] = state
    st.session_state[f"version:{page}"] = st.session_state.get(f"version:{page}", 0) + 1


def sync_from_url(
    page: str, decode: Callable[[dict[str, str]], Any], convert: dict[str, Callable[[Any], Any]] | None = None
) -> Any:
    """Load the page state from the URL when the URL changed under us (a shared link, back/forward)."""
    params = link_params()
    stored = st.session_state.get(f"state:{page}")
    if st.session_state.get(f"url:{page}") != params or stored is None:
        if not params and stored is not None:
            state, warnings = stored, []  # came back to the page: keep what the user had
        else:
            decoded = decode(params)
            state, warnings = decoded.state, decoded.warnings
        push_state(page, state, convert)
        st.session_state[f"warnings:{page}"] = warnings
        st.session_state[f"url:{page}"] = params
    else:
        # Widgets not drawn on the last run lose their keys; restore them from the stored state.
        for f in fields(stored):
            key = widget_key(page, f.name)
            if key not in st.session_state:
                st.session_state[key] = (convert or {}).get(f.name, lambda v: v)(getattr(stored, f.name))
    for message in st.session_state.get(f"warnings:{page}", []):
        st.warning(error_text(message), icon="⚠️")
    return st.session_state[f"state:{page}"]


def publish(page: str, state: Any, encode: Callable[[Any], dict[str, str]]) -> dict[str, str]:
    """Store the state and write it to the URL if it changed."""
    previous = st.session_state.get(f"state:{page}")
    if previous is not None and previous != state:
        st.session_state[f"warnings:{page}"] = []  # the user moved on from the link's problems
    st.session_state[f"state:{page}"] = state
    params = encode(state)
    st.session_state[f"url:{page}"] = params
    if current_language() != DEFAULT_LANGUAGE:
        params = {**params, LANG_PARAM: current_language()}  # the link keeps the language
    if st.query_params.to_dict() != params:
        st.query_params.from_dict(params)
    return params


def chart(fig: go.Figure, name: str, key: str | None = None) -> None:
    """A Plotly chart with the PNG export named after what it shows."""
    st.plotly_chart(fig, width="stretch", config=chart_config(name), key=key)


def value(page: str, name: str) -> Any:
    """The current value of a state field: its widget's, or the stored state's while the widget is not drawn."""
    key = widget_key(page, name)
    if key in st.session_state:
        return st.session_state[key]
    return getattr(st.session_state[f"state:{page}"], name)


def bound_key(page: str, name: str) -> str:
    """The widget key of a state field, filled from the stored state if Streamlit dropped it (a widget that was
    not drawn for a while, e.g. inside a closed lazy expander, loses its key)."""
    key = widget_key(page, name)
    if key not in st.session_state:
        st.session_state[key] = getattr(st.session_state[f"state:{page}"], name)
    return key
