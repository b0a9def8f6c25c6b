import importlib.util
import json
import subprocess

import numpy as np
import pytest

from bioalchemy_client import compute_score, score
from conftest import REPO

# The same two tables run in test/feeder/reward.test.ts: one set of rules, two languages.
CASES = json.loads((REPO / "test" / "fixtures" / "reward-cases.json").read_text())
ADVERSARIAL = json.loads((REPO / "test" / "fixtures" / "reward-adversarial.json").read_text())
ORGANELLES = ["Mitochondria", "Ribosome", "Golgi apparatus", "Nucleus"]


def test_the_tables_cover_both_kinds_right_and_wrong():
    assert len(CASES) >= 60
    assert {(c["kind"], c["score"]) for c in CASES} == {("mcq", 0), ("mcq", 1), ("free-form", 0), ("free-form", 1)}
    assert len(ADVERSARIAL) >= 100 and "score" not in ADVERSARIAL[0]


@pytest.mark.parametrize("case", CASES, ids=[c["note"] for c in CASES])
def test_same_rules_as_typescript(case):
    r = score(case["kind"], case["ground_truth"], case["output"], options=case["options"],
              aliases=case.get("aliases", []))
    assert r["score"] == case["score"], r["reason"]


@pytest.mark.parametrize("row", ADVERSARIAL, ids=[r["note"] for r in ADVERSARIAL])
def test_outputs_built_to_game_the_reward_score_0(row):
    r = score(row["kind"], row["ground_truth"], row["output"], options=row["options"],
              aliases=row.get("aliases", []))
    assert r["score"] == 0, r["reason"]


def test_compute_score_reads_the_ground_truth_of_current_rows_without_extra_info():
    truth = {"answer": "C", "kind": "mcq", "options": ORGANELLES, "aliases": ["Golgi apparatus"]}
    assert compute_score("bioalchemy", "The answer is the Golgi apparatus.", truth) == 1.0
    assert compute_score("bioalchemy", "\\boxed{B}", truth) == 0.0
    free = {"answer": "deoxyribonucleic acid (DNA)", "kind": "free-form", "options": [],
            "aliases": ["deoxyribonucleic acid", "DNA"]}
    assert compute_score("bioalchemy", "\\boxed{DNA}", free) == 1.0


def test_compute_score_takes_numpy_arrays_as_pandas_reads_parquet():
    # pandas gives list columns inside structs as numpy arrays; `x or []` on one raises
    # "The truth value of an array with more than one element is ambiguous".
    truth = {"answer": "C", "kind": "mcq", "options": np.array(ORGANELLES, dtype=object),
             "aliases": np.array(["Golgi apparatus"], dtype=object)}
    assert compute_score("bioalchemy", "Golgi apparatus", truth) == 1.0
    assert compute_score("bioalchemy", "Ribosome", truth, {"options": np.array(ORGANELLES, dtype=object)}) == 0.0
    empty = {"answer": "increase", "kind": "free-form", "options": np.array([], dtype=object),
             "aliases": np.array([], dtype=object)}
    assert compute_score("bioalchemy", "It will increase.", empty) == 1.0


def test_compute_score_loads_as_verl_loads_a_custom_reward_file():
    # verl's load_extern_object executes custom_reward_function.path without putting the module in
    # sys.modules; a dataclass in it then fails to build ("'NoneType' object has no attribute '__dict__'").
    path = REPO / "clients" / "python" / "bioalchemy_client" / "reward.py"
    spec = importlib.util.spec_from_file_location(f"custom_module_{hash(str(path))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    truth = {"answer": "C", "kind": "mcq", "options": np.array(ORGANELLES, dtype=object), "aliases": np.array([])}
    assert module.compute_score("bioalchemy", "The Golgi apparatus.", truth) == 1.0


def test_compute_score_keeps_the_old_row_shape():
    extra = {"kind": "mcq", "options": np.array(ORGANELLES, dtype=object)}
    assert compute_score("bioalchemy", "Answer: c", "C", extra) == 1.0
    assert compute_score("bioalchemy", "Golgi apparatus", "C", extra) == 1.0
    assert compute_score("bioalchemy", "\\boxed{B}", "C", {"kind": "mcq", "options": ["a", "b", "c", "d"]}) == 0.0
    assert compute_score("bioalchemy", "\\boxed{mitochondria}", "Mitochondria") == 1.0
    assert compute_score("bioalchemy", "\\boxed{C}", "C") == 1.0


def _variants(row):
    """Each table row in the wrappings models put around an answer."""
    out = row["output"]
    reasoning = ("The Golgi apparatus receives proteins from the endoplasmic reticulum; mitochondria make ATP. "
                 "Expression may increase or decrease, 3 or 4 copies, 12.5 kDa.\n")
    for text in (out, reasoning + out, out + "\n\nHope this helps!", f"**{out}**", out.upper(), out.lower(),
                 f"Answer: {out}", f"\\boxed{{{out}}}", f"<think>{reasoning}</think>\n{out}", out.replace(" ", "\n"),
                 out + "?", "It is not " + out):
        item = {k: row[k] for k in ("kind", "ground_truth", "options")}
        item["aliases"] = row.get("aliases", [])
        item["output"] = text
        yield item


def test_typescript_and_python_give_the_same_score_and_reason():
    items = [v for row in CASES + ADVERSARIAL for v in _variants(row)]
    run = subprocess.run(["npx", "tsx", "test/feeder/reward-score.ts"], cwd=REPO, capture_output=True, text=True,
                         input="".join(json.dumps(i) + "\n" for i in items), check=True)
    typescript = [json.loads(line) for line in run.stdout.splitlines()]
    assert len(typescript) == len(items)
    python = [score(i["kind"], i["ground_truth"], i["output"], options=i["options"], aliases=i["aliases"])
              for i in items]
    differ = [(i["output"], t, p) for i, t, p in zip(items, typescript, python) if t != p]
    assert not differ, differ[:5]
    assert 0 < sum(r["score"] for r in python) < len(python)
