"""The share box's offline HTML file: while the box is open, a page records exactly the charts it sent to the browser
and the worked steps it showed; a closed box keeps nothing; the file is made from that record, in the page's
language. (The click itself, a fragment's rerun and the file opened without a network: tests/browser/test_pages.py.)
"""

from __future__ import annotations

import threading
from html.parser import HTMLParser
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from attnviz.app.gate import Gate
from attnviz.app.ui.offline import RECORD_KEY
from attnviz.i18n import t
from attnviz.notebook import Chart, Worked, html_document

ROOT = Path(__file__).resolve().parent.parent
PAGES = {
    "self": "self_attention.py",
    "cross": "cross_attention.py",
    "kernel": "kernel_attention.py",
    "model": "pretrained_model.py",
    "learned": "learned_attention.py",
    "modern": "modern_attention.py",
}
EXPLANATION = "faithful"  # "Is attention an explanation?": no worked row (yet), three models
FILES = {**PAGES, EXPLANATION: "is_attention_an_explanation.py"}


@pytest.fixture
def open_gate(monkeypatch):
    """No pause at the server's gate after a large computation (the explanation page's maps take a turn; the gate
    itself is tested in tests/test_gate_pages.py)."""
    from attnviz.app.gate import GATE

    monkeypatch.setattr(GATE, "share", 1.0)


def _open_share_box(page: str, **params: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app_pages" / FILES[page]), default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert at.session_state[RECORD_KEY] is None  # closed: nothing is recorded, nothing is kept
    at.session_state[f"{page}:open:share"] = True
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.parametrize("page", list(PAGES))
def test_an_open_share_box_records_every_chart_as_sent_and_the_worked_steps(page):
    at = _open_share_box(page)
    contents = at.session_state[RECORD_KEY].contents()
    charts = [item for item in contents if isinstance(item, Chart)]
    sent = [chart.proto.spec for chart in at.get("plotly_chart")]
    assert [chart.spec for chart in charts] == sent and sent  # the same charts, in order, byte for byte
    worked = [item for item in contents if isinstance(item, Worked)]
    assert len(worked) == 1 and worked[0].steps  # every page shows one worked row
    assert next(button.proto.label for button in at.get("download_button")) == t("widget.offline_html")
    at.session_state[f"{page}:open:share"] = False
    at.run()
    assert at.session_state[RECORD_KEY] is None  # closed again: the record is dropped


@pytest.mark.parametrize(
    "params", [{}, {"m": "induction"}, {"m": "dates"}]
)  # English: AppTest formats a rerun's options in it
@pytest.mark.usefixtures("open_gate")
def test_the_explanation_pages_file_holds_every_chart_it_sent(params):
    at = _open_share_box(EXPLANATION, **params)
    charts = [item for item in at.session_state[RECORD_KEY].contents() if isinstance(item, Chart)]
    sent = [chart.proto.spec for chart in at.get("plotly_chart")]
    assert [chart.spec for chart in charts] == sent and len(sent) == 2  # the maps, and the sinks or the ablations
    lang = params.get("lang", "en")
    assert t("fig.maps_title", lang) in sent[0]


def test_the_file_is_the_page_in_its_language_with_the_link_as_text():
    at = _open_share_box("self", lang="zh-Hans", T="0.5")
    [label] = [b.proto.label for b in at.get("download_button") if "HTML" in b.proto.label]
    assert label == t("widget.offline_html", "zh-Hans") and label != t("widget.offline_html", "en")
    record = at.session_state[RECORD_KEY]
    [worked] = [item for item in record.contents() if isinstance(item, Worked)]
    assert worked.heading.startswith(t("attention.show_work", "zh-Hans"))
    assert any("T = 0.5" in (step.note or "") for step in worked.steps)  # the page's temperature, worked out


def test_a_fragments_rerun_replaces_what_it_drew_and_drops_what_it_no_longer_draws(monkeypatch):
    """The record's rule, run by run: a full run draws "a" outside any fragment and, in fragment F, two charts named
    "b"; F's rerun draws one "b"; its next rerun draws nothing. Each file holds what the page shows at that time."""
    from attnviz.app.ui import offline

    where = {"scope": None, "run": object()}
    monkeypatch.setattr(offline, "_where", lambda: (where["scope"], where["run"]))
    record = offline.PageRecord()
    record.begin()
    record.add("chart:a", Chart("{}", "a"))
    where["scope"] = "F"
    record.add("chart:b", Chart("{1}", "b"))
    record.add("chart:b", Chart("{2}", "b"))  # a second chart of the same name in the same run
    assert [item.spec for item in record.contents()] == ["{}", "{1}", "{2}"]

    where["run"] = object()  # F reruns alone
    record.begin()
    assert [item.spec for item in record.contents()] == ["{}"]  # F's old charts are out of date at once
    record.add("chart:b", Chart("{3}", "b"))
    assert [item.spec for item in record.contents()] == ["{}", "{3}"]  # in its place, not added after

    where["run"] = object()  # F reruns and draws nothing (an error message instead)
    record.begin()
    assert [item.spec for item in record.contents()] == ["{}"]


HOSTILE = "<s> </script> <img src=x onerror=alert(1)> &"
HARMLESS = "a b c d e f g"
TOKEN_PAGES = {  # page: (its parameter for hostile tokens, the harmless value), or the page's own "<s>" token
    "self": {"s": HOSTILE},
    "cross": {"s": HOSTILE, "src": HOSTILE},
    "model": {"s": HOSTILE},
    "modern": {"s": HOSTILE},
    "learned": {"tk": "induction"},  # the induction model's sequences start with its own token "<s>"
    EXPLANATION: {"s": HOSTILE},
    "faithful:induction": {"m": "induction"},  # the same page on the induction model: its "<s>"
}


class _Elements(HTMLParser):
    """Every start tag of a document, and its text (entities decoded, scripts' contents left out)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.text: list[str] = []
        self._in_script = 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append(tag)
        self._in_script += tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self._in_script -= tag == "script"

    def handle_data(self, data: str) -> None:
        if not self._in_script:
            self.text.append(data)


def _offline_file(page: str, params: dict[str, str]) -> _Elements:
    record = _open_share_box(page.split(":")[0], **params).session_state[RECORD_KEY]
    parsed = _Elements()
    parsed.feed(html_document(record.contents(), lang="en", title="t", heading="h"))
    parsed.close()
    return parsed


@pytest.mark.parametrize("page", list(TOKEN_PAGES))
@pytest.mark.usefixtures("open_gate")
def test_tokens_are_text_in_every_pages_offline_file(page):
    """Issue 36, finding 8: the induction page's file wrote its token <s> into MathML as an element, and everything
    after it was struck through. Hostile tokens in every chart, table and formula stay text: no element they name,
    the same scripts as a harmless sentence's file, and the tokens readable as they were typed."""
    hostile = _offline_file(page, TOKEN_PAGES[page])
    assert not {"s", "img"} & set(hostile.tags), sorted(set(hostile.tags))
    text = "".join(hostile.text)
    if page in ("learned", "faithful:induction"):
        assert "<s>" in text
    else:  # a sentence is split at punctuation: "<", "s", ">", "</", "script", ... are its tokens
        harmless = _offline_file(page, {k: HARMLESS for k in TOKEN_PAGES[page]})
        assert set(hostile.tags) <= set(harmless.tags)  # no element a token names
        assert hostile.tags.count("script") == harmless.tags.count("script")  # no script closed or opened early
        assert all(token in text for token in ("<", ">", "&", "script"))


# ----- making the file: a turn at the gate, made once per contents --------------------------------------------------


def _maker(monkeypatch, gate=None, lang="en"):
    """The self page's file maker, its made-files cache emptied, and a list that counts the documents made."""
    from attnviz.app.ui import offline

    made = []

    def counting_document(*args, **kwargs):
        made.append(1)
        return html_document(*args, **kwargs)

    monkeypatch.setattr(offline, "html_document", counting_document)
    monkeypatch.setattr(offline, "_MADE", offline.LRUCache(maxsize=offline.MADE_BYTES, getsizeof=len))
    if gate is not None:
        monkeypatch.setattr(offline, "GATE", gate)
    record = _open_share_box("self").session_state[RECORD_KEY]
    monkeypatch.setattr(offline, "_record", lambda: record)
    return offline.file_maker("Self-attention", "intro", "http://x/?T=1", lang), made


def _hold(gate) -> threading.Event:
    """Another large request holding `gate`'s turn until the returned event is set."""
    holding, release = threading.Event(), threading.Event()

    def large_request():
        with gate.turn():
            holding.set()
            release.wait(30)

    threading.Thread(target=large_request, daemon=True).start()
    assert holding.wait(10)
    return release


def test_the_same_contents_make_one_file_served_again(monkeypatch):
    """Issue 36, finding 6: 400 clicks made 400 files. The same record, words and link make the file once."""
    make, made = _maker(monkeypatch)
    first = make()
    assert first.startswith(b"<!DOCTYPE html>") and make() == first and made == [1]


def test_making_the_file_takes_its_turn_at_the_gate(monkeypatch):
    """While another large request holds the process's turn, the file waits; it is made once the turn is free."""
    gate = Gate(share=1.0)
    make, made = _maker(monkeypatch, gate)
    release = _hold(gate)
    result = []
    maker = threading.Thread(target=lambda: result.append(make()))
    maker.start()
    maker.join(1.0)
    assert maker.is_alive() and made == []  # waiting for its turn
    release.set()
    maker.join(60)
    assert made == [1] and result[0].startswith(b"<!DOCTYPE html>")


@pytest.mark.parametrize("lang", ["en", "zh-Hans"])
def test_a_file_that_cannot_get_a_turn_says_so(monkeypatch, lang):
    gate = Gate(share=1.0, max_waiting=0)
    make, made = _maker(monkeypatch, gate, lang)
    release = _hold(gate)
    try:
        busy = make().decode("utf-8")
    finally:
        release.set()
    assert t("gate.busy", lang, ahead=1) in busy and "<script" not in busy and made == []


def test_a_file_holds_at_most_its_byte_budget_and_names_what_it_left_out():
    import numpy as np
    import plotly.graph_objects as go
    import plotly.offline

    from attnviz.app.budget import FILE_BYTES
    from attnviz.app.ui.plotly_element import figure_json

    rng = np.random.default_rng(0)
    charts = [Chart(figure_json(go.Figure(go.Heatmap(z=rng.random((300, 300)))))[0], f"heads_{n}") for n in range(9)]
    plotly_code = len(plotly.offline.get_plotlyjs().encode())
    for lang, left_out in (("en", "Left out: heads_"), ("zh-Hans", "已省略：heads_")):
        page = html_document(charts, lang=lang, title="t", heading="h", max_bytes=FILE_BYTES)
        size = len(page.encode())
        assert FILE_BYTES < 9 * 1.2e6 and size <= plotly_code + FILE_BYTES + 10_000  # 11 MB of charts asked for
        shown = sum(f"heads_{n}" in page and f"{left_out}{n}" not in page for n in range(9))
        assert 0 < shown < 9 and page.count(left_out) == 9 - shown
        assert page.index(f"{left_out}8") > page.index("heads_0")  # the first charts are kept, in order
