"""The URL codec and the editor-cell parser: round trips, compact links, clear errors."""

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnviz.app.pipeline import matrix_from_cells
from attnviz.app.state import (
    AttentionState,
    KernelState,
    decode_attention,
    decode_kernel,
    default_attention_state,
    encode_attention,
    encode_kernel,
)
from attnviz.core.errors import AttnvizError, Name

numbers = st.floats(-1000, 1000, allow_nan=False).map(lambda x: float(f"{x:.6g}"))
matrices = (
    st.integers(1, 6)
    .flatmap(lambda cols: st.lists(st.lists(numbers, min_size=cols, max_size=cols).map(tuple), min_size=1, max_size=6))
    .map(tuple)
)


@settings(max_examples=60, deadline=None)
@given(
    matrix=matrices,
    score=st.sampled_from(["dot", "cosine", "additive", "gaussian"]),
    temperature=st.sampled_from([0.25, 1.0, 3.0]),
    causal=st.booleans(),
    heads=st.integers(1, 3),
    page=st.sampled_from(["self", "cross"]),
)
def test_attention_state_survives_the_url(matrix, score, temperature, causal, heads, page):
    state = replace(
        default_attention_state(page),
        mode="numbers",
        queries=matrix,
        score=score,
        temperature=temperature,
        causal=causal,
        heads=heads,
    )
    if page == "self":
        state = replace(state, keys=matrix, values=matrix)
    params = encode_attention(state)
    assert all(isinstance(v, str) for v in params.values())
    decoded = decode_attention(params, page)
    assert decoded.warnings == []
    assert decoded.state == state


def test_sentence_state_round_trip_and_link_is_compact():
    state = replace(
        default_attention_state("self"),
        sentence="我爱 attention, <b>x</b> & more",
        score="cosine",
        lens_mode="per_query",
        lens=(1, 2, 3),
    )
    params = encode_attention(state)
    assert decode_attention(params, "self").state == state
    assert len("&".join(f"{k}={v}" for k, v in params.items())) < 200


def test_default_state_has_an_empty_link():
    assert encode_attention(default_attention_state("self")) == {}
    assert encode_kernel(KernelState()) == {}


def test_kernel_state_round_trip():
    state = replace(
        KernelState(),
        preset="",
        keys=(1.0, 2.5),
        values=(3.0, -4.0),
        queries=(2.0,),
        kernel="epanechnikov",
        bandwidth=0.75,
    )
    assert decode_kernel(encode_kernel(state)).state == state


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"sc": "__import__('os')"}, "'sc'"),
        ({"q": "1,2;3"}, "'q'"),
        ({"q": "1,nan"}, "'q'"),
        ({"q": "1e309,2"}, "'q'"),
        ({"h": "-1"}, "'h'"),
        ({"T": "0"}, "'T'"),
        ({"vl": "a,b"}, "'vl'"),
        ({"s": "x" * 3000}, "'s'"),
        ({"q": ";".join(["1"] * 500)}, "'q'"),
    ],
)
def test_bad_link_fields_warn_and_fall_back_to_their_default(params, field):
    decoded = decode_attention(params, "self")
    assert len(decoded.warnings) == 1 and field in str(decoded.warnings[0])
    assert decoded.state == default_attention_state("self")


@pytest.mark.parametrize(
    ("cells", "code", "params"),
    [
        ([[1.0, None]], "no_complete_rows", {}),
        ([[1.0, float("nan")]], "no_complete_rows", {}),
        ([[1.0, "abc"]], "cell_text", {"row": 1, "value": "abc"}),
        ([[1.0, float("inf")]], "cell_large", {"row": 1, "value": "inf"}),
        ([[1.0, 2.0], [3.0]], "ragged", {"row": 2, "count": 1, "width": 2}),
        ([], "no_rows", {}),
    ],
)
def test_editor_cells_errors_name_the_cell(cells, code, params):
    with pytest.raises(AttnvizError) as info:
        matrix_from_cells(cells, "queries", ["d1", "d2"])
    assert info.value.code == code and info.value.params["name"] == Name("queries")
    assert params.items() <= info.value.params.items()


def test_editor_cells_parse_numbers():
    assert matrix_from_cells([[1, "2.5"], [0.0, -3]], "queries").matrix == ((1.0, 2.5), (0.0, -3.0))


def test_state_is_a_plain_value():
    assert AttentionState() == AttentionState()
