import os
import re

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from bioalchemy_client import score
from bioalchemy_client.reward import _RULES

# Issue 50: the reward pays where the reference occurs and refuses only what a policy could game, as
# properties over generated references (names, one-word terms, counts, years) and answers in the shapes
# people write; the same properties run under fast-check in test/feeder/reward-people.test.ts.
PROPERTIES = settings(max_examples=150, deadline=None, derandomize=not os.environ.get("HYPOTHESIS_RANDOM"),
                      suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])

_TABLE_WORDS = set()
for _key in ("fillers", "negators", "continuations", "listWords", "clauseWords", "unitWords", "nameParticles",
             "months"):
    _TABLE_WORDS |= set(_RULES[_key].split(" "))
_TABLE_WORDS |= set(_RULES["numberWords"]) | set(_RULES["subjectVerbs"]["words"].split(" "))

# A made-up word no table of the rules holds, of at least four letters.
WORD = st.lists(st.tuples(st.sampled_from("bcdfghklmnprstvz"), st.sampled_from("aeiou")), min_size=2,
                max_size=3).map(lambda syllables: "".join(c + v for c, v in syllables)).filter(
                    lambda w: w not in _TABLE_WORDS)

NAME = st.tuples(WORD, WORD, WORD).filter(lambda t: t[1][0] != t[2][0]).map(
    lambda t: ("name", f"{t[0].capitalize()} {t[1].capitalize()}", f"{t[0].capitalize()} {t[2].capitalize()}"))
TERM = st.tuples(WORD, WORD).filter(lambda t: t[0][0] != t[1][0]).map(lambda t: ("term", t[0], t[1]))
COUNT = st.tuples(st.integers(2, 999), st.integers(2, 999)).filter(lambda t: t[0] != t[1]).map(
    lambda t: ("count", str(t[0]), str(t[1])))
YEAR = st.tuples(st.integers(1000, 2099), st.integers(1000, 2099)).filter(lambda t: t[0] != t[1]).map(
    lambda t: ("year", str(t[0]), str(t[1])))
# (kind, the reference, another candidate of the same kind that is not it)
PAIR = st.one_of(NAME, TERM, COUNT, YEAR)

# Correct answers as people write them, the reference standing for X.
ANSWERS = ["X.", "The answer is X.", "I believe it is X.", "Answer: X", "It was X, as the record shows."]
# Sentences that name nothing, deny nothing and hedge nothing.
NEUTRAL = ["Many sources agree on this point.", "The question concerns a well-known topic.",
           "Historians have written about it at length.", "Hope this helps!", "Quiz books often ask about this.",
           "It is a question that people do not often ask."]
PADDING = st.lists(st.sampled_from(NEUTRAL), max_size=3)


def pays(reference, output):
    return score("free-form", reference, output)


def fill(template, x):
    return template.replace("X", x, 1)


@PROPERTIES
@given(PAIR, st.sampled_from(ANSWERS), PADDING, PADDING)
def test_padding_a_correct_answer_with_neutral_sentences_never_turns_it_to_0(pair, answer, before, after):
    _, reference, _ = pair
    assert pays(reference, fill(answer, reference))["score"] == 1
    output = "\n".join([*before, fill(answer, reference), *after])
    r = pays(reference, output)
    assert r["score"] == 1, (r["reason"], output)


@PROPERTIES
@given(PAIR, st.sampled_from(ANSWERS), st.sampled_from(["X or Y", "Y or X", "X, Y", "either X or Y", "X and/or Y",
                                                        "X (or Y)",
                                                        # a head of the rules' table, a longer name on one last word
                                                        "the X pathway or the Y pathway", "the X River or the Y River",
                                                        "the X River, the Y River"]),
       st.lists(st.sampled_from(NEUTRAL), max_size=2))
def test_a_second_candidate_of_the_same_kind_in_the_final_answer_always_turns_it_to_0(pair, answer, hedge, before):
    _, reference, other = pair
    final = fill(answer, hedge.replace("X", reference).replace("Y", other))
    output = "\n".join([*before, final])
    r = pays(reference, output)
    assert r["score"] == 0, (r["reason"], output)


def _accented(s):
    return re.sub("[aeiou]", lambda m: m.group(0) + "\u0301", s, count=1)


@PROPERTIES
@given(PAIR, st.sampled_from(ANSWERS), st.booleans(), st.lists(st.sampled_from(NEUTRAL), max_size=2))
def test_accents_case_articles_and_punctuation_never_change_a_score(pair, answer, right, after):
    kind, reference, other = pair
    x = reference if right else other
    output = "\n".join([fill(answer, x), *after])
    want = pays(reference, output)["score"]
    assert want == (1 if right else 0)
    bare = re.sub(r"[.!]\Z", "", output)
    variants = [output.replace(x, _accented(x), 1), output.lower(), output.upper(), output.replace(x, f"the {x}", 1),
                output.replace(x, f'"{x}"', 1), bare or output, f"{bare}!"]
    # Numbers have no case or accents; an article before a number is no article of it.
    for v in variants[4:] if kind in ("count", "year") else variants:
        r = pays(reference, v)
        assert r["score"] == want, (r["reason"], v)
    # The reference written with accents pays the answer without them, and the other way.
    if kind in ("name", "term"):
        assert pays(_accented(reference), output)["score"] == want


_REGIONS = sorted(r for r in _RULES["regions"]["names"] if r not in _TABLE_WORDS)


def _titled(region):
    return " ".join(w.capitalize() for w in region.split(" "))


@PROPERTIES
@given(st.one_of(NAME, TERM), st.sampled_from(_REGIONS), st.sampled_from(_REGIONS), st.sampled_from(ANSWERS))
def test_a_place_and_a_region_after_a_comma_pays_the_place_or_the_region_and_two_regions_never_pay(
        pair, region, other, answer):
    _, reference, _ = pair
    place = f"{reference}, {_titled(region)}"
    r = pays(reference, fill(answer, place))
    assert r["score"] == 1, (r["reason"], fill(answer, place))
    r = pays(region, fill(answer, place))
    assert r["score"] == 1, (r["reason"], fill(answer, place))
    assume(other != region)
    two = fill(answer, f"{_titled(region)}, {_titled(other)}")
    r = pays(region, two)
    assert r["score"] == 0, (r["reason"], two)


@PROPERTIES
@given(st.one_of(NAME, TERM), st.sampled_from(ANSWERS), st.booleans(), st.sampled_from(["1", "2", "12"]),
       st.lists(st.sampled_from(NEUTRAL), max_size=2))
def test_a_citation_mark_run_into_the_answer_never_changes_a_score(pair, answer, right, mark, after):
    # citationDigits: "X1.", "X12," as search-backed assistants copy their citation marks.
    _, reference, other = pair
    x = reference if right else other
    output = "\n".join([fill(answer, x), *after])
    cited = "\n".join([fill(answer, f"{x}{mark}"), *after])
    r = pays(reference, cited)
    assert r["score"] == pays(reference, output)["score"], (r["reason"], cited)
    assert r["score"] == (1 if right else 0)


TITLE = st.tuples(WORD, WORD, WORD, WORD).filter(lambda t: t[2][0] != t[3][0]).map(
    lambda t: (f"{t[0].capitalize()} {t[1]} {t[2].capitalize()}", f"{t[0].capitalize()} {t[1]} {t[3].capitalize()}",
               (t[0].capitalize(), t[1])))


@PROPERTIES
@given(TITLE, st.sampled_from(ANSWERS), st.booleans(), st.lists(st.sampled_from(NEUTRAL), max_size=2))
def test_a_titles_inner_punctuation_never_changes_a_score(title, answer, right, after):
    # loosePunctuation: a comma between a title's words, quotes around one.
    reference, other, (a, b) = title
    x = reference if right else other
    last = x.split(" ")[2]
    output = "\n".join([fill(answer, x), *after])
    assert pays(reference, output)["score"] == (1 if right else 0)
    for written in (f"{a} {b}, {last}", f"{a}, {b} {last}", f'{a} "{b}" {last}'):
        v = "\n".join([fill(answer, written), *after])
        r = pays(reference, v)
        assert r["score"] == (1 if right else 0), (r["reason"], v)
