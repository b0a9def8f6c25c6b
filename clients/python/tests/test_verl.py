"""verl's own loaders on the feeder: FeederDataset through create_rl_dataset (data.custom_cls), read by
verl's sampler, collate_fn and StatefulDataLoader; compute_score through get_custom_reward_fn, which
loads it with load_extern_object (reward.custom_reward_function).

Run in the trainer venv (deploy/trainer-venv.sh) by test/services/trainers.test.ts against a feeder
served by `bioalchemy run` (BIOALCHEMY_FEEDER_URL); run alone, against a fixture feeder it starts."""

import os
import uuid

import pytest
from tiny_model import tiny_tokenizer

import bioalchemy_client.verl
from bioalchemy_client import FeederClient
from bioalchemy_client.epochs import epoch_items

MODULE = bioalchemy_client.verl.__file__
ROLLOUTS = 2


@pytest.fixture
def feeder_url(feeder_factory):
    return os.environ.get("BIOALCHEMY_FEEDER_URL") or feeder_factory(items=25, batch_size=4).url


def run_name(what: str) -> str:
    return f"{os.environ.get('BIOALCHEMY_FEEDER_RUN_PREFIX', 'pytest')}-{what}-{uuid.uuid4().hex[:8]}"


def verl_config(data: dict):
    from omegaconf import OmegaConf

    return OmegaConf.create({
        "data": {"custom_cls": {"path": MODULE, "name": "FeederDataset"}, "prompt_key": "prompt", "shuffle": False,
                 "dataloader_num_workers": 0, **data},
        "reward": {"custom_reward_function": {"path": MODULE, "name": "compute_score", "reward_kwargs": {}}},
    })


def test_verl_loaders_lease_and_the_reward_acks_each_item_with_its_mean(feeder_url):
    from torchdata.stateful_dataloader import StatefulDataLoader
    from verl.trainer.ppo.reward import get_custom_reward_fn
    from verl.trainer.ppo.utils import create_rl_dataset, create_rl_sampler
    from verl.utils.dataset.rl_dataset import collate_fn

    run = run_name("verl")
    planned = epoch_items(FeederClient(feeder_url, run=run))
    # Batches of one prompt, and a step whose prompts do not divide the epoch, so one step spans its
    # end holding at least three batches of it unacked: more than the feeder's default prefetch (2).
    step = next(n for n in range(4, planned // 2 + 1) if planned % n >= 3)
    config = verl_config({"train_batch_size": step,
                          "feeder": {"url": feeder_url, "run": run, "rollouts": ROLLOUTS, "batch_size": 1}})
    dataset = create_rl_dataset([], config.data, tokenizer=tiny_tokenizer(), processor=None)
    assert type(dataset).__name__ == "FeederDataset"
    assert len(dataset) == planned and dataset.client.prefetch == step + 1
    loader = StatefulDataLoader(dataset, batch_size=config.data.train_batch_size, drop_last=True, num_workers=0,
                                sampler=create_rl_sampler(config.data, dataset), collate_fn=collate_fn)
    score = get_custom_reward_fn(config)
    scores, read = [], 0
    for _ in range(2):  # two verl epochs of len(dataset) items each (drop_last: whole steps)
        for batch in loader:
            assert batch["dummy_tensor"].shape == (step, 1)
            for i in range(len(batch["raw_prompt"])):
                assert batch["raw_prompt"][i][-1]["role"] == "user"
                # One right and one wrong rollout per item, as verl scores them: the mean is 0.5.
                for solution in (f"\\boxed{{{batch['answer'][i]}}}", "I do not know."):
                    scores.append(score(data_source=batch["data_source"][i], solution_str=solution,
                                        ground_truth=batch["reward_model"][i]["ground_truth"],
                                        extra_info=batch["extra_info"][i]))
                read += 1
    assert scores == [1.0, 0.0] * read
    status = FeederClient(feeder_url, run=run).run_status()
    epochs = {e["epoch"]: e for e in status["epochs"]}
    # The stream crosses the feeder's epochs: epoch 0 wholly acked, each item once with its reward,
    # and epoch 1 as far as verl read.
    assert epochs[0]["planned"] == planned
    assert epochs[0]["acked"] == epochs[0]["rewarded"] == planned
    assert epochs[1]["acked"] == epochs[1]["rewarded"] == read - planned
    assert epochs[0]["redelivered"] == epochs[1]["redelivered"] == 0
    assert status["ackedItems"] == read
    # Each rollout's score went with the ack: every item's record holds its rollouts, half passed.
    records = list(FeederClient(feeder_url, run=run).items())
    assert sum(r["rollouts"] for r in records) == ROLLOUTS * read
    assert all(r["passes"] * 2 == r["rollouts"] for r in records)


def test_feeder_settings_come_from_the_environment_when_the_config_has_none(feeder_url, monkeypatch):
    from verl.trainer.ppo.utils import create_rl_dataset

    run = run_name("verl-env")
    monkeypatch.setenv("BIOALCHEMY_FEEDER_URL", feeder_url)
    monkeypatch.setenv("BIOALCHEMY_FEEDER_RUN", run)
    monkeypatch.setenv("BIOALCHEMY_FEEDER_ROLLOUTS", "3")
    dataset = create_rl_dataset([], verl_config({}).data, tokenizer=None, processor=None)
    assert dataset.client.url == feeder_url and dataset.client.run == run and dataset.rollouts == 3
    assert dataset[0]["extra_info"]["feeder"]["rollouts"] == 3
    monkeypatch.delenv("BIOALCHEMY_FEEDER_RUN")
    with pytest.raises(ValueError, match="data.feeder.run"):
        create_rl_dataset([], verl_config({}).data, tokenizer=None, processor=None)


def test_validation_reads_the_held_out_files_and_leases_nothing(feeder_url, tmp_path):
    import pandas as pd
    from verl.trainer.ppo.utils import create_rl_dataset

    from bioalchemy_client import FeederError

    heldout = tmp_path / "heldout.parquet"
    pd.DataFrame([{"data_source": "bioalchemy", "prompt": [{"role": "user", "content": f"Which {i}?"}],
                   "ability": "biology", "reward_model": {"style": "rule", "ground_truth": "A"},
                   "extra_info": {"index": i}} for i in range(3)]).to_parquet(heldout)
    run = run_name("verl-val")
    config = verl_config({"feeder": {"url": feeder_url, "run": run}, "train_files": "feeder",
                          "val_files": [str(heldout)], "cache_dir": str(tmp_path / "cache")})
    # As verl's trainer makes its validation set: the same class, over data.val_files.
    val = create_rl_dataset(config.data.val_files, config.data, tokenizer=tiny_tokenizer(), processor=None,
                            is_train=False)
    assert type(val).__name__ == "RLHFDataset" and len(val) == 3
    assert val[0]["raw_prompt"][0]["content"] == "Which 0?"
    with pytest.raises(FeederError) as refused:
        FeederClient(feeder_url, run=run).run_status()
    assert refused.value.status == 404  # no lease made: the run does not exist
    train = create_rl_dataset(config.data.train_files, config.data, tokenizer=tiny_tokenizer(), processor=None)
    assert type(train).__name__ == "FeederDataset"


def test_a_rollout_of_a_lease_that_ended_is_scored_and_the_training_goes_on(feeder_url):
    from verl.trainer.ppo.utils import create_rl_dataset

    run = run_name("verl-ended")
    config = verl_config({"feeder": {"url": feeder_url, "run": run, "rollouts": 1}})
    dataset = create_rl_dataset([], config.data, tokenizer=None, processor=None)
    row = dataset[0]
    dataset.client.release(dataset._batch)  # the lease ends before the rollout is scored
    with pytest.warns(UserWarning, match="not acked: 409 "):
        s = bioalchemy_client.verl.compute_score(row["data_source"], f"\\boxed{{{row['answer']}}}",
                                                 row["reward_model"]["ground_truth"], row["extra_info"])
    assert s == 1.0
    assert FeederClient(feeder_url, run=run).run_status()["epochs"][0]["acked"] == 0


def test_under_ray_an_items_rollouts_scored_in_different_processes_are_acked_once_with_their_mean(feeder_url):
    import ray
    from verl.trainer.ppo.reward import get_custom_reward_fn
    from verl.trainer.ppo.utils import create_rl_dataset

    run = run_name("verl-ray")
    config = verl_config({"feeder": {"url": feeder_url, "run": run, "rollouts": ROLLOUTS}})
    dataset = create_rl_dataset([], config.data, tokenizer=None, processor=None)
    rows = [dataset[i] for i in range(3)]
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        @ray.remote(num_cpus=0)
        class RewardWorker:
            """As a reward worker of verl: a process of its own, the reward loaded from the config."""

            def __init__(self):
                self.fn = get_custom_reward_fn(config)

            def score(self, row: dict, solution: str):
                import os

                return os.getpid(), self.fn(data_source=row["data_source"], solution_str=solution,
                                            ground_truth=row["reward_model"]["ground_truth"],
                                            extra_info=row["extra_info"])

        a, b = RewardWorker.remote(), RewardWorker.remote()
        # Each item's right rollout is scored by one worker, its wrong one by the other.
        first = ray.get([a.score.remote(r, f"\\boxed{{{r['answer']}}}") for r in rows])
        second = ray.get([b.score.remote(r, "I do not know.") for r in rows])
        assert [s for _, s in first] == [1.0] * 3 and [s for _, s in second] == [0.0] * 3
        assert first[0][0] != second[0][0]
    finally:
        ray.shutdown()
    epoch = FeederClient(feeder_url, run=run).run_status()["epochs"][0]
    assert epoch["acked"] == epoch["rewarded"] == 3
