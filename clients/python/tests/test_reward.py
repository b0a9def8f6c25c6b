import json

import pytest

from bioalchemy_client import compute_score, score
from conftest import REPO

CASES = json.loads((REPO / "test" / "fixtures" / "reward-cases.json").read_text())


def test_the_table_has_forty_cases_of_both_kinds():
    assert len(CASES) >= 40
    assert {c["kind"] for c in CASES} == {"mcq", "free-form"}


@pytest.mark.parametrize("case", CASES, ids=[c["note"] for c in CASES])
def test_same_rules_as_typescript(case):
    r = score(case["kind"], case["ground_truth"], case["output"], options=case["options"],
              aliases=case.get("aliases", []))
    assert r["score"] == case["score"], r["reason"]


def test_compute_score_has_verls_signature():
    extra = {"kind": "mcq", "options": ["a", "b", "c", "d"]}
    assert compute_score("bioalchemy", "Answer: C", "C", extra) == 1.0
    assert compute_score("bioalchemy", "\\boxed{B}", "C", extra) == 0.0
    assert compute_score("bioalchemy", "\\boxed{mitochondria}", "Mitochondria") == 1.0
