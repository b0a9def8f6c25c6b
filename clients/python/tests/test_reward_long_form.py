import json
import os
import subprocess

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from bioalchemy_client import score
from bioalchemy_client.reward_rules import _REMARKS
from conftest import REPO

# Issue 45: the reward against labels on long-form outputs (test/fixtures/reward-long-form.json), the table
# test/feeder/reward-long-form.test.ts runs too. A row marked beyondRules is right by meaning only: the rules
# give it 0 (the verifier model decides it).
ROWS = json.loads((REPO / "test" / "fixtures" / "reward-long-form.json").read_text())
PROPERTIES = settings(max_examples=150, deadline=None, derandomize=not os.environ.get("HYPOTHESIS_RANDOM"),
                      suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])


def _score(row, output=None):
    return score(row["kind"], row["ground_truth"], row["output"] if output is None else output,
                 options=row["options"], aliases=row.get("aliases", []))


@pytest.mark.parametrize("row", ROWS, ids=[f"{r['class']}: {r['note']}" for r in ROWS])
def test_the_reward_agrees_with_the_labels(row):
    r = _score(row)
    assert r["score"] == (0 if row.get("beyondRules") else row["label"]), r["reason"]


REMARK_LINES = [f"{r[0].upper()}{r[1:]}!" for r in _REMARKS] + [
    f"{label}: {level}" for label in ("Confidence", "Certainty") for level in ("high", "medium", "low", "90%", "0.8")]


def test_typescript_and_python_agree_row_for_row():
    """Each row as written and with a remark line after it, scored by reward/score.ts and by this port."""
    items = []
    for row in ROWS:
        for output in (row["output"], row["output"] + "\n\nConfidence: high", row["output"] + "\nHope this helps!"):
            items.append({"kind": row["kind"], "ground_truth": row["ground_truth"], "options": row["options"],
                          "aliases": row.get("aliases", []), "output": output})
    run = subprocess.run(["npx", "tsx", "test/feeder/reward-score.ts"], cwd=REPO, capture_output=True, text=True,
                         input="".join(json.dumps(i) + "\n" for i in items), check=True)
    typescript = [json.loads(line) for line in run.stdout.split("\n") if line]  # not splitlines: \x85
    assert len(typescript) == len(items)
    python = [score(i["kind"], i["ground_truth"], i["output"], options=i["options"], aliases=i["aliases"])
              for i in items]
    differ = [(i["output"][-120:], t, p) for i, t, p in zip(items, typescript, python) if t != p]
    assert not differ, differ[:5]
    assert 0 < sum(r["score"] for r in python) < len(python)


PAID = [r for r in ROWS if r["label"] == 1 and not r.get("beyondRules")]


@PROPERTIES
@given(st.sampled_from(PAID), st.sampled_from(REMARK_LINES), st.sampled_from(["\n", "\n\n"]))
def test_a_trailing_remark_after_a_correct_answer_never_turns_1_into_0(row, line, gap):
    r = _score(row, row["output"] + gap + line)
    assert r["score"] == 1, (line, r["reason"])


TEMPLATES = [
    "The answer is {n}.",
    "Counting both sets, there are {n} copies in total.",
    "Let me work it out.\n\nEach parent gives half.\n\nAnswer: {n}[2]",
    "\\boxed{{{n}}}",
    "So the final count is {n}. It is the usual number for this species.",
]


@PROPERTIES
@given(st.integers(0, 3000), st.integers(-40, 40).filter(lambda d: d != 0), st.sampled_from(TEMPLATES))
def test_a_wrong_integer_never_pays_and_the_right_one_does(n, d, template):
    wrong = n + d
    assume(wrong >= 0)
    assert score("free-form", str(n), template.format(n=wrong))["score"] == 0, (n, wrong)
    assert score("free-form", str(n), template.format(n=n))["score"] == 1, n


OPTIONS = ["Mitochondria", "Ribosome", "Golgi apparatus", "Nucleus", "Lysosome"]


@PROPERTIES
@given(st.integers(0, 4), st.integers(0, 4),
       st.sampled_from(["Choice {L}: {T}", "{L}) {T}", "Option {L}: {T}", "({L}) {T}"]),
       st.sampled_from(["Answer: {L}", "Solution: Choice_{L}", "The best fit is {L}.", "Final answer: {L}"]))
def test_options_restated_in_the_reasoning_pay_only_the_final_choice(key, chosen, restate, final):
    listed = "\n".join(restate.replace("{L}", "ABCDE"[i]).replace("{T}", t) for i, t in enumerate(OPTIONS))
    output = (f"Let me list the options.\n\n{listed}\n\nWeighing them, one organelle fits.\n\n"
              + final.replace("{L}", "ABCDE"[chosen]))
    r = score("mcq", "ABCDE"[key], output, options=OPTIONS)
    assert r["score"] == (1 if key == chosen else 0), (output, r["reason"])
