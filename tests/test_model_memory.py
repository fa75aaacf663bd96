"""The pretrained-model page keeps no trace per session: a class's memory is the shared cache, bounded in bytes.

60 sessions, each opening the page with its own 254-token sentence, used to hold ~91 MB each (the trace passed to
a fragment, which Streamlit keeps for the fragment's reruns, and the .npz download's bytes), 5.9 GB in all.
"""

from __future__ import annotations

import gc
import warnings

from streamlit.testing.v1 import AppTest

from attnviz.app.ui import model_page
from attnviz.models.bert import BertTrace, load_minilm
from tests.test_app import ROOT

MODEL = "app_pages/pretrained_model.py"
LONG = "the cat sat on the mat while the dog ran over the hill " * 18  # 236 tokens with [CLS] and [SEP]
COLOURS = ("red", "blue", "green", "black", "white", "brown")  # one token each: six sentences of one length


def clear_trace_cache() -> None:
    """Empty the page's shared trace cache (whichever kind the page uses)."""
    cache = getattr(model_page, "_TRACES", None)
    if cache is not None:
        cache.clear()
    else:
        model_page.run_model.clear()


def live_traces() -> list[BertTrace]:
    gc.collect()
    with warnings.catch_warnings():  # isinstance() on some of torch's module objects warns about deprecations
        warnings.simplefilter("ignore")
        return [o for o in gc.get_objects() if isinstance(o, BertTrace)]


def test_a_session_holds_no_trace_once_the_shared_cache_lets_it_go():
    at = AppTest.from_file(str(ROOT / MODEL), default_timeout=120)
    at.query_params["s"] = LONG
    at.session_state["model:open:share"] = True  # the share box with its downloads, as a student opens it
    at.run()
    assert not at.exception and not at.error
    assert len(live_traces()) >= 1  # the cache holds the sentence's trace
    clear_trace_cache()
    assert live_traces() == [], "the session still holds a trace after the cache dropped it"
    next(t for t in at.toggle if t.key == "w:model:renormalise").set_value(True).run()  # the session goes on
    assert not at.exception and len(live_traces()) == 1


def test_a_trace_knows_its_size():
    trace = load_minilm().run(LONG)
    tokens, layers, heads, width = len(trace.tokens), 6, 12, 384
    per_layer = 4 * (4 * tokens * width) + 4 * (2 * heads * tokens * tokens)  # q, k, v, output; scores, logits
    per_layer += 1  # the mask: nothing is masked, an all-true view of one byte
    expected = layers * per_layer + 4 * layers * heads * tokens * tokens  # the weights, once, as `attentions`
    expected += 4 * (layers + 1) * tokens * width + 8 * tokens  # hidden states (the first is the embeddings), type ids
    assert tokens == 236
    assert trace.nbytes == expected


def test_the_cache_stays_within_its_byte_budget(monkeypatch):
    size = load_minilm().run(f"red {LONG}").nbytes
    monkeypatch.setattr(model_page._TRACES, "_Cache__maxsize", 3 * size + size // 2)
    clear_trace_cache()
    for colour in COLOURS:
        assert model_page.run_model(f"{colour} {LONG}", "").nbytes == size
    assert model_page._TRACES.currsize == 3 * size <= model_page._TRACES.maxsize
    assert [key[0].split()[0] for key in model_page._TRACES] == ["black", "white", "brown"]  # the oldest went first
