"""What TRL's GRPOTrainer needs to train from the feeder: a dataset that leases as the trainer reads,
a reward function that records each completion's score, and a callback that acks what each optimizer
step trained (per item: mean reward, mean response length, step) and gives back, at the end, what was
fetched but not trained.

    feed = FeederFeed(FeederClient(url, run), epochs=2)
    trainer = GRPOTrainer(model, reward_funcs=feed.reward, train_dataset=feed.dataset(),
                          args=GRPOConfig(shuffle_dataset=False, max_steps=..., ...),
                          callbacks=[feed.callback])

Why the dataset is a streaming `datasets.IterableDataset` read in order (shuffle_dataset=False):
GRPOTrainer accepts only a `datasets` Dataset or IterableDataset. A map-style Dataset is materialised
up front, so it would lease a whole epoch before the first step. An IterableDataset is read as the
trainer consumes it, but with TRL's default shuffle_dataset=True it goes through a 1,000-item shuffle
buffer that leases 1,000 items before the first step. The feeder already orders each epoch (its plan
is a shuffle over the mix), so nothing is lost by reading in order. In order, the trainer holds what
its loader holds: the generation batch being trained, the one its loader fetches ahead, and the rest
of the feeder batch the last item came from.

The stream runs on across the feeder's epochs (the protocol lets a rank lease from epoch e+1 while it
holds batches of e), so a generation batch may span an epoch's end, and it stops after `epochs`
epochs, which ends the training (the trainer finds an empty epoch). TRL drops a last generation batch
that is not full; the callback gives its items back. With several processes, each makes its feed
with FeederClient(rank=process index, world_size=processes): the dataset has one shard per rank,
and accelerate hands each process its own.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Iterator, Optional

from .client import Batch, FeederClient
from .epochs import epoch_items, prefetch_for
from .reward import compute_score


@dataclass
class _Score:
    """One scored completion, and the optimizer step before which it was generated."""

    batch_id: str
    slot: int
    score: Optional[float]
    length: Optional[int]
    generated_at_step: int


class FeederFeed:
    """One rank's feed: the leases it holds, the scores recorded, the acks and releases made."""

    def __init__(self, client: FeederClient, epochs: Optional[int] = 1, max_wait_s: float = 300.0):
        self.client = client
        self.epochs = epochs
        self.max_wait_s = max_wait_s
        # Batches leased and not wholly acked, by id (a redelivery replaces its batch: a new lease id).
        self.held: dict[str, Batch] = {}
        self.scores: list[_Score] = []
        self.acked_items = 0
        self.released_items = 0
        # Per feeder epoch: the rewards acked (mean per item), for mean_reward_by_epoch().
        self.acked_rewards: dict[int, list] = {}
        self._streamed = False
        self.reward = FeederReward(self)
        self.callback = _make_callback(self)

    # -- the dataset -----------------------------------------------------------------------------
    def rows(self) -> Iterator[dict]:
        """The items of leased batches, each with its batch id, slot and epoch; leases a batch when
        the trainer asks for its first item. Read once: a second pass (the trainer's next epoch)
        yields nothing, which ends the training."""
        if self._streamed:
            return
        self._streamed = True
        finished = 0
        while self.epochs is None or finished < self.epochs:
            batch = self.client.lease(max_wait_s=self.max_wait_s)
            if batch is None:
                finished += 1
                continue
            self.held[batch.id] = batch
            for slot, item in zip(batch.slots, batch.items):
                yield {**item, "batch_id": batch.id, "slot": slot, "epoch": batch.epoch}

    def dataset(self):
        """A streaming `datasets.IterableDataset` over rows(), in one shard per rank of the run: with
        several processes, accelerate gives each its own shard (`shard(num_shards, index)`) rather
        than slicing one stream, and each process's feed leases for its own rank."""
        from datasets import IterableDataset

        ranks = list(range(self.client.world_size))
        return IterableDataset.from_generator(_Rows(self), gen_kwargs={"ranks": ranks})

    # -- acks ------------------------------------------------------------------------------------
    def epoch_items(self) -> int:
        """Items in the feeder's current epoch (see epochs.epoch_items)."""
        return epoch_items(self.client)

    def held_items(self) -> int:
        """Items leased and not yet acked: what the trainer holds ahead of its acks."""
        return sum(len(b.pending) for b in self.held.values())

    def mean_reward_by_epoch(self) -> dict:
        return {e: sum(r) / len(r) for e, r in sorted(self.acked_rewards.items()) if r}

    def record(self, row: dict, score: Optional[float], length: Optional[int], step: int) -> None:
        self.scores.append(_Score(row["batch_id"], row["slot"], score, length, step))

    def ack_trained(self, trained_before_step: int, step: int) -> None:
        """Acks every item whose completions were generated before optimizer step
        `trained_before_step` (so were trained by now): per item the mean of its scores and of its
        completions' lengths."""
        done = [s for s in self.scores if s.generated_at_step < trained_before_step]
        if not done:
            return
        self.scores = [s for s in self.scores if s.generated_at_step >= trained_before_step]
        per_item: dict[tuple[str, int], list[_Score]] = {}
        for s in done:
            per_item.setdefault((s.batch_id, s.slot), []).append(s)
        per_batch: dict[str, dict[int, list[_Score]]] = {}
        for (batch_id, slot), scores in per_item.items():
            per_batch.setdefault(batch_id, {})[slot] = scores
        for batch_id, slots in per_batch.items():
            batch = self.held[batch_id]
            order = sorted(slots)
            scored = [[s.score for s in slots[k] if s.score is not None] for k in order]
            rewards = [_mean(xs) for xs in scored]
            lengths = [_mean([s.length for s in slots[k] if s.length is not None]) for k in order]
            # Each completion's score (the item's rollouts): the feeder's per-item pass rate, which
            # band-pass reads, and which flat groups it counts; the step its cool-downs count in.
            self.client.ack(batch, slots=order, rewards=rewards,
                            response_lengths=[None if x is None else round(x) for x in lengths], step=step,
                            rollouts=[xs or None for xs in scored])
            self.acked_items += len(order)
            self.acked_rewards.setdefault(batch.epoch, []).extend(r for r in rewards if r is not None)
            if not batch.pending:
                del self.held[batch_id]

    def extend_expiring(self, margin_s: float, now: Optional[datetime] = None) -> int:
        """Extends every held lease that ends within `margin_s` (by the client's lease_ms, else the
        feeder's leaseMs): a batch read one step at a time outlives its first lease when its steps
        are slow. Returns how many were extended."""
        now = now or datetime.now(timezone.utc)
        extended = 0
        for batch in self.held.values():
            deadline = datetime.fromisoformat(batch.lease_deadline.replace("Z", "+00:00"))
            if batch.pending and (deadline - now).total_seconds() < margin_s:
                self.client.extend(batch, self.client.lease_ms)
                extended += 1
        return extended

    def release_untrained(self) -> None:
        """Gives back every held batch's unacked slots (fetched ahead, or dropped by the trainer)."""
        for batch in self.held.values():
            if batch.pending:
                self.released_items += self.client.release(batch)["items"]
        self.held.clear()
        self.scores.clear()


class _Rows:
    """The generator function handed to `datasets`: it may deep-copy it (map, shuffle), and every
    copy must feed the one FeederFeed, whose ledger the callback reads."""

    def __init__(self, feed: FeederFeed):
        self.feed = feed

    def __call__(self, ranks: list) -> Iterator[dict]:
        # Unsharded, `datasets` calls this once per rank in turn; sharded, once with this process's.
        if ranks != [self.feed.client.rank]:
            raise RuntimeError(
                f"rank {self.feed.client.rank}'s feed read as the shard of ranks {ranks}: each process must "
                f"read its own rank's shard (accelerate shards it when it runs world_size="
                f"{self.feed.client.world_size} processes)")
        return self.feed.rows()

    def __deepcopy__(self, memo: dict) -> "_Rows":
        return self


def _mean(xs: list) -> Optional[float]:
    return sum(xs) / len(xs) if xs else None


def _completion_text(completion: Any) -> str:
    # Conversational prompts give completions as message lists; plain prompts as strings.
    if isinstance(completion, list):
        return completion[-1]["content"] if completion else ""
    return completion


def default_score(completion: str, row: dict) -> float:
    """The feeder's verifiable reward (the same as POST /v1/reward) for one completion of a row."""
    return float(compute_score(row.get("data_source", "bioalchemy"), completion, row["ground_truth"],
                               row.get("extra_info")))


class FeederReward:
    """A GRPOTrainer reward function: scores each completion with `score(completion_text, row)`
    (default: the feeder's verifiable reward) and records the score against the completion's batch
    and slot, for the callback to ack once that completion was trained."""

    def __init__(self, feed: FeederFeed, score: Callable[[str, dict], Optional[float]] = default_score):
        self.feed = feed
        self.score = score
        # GRPOTrainer logs each reward function under its __name__.
        self.__name__ = "feeder_reward"

    def __call__(self, prompts: list, completions: list, completion_ids: Optional[list] = None,
                 trainer_state: Any = None, **columns: Any) -> list:
        step = trainer_state.global_step if trainer_state is not None else 0
        out = []
        for i, completion in enumerate(completions):
            row = {k: v[i] for k, v in columns.items() if isinstance(v, list) and len(v) == len(completions)}
            s = self.score(_completion_text(completion), row)
            length = len(completion_ids[i]) if completion_ids is not None else None
            self.feed.record(row, s, length, step)
            out.append(s)
        return out


def _make_callback(feed: FeederFeed):
    from transformers import TrainerCallback

    class FeederCallback(TrainerCallback):
        """Acks after each optimizer step what it trained, extends the leases that would end within
        three of the slowest steps seen; at the end, releases what was not trained."""

        def __init__(self):
            self.last_step_at: Optional[float] = None
            self.slowest_step_s = 0.0

        def on_train_begin(self, args, state, control, **kwargs):
            if getattr(args, "shuffle_dataset", False):
                raise ValueError(
                    "GRPOConfig(shuffle_dataset=True) reads the feeder through a 1,000-item shuffle buffer, "
                    "leasing 1,000 items before the first step: set shuffle_dataset=False (each feeder "
                    "epoch is already shuffled)")
            if feed.client.prefetch is None:
                # At an epoch's end the loader holds the generation batch in training and the one it
                # reads ahead, unacked, while it leases from the next epoch: the feeder must let this
                # rank hold that many batches, or its lease waits on acks that only this loop makes.
                prompts = args.generation_batch_size // args.num_generations
                feed.client.prefetch = prefetch_for(2 * prompts, feed.client.batch_size)

        def on_step_end(self, args, state, control, **kwargs):
            # A generation made before step t is trained over the next steps_per_generation *
            # num_iterations micro-batches, i.e. that many / gradient_accumulation_steps optimizer steps.
            micro = getattr(args, "steps_per_generation", None) or args.gradient_accumulation_steps
            cycle = max(1, math.ceil(micro * getattr(args, "num_iterations", 1) / args.gradient_accumulation_steps))
            feed.ack_trained(state.global_step - cycle + 1, state.global_step)
            now = time.monotonic()
            if self.last_step_at is not None:
                self.slowest_step_s = max(self.slowest_step_s, now - self.last_step_at)
            self.last_step_at = now
            feed.extend_expiring(3 * self.slowest_step_s)

        def on_train_end(self, args, state, control, **kwargs):
            feed.release_untrained()

    return FeederCallback()
