"""bioalchemy export writes files that pyarrow, pandas and Hugging Face datasets load with the verl columns,
and whose ground truth is all verl's compute_score needs."""

import json
import subprocess

import pyarrow.parquet as pq
import pytest

from bioalchemy_client import compute_score
from conftest import REPO

VERL = {"data_source", "prompt", "ability", "reward_model", "extra_info"}
LETTERS = "ABCDEFGHIJ"


def cli(*args, stdin=None, check=True):
    return subprocess.run(["node", "bin/bioalchemy.js", *args], cwd=REPO, input=stdin, capture_output=True,
                          text=True, check=check)


def fixture(*args):
    return subprocess.run(["npx", "tsx", "test/feeder/fixture-jsonl.ts", *args], cwd=REPO, capture_output=True,
                          text=True, check=True).stdout


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("export")
    data = str(tmp / "data")
    cli("--data", data, "produce", "qa.classified", stdin=fixture("classified", "40"))
    cli("--data", data, "produce", "mix.state", stdin=fixture("mix"))
    train = tmp / "train.parquet"
    held = tmp / "heldout.jsonl"
    cli("--data", data, "export", "--format", "verl-parquet", "--split", "train", "--out", str(train))
    cli("--data", data, "export", "--format", "jsonl", "--split", "heldout", "--out", str(held))
    return {"data": data, "train": train, "held": held, "tmp": tmp}


def test_parquet_and_jsonl_load_in_pyarrow_and_datasets(exported):
    import datasets

    train, held = exported["train"], exported["held"]
    table = pq.read_table(train)
    assert VERL <= set(table.column_names)
    rows = table.to_pylist()
    assert rows and all(r["extra_info"]["split"] == "train" for r in rows)
    assert rows[0]["prompt"][-1]["role"] == "user"
    assert rows[0]["reward_model"] == {"style": "rule", "ground_truth": rows[0]["ground_truth"]}
    assert [r["extra_info"]["index"] for r in rows] == list(range(len(rows)))
    assert all("Botany" not in r["extra_info"]["topics"] for r in rows)

    ds = datasets.load_dataset("parquet", data_files=str(train), split="train")
    assert VERL <= set(ds.column_names) and len(ds) == len(rows)
    assert ds[0]["extra_info"]["qa_id"] == rows[0]["extra_info"]["qa_id"]

    heldout = datasets.load_dataset("json", data_files=str(held), split="train")
    assert len(heldout) == 10  # the Botany items of the 40 (every 4th)
    assert all("Botany" in e["topics"] for e in heldout["extra_info"])


def test_rows_carry_the_options_and_aliases_in_their_ground_truth(exported):
    rows = pq.read_table(exported["train"]).to_pylist()
    held = [json.loads(line) for line in exported["held"].read_text().splitlines()]
    for row in rows + held:
        truth = row["ground_truth"]
        assert truth["kind"] == row["extra_info"]["kind"] == "mcq"
        assert truth["answer"] == row["answer"]
        assert truth["options"] == row["extra_info"]["options"]
        assert truth["aliases"] == [truth["options"][LETTERS.index(truth["answer"])]]


def test_compute_score_on_rows_read_by_pandas_needs_no_extra_info(exported):
    # verl's main_eval reads the parquet with pandas (lists become numpy arrays) and calls
    # compute_score(data_source, response, reward_model["ground_truth"]) without extra_info.
    import pandas as pd

    frame = pd.read_parquet(exported["train"])
    assert len(frame) > 0
    for _, row in frame.iterrows():
        truth = row["reward_model"]["ground_truth"]
        options = list(truth["options"])
        right = options[LETTERS.index(truth["answer"])]
        wrong = next(o for o in options if o != right)
        assert compute_score(row["data_source"], f"The answer is {right}.", truth) == 1.0
        assert compute_score(row["data_source"], f"The answer is {wrong}.", truth) == 0.0
        assert compute_score(row["data_source"], f"\\boxed{{{truth['answer']}}}", truth, row["extra_info"]) == 1.0


def test_heldout_without_a_rule_fails_and_says_how_to_set_one(exported):
    mix = json.loads(fixture("mix"))
    mix.update(version=2, heldOut={"topics": [], "publishedFrom": None, "sources": []})
    cli("--data", exported["data"], "produce", "mix.state", stdin=json.dumps(mix) + "\n")
    out = exported["tmp"] / "none.jsonl"
    r = cli("--data", exported["data"], "export", "--format", "jsonl", "--split", "heldout", "--out", str(out),
            check=False)
    assert r.returncode == 2, r.stderr
    assert "sampler.heldOut" in r.stderr and "publishedFrom" in r.stderr
    assert not out.exists()
