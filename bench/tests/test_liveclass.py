"""The live-class benchmark's own arithmetic (bench/liveclass/measures.py, browser.py), on hand-made records."""

from __future__ import annotations

import pytest

from bench.liveclass.browser import cookie_pair, poll_answer
from bench.liveclass.measures import (
    aggregate_delay,
    answered_counts,
    change_cost,
    lost_answers,
    page_state,
    percentile,
    propagation,
    summary_ms,
)


def test_nearest_rank_percentiles():
    values = [0.5, 0.1, 0.4, 0.2, 0.3, 0.9, 0.8, 0.7, 0.6, 1.0]
    assert percentile(values, 50) == 0.5
    assert percentile(values, 95) == 1.0
    assert percentile(values, 90) == 0.9
    assert percentile(values, 100) == 1.0
    assert percentile([], 50) is None
    assert summary_ms([0.25, 0.5]) == {"n": 2, "p50_ms": 250.0, "p95_ms": 500.0, "max_ms": 500.0}


def test_page_state_leaves_out_the_class_and_keeps_the_last_of_a_repeated_parameter():
    assert page_state("T=1.5&class=AB12CD&s=a+b&T=2") == {"T": "2", "s": "a b"}
    assert page_state("class=AB12CD&teach=xyz") == {}


def test_propagation_matches_each_change_to_the_first_address_carrying_it_after_it_was_sent():
    changes = [(10.0, 10.2, {"T": "1.5"}), (12.0, 12.1, {"T": "0.7"}), (14.0, 14.3, {"bw": "2.25"})]
    seen = [
        (9.0, "class=X&T=1.5"),  # before the change was sent: an older state, not this change
        (10.5, "class=X&T=1.5"),
        (12.4, "T=0.7&class=X"),
        (12.9, "T=0.7&class=X&s=extra"),  # another state: not a match
    ]
    delays, missed = propagation(changes, seen)
    assert delays == pytest.approx([0.3, 0.3])
    assert missed == 1  # the page switch never reached this page
    # Published during the teacher's run: the student may show it before that run's end reached the teacher
    delays, missed = propagation([(5.0, 5.5, {"T": "3"})], [(5.4, "T=3&class=X")])
    assert delays == pytest.approx([-0.1]) and missed == 0


def test_aggregate_delay_waits_for_the_first_count_of_everyone_after_the_last_answer():
    metrics = [(1.0, "3 of 5 answered"), (2.0, "5 of 5 answered"), (4.0, "4 of 5 answered"), (5.5, "5 of 5 answered")]
    assert aggregate_delay(3.0, metrics, 5) == pytest.approx(2.5)
    assert aggregate_delay(1.5, metrics, 5) == pytest.approx(0.5)
    assert aggregate_delay(6.0, metrics, 5) is None
    assert answered_counts("17 of 28 answered") == (17, 28)
    assert answered_counts("已回答 17 / 28") == (17, 28)
    assert answered_counts("nothing") is None


def test_an_answer_is_lost_when_the_store_lacks_it_or_holds_another():
    acknowledged = {"a": "1", "b": "2", "c": "0.5"}
    assert lost_answers(acknowledged, {"a": "1", "b": "3", "d": "1"}) == ["b", "c"]
    assert lost_answers(acknowledged, dict(acknowledged)) == []


def test_a_changes_cost_is_its_phases_cpu_less_the_idle_rate_per_change():
    assert change_cost(cpu=1.2, seconds=20.0, idle_rate=0.01, changes=10) == pytest.approx(0.1)
    assert change_cost(cpu=0.1, seconds=20.0, idle_rate=0.01, changes=10) == 0.0  # never below nothing
    assert change_cost(cpu=1.0, seconds=20.0, idle_rate=0.0, changes=0) is None


def test_the_version_endpoints_answers_as_the_follower_component_reads_them():
    assert poll_answer(200, b'{"version": 7}') == {"version": 7}
    assert poll_answer(200, b'e\r\n{"version":7}\r\n0\r\n\r\n') == {"version": 7}  # chunked
    assert poll_answer(404, b"") == {"ended": True}
    assert poll_answer(502, b"<html>bad gateway</html>") is None
    assert poll_answer(200, b"not json") is None


def test_a_cookie_assignment_gives_its_name_and_value():
    assert cookie_pair("attnviz_class_AB12CD=t:secret; Path=/; Max-Age=43200") == ("attnviz_class_AB12CD", "t:secret")
    assert cookie_pair("") is None
    assert cookie_pair("=x; Path=/") is None
