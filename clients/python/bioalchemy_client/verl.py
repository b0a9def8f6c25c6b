"""verl on the feeder, through verl's own config hooks and nothing else:

    data.custom_cls.path=<this file, or pkg://bioalchemy_client.verl> data.custom_cls.name=FeederDataset
    +data.feeder.url=http://127.0.0.1:8787 +data.feeder.run=grpo-1 +data.feeder.rollouts=5
    data.dataloader_num_workers=0
    reward.custom_reward_function.path=<this file> reward.custom_reward_function.name=compute_score

`FeederDataset` leases as verl's loader reads: each `dataset[i]` is the next item of the rank's
leased batches (the feeder orders each epoch, so the index verl's sampler asks for is not used),
and it carries the item's batch, slot and lease in `extra_info["feeder"]`. `compute_score` scores a
rollout and, once an item's `rollouts` rollouts are scored, acks that item with their mean reward.
The url, run and rollouts come from `data.feeder.{url,run,rollouts}`, else from the environment
variables BIOALCHEMY_FEEDER_URL, BIOALCHEMY_FEEDER_RUN and BIOALCHEMY_FEEDER_ROLLOUTS; optional:
`data.feeder.{batch_size,lease_ms,prefetch,rank,world_size}` (FeederClient's arguments). A lease
must outlive a step (rollout, scoring): the feeder's leaseMs, 10 minutes, unless lease_ms says.

verl scores an item's rollouts in several processes (its reward workers): under Ray they count them
in one named actor of the job. The stream runs on across epochs: a verl epoch is `len(dataset)`
items, the size of the feeder's current epoch.
"""

from __future__ import annotations

import os
import threading
import warnings
from typing import Any, Optional

import torch
from torch.utils.data import Dataset

# Absolute imports: verl loads this file by its path (load_extern_object), outside the package.
from bioalchemy_client.client import Batch, FeederClient, FeederError
from bioalchemy_client.epochs import epoch_items, prefetch_for
from bioalchemy_client.reward import compute_score as _score

_ENV = {"url": "BIOALCHEMY_FEEDER_URL", "run": "BIOALCHEMY_FEEDER_RUN", "rollouts": "BIOALCHEMY_FEEDER_ROLLOUTS"}


def _setting(feeder_config: Any, key: str) -> Optional[str]:
    value = feeder_config.get(key) if feeder_config is not None else None
    if value is None:
        value = os.environ.get(_ENV[key])
    return None if value is None else str(value)


def _files(value: Any) -> list:
    """Data files as verl takes them: one path, or a list (a ListConfig) of paths."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


class FeederDataset(Dataset):
    """A dataset class for verl's `data.custom_cls`: the constructor verl's create_rl_dataset calls.
    verl makes its validation set with the same class, from `data.val_files`: given those files
    (the held-out export, `bioalchemy export --format verl-parquet --split heldout`), it is verl's
    own RLHFDataset over them, so validation leases nothing. Given anything else (`data.train_files`
    is not read: the feeder is the data), it leases."""

    def __new__(cls, data_files=None, tokenizer=None, config=None, processor=None, max_samples: int = -1):
        files = _files(data_files)
        if config is not None and files and files == _files(config.get("val_files")) \
                and files != _files(config.get("train_files")):
            from verl.utils.dataset.rl_dataset import RLHFDataset

            return RLHFDataset(data_files, tokenizer, config, processor, max_samples)
        return super().__new__(cls)

    def __init__(self, data_files=None, tokenizer=None, config=None, processor=None, max_samples: int = -1):
        feeder = config.get("feeder") if config is not None else None
        url, run = _setting(feeder, "url"), _setting(feeder, "run")
        if not url or not run:
            raise ValueError("FeederDataset needs the feeder's url and run: set data.feeder.url and "
                             "data.feeder.run, or BIOALCHEMY_FEEDER_URL and BIOALCHEMY_FEEDER_RUN")
        rollouts = int(_setting(feeder, "rollouts") or 1)
        if rollouts < 1:
            raise ValueError(f"data.feeder.rollouts must be at least 1, got {rollouts}")
        self.rollouts = rollouts
        self.prompt_key = config.get("prompt_key", "prompt") if config is not None else "prompt"
        opt = (lambda k: feeder.get(k)) if feeder is not None else (lambda k: None)
        batch_size, prefetch = opt("batch_size"), opt("prefetch")
        step_prompts = config.get("gen_batch_size") or config.get("train_batch_size") if config is not None else None
        if prefetch is None and step_prompts:
            # A step's prompts are read, then scored, then acked: a step that spans an epoch's end
            # holds that many prompts of the old epoch, unacked, while it leases from the new one.
            prefetch = prefetch_for(int(step_prompts), batch_size)
        self.client = FeederClient(url, run, rank=int(opt("rank") or 0), world_size=int(opt("world_size") or 1),
                                   batch_size=batch_size, lease_ms=opt("lease_ms"), prefetch=prefetch)
        self._batch: Optional[Batch] = None
        self._next = 0
        self._length = epoch_items(self.client)

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, index: int) -> dict:
        if torch.utils.data.get_worker_info() is not None:
            raise RuntimeError("FeederDataset leases in the trainer's process: set data.dataloader_num_workers=0")
        while self._batch is None or self._next >= len(self._batch.items):
            # Epoch ends are crossed: the feeder lets a rank lease from the next epoch while it still
            # holds batches of this one, so the verl epoch need not line up with the feeder's.
            self._batch = self.client.lease()
            self._next = 0
        b, i = self._batch, self._next
        self._next += 1
        row = dict(b.items[i])
        row["extra_info"] = {**row["extra_info"], "feeder": {
            "url": self.client.url, "run": self.client.run, "rank": self.client.rank,
            "world_size": self.client.world_size, "batch_id": b.id, "lease_id": b.lease_id,
            "epoch": b.epoch, "slot": b.slots[i], "rollouts": self.rollouts}}
        # What verl's RLHFDataset returns for a text row (the chat template is applied by the rollout).
        row["raw_prompt"] = list(row[self.prompt_key])
        row["dummy_tensor"] = torch.tensor([0], dtype=torch.uint8)
        row["index"] = row["extra_info"].get("index", 0)
        row["tools_kwargs"] = {}
        row["interaction_kwargs"] = {}
        return row


class Tally:
    """The scores of each item's rollouts until all are in; then the item is acked with their mean.
    One per process, or, under Ray, one actor for the whole cluster (see _tally)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.scores: dict[tuple, list] = {}
        self.clients: dict[tuple, FeederClient] = {}

    def add(self, feeder: dict, score: float) -> Optional[str]:
        """Records a rollout's score; acks the item when it was the last. Returns why an ack was
        refused, if it was: a lease that ended (expired, or given back) is the feeder's to deliver
        again, and the training goes on. Any other refusal (a bad request, a feeder gone) raises."""
        key = (feeder["url"], feeder["run"], feeder["batch_id"], feeder["slot"])
        with self.lock:
            got = self.scores.setdefault(key, [])
            got.append(score)
            if len(got) < int(feeder["rollouts"]):
                return None
            del self.scores[key]
            client_key = (feeder["url"], feeder["run"], feeder["rank"], feeder["world_size"])
            if client_key not in self.clients:
                self.clients[client_key] = FeederClient(feeder["url"], feeder["run"], rank=int(feeder["rank"]),
                                                        world_size=int(feeder["world_size"]))
            client = self.clients[client_key]
        batch = Batch(id=feeder["batch_id"], run=feeder["run"], rank=int(feeder["rank"]), epoch=int(feeder["epoch"]),
                      index=0, attempt=1, mix_version=0, lease_id=feeder["lease_id"], lease_deadline="",
                      items=[], slots=[])
        try:
            # Every rollout's score: the feeder's pass rate of the item (band-pass) follows them. No
            # step: compute_score is not told verl's, and the feeder then counts the run's batches
            # (verl takes one a step), which is what band-pass's cool-downs need.
            client.ack(batch, slots=[int(feeder["slot"])], rewards=[sum(got) / len(got)], rollouts=[list(got)])
        except FeederError as e:
            if e.status != 409:
                raise
            return f"item {feeder['batch_id']}#{feeder['slot']} not acked: {e}"
        return None


_local_tally: Optional[Tally] = None
_tally_actor: Any = None
TALLY_ACTOR = "bioalchemy-feeder-tally"


def _tally_add(feeder: dict, score: float) -> Optional[str]:
    """Tally.add in the one place every rollout of the item is counted: verl scores rollouts in
    several processes (reward.num_workers, 8 by default, each gets a slice of a step's batch), so
    under Ray the tally is a named actor every worker of the job shares; without Ray, this process's."""
    global _local_tally, _tally_actor
    try:
        import ray

        shared = ray.is_initialized()
    except ImportError:
        shared = False
    if shared:
        if _tally_actor is None:
            # The package's class, not this file's: verl may have loaded this file by its path, as a
            # module no other process can import.
            from bioalchemy_client.verl import Tally as PackageTally

            _tally_actor = ray.remote(num_cpus=0)(PackageTally).options(name=TALLY_ACTOR, get_if_exists=True).remote()
        return ray.get(_tally_actor.add.remote(feeder, score))
    if _local_tally is None:
        _local_tally = Tally()
    return _local_tally.add(feeder, score)


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs) -> float:
    """verl's custom_reward_function: the feeder's verifiable reward for one rollout; a row leased
    by FeederDataset is acked, with the mean over its rollouts, when its last rollout is scored."""
    # reward_kwargs reach the rules' compute_score: verifier_url there is the opt-in verifier.
    s = float(_score(data_source, solution_str, ground_truth, extra_info, **kwargs))
    feeder = extra_info.get("feeder") if isinstance(extra_info, dict) else None
    if feeder:
        refused = _tally_add(dict(feeder), s)
        if refused:
            warnings.warn(refused, stacklevel=2)
    return s
