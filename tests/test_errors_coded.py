"""Every error the core, the models and the lessons raise on bad input is coded (issue 37).

Each case feeds one public function bad input and checks that the error is an `AttnvizError` whose code has a
message in every catalogue, and that the Simplified Chinese message holds no English sentence: a class reading the
app in Chinese sees Chinese, whatever the input. A scan of the sources keeps plain `raise ValueError(...)` out.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

import attnviz
from attnviz.core import flash, kernel, kvcache, modern, note_attn, positions, sparse
from attnviz.core.errors import AttnvizError, render
from attnviz.i18n import LANGUAGES
from attnviz.lessons.explain import explain_row
from attnviz.models.learned import train

ROOT = Path(__file__).resolve().parent.parent

Q = [[1.0, 0.0], [0.0, 1.0]]  # (2, 2)
K = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]  # (3, 2)
V = [[1.0], [2.0], [3.0]]  # (3, 1)
SCORES = torch.zeros(2, 2, 3)  # (batch, queries, keys)
X = torch.ones(3, 4)  # (T, d_model)
W = torch.eye(4)

# (code, call): one case per raise site at least.
CASES: list[tuple[str, Callable[[], object]]] = [
    # attnviz.core._validate, through attend
    ("not_array", lambda: attnviz.attend([[1.0, 2.0], [3.0]], K, V)),
    ("real_numbers", lambda: attnviz.attend(torch.ones(2, 2, dtype=torch.bool), K, V)),
    ("not_finite", lambda: attnviz.attend([[math.nan, 1.0], [0.0, 1.0]], K, V)),
    ("empty_tensor", lambda: attnviz.attend(torch.zeros(0, 2), K, V)),
    ("positive", lambda: attnviz.attend(Q, K, V, temperature="warm")),
    ("positive_finite", lambda: attnviz.attend(Q, K, V, temperature=-1)),
    # attnviz.core.attention
    ("input_shape", lambda: attnviz.attend([1.0, 2.0], K, V)),
    ("input_dims", lambda: attnviz.attend(Q, [K], [V])),
    ("batch_sizes", lambda: attnviz.attend([Q, Q], [K], [V])),
    ("kv_items", lambda: attnviz.attend(Q, K, V[:2])),
    ("module_params", lambda: attnviz.attend(Q, K, V, score=attnviz.AdditiveScore(2, 2), seed=1)),
    ("module_score", lambda: attnviz.attend(Q, K, V, score=torch.nn.Linear(2, 2))),
    ("module_fit", lambda: attnviz.attend(Q, K, V, score=attnviz.AdditiveScore(5, 5))),
    ("pair_shape_batch", lambda: attnviz.attend(Q, K, V, mask=torch.ones(3, 3, dtype=torch.bool))),
    ("batch_rows", lambda: attnviz.attend([Q, Q], [K, K], [V, V], bias=torch.zeros(3, 2, 3))),
    ("unknown", lambda: attnviz.attend(Q, K, V, score="telepathy")),
    # attnviz.core.masking
    ("lens_unreadable", lambda: attnviz.masked_softmax(SCORES, valid_lens=[[1], [1, 2]])),
    ("lens_dtype", lambda: attnviz.masked_softmax(SCORES, valid_lens=torch.tensor([True, False]))),
    ("lens_whole", lambda: attnviz.masked_softmax(SCORES, valid_lens=[1.5, 2.0])),
    ("lens_batch", lambda: attnviz.masked_softmax(SCORES, valid_lens=[1, 2, 3])),
    ("lens_shape", lambda: attnviz.masked_softmax(SCORES, valid_lens=[[1, 2, 3], [1, 2, 3]])),
    ("lens_dims", lambda: attnviz.masked_softmax(SCORES, valid_lens=torch.ones(2, 2, 2))),
    ("len_negative", lambda: attnviz.masked_softmax(SCORES, valid_lens=[-1, 2])),
    ("len_keys", lambda: attnviz.masked_softmax(SCORES, valid_lens=[1, 9])),
    ("scores_3d", lambda: attnviz.masked_softmax(torch.zeros(2, 3), valid_lens=[1])),
    # attnviz.core.scores
    ("not_learned", lambda: attnviz.make_score_module("dot", 2, 2)),
    # attnviz.core.multihead
    ("given_projections", lambda: attnviz.multi_head_attend(Q, K, K, projections={"W_q": torch.eye(3)})),
    ("projections_kind", lambda: attnviz.self_attention(Q, projections="orthogonal")),
    ("whole_from", lambda: attnviz.self_attention(Q, num_heads=0)),
    ("heads_hiddens", lambda: attnviz.MultiHeadAttention(num_hiddens=5, num_heads=2)),
    # attnviz.core.kernel
    ("unknown", lambda: attnviz.nadaraya_watson([1.0], [1.0], [1.0], kernel="cosine")),
    ("points_shape", lambda: attnviz.nadaraya_watson(torch.zeros(2, 2, 2), [1.0], [1.0])),
    ("features", lambda: attnviz.nadaraya_watson([[1.0, 2.0]], [1.0, 2.0], [1.0, 2.0])),
    ("kv_items", lambda: attnviz.nadaraya_watson([1.0], [1.0, 2.0, 3.0], [1.0, 2.0])),
    ("positive", lambda: attnviz.nadaraya_watson([1.0], [1.0], [1.0], bandwidth=None)),
    ("boxcar_gradient", lambda: attnviz.fit_bandwidth([1.0, 2.0], [1.0, 2.0], kernel="boxcar")),
    ("kv_items", lambda: attnviz.fit_bandwidth([1.0, 2.0, 3.0], [1.0, 2.0])),
    ("loo_points", lambda: attnviz.fit_bandwidth([1.0], [1.0])),
    ("whole_range", lambda: attnviz.fit_bandwidth([1.0, 2.0], [1.0, 2.0], epochs=0)),
    ("positive_finite", lambda: attnviz.fit_bandwidth([1.0, 2.0], [1.0, 2.0], lr=math.inf)),
    ("whole_range", lambda: kernel.make_toy_data(n_train=0)),
    # attnviz.core.flash
    ("one_sequence", lambda: flash.online_softmax_row([Q, Q], [K, K], [V, V], 0, 2)),
    ("block_size", lambda: flash.online_softmax_row(Q, K, V, 0, 0)),
    ("pair_shape", lambda: flash.online_softmax_row(Q, K, V, 0, 2, bias=torch.zeros(3, 3))),
    ("index_range", lambda: flash.online_softmax_row(Q, K, V, 5, 2)),
    ("traffic_sizes", lambda: flash.memory_traffic(0, 4, 2)),
    # attnviz.core.kvcache
    ("shape", lambda: kvcache.decode_with_cache(torch.ones(4), W, W, W)),
    ("shape", lambda: kvcache.decode_with_cache(X, torch.eye(3), W, W)),
    ("qk_size", lambda: kvcache.causal_attention(X, W, W[:2], W)),
    ("whole_from", lambda: kvcache.kv_cache_bytes_per_token(0, 8, 128)),
    # attnviz.core.sparse
    ("whole_from", lambda: sparse.sliding_window_mask(0, 2)),
    ("whole_from", lambda: sparse.sliding_window_mask(4, 0)),
    ("global_token", lambda: sparse.local_global_mask(4, 2, (9,))),
    ("whole_from", lambda: sparse.prefix_lm_mask(4, -1)),
    ("choice", lambda: sparse.scheme_mask("dilated", 4)),
    # attnviz.core.positions
    ("whole_from", lambda: positions.sinusoidal_encoding(0, 4)),
    ("even_from", lambda: positions.rope_frequencies(3)),
    ("shape", lambda: positions.apply_rope([1.0, 2.0])),
    ("even_from", lambda: positions.apply_rope(torch.zeros(2, 3))),
    ("shape", lambda: positions.apply_rope(torch.zeros(2, 4), positions=[0, 1, 2])),
    # attnviz.core.modern
    ("shape", lambda: modern.modern_attention(torch.zeros(2, 2, 2))),
    ("choice", lambda: modern.modern_attention(X, positions="learned")),
    ("pair_shape", lambda: modern.modern_attention(X, mask=torch.ones(2, 2))),
    # attnviz.core.note_attn
    ("bmm_shapes", lambda: note_attn.bmm_rule((1, 1, 64), (1, 32, 1))),
    # attnviz.core.text
    ("text_type", lambda: attnviz.tokenize(42)),
    ("whole_range", lambda: attnviz.embed_tokens(["cat"], dim=0)),
    ("no_tokens", lambda: attnviz.embed_tokens([])),
    # attnviz.models.learned.train
    ("choice", lambda: train.TrainSettings("poetry").resolved()),
    ("steps_range", lambda: train.TrainSettings("dates", steps=10**6).resolved()),
    ("induction_probe", lambda: train.check_probes(train.TrainSettings("induction", probes=("A B Z",)))),
    ("dates_probe", lambda: train.check_probes(train.TrainSettings("dates", probes=("",)))),
    ("not_checkpoint", lambda: train.load_run_bytes(b"\x02\x00\x00\x00\x00\x00\x00\x00{}")),
    ("not_checkpoint_file", lambda: train.load_run_bytes(b"\x02\x00\x00\x00\x00\x00\x00\x00{}", "run.safetensors")),
    # attnviz.lessons.explain
    ("index_range", lambda: explain_row(attnviz.attend(Q, K, V), 7, "q", ["a", "b", "c"])),
]

# Three or more words of ASCII letters in a row: an English sentence, not a code name (W_q, torch.bmm, A-T).
ENGLISH = re.compile(r"(?<![\w.'-])[A-Za-z]+(?: [A-Za-z]+){2,}(?![\w'-])")


def english_in(text: str) -> list[str]:
    return ENGLISH.findall(text)


def raised(call: Callable[[], object]) -> AttnvizError:
    with pytest.raises(AttnvizError) as info:
        call()
    return info.value


def check_coded(error: AttnvizError, code: str) -> None:
    assert isinstance(error, ValueError)  # existing `except ValueError` keeps catching it
    assert error.code == code, str(error)
    assert str(error) == render(error, "en")
    for lang in LANGUAGES:  # every catalogue has the message, with the same placeholders
        assert render(error, lang)
    chinese = render(error, "zh-Hans")
    assert not english_in(chinese), f"{code}: English in the Chinese message {chinese!r}"
    assert not english_in(render(error, "zh-Hant")), code


@pytest.mark.parametrize(("code", "call"), CASES, ids=[f"{i}-{code}" for i, (code, _) in enumerate(CASES)])
def test_bad_input_raises_a_coded_error_shown_in_chinese(code, call):
    check_coded(raised(call), code)


def test_the_english_sentence_check_finds_english():
    assert english_in("x must be text; 收到的是 3")
    assert not english_in("W_q 和 W_k 给出的向量维度必须相同；收到的是 (3, 4) 和 torch.bmm 的 A-T")


def test_the_english_message_keeps_what_notebook_users_read():
    error = raised(lambda: attnviz.attend(Q, K, V[:2]))
    assert str(error) == (
        "keys and values must have the same number of items (one value per key); got 3 keys and 2 values"
    )
    error = raised(lambda: sparse.sliding_window_mask(4, "three"))
    assert str(error) == "window must be a whole number from 1; got 'three'"
    assert error.params["value"] == "'three'"


def test_a_long_value_is_shortened_in_the_message():
    error = raised(lambda: sparse.scheme_mask("x" * 500, 4))
    assert error.params["value"].endswith("…") and len(str(error)) < 200


@pytest.fixture(scope="module")
def model():
    from attnviz.models.bert import ModelUnavailableError, load_minilm

    try:
        return load_minilm()
    except ModelUnavailableError as exc:  # the model is an optional install
        pytest.skip(str(exc))


def test_the_pretrained_models_bad_input_is_coded(model):
    check_coded(raised(lambda: model.encode(42)), "text_type")
    check_coded(raised(lambda: model.encode("a cat", pair=42)), "text_type")
    check_coded(raised(lambda: model.word_vectors(None)), "text_type")
    empty = torch.zeros(0, dtype=torch.long)
    check_coded(raised(lambda: model.forward(empty, empty)), "model_tokens")
    trace = model.run("the cat sat")
    check_coded(raised(lambda: trace.head(6, 0)), "index_range")
    check_coded(raised(lambda: trace.head(0, 12)), "index_range")


# Plain errors that stay: programming errors of the code calling them, never a user's input. "path: text".
ALLOWED_PLAIN = {
    # A helper of the dates task's data: it is only called with the days and months of real dates.
    'attnviz/models/learned/dates.py: raise ValueError(f"chinese_number reads 1 to 99; got {number}")',
    # The app and attnviz.notebook pass one head's trace; a batched trace here is a caller's mistake.
    'attnviz/lessons/explain.py: raise ValueError("explain_row takes an unbatched trace (one sequence, one head)")',
}
PLAIN = re.compile(r"raise (?:ValueError|TypeError)\((?:[^()]|\([^()]*\))*\)?")


def plain_raises() -> set[str]:
    found = set()
    for package in ("core", "models", "lessons"):
        for path in sorted((ROOT / "attnviz" / package).rglob("*.py")):
            for match in PLAIN.finditer(path.read_text(encoding="utf-8")):
                found.add(f"{path.relative_to(ROOT).as_posix()}: {match.group(0)}")
    return found


def test_no_plain_error_is_raised_on_bad_input():
    assert plain_raises() == ALLOWED_PLAIN, "raise AttnvizError(code, ...) and add error.<code> to the catalogues"


def test_the_scan_finds_a_plain_raise():
    assert PLAIN.search('    raise ValueError(f"n must be at least {low}")')
    assert PLAIN.search("raise TypeError(\n    'bad'\n)")
