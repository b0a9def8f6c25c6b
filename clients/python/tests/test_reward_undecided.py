"""Issue 61: the rules decide what they can and leave the rest undecided (read_answer's span: the only outputs
a verifier is asked about). The table test/fixtures/reward-undecided.json holds invented outputs of each class;
the properties hold them over generated names, dates and lists. test/feeder/reward-undecided.test.ts reads the
same table and runs the same properties under fast-check."""

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bioalchemy_client.reward import read_answer

TABLE = json.loads((Path(__file__).resolve().parents[3] / "test" / "fixtures" / "reward-undecided.json").read_text())
PROPERTIES = settings(max_examples=150, deadline=None, derandomize=not os.environ.get("HYPOTHESIS_RANDOM"),
                      suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])


def read(ground_truth, output, aliases=()):
    return read_answer("free-form", ground_truth, output, aliases=list(aliases))


# A made-up capitalised word ("Vantor"): no table of the rules holds one.
WORD = st.lists(st.tuples(st.sampled_from("bdfgklmnprtvz"), st.sampled_from("aeiou")), min_size=2,
                max_size=3).map(lambda syllables: "".join(c + v for c, v in syllables).capitalize())
# Three people whose last names open with different letters.
NAMES = st.lists(st.tuples(WORD, WORD), min_size=3, max_size=3, unique_by=lambda p: p[1][0])
MONTHS = ["January", "March", "April", "June", "August", "October", "December"]
DATE = st.tuples(st.integers(1, 28), st.sampled_from(MONTHS), st.integers(1700, 2030))


def ordinal(d):
    return f"{d}{'st' if d in (1, 21) else 'nd' if d in (2, 22) else 'rd' if d in (3, 23) else 'th'}"


@pytest.mark.parametrize("row", TABLE["rows"], ids=lambda r: r["note"])
def test_table(row):
    result, undecided = read(row["ground_truth"], row["output"], row.get("aliases", []))
    assert result["score"] == row["score"], result["reason"]
    assert (undecided is not None) == row["undecided"], result["reason"]


@PROPERTIES
@given(NAMES, st.integers(0, 2))
def test_a_list_without_a_disjunction_is_undecided_and_a_hedge_is_refused(people, at):
    a, b, c = (f"{f} {l}" for f, l in people)
    reference = [a, b, c][at]
    result, undecided = read(reference, f"The founders were {a}, {b} and {c}.")
    assert result["score"] == 0 and undecided is not None, result["reason"]
    result, undecided = read(reference, f"The founder was {a}, {b} or {c}.")
    assert result["score"] == 0 and undecided is None, result["reason"]


@PROPERTIES
@given(DATE, st.sampled_from(MONTHS), st.integers(1, 30))
def test_a_date_pays_in_either_order_and_another_month_or_year_is_decided_0(when, other, later):
    day, month, year = when
    writings = [f"{month} {day}, {year}", f"{day} {month} {year}", f"the {ordinal(day)} of {month}, {year}",
                f"{month} {ordinal(day)} {year}"]
    for reference in (f"{month} {day}, {year}", f"{day} {month} {year}", f"{month} {year}"):
        for written in writings:
            result, _ = read(reference, f"It was first held on {written}.")
            assert result["score"] == 1, f"{reference} | {written}: {result['reason']}"
    if other != month:
        result, undecided = read(f"{month} {day}, {year}", f"It was first held on {other} {day}, {year}.",
                                 [str(year)])
        assert (result["score"], undecided) == (0, None), result["reason"]
    result, undecided = read(f"{month} {year}", f"It was first held in {year + later}.")
    assert (result["score"], undecided) == (0, None), result["reason"]


@PROPERTIES
@given(NAMES)
def test_a_capitalised_answer_glued_to_the_word_before_it_pays_as_if_spaced(people):
    first, last = people[0]
    reference = f"{first} {last}"
    assert read(reference, f"The role went to{reference}.")[0] == read(reference, f"The role went to {reference}.")[0]


@PROPERTIES
@given(NAMES, st.integers(0, 2), st.sampled_from([".", ")"]))
def test_the_reference_as_one_numbered_item_of_three_or_more_is_undecided(people, at, mark):
    items = [f"{f} {l}" for f, l in people]
    lines = [f"{k + 1}{mark} {item}" for k, item in enumerate(items)]
    result, undecided = read(items[at], "\n".join(["Some candidates:", *lines]))
    assert result["score"] == 0 and undecided is not None, result["reason"]
