"""TRL's GRPOTrainer on the feeder, on the CPU, with a tiny Qwen2 built here.

Run in the trainer venv (deploy/trainer-venv.sh) by test/services/trainers.test.ts against a feeder
served by `bioalchemy run` (BIOALCHEMY_FEEDER_URL); run alone, against a fixture feeder it starts."""

import json
import os
import subprocess
import sys
import uuid

import pytest
from conftest import REPO
from tiny_model import save_tiny_model, tiny_model, tiny_tokenizer

from bioalchemy_client import FeederClient
from bioalchemy_client.trl import FeederFeed

EXAMPLE = REPO / "clients" / "python" / "examples" / "trl_grpo.py"
# Leased batches of 4 prompts; one prompt (two completions) per optimizer step, so a generation
# batch never straddles the end of the stream and every item of every epoch is trained.
BATCH = 4


@pytest.fixture
def feeder_url(feeder_factory):
    return os.environ.get("BIOALCHEMY_FEEDER_URL") or feeder_factory(items=25, batch_size=BATCH).url


def run_name(what: str) -> str:
    return f"{os.environ.get('BIOALCHEMY_FEEDER_RUN_PREFIX', 'pytest')}-{what}-{uuid.uuid4().hex[:8]}"


def test_example_trains_two_epochs_acking_every_item_once_with_a_reward(feeder_url, tmp_path):
    model = save_tiny_model(tmp_path / "tiny-qwen2")
    run = run_name("trl-example")
    out = subprocess.run(
        [sys.executable, str(EXAMPLE), "--url", feeder_url, "--run", run, "--model", str(model), "--epochs", "2",
         "--num-generations", "2", "--prompts-per-step", "1", "--max-completion-length", "8",
         "--batch-size", str(BATCH), "--output-dir", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr[-4000:]
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    status = FeederClient(feeder_url, run=run).run_status()
    epochs = {e["epoch"]: e for e in status["epochs"]}
    for e in (0, 1):
        # Every planned item acked once (a second ack of a slot is a 409 that would have stopped
        # the trainer), each with a reward; nothing delivered twice.
        assert epochs[e]["planned"] > 0
        assert epochs[e]["acked"] == epochs[e]["planned"], epochs[e]
        assert epochs[e]["rewarded"] == epochs[e]["planned"], epochs[e]
        assert epochs[e]["redelivered"] == 0, epochs[e]
    assert status["batches"]["leased"] == 0
    assert summary["acked"] == epochs[0]["planned"] + epochs[1]["planned"]
    assert summary["steps"] == summary["acked"]
    assert summary["released"] == 0
    assert sorted(summary["mean_reward_by_epoch"]) == ["0", "1"]
    # Each completion's score went with the ack (two generations a prompt): the items' records.
    records = list(FeederClient(feeder_url, run=run).items())
    assert sum(r["rollouts"] for r in records) == 2 * summary["acked"]
    report = os.environ.get("BIOALCHEMY_TRAINER_REPORT")
    if report:  # for the vitest wrapper, which checks the rewards in ClickHouse
        with open(report, "a") as f:
            f.write(json.dumps({"run": run, "acked": summary["acked"]}) + "\n")


def grpo_trainer(feed: FeederFeed, tmp_path, max_steps: int, **config):
    import torch
    from trl import GRPOConfig, GRPOTrainer

    torch.set_num_threads(1)
    tokenizer = tiny_tokenizer()
    defaults = {"shuffle_dataset": False, "per_device_train_batch_size": 2}
    args = GRPOConfig(output_dir=str(tmp_path / "out"), use_cpu=True, bf16=False, num_generations=2,
                      max_completion_length=8, max_steps=max_steps, save_strategy="no", report_to="none",
                      **{**defaults, **config})
    return GRPOTrainer(model=tiny_model(tokenizer), processing_class=tokenizer, reward_funcs=feed.reward, args=args,
                       train_dataset=feed.dataset(), callbacks=[feed.callback])


def test_leases_as_the_trainer_reads_and_gives_back_what_it_did_not_train(feeder_url, tmp_path):
    from transformers import TrainerCallback

    feed = FeederFeed(FeederClient(feeder_url, run=run_name("trl-stop"), batch_size=BATCH), epochs=2)
    held = []

    class Held(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            held.append(feed.held_items())

    trainer = grpo_trainer(feed, tmp_path, max_steps=6)
    trainer.add_callback(Held())
    trainer.train()
    # After each step's acks the trainer holds only the rest of the batch its loader reads from
    # (the loader reads one prompt ahead, which may open the next batch): never more than a batch.
    assert held and max(held) <= BATCH, held
    assert feed.acked_items == 6
    status = feed.client.run_status()
    assert status["epochs"][0]["acked"] == 6
    assert status["epochs"][0]["rewarded"] == 6
    # What was leased and not trained went back: the next lease delivers it again, at once.
    # Six prompts trained, one read ahead: two batches leased, their last two slots given back.
    assert feed.released_items == 2 and feed.held_items() == 0
    again = feed.client.lease()
    assert again is not None and again.attempt == 2 and again.slots == [2, 3]


def test_refuses_the_shuffle_buffer(feeder_url, tmp_path):
    feed = FeederFeed(FeederClient(feeder_url, run=run_name("trl-shuffle"), batch_size=BATCH), epochs=1)
    with pytest.raises(ValueError, match="shuffle_dataset=False"):
        grpo_trainer(feed, tmp_path, max_steps=1, shuffle_dataset=True).train()
    assert feed.held_items() == 0


def test_extends_the_held_leases_that_would_end_within_the_margin(feeder_url):
    from datetime import datetime, timedelta

    feed = FeederFeed(FeederClient(feeder_url, run=run_name("trl-extend"), batch_size=BATCH, lease_ms=60_000))
    next(feed.rows())  # the trainer reads the first item: one batch leased
    [batch] = feed.held.values()

    def deadline():
        return datetime.fromisoformat(batch.lease_deadline.replace("Z", "+00:00"))

    first = deadline()
    assert feed.extend_expiring(margin_s=30) == 0  # a minute left
    # Seen from 10 s before the deadline (a slow step later), it is extended by the client's lease
    # time (raised here to two minutes, so the new deadline is a minute past the first).
    feed.client.lease_ms = 120_000
    assert feed.extend_expiring(margin_s=30, now=first - timedelta(seconds=10)) == 1
    assert deadline() >= first + timedelta(seconds=50)
    feed.release_untrained()


def test_each_process_reads_its_own_ranks_shard(feeder_url):
    run = run_name("trl-ranks")
    # Rank 1 of 2, as the second process of a two-process run makes it; accelerate shards the dataset.
    feed = FeederFeed(FeederClient(feeder_url, run=run, rank=1, world_size=2, batch_size=BATCH))
    dataset = feed.dataset()
    assert dataset.n_shards == 2
    row = next(iter(dataset.shard(num_shards=2, index=1)))
    assert feed.held[row["batch_id"]].rank == 1
    feed.release_untrained()
    # Given another rank's shard, it refuses rather than lease for the wrong rank.
    other = FeederFeed(FeederClient(feeder_url, run=run, rank=0, world_size=2, batch_size=BATCH))
    with pytest.raises(RuntimeError, match="must read its own rank's shard"):
        next(iter(other.dataset().shard(num_shards=2, index=1)))
    assert other.held_items() == 0


def test_crosses_epochs_holding_more_batches_than_the_feeders_default_prefetch(feeder_url, tmp_path):
    # Four prompts per step from batches of one: at an epoch's end the trainer holds the four
    # batches in training and four read ahead, more than the feeder's default prefetch (2). A short
    # wait: a lease that waited on those acks would never get an answer.
    client = FeederClient(feeder_url, run=run_name("trl-cross"), batch_size=1)
    feed = FeederFeed(client, epochs=2, max_wait_s=30)
    planned = feed.epoch_items()
    grpo_trainer(feed, tmp_path, max_steps=planned, per_device_train_batch_size=8).train()
    assert client.prefetch == 9
    epochs = {e["epoch"]: e for e in client.run_status()["epochs"]}
    trained = feed.acked_items
    # Whole generation batches of four: the epochs' items less the last partial one, given back.
    assert trained == 2 * planned - (2 * planned) % 4
    assert epochs[0]["acked"] == planned and epochs[1]["acked"] == trained - planned
    assert feed.released_items == 2 * planned - trained
