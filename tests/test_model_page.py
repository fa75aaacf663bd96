"""AppTest: the pretrained-model page shows the model's real heads, follows links and reports bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnviz.models.bert import load_minilm
from testkit.apptest import counting
from tests.messages import message, pattern, says
from tests.test_app import _array, figures, run_page

MODEL, SELF, CROSS = "app_pages/pretrained_model.py", "app_pages/self_attention.py", "app_pages/cross_attention.py"


@pytest.fixture(scope="module")
def model():
    return load_minilm()


VIEWS = {"model": "fig.model_view", "head": "model.head_view_title", "neuron": "fig.neuron_view"}


def charts(at, lang: str = "en") -> dict[str, dict]:
    """The page's figures by what they show: "model", "head" and "neuron" for the three views (by their titles'
    messages in `lang`), any other by its title."""
    named = {}
    for fig in figures(at):
        title = fig["layout"].get("title", {}).get("text", "")
        view = next((view for view, key in VIEWS.items() if pattern(key, lang).fullmatch(title)), title)
        named[view] = fig
    return named


def head_z(at) -> np.ndarray:
    return _array(charts(at)["head"]["data"][0]["z"])


def test_default_page_shows_all_72_heads_one_head_and_the_followed_tokens_numbers(model):
    at = run_page(MODEL)
    shown = charts(at)
    assert set(shown) == {"model", "head", "neuron"}
    assert _array(shown["model"]["data"][0]["z"]).shape == (6 * 13, 12 * 13)  # 72 heads of 13 tokens
    trace = model.run("The cat sat on the mat because it was tired.")
    np.testing.assert_allclose(head_z(at), trace.attentions[5, 11].numpy(), atol=1e-7)  # layer 6, head 12
    neuron = shown["neuron"]["data"]
    head = trace.head(5, 11)
    np.testing.assert_allclose(_array(neuron[0]["z"])[0], head.queries[8].numpy(), atol=1e-7)  # q of "it"
    np.testing.assert_allclose(_array(neuron[4]["z"])[:, 0], head.weights[8].numpy(), atol=1e-7)
    work = " ".join(m.value for m in at.markdown).replace("\\", "")  # markdown escapes
    assert message("explain.score", query="it") in work and message("explain.softmax") in work
    assert says(work, "explain.scale_note", scale="0.1768")  # 1/√32


def test_a_pair_link_shows_one_sentence_attending_to_the_other_renormalised(model):
    at = run_page(MODEL, s="Where is the cat?", s2="The cat is on the mat.", pt="ab", hs="1", rn="1", l="3", hd="2,5")
    trace = model.run("Where is the cat?", "The cat is on the mat.")
    tokens = trace.tokens
    first = [i for i, t in enumerate(tokens) if trace.type_ids[i] == 0 and t not in ("[CLS]", "[SEP]")]
    second = [i for i, t in enumerate(tokens) if trace.type_ids[i] == 1 and t not in ("[CLS]", "[SEP]")]
    mean = trace.attentions[2, [1, 4]].mean(dim=0)
    block = mean[first][:, second]
    expected = block / block.sum(dim=-1, keepdim=True)
    np.testing.assert_allclose(head_z(at), expected.numpy(), rtol=1e-5)
    head = charts(at)["head"]
    assert head["data"][0]["y"] == ["where", "is·2", "the·3", "cat·4", "?"]  # repeated tokens marked by position
    average = message("model.which_average", heads="2, 5")
    assert head["layout"]["title"]["text"] == message("model.head_view_title", layer=3, which=average)
    assert at.radio(key="w:model:part").value == "ab"
    shapes = charts(at)["model"]["layout"]["shapes"]
    assert len([s for s in shapes if s["type"] == "rect"]) == 2  # heads 2 and 5 of layer 3 outlined


def test_moving_a_control_updates_the_view_and_the_link(model):
    at = run_page(MODEL)
    at.selectbox(key="w:model:layer").set_value(1).run()
    at.pills(key="w:model:heads").set_value([3]).run()
    assert not at.exception
    assert at.query_params["l"] == "1" and at.query_params["hd"] == "3"
    trace = model.run("The cat sat on the mat because it was tired.")
    np.testing.assert_allclose(head_z(at), trace.attentions[0, 2].numpy(), atol=1e-7)
    at.pills(key="w:model:heads").set_value([]).run()  # nothing chosen: say so, keep the last heads
    assert any(says(w.value, "model.no_head") for w in at.warning)
    np.testing.assert_allclose(head_z(at), trace.attentions[0, 2].numpy(), atol=1e-7)


def test_a_new_sentence_is_tokenised_by_the_model_and_the_followed_token_is_clamped():
    at = run_page(MODEL, tk="9")
    at.text_input(key="w:model:sentence").set_value("Hi there").run()
    assert not at.exception
    assert at.selectbox(key="w:model:token").value == 1  # token 9 does not exist: follow the first word
    assert charts(at)["head"]["data"][0]["x"] == ["[CLS]", "hi", "there", "[SEP]"]


@pytest.mark.parametrize(
    ("sentence", "key", "params"),
    [("", "error.sentence_empty", {}), ("cat " * 300, "error.input_long", {"count": 302})],
)
def test_bad_sentences_are_reported_and_the_page_keeps_working(sentence, key, params):
    at = run_page(MODEL)
    at.text_input(key="w:model:sentence").set_value(sentence).run()
    assert not at.exception
    assert any(says(e.value, key, **params) for e in at.error), [e.value for e in at.error]
    at.text_input(key="w:model:sentence").set_value("back to normal").run()
    assert not at.exception and not at.error and "head" in charts(at)


def test_a_128_token_sentence_shows_every_token_in_the_head_view():
    sentence = " ".join(["cat"] * 126)
    at = run_page(MODEL, s=sentence)
    assert head_z(at).shape == (128, 128)
    model_view = charts(at)["model"]["data"]
    assert _array(model_view[0]["z"]).shape == (6 * 64, 12 * 64)  # thumbnails max-pooled to 64 cells a side
    assert any(says(caption.value, "model.pooled", count=128, size=64) for caption in at.caption)


def test_hostile_link_parameters_warn_and_fall_back():
    at = run_page(MODEL, l="99", hd="1,<b>", pt="x", tk="-4", s2="y" * 3000)
    warnings = " ".join(w.value for w in at.warning)
    for key in ("'l'", "'hd'", "'pt'", "'tk'", "'s2'"):
        assert key in warnings
    assert "head" in charts(at)


def test_without_the_model_the_page_says_how_to_install_it(monkeypatch):
    from attnviz.app.ui import models
    from attnviz.models import bert

    monkeypatch.setattr(bert.importlib.util, "find_spec", lambda name: None)
    models._cached_model.clear()
    try:
        at = run_page(MODEL)
        assert any("requirements-model.txt" in e.value for e in at.error)
        assert not figures(at)
    finally:
        models._cached_model.clear()


def test_self_attention_can_use_the_models_input_embeddings(model):
    sentence = "king queen banana"
    at = run_page(SELF, s=sentence, emb="minilm", sc="cosine")
    tokens, vectors = model.word_vectors(sentence)
    unit = torch.nn.functional.normalize(vectors, dim=-1)
    expected = torch.softmax(unit @ unit.T, dim=-1).numpy()
    np.testing.assert_allclose(_array(figures(at)[0]["data"][0]["z"]), expected, rtol=1e-5)
    assert figures(at)[0]["data"][0]["x"] == tokens
    assert at.selectbox(key="w:self:embed").value == "minilm"
    inputs = {n.key for n in at.number_input}
    assert not inputs & {"w:self:dim", "w:self:embed_seed"}  # nothing to set: the model fixes d = 384
    at.selectbox(key="w:self:embed").set_value("seeded").run()
    assert "emb" not in at.query_params and {"w:self:dim", "w:self:embed_seed"} <= {n.key for n in at.number_input}


def test_cross_attention_with_model_embeddings_and_its_snippet(model):
    at = run_page(CROSS, emb="minilm", s="the dog", src="a cat")
    _, queries = model.word_vectors("the dog")
    _, keys = model.word_vectors("a cat")
    assert _array(figures(at)[0]["data"][0]["z"]).shape == (queries.shape[0], keys.shape[0])
    from attnviz.app.exports import python_snippet
    from attnviz.app.state import decode_attention

    snippet = python_snippet(decode_attention({"emb": "minilm", "s": "the dog", "src": "a cat"}, "cross").state)
    assert "model.word_vectors('the dog')" in snippet and "model.word_vectors('a cat')" in snippet
    namespace: dict = {}
    exec(snippet.replace("print(", "(lambda *a: None)("), namespace)  # the app's own code, never user input
    np.testing.assert_allclose(namespace["trace"].weights[0].numpy(), _array(figures(at)[0]["data"][0]["z"]), rtol=1e-5)


def test_share_box_offers_the_link_and_the_exports():
    at = run_page(MODEL)
    at.session_state["model:open:share"] = True
    at.run()
    assert not at.exception
    assert any(says(caption.value, "widget.link_length") for caption in at.caption)
    assert any("load_minilm()" in c.value for c in at.code)
    labels = [button.proto.label for button in at.get("download_button")]
    wanted = ["widget.offline_html", "widget.download_state", "model.download_csv", "model.download_npz"]
    assert labels == [message(key) for key in wanted]


def test_a_long_input_pools_the_thumbnails_but_keeps_every_token_in_the_head_view():
    at = run_page(MODEL, s=" ".join(["cat", "dog"] * 99))  # 200 tokens with [CLS] and [SEP]
    assert _array(charts(at)["model"]["data"][0]["z"]).shape == (6 * 64, 12 * 64)
    assert any(says(caption.value, "model.pooled", count=200, size=64) for caption in at.caption)
    assert head_z(at).shape == (200, 200)


def test_markup_in_a_sentence_is_shown_as_text():
    at = run_page(MODEL, s="*bold* <b>x</b> _it_", tk="1")
    headers = [h.value for h in at.subheader]
    assert any(says(h, "model.neuron_heading", token=r"\*·1") for h in headers), headers  # "*", escaped for markdown
    head = charts(at)["head"]["data"][0]
    assert "&lt;·4" in head["x"] and not any("<" in label for label in head["x"])  # Plotly reads <b> as markup


@pytest.mark.parametrize("lang", ["en", "zh-Hans"])
def test_chinese_text_is_said_to_be_unreadable_and_its_unknown_tokens_are_marked(model, lang):
    """Issue 14, point 18: "猫坐在垫子上" became four identical [UNK] tokens with no word of warning."""
    at = run_page(MODEL, s="猫坐在垫子上 on the mat", lang=lang)
    warning = next(w.value for w in at.warning if "[UNK:猫]" in w.value.replace("\\", ""))
    assert says(warning, "model.unknown", lang, count=4, total=11)
    head = charts(at, lang)["head"]
    assert head["data"][0]["x"][1:5] == ["[UNK:猫]", "[UNK:坐]", "[UNK:在]", "[UNK:垫]"]
    assert "子" in head["data"][0]["x"] and "mat" in head["data"][0]["x"]  # pieces it knows keep their own text
    assert not [w for w in run_page(MODEL).warning if "[UNK" in w.value]  # an English sentence: no warning


def test_unknown_tokens_of_a_pair_are_marked_with_their_own_sentences_text(model):
    encoded = model.encode("a 猫", "b 🙂")
    assert encoded.tokens == ["[CLS]", "a", "[UNK:猫]", "[SEP]", "b", "[UNK:🙂]", "[SEP]"]


def test_each_head_worth_a_look_has_a_button_that_opens_it(model):
    """Issue 14, point 19: the list of heads worth a look did nothing when clicked."""
    at = run_page(MODEL)
    buttons = [b for b in at.button if b.key and b.key.startswith("model:open_head:")]
    assert buttons, "the finder lists at least one head for the default sentence"
    layer, head = (int(n) for n in buttons[0].key.split(":")[3:5])  # model:open_head:<pattern>:<layer>:<head>
    assert says(buttons[0].label, "model.finder_button", layer=layer, head=head)
    buttons[0].click().run()
    assert at.selectbox(key="w:model:layer").value == layer and at.pills(key="w:model:heads").value == [head]
    title = charts(at)["head"]["layout"]["title"]["text"]
    assert title == message("model.head_view_title", layer=layer, which=message("model.which_one", head=head))
    assert at.query_params["l"] == str(layer)


def test_a_control_rebuilds_only_the_views_it_changes_and_sessions_on_one_sentence_share_them(monkeypatch):
    """The model view is not made again when the followed token changes, nor the neuron view when the rows are
    renormalised; a second student on the same sentence gets every view without any being made."""
    from attnviz.app.ui import common
    from attnviz.figures import attention as figure_module
    from attnviz.figures import model as model_figures

    made: dict[str, int] = {"model": 0, "head": 0, "neuron": 0}

    monkeypatch.setattr(model_figures, "model_view", counting(made, "model", model_figures.model_view))
    monkeypatch.setattr(model_figures, "neuron_view", counting(made, "neuron", model_figures.neuron_view))
    monkeypatch.setattr(figure_module, "weights_heatmap", counting(made, "head", figure_module.weights_heatmap))
    common._FIGURES.clear()
    common._VALUES.clear()
    sentence = "A sentence that only this test types."
    at = run_page(MODEL, s=sentence)
    first = {name: fig for name, fig in charts(at).items()}
    assert made == {"model": 1, "head": 1, "neuron": 1}
    at.toggle(key="w:model:renormalise").set_value(True).run()
    assert made == {"model": 2, "head": 2, "neuron": 1}
    at.selectbox(key="w:model:token").set_value(3).run()
    assert made == {"model": 2, "head": 2, "neuron": 2}
    assert charts(at)["neuron"] != first["neuron"]
    at.toggle(key="w:model:renormalise").set_value(False).run()  # back to a view made before
    assert made == {"model": 2, "head": 2, "neuron": 2}
    assert charts(at)["model"] == first["model"]

    other = run_page(MODEL, s=sentence)  # a second session, the same sentence: nothing is made
    assert made == {"model": 2, "head": 2, "neuron": 2}
    assert charts(other) == first
    run_page(MODEL, s=sentence, pm="1")  # presentation mode: larger type, its own figures
    assert made == {"model": 3, "head": 3, "neuron": 3}
