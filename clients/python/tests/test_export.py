"""bioalchemy export writes files that pyarrow and Hugging Face datasets load with the verl columns."""

import subprocess

import pyarrow.parquet as pq

from conftest import REPO

VERL = {"data_source", "prompt", "ability", "reward_model", "extra_info"}


def cli(*args, stdin=None):
    return subprocess.run(["node", "bin/bioalchemy.js", *args], cwd=REPO, input=stdin, capture_output=True,
                          text=True, check=True)


def fixture(*args):
    return subprocess.run(["npx", "tsx", "test/feeder/fixture-jsonl.ts", *args], cwd=REPO, capture_output=True,
                          text=True, check=True).stdout


def test_parquet_and_jsonl_load_in_pyarrow_and_datasets(tmp_path):
    import datasets

    data = str(tmp_path / "data")
    cli("--data", data, "produce", "qa.classified", stdin=fixture("classified", "40"))
    cli("--data", data, "produce", "mix.state", stdin=fixture("mix"))
    train = tmp_path / "train.parquet"
    held = tmp_path / "heldout.jsonl"
    cli("--data", data, "export", "--format", "verl-parquet", "--split", "train", "--out", str(train))
    cli("--data", data, "export", "--format", "jsonl", "--split", "heldout", "--out", str(held))

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
    assert all("Botany" in t for t in heldout["extra_info"]) or all(
        "Botany" in e["topics"] for e in heldout["extra_info"])
