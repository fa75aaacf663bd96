"""Charts, the first paint, and small widgets every page shares (the page frame is in frame.py)."""

from __future__ import annotations

import contextlib
import html
import threading
from collections.abc import Callable
from typing import Any

import cachetools
import pandas  # noqa: F401  (see below)
import plotly.graph_objects as go
import pyarrow as pa
import streamlit as st

from attnviz.app.budget import RERUN_BYTES
from attnviz.app.streamlit_patches import script_run
from attnviz.app.streamlit_patches.plotly_chart import plotly_json_chart
from attnviz.app.streamlit_patches.script_run import DeltaGenerator
from attnviz.app.ui import offline, settings
from attnviz.app.ui.chart_drawn import watch_first_chart
from attnviz.app.ui.plotly_element import figure_json
from attnviz.app.ui.session import sent_by_browser
from attnviz.app.ui.settings import md_escape, tr
from attnviz.figures.attention import chart_config, figure_tables
from attnviz.figures.plotting import FigureSpec, figure_specs
from attnviz.figures.style import CELL_TEXT_SIZE

# pandas is imported here, with the module every page imports first, and not lazily by Streamlit inside two script
# threads at once: that race gave a restarted replica's first two model-page sessions "partially initialized module
# 'pandas'" (the class load test's reconnect check). Importing common is serialised by the import lock.


# On a 1280x720 projector, the height a page's first chart may take below the title, the folded inputs and a heading
# (about 250 px down), so that it ends on the first screen with its axis labels
PROJECTOR_FIT = 450


def inputs_box(fold_on_a_phone: bool = False) -> Any:
    """Where a page's inputs go: in presentation mode a closed expander (the first chart starts on the first screen
    of a 1280x720 projector), and on a phone too with `fold_on_a_phone`; else the page itself."""
    if settings.presenting() or (fold_on_a_phone and settings.on_a_phone()):
        return st.expander(tr("frame.inputs"), expanded=False)
    return st.container()


def beside_chart() -> tuple[Any, Any]:
    """In presentation mode, (the charts' column, a narrow column beside it for what explains the chart: the
    preset's note, the batch row, the colour range); else (the page, None)."""
    if settings.presenting():
        charts, side = st.columns([3, 1], gap="medium")
        return charts, side
    return contextlib.nullcontext(), None  # where the caller is: a container of its own would be one more element


def controls_and_results(widths: list[int]) -> tuple[Any, Any]:
    """Containers for the controls and the results: side by side, or in presentation mode the controls folded
    into a closed expander above results that get the full width."""
    if settings.presenting():
        return st.expander(tr("frame.controls"), expanded=False), st.container()
    left, right = st.columns(widths, gap="large")
    return left, right


# The JSON of figures that depend only on what several sessions share (the pretrained-model page's views of one
# sentence), made once and sent to every session that shows them: at most SHARED_FIGURES_MB, the least recently
# used dropped first. A figure is found by everything it shows (the caller's key) plus the presentation mode.
SHARED_FIGURES_MB = 48
_FIGURES: cachetools.LRUCache[tuple[Any, ...], tuple[str, int]] = cachetools.LRUCache(
    maxsize=SHARED_FIGURES_MB * 2**20, getsizeof=lambda item: len(item[0])
)
_FIGURES_LOCK = threading.Condition()  # one build per figure: sessions asking for it meanwhile wait


@cachetools.cached(
    _FIGURES, key=lambda shared, build, specs=False, fit=None: shared, lock=_FIGURES_LOCK, condition=_FIGURES_LOCK
)
def _shared_json(
    shared: tuple[Any, ...], build: Callable[[], go.Figure], specs: bool = False, fit: int | None = None
) -> tuple[str, int]:
    if not specs or settings.presenting():  # (the key holds the presentation mode and `fit`)
        return figure_json(_styled(build(), fit))
    with figure_specs():  # a builder that ends in make_figure: only its JSON is needed, no Plotly Figure is made
        return figure_json(build())


# Small values that depend only on what sessions share (the pretrained-model page's finder results and
# step-by-step panels of one sentence), made once and kept for every session. Counted, not weighed: each is ~kB.
_VALUES: cachetools.LRUCache[tuple[Any, ...], Any] = cachetools.LRUCache(maxsize=256)
_VALUES_LOCK = threading.Condition()


@cachetools.cached(_VALUES, key=lambda shared, build: shared, lock=_VALUES_LOCK, condition=_VALUES_LOCK)
def shared_value(shared: tuple[Any, ...], build: Callable[[], Any]) -> Any:
    """`build()`, made once for everything it depends on (`shared`) and kept for every session."""
    return build()


# Computed results that sessions showing the same state share (a live class: every student following the teacher's
# page computes the same attention), weighed by their arrays: at most SHARED_RESULTS_MB, the least recently used
# dropped first.
SHARED_RESULTS_MB = 64
_RESULTS: cachetools.LRUCache[tuple[Any, ...], Any] = cachetools.LRUCache(
    maxsize=SHARED_RESULTS_MB * 2**20, getsizeof=lambda item: array_bytes(item)
)
_RESULTS_LOCK = threading.Condition()


def array_bytes(value: Any, depth: int = 0) -> int:
    """The bytes of the arrays (tensors, numpy arrays) a result holds, in its fields, lists, tuples and dicts; at
    least 1."""
    if hasattr(value, "element_size") and hasattr(value, "nelement"):  # a tensor
        return int(value.element_size() * value.nelement())
    if hasattr(value, "nbytes"):
        return int(value.nbytes)
    if depth > 6:
        return 1
    if isinstance(value, dict):
        items: Any = value.values()
    elif isinstance(value, list | tuple):
        items = value
    elif hasattr(value, "__dataclass_fields__"):
        items = [getattr(value, name) for name in value.__dataclass_fields__]
    else:
        return 1
    return max(1, sum(array_bytes(item, depth + 1) for item in items))


@cachetools.cached(_RESULTS, key=lambda shared, build: shared, lock=_RESULTS_LOCK, condition=_RESULTS_LOCK)
def shared_result(shared: tuple[Any, ...], build: Callable[[], Any]) -> Any:
    """`build()`, computed once for everything it depends on (`shared`) and kept for every session; weighed by its
    arrays. What it returns is read, never changed, by the sessions that share it."""
    return build()


def shared_result_ready(shared: tuple[Any, ...]) -> bool:
    """Whether `shared_result(shared, ...)` is kept already (no computation, so no turn at the gate is needed)."""
    with _RESULTS_LOCK:
        return shared in _RESULTS


def _styled(fig: go.Figure, fit: int | None = None) -> go.Figure:
    """Larger type in presentation mode, and a chart's height at most `fit` there."""
    if settings.presenting():
        height = int((fig.layout.height or 450) * 1.3)
        size = settings.PRESENTATION_FONT
        fig.update_layout(font={"size": size}, title_font_size=size + 6, height=min(height, fit or height))
        # Streamlit's chart theme sets the axes' and the legend's own (small) fonts: set them too, and the subplots'
        # titles, so that every text on the chart is readable from the back of the room
        fig.update_annotations(font_size=size)
        fig.update_xaxes(tickfont_size=size, title_font_size=size)
        fig.update_yaxes(tickfont_size=size, title_font_size=size)
        fig.update_layout(legend_font_size=size, hoverlabel_font_size=size)
        # the numbers in heatmap cells have their own size, chosen to fit a phone: larger in the same proportion
        for trace in fig.data:
            if trace.type == "heatmap" and trace.textfont.size:
                trace.textfont.size = round(trace.textfont.size * size / CELL_TEXT_SIZE)
    return fig


SENT_KEY = "attnviz_chart_bytes"  # [this run, the bytes its charts sent]
SMALL_CHART = 64 * 1024  # a chart this small is always sent (a curve, a bar chart, a short sentence's heatmap)


def chart_bytes_sent() -> int:
    """The bytes this run (of the page, or of a fragment) has sent as charts so far."""
    run = _run()
    sent = st.session_state.get(SENT_KEY)
    return sent[1] if isinstance(sent, list) and sent[0] is run else 0


def _run() -> object:
    """This run of the script: its cursors, a new dict in every run (kept by the ledger, so never reused)."""
    return script_run.this_run()


def _within_byte_budget(spec: str) -> bool:
    """Count a chart's JSON against this run's budget (attnviz/app/budget.py: RERUN_BYTES); False when it would go past
    it, and is then not sent. The pages pool their large heatmaps to fit (`draw_factors`), so this only stops what
    no plan foresaw."""
    sent = chart_bytes_sent()
    if len(spec) > SMALL_CHART and sent + len(spec) > RERUN_BYTES:
        return False
    st.session_state[SENT_KEY] = [_run(), sent + len(spec)]
    return True


def chart(
    fig: go.Figure | Callable[[], go.Figure | FigureSpec],
    name: str,
    key: str | None = None,
    table: str = "folded",
    *,
    shared: tuple[Any, ...] | None = None,
    specs: bool = False,
    fit: int | None = None,
    **select: Any,
) -> go.Figure | FigureSpec | None:
    """A Plotly chart with the PNG export named after what it shows; larger type in presentation mode; and its text
    alternative, the same numbers as tables: below it in a section built only while opened ("folded"), right below
    it ("inline"), or shown by the caller elsewhere ("elsewhere": `chart_tables`). `select`: st.plotly_chart's
    on_select and selection_mode, for a chart that takes clicks.

    `shared`: `fig` is a function that builds the figure, and `shared` says everything the figure depends on. Its
    JSON is made once for every session that shows the same figure (a rerun that changes nothing in it costs no
    figure work) and the function is called only to make it, or for the tables. Returns the figure, if it was made.
    `specs`: the shared figure's function ends in `make_figure` and changes nothing after it (its dicts are enough).

    Without `shared`, a function is called inside `plotting.figure_specs()`: a builder that ends in `make_figure`
    gives the figure's dicts (a `FigureSpec`, returned), and no Plotly Figure is made unless its tables are shown.

    `fit`: in presentation mode, the chart's height at most this many pixels (a page's first chart, on what is left
    of a 1280x720 projector's first screen, its axis labels included).
    """
    if shared is None:
        if callable(fig) and not settings.presenting():  # only its JSON is needed: no Plotly Figure is made
            with figure_specs():
                figure = fig()
        else:
            figure = _styled(fig() if callable(fig) else fig, fit)
        spec, height = figure_json(figure)
    else:
        assert callable(fig), "a shared figure is given as the function that builds it"
        figure = None
        spec, height = _shared_json((*shared, settings.presenting(), fit), fig, specs, fit)
    if not _within_byte_budget(spec):
        mb = f"{len(spec) / 2**20:.1f}"
        st.info(tr("budget.not_drawn", mb=mb, sent=f"{chart_bytes_sent() / 2**20:.1f}", limit=RERUN_BYTES // 2**20))
        return figure
    plotly_json_chart(spec, height, config=chart_config(name), key=key, **select)
    offline.record_chart(spec, name)

    def tables() -> None:
        chart_tables(figure if figure is not None else _styled(fig(), fit))  # type: ignore[operator]

    if table == "inline":
        tables()
    elif table == "folded":
        box = lazy_expander(tr("frame.table"), key=f"open:table:{key or name}")
        if box is not None:
            with box:
                tables()
    return figure


# A new visitor's first run in a browser, on a page whose controls sit beside its main chart (FIRST_PAINT_PAGES),
# draws the page's title, inputs and main chart, and only placeholders for the rest: the sidebar, the controls beside
# the chart and the section below it. The rest comes in a whole-page run that the browser asks for once it has drawn
# the chart (`chart_drawn`, a component in the sidebar's fragment). The browser renders what arrives in one thread:
# every element sent before the chart is drawn is rendered while Plotly's 4.7 MB chunk loads (it is fetched when the
# first chart arrives), and the chart is drawn after all of them. Measured (CHANGELOG.md, Performance history), a
# new visitor's first chart over the minimal page's: 1.35x (self) and 1.63x (model) with everything in one run,
# 1.23x-1.33x on both with only the section below deferred, 1.11x-1.19x with the rest asked for by a timer 0.5 s
# after the first run, on a machine that drew the chart within that time. On a slower machine the timer came first
# (1.34x and 1.55x); asking when the chart is drawn does not depend on the machine. Sending the chart before the
# controls in the same run did not help (1.29x against 1.27x): they were rendered before it was drawn.
# Only a new visitor is painted this way: a page reconnecting to a new session sends the values on its screen with
# its first run, and those live only in the widgets that the run draws (`sent_by_browser`). A client that is not a
# browser (the tests' AppTest, scripts) gets everything in one run; so does every later run of the session.
# The pages whose controls sit beside their main chart. The others (home, learned, modern) draw their first run whole:
# their first chart comes after their inputs and controls, and the learned page's training (a button, then a
# progress timer) was not made to meet a whole-page run of the first paint.
FIRST_PAINT_PAGES = frozenset({"self", "cross", "kernel", "model"})
FIRST_PAINT_KEY = "attnviz:first_paint"  # True while the session's runs are a first paint; False after
PENDING_KEY = "attnviz_pending"  # the placeholders of what is still to come (the browser tests wait for them to go)


def first_paint() -> bool:
    """True while a new visitor's page is drawn without its sidebar, its controls and what is below its main chart
    (they follow once the browser has drawn the chart)."""
    return st.session_state.get(FIRST_PAINT_KEY) is True


def begin_first_paint(page: str) -> bool:
    """Decide once per session (on the page it opens first) whether its runs start as a first paint: a browser's,
    with no widget values sent, on a page whose controls sit beside its main chart."""
    if FIRST_PAINT_KEY not in st.session_state:
        browser = "mozilla" in st.context.headers.get("User-Agent", "").lower()
        st.session_state[FIRST_PAINT_KEY] = page in FIRST_PAINT_PAGES and browser and not sent_by_browser()
    return first_paint()


def pending(part: str) -> None:
    """The placeholder of `part` of the page during a first paint."""
    st.container(key=f"{PENDING_KEY}_{part}").caption("…")


def below_main_chart(draw: Callable[[], None]) -> None:
    """Draw `draw`, what a page shows below its main chart: at once, or after a first paint."""
    if first_paint():
        pending("below")
    else:
        draw()


@st.fragment
def after_first_paint() -> None:
    """Registered in a first paint's runs, where it leaves the sidebar's placeholder and the watcher that tells when
    the browser has drawn the main chart (`watch_first_chart`); rerun by the watcher's trigger, it runs the whole page,
    now with everything. That run does not register this fragment again.

    Every widget of the first paint whose value the browser did not send with the trigger is sent again in that run
    with its value as one the app set. A browser that has not yet rendered a widget of the first paint (a page still
    busy with its charts) never saw the value the link gave it, only the run after, which without this would name no
    value: the widget would show its default and send it back with the next change (a link's seed 4 became 0 after
    the next click).

    The values the browser sent are on its screen already and are left alone. One of them may be a control that the
    first paint did not draw and that the student changed meanwhile (a page that reconnected without sending any
    value has a first paint too). Streamlit keeps such a value by widget id until the widget is drawn, so reading its
    key gives the value the session loaded from the link: written back, it replaced the student's change in the run
    after (the class load test lost a reconnected student's causal mask this way; tests/test_reconnect.py)."""
    if not script_run.rerunning_this_fragment():
        pending("sidebar")
        watch_first_chart(token=script_run.session_id() or "")
        return
    settings.write_back_widgets(skip=sent_by_browser())
    st.session_state[FIRST_PAINT_KEY] = False
    st.rerun(scope="app")


def chart_tables(fig: go.Figure | FigureSpec) -> None:
    """A chart's numbers as tables: its text alternative."""
    for title, columns, rows in figure_tables(fig.figure() if isinstance(fig, FigureSpec) else fig):
        if title:
            st.markdown(f"**{md_escape(html.unescape(title))}**")
        if rows:
            st.dataframe(arrow_table(columns, rows), hide_index=True, width="stretch")
        else:
            st.caption(tr("frame.table_too_large"))


def lazy_expander(label: str, key: str, expanded: bool = False) -> DeltaGenerator | None:
    """An expander, collapsed unless `expanded`, whose content is built only while it is open (None when closed): a
    class moving a slider should not pay for QR codes, exports and extra charts nobody is looking at."""
    box = st.expander(label, key=key, expanded=expanded, on_change="rerun")
    return box if box.open else None


def arrow_table(columns: list[str], rows: list[list[object]]) -> pa.Table:
    """A step's table as Arrow (Streamlit's wire format; a pandas frame costs ~10x more to convert)."""
    arrays = []
    for index in range(len(columns)):
        cells = [row[index] for row in rows]
        try:
            arrays.append(pa.array(cells))
        except (pa.ArrowInvalid, pa.ArrowTypeError):  # mixed kinds in one column: show them as text
            arrays.append(pa.array([str(cell) for cell in cells]))
    return pa.Table.from_arrays(arrays, names=[str(name) for name in columns])
