"""How many items a trainer's epoch is, for the trainers that need a length up front (verl's
dataloader, TRL's max_steps)."""

from __future__ import annotations

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
