"""The tests' message matcher: it finds a message by its id whatever the wording, and no other message."""

from __future__ import annotations

from tests.messages import message, pattern, says, text_pattern


def test_a_message_is_found_with_its_placeholders_filled_in_or_left_open():
    shown = "Note: " + message("modern.pair_count", scored=45, total=256, share="17.6%", causal=136) + " More."
    assert says(shown, "modern.pair_count", scored=45, total=256, share="17.6%", causal=136)
    assert says(shown, "modern.pair_count", scored=45)  # the others: any text
    assert not says(shown, "modern.pair_count", scored=46)
    assert not says(shown, "modern.check_equal")  # another message
    found = pattern("modern.pair_count", total=256).search(shown)
    assert found["scored"] == "45" and found["causal"] == "136"


def test_a_message_is_found_in_its_language_only():
    chinese = message("modern.pair_count", "zh-Hans", scored=45, total=256, share="17.6%", causal=136)
    assert says(chinese, "modern.pair_count", "zh-Hans", scored=45)
    assert not says(chinese, "modern.pair_count", scored=45)


def test_a_placeholder_at_the_end_captures_the_rest_of_the_line():
    shown = message("error.rope_odd", size=3) + "1\nnext line"
    assert pattern("error.rope_odd").search(shown)["size"] == "31"


def test_the_pattern_for_a_browser_has_no_named_groups():
    text = text_pattern("modern.pair_count", scored=45)
    assert "(?P" not in text.pattern
    assert text.search(message("modern.pair_count", scored=45, total=256, share="17.6%", causal=136))
