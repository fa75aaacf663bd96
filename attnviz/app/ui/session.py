"""The owner of one page's session keys: its state, its link, its widgets' keys and its open sections.

Every key a page keeps in `st.session_state` is made here, prefixed with the page's name, so that no page can read
or overwrite another's. A page reads as: controls -> state (this object) -> attnviz -> figures.

Streamlit 1.67 can bind a widget to a query parameter itself (`bind="query-params"`). The pages keep their own codec
(attnviz/app/state.py) because a bound parameter that is invalid is dropped without a word (a link's bad parameter must
be named in a warning), the parameter is removed only when it equals the widget's default (a link here is relative to
the chosen preset), and matrices and presets have no widget value to bind.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any

import streamlit as st

from attnviz.app.links import ignored_link_warning, link_problem
from attnviz.app.streamlit_patches import sent_widgets
from attnviz.app.streamlit_patches.long_links import ignored_link
from attnviz.app.ui import live_sync, settings

Convert = dict[str, Callable[[Any], Any]]  # state value -> the value its widget holds (e.g. numbers -> text)


def sent_by_browser() -> frozenset[str]:
    """Keys of the widgets whose values the browser sent with this run and that this session has not drawn yet.

    A page whose server went away (a replica died and the proxy moved it, or the server restarted) reconnects to a
    new session and sends the values on its screen with that session's first run, the student's latest change
    included. Streamlit keeps them by widget id until the widget is drawn; Session State has no public way to list
    them, so attnviz/app/streamlit_patches/sent_widgets.py reads its widget states (tests/test_reconnect.py and
    tests/test_streamlit_patches.py fail if a Streamlit release moves them).
    """
    return sent_widgets.sent_keys()


def sent_value(key: str) -> Any:
    """The value the browser sent for widget `key` and this session has not drawn yet, as it travelled: a number, a
    bool, or an option's text (a select slider's first), None when none was sent. Until the widget is drawn,
    Session State does not hold it (reading its key fails), so a page that checks a value before drawing its
    widget reads it here."""
    return sent_widgets.sent_value(key)


class PageSession:
    """One page's keys in the session: `state`, `link`, `warnings`, `version`, and the widgets bound to fields."""

    def __init__(self, page: str, convert: Convert | None = None) -> None:
        self.page = page
        self.convert = convert or {}

    # ----- keys ------------------------------------------------------------------------------------------------
    def key(self, name: str) -> str:
        """Session key of the widget bound to state field `name` (or of any other widget of this page)."""
        return f"w:{self.page}:{name}"

    def part(self, *parts: object) -> str:
        """Session key of anything else this page keeps (an editor's cells, an open section, a revealed guess)."""
        return ":".join([self.page, *(str(p) for p in parts)])

    def versioned(self, *parts: object) -> str:
        """A widget key that changes whenever a link, a preset or a reset loads a new state: such widgets
        (editors) take their value only when created, so a new state needs a new widget."""
        return self.part(*parts, f"v{self.version}")

    # ----- stored values -----------------------------------------------------------------------------------------
    @property
    def state(self) -> Any:
        """The page state of the last run (None before the first)."""
        return st.session_state.get(self.part("state"))

    @state.setter
    def state(self, state: Any) -> None:
        st.session_state[self.part("state")] = state

    @property
    def link(self) -> dict[str, str] | None:
        """The page's own link parameters, as last read or written."""
        return st.session_state.get(self.part("link"))

    @link.setter
    def link(self, params: dict[str, str]) -> None:
        st.session_state[self.part("link")] = params
        st.session_state["last_link"] = (self.page, params)  # which page wrote the address bar last

    @property
    def warnings(self) -> list[Any]:
        """The link's problems, shown until the user changes something."""
        return st.session_state.get(self.part("warnings"), [])

    @warnings.setter
    def warnings(self, warnings: list[Any]) -> None:
        st.session_state[self.part("warnings")] = warnings

    @property
    def version(self) -> int:
        """How many states were loaded into the widgets (links, presets, resets)."""
        return st.session_state.get(self.part("version"), 0)

    def get(self, *parts: object, default: Any = None) -> Any:
        """A value kept under `part(*parts)`."""
        return st.session_state.get(self.part(*parts), default)

    def put(self, value: Any, *parts: object) -> None:
        """Keep `value` under `part(*parts)`."""
        st.session_state[self.part(*parts)] = value

    # ----- state <-> widgets ---------------------------------------------------------------------------------------
    def _widget_value(self, name: str, value: Any) -> Any:
        return self.convert.get(name, lambda v: v)(value)

    def load(self, state: Any, keep: frozenset[str] = frozenset()) -> None:
        """Write every field of `state` into its widget (before the widgets are drawn), except the widgets whose keys
        are in `keep`; editors get new keys."""
        for f in fields(state):
            if self.key(f.name) not in keep:
                st.session_state[self.key(f.name)] = self._widget_value(f.name, getattr(state, f.name))
        self.state = state
        st.session_state[self.part("version")] = self.version + 1

    def value(self, name: str) -> Any:
        """A field's current value: its widget's, or the stored state's while the widget is not drawn."""
        key = self.key(name)
        if key in st.session_state:
            return st.session_state[key]
        return getattr(self.state, name)

    def current(self, key: str, cast: Callable[[Any], Any], default: Any) -> Any:
        """What widget `key` will hold on this run, before it is drawn, as `cast` makes it: the value set in the
        session, else the one the browser sent (a page reconnecting after its server was lost), else `default`
        (also when the value does not cast: a hostile client may send anything)."""
        value = st.session_state[key] if key in st.session_state else sent_value(key)
        if value is None:
            return default
        try:
            return cast(value)
        except (TypeError, ValueError):
            return default

    def bound(self, name: str) -> str:
        """The widget key of field `name`, refilled from the stored state if Streamlit dropped it (a widget not
        drawn for a run, e.g. inside a closed section, loses its key)."""
        key = self.key(name)
        if key not in st.session_state and key not in sent_by_browser():
            st.session_state[key] = self._widget_value(name, getattr(self.state, name))
        return key

    # ----- state <-> link ------------------------------------------------------------------------------------------
    def sync_from_link(self, decode: Callable[[dict[str, str]], Any], default: Callable[[], Any]) -> Any:
        """The page state for this run: from the link when it changed under us (a shared link, back/forward),
        else the stored one.

        A new session starts from its link, but a widget value that the browser sent with this run wins: that is a
        page reconnecting after its server was lost, and the value on its screen may be newer than its address (the
        student changed it while, or right after, the page reconnected). The session is new until a run has stored
        both the state and the link: a student's change that arrives during the first run stops it (Streamlit's fast
        reruns) at its next session-state access, which may fall between the two, and the run after must not load the
        link over the value the change sent.

        A link Streamlit ignored (over 512 Ki characters or 1,000 fields: the page ran without it) is named in a
        warning, and leaves the address bar, which would send it with every rerun."""
        self._forget_other_pages()
        ignored = ignored_link()
        params = settings.link_params()
        stored = self.state
        if params and self._carried_over(params):
            params = self.link or {}  # another page's parameters in this page's address: not this page's state
            settings.replace_link(params)
        # The link's bad settings join its own warnings: shown until the user changes something (the first run writes
        # the address without them, and a first paint is followed by another run)
        bad_settings = st.session_state.get(settings.SETTING_WARNINGS, [])
        from_class = live_sync.class_link_applied(self.page)  # a follower takes the class's whole state
        if self.link != params or stored is None or bad_settings or from_class:
            if not params and stored is not None and not from_class:
                state, warnings = stored, []  # came back to the page: keep what the user had
            elif not params:
                state, warnings = default(), []
            else:
                decoded = decode(params)
                state, warnings = decoded.state, decoded.warnings
            new_session = stored is None or self.link is None  # nothing stored yet, or a first run cut short
            self.load(state, keep=sent_by_browser() if new_session else frozenset())
            self.warnings = [*bad_settings, *warnings]
            self.link = params
        else:
            for f in fields(stored):  # widgets not drawn on the last run lose their keys: refill them
                self.bound(f.name)
        if ignored is not None:
            self.warnings = [ignored_link_warning(ignored.characters, ignored.fields), *self.warnings]
            st.query_params.clear()  # publish() then writes this page's own link
        return self.state

    def _forget_other_pages(self) -> None:
        """Drop the widget keys of the other pages that Streamlit kept: the fields whose widgets were not drawn on
        their page's last run (a closed section, a matrix, an inactive preset's row). Streamlit drops the drawn ones
        itself when the student leaves a page, and a page fills them all again from its stored state when it runs
        (`load`, `bound`). While they stay, each of this page's select boxes, radios and number inputs copies them:
        Streamlit copies the whole session state for every such widget (`filtered_state`), and a student who has
        visited every page holds twice the keys of one page."""
        own = self.key("")
        for key in [k for k in st.session_state if isinstance(k, str) and k.startswith("w:") and k.count(":") >= 2]:
            if not key.startswith(own):
                del st.session_state[key]

    def _carried_over(self, params: dict[str, str]) -> bool:
        """True when the address holds exactly the parameters another page of this session wrote last, not this
        page's: the browser's Back button can put one page's query string on another page's path."""
        last = st.session_state.get("last_link")
        return last is not None and last[0] != self.page and last[1] == params and self.link != params

    def follow_class(self, decode: Callable[[dict[str, str]], Any], owned: frozenset[str]) -> None:
        """At the start of the page's fragment that holds the class's follower (live_panels.fragment_follower): when
        the follower set off this rerun, the class's newer state goes into the fragment's own controls (the fields
        `owned`), as a link would put it there. A change of any other field, or a link with a problem, reruns the
        whole page, whose start applies it."""
        newer = live_sync.newer_in_fragment(self.page)
        if newer is None:
            return
        decoded, stored = decode(newer.params), self.state
        changed = changed_fields(stored, decoded.state) if stored is not None else None
        if decoded.warnings or changed is None or not changed <= owned:
            st.rerun(scope="app")
        for name in changed:
            st.session_state[self.key(name)] = self._widget_value(name, getattr(decoded.state, name))
        live_sync.applied_in_fragment(newer)

    def publish(self, state: Any, encode: Callable[[Any], dict[str, str]]) -> dict[str, str]:
        """Store the state and write its link to the address bar if it changed; the link with the app settings."""
        if self.state is not None and self.state != state:
            self.warnings = []  # the user moved on from the link's problems
        self.state = state
        params = encode(state)
        self.link = params
        full = settings.with_settings(params)  # the link keeps the language, palette and presentation mode
        # A query string the browser could not bring back is not written: the share box offers a state file.
        shown = full if link_problem(full) is None else settings.with_settings({})
        if st.query_params.to_dict() != shown:
            st.query_params.from_dict(shown)
        # A teacher's page goes to the class; a student's change is exploring. After the address: a teacher's page
        # may run again from here (live_sync.published), and that run reads the address as this one left it
        live_sync.published(self.page, params)
        return full

    def reset(self, default: Any) -> None:
        """Callback of "Reset this page": the page's defaults in every control, a clean link."""
        self.load(default)
        self.warnings = []
        for key in [k for k in st.session_state if isinstance(k, str) and k.startswith(self.part(""))]:
            if key.startswith((self.part("open"), self.part("cells"), self.part("revealed"))):
                del st.session_state[key]


def changed_fields(old: Any, new: Any) -> set[str] | None:
    """The names of the fields whose values differ between two states of a page; None for states of different
    types."""
    if type(old) is not type(new):
        return None
    return {f.name for f in fields(new) if getattr(old, f.name) != getattr(new, f.name)}
