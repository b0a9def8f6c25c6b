"""What a trainer needs to know of the feeder's epochs up front: how many items one is (verl's
dataloader length, TRL's max_steps), and the prefetch bound that lets it cross from one to the next."""

from __future__ import annotations

import math

from .client import FeederClient


def epoch_items(client: FeederClient) -> int:
    """The items of the run's current epoch, or, before the run's first lease, of the feeder's
    current selection (what its first epoch will plan). Refuses a feeder that selects nothing."""
    try:
        planned = client.run_status()["planned"]
    except Exception:  # noqa: BLE001 - the run is made by its first lease
        planned = 0
    n = planned or client._call("GET", "/v1/status")["selected"]
    if not n:
        raise ValueError(f"the feeder at {client.url} selects no items yet (no mix)")
    return n


# The most a lease may ask for (LeaseRequest.prefetch in schemas/feeder.ts).
MAX_PREFETCH = 64


def prefetch_for(prompts_held: int, batch_size) -> int:
    """The prefetch bound a rank needs when it may hold `prompts_held` prompts of an epoch, unacked,
    while it leases from the next: the batches they span, plus the one being read. Without a batch
    size (the feeder's default applies) it counts a batch per prompt; capped at the feeder's bound."""
    return min(MAX_PREFETCH, math.ceil(prompts_held / int(batch_size or 1)) + 1)
