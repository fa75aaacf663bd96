"""The explanation maps on the shipped dates model: blank-out with a character of the same class, against single
forward passes written out here."""

from __future__ import annotations

import string

import pytest
import torch

from attnviz.models.learned.dates import CHINESE_DIGITS, INPUT_INDEX, OUTPUT_INDEX
from attnviz.models.learned.dates_attribution import SEPARATORS, dates_maps, same_class
from attnviz.models.learned.train import checkpoint_path, load_run


@pytest.fixture(scope="module")
def model():
    return load_run(checkpoint_path("dates")).model


def test_a_character_is_replaced_by_another_of_its_class():
    for group in (string.digits, CHINESE_DIGITS, string.ascii_lowercase, SEPARATORS):
        for character in group:
            if character in INPUT_INDEX:
                other = same_class(character)
                assert other != character and other in group and other in INPUT_INDEX, (character, other)
    assert same_class("年") == "年"  # no class of its own: left as it is


def test_blank_out_is_the_drop_of_the_written_characters_log_probability(model):
    text, step = "19 April 2024", 9  # the day's last digit
    maps = dates_maps(model, text, step)
    assert maps.output == "2024-04-19" and len(maps.raw) == len(text) == len(maps.blank_out)
    assert float(maps.raw.sum()) == pytest.approx(1.0, abs=1e-5)
    output = torch.tensor([[OUTPUT_INDEX[c] for c in maps.output]])

    def log_prob(written: str) -> float:
        ids = torch.tensor([[INPUT_INDEX[c] for c in written]])
        with torch.no_grad():
            logits = model(ids, torch.tensor([len(written)]), output)[0, step]
        return float(torch.log_softmax(logits, dim=-1)[output[0, step]])

    assert maps.log_prob == pytest.approx(log_prob(text), abs=1e-5)
    for position in (0, 1, 3, 12):
        blanked = text[:position] + same_class(text[position]) + text[position + 1 :]
        assert float(maps.blank_out[position]) == pytest.approx(maps.log_prob - log_prob(blanked), abs=1e-5)
    assert int(maps.blank_out.argmax()) == 1 and int(maps.raw.argmax()) == 1  # the "9" of "19"
