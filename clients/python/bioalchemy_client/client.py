"""Lease, ack (per slot, with rewards), release and extend rollout batches over the feeder's HTTP API
(stdlib only). The shapes are the feeder's OpenAPI document (GET /openapi.json)."""

from __future__ import annotations

import json
import math
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Iterator, List, Mapping, Optional, Sequence, Set, Union


class FeederError(Exception):
    """A refused request: the HTTP status, the feeder's error code and its reason."""

    def __init__(self, status: int, code: str, reason: str):
        super().__init__(f"{status} {code}: {reason}")
        self.status = status
        self.code = code
        self.reason = reason


@dataclass
class Batch:
    """One leased batch: its items are the feeder's superset rows (verl / TRL columns). `slots[i]`
    is the slot of `items[i]` in the batch as cut: what an ack names. A first delivery has slots
    0..n-1; a redelivery carries only the slots not yet acked."""

    id: str
    run: str
    rank: int
    epoch: int
    index: int
    attempt: int
    mix_version: int
    lease_id: str
    lease_deadline: str
    items: list = field(default_factory=list)
    slots: List[int] = field(default_factory=list)
    acked: Set[int] = field(default_factory=set)
    """Slots acked through this client."""

    @property
    def pending(self) -> List[int]:
        """Slots of this delivery not yet acked."""
        return [s for s in self.slots if s not in self.acked]


def _rollouts(value: Any, where: str) -> Optional[dict]:
    """One slot's rollouts as the feeder takes them: a sequence of rewards (one per rollout), or
    {"mean", "count"}; None for a slot not rolled out. Non-finite rewards, and a count that is not
    the number of rewards, raise ValueError before anything is sent (the feeder refuses them too)."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        out = {"count": int(value["count"])}
        if "rewards" in value and value["rewards"] is not None:
            out["rewards"] = [_finite(r, f"{where}.rewards[{i}]") for i, r in enumerate(value["rewards"])]
            if len(out["rewards"]) != out["count"]:
                raise ValueError(f"{where}: count is {out['count']} but {len(out['rewards'])} rewards were given")
        if "mean" in value and value["mean"] is not None:
            out["mean"] = _finite(value["mean"], f"{where}.mean")
        if "rewards" not in out and "mean" not in out:
            raise ValueError(f"{where}: give the rollouts' rewards or their mean with the count")
        return out
    rewards = [_finite(r, f"{where}[{i}]") for i, r in enumerate(value)]
    if not rewards:
        return None
    return {"count": len(rewards), "rewards": rewards}


def _finite(value: Any, where: str) -> float:
    r = float(value)
    if not math.isfinite(r):
        raise ValueError(f"{where} is {value!r}: a reward is a finite number")
    return r


def _reward(value: Any, where: str) -> Optional[float]:
    """A reward as JSON can carry it: a finite number or None (JSON has no NaN or Infinity)."""
    if value is None:
        return None
    r = float(value)
    if not math.isfinite(r):
        raise ValueError(f"{where} is {value!r}: a reward is a finite number, or None for none")
    return r


class FeederClient:
    """One trainer rank of one run. Ranks of a run get disjoint batches; a batch not acked before
    its lease expires is delivered again (to the same rank), and so is one given back (release).
    `prefetch`: how many unacked batches of an epoch this rank may hold while it leases from the
    next (the feeder's prefetchBatches, 2, when None)."""

    def __init__(self, url: str, run: str, rank: int = 0, world_size: int = 1,
                 batch_size: Optional[int] = None, lease_ms: Optional[int] = None, timeout: float = 30.0,
                 token: Optional[str] = None, prefetch: Optional[int] = None):
        self.url = url.rstrip("/")
        # The bearer token a feeder off loopback requires (server.tokenEnv, BIOALCHEMY_FEEDER_TOKEN).
        self.token = token if token is not None else os.environ.get("BIOALCHEMY_FEEDER_TOKEN") or None
        self.run = run
        self.rank = rank
        self.world_size = world_size
        self.batch_size = batch_size
        self.lease_ms = lease_ms
        self.prefetch = prefetch
        self.timeout = timeout

    # -- HTTP ------------------------------------------------------------------------------------
    def _call(self, method: str, path: str, body: Optional[dict] = None) -> Any:
        data = None if body is None else json.dumps(body, allow_nan=False).encode()
        headers = {"content-type": "application/json"} if data else {}
        if self.token:
            headers["authorization"] = f"Bearer {self.token}"
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as res:
                return json.loads(res.read())
        except urllib.error.HTTPError as e:
            try:
                err = json.loads(e.read())
            except Exception:  # noqa: BLE001 - a body that is not ours
                err = {"error": "http", "reason": str(e)}
            raise FeederError(e.code, err.get("error", "http"), err.get("reason", "")) from None

    def _ref(self, batch: Batch) -> dict:
        return {"run": self.run, "batchId": batch.id, "leaseId": batch.lease_id, "rank": self.rank}

    # -- the API ---------------------------------------------------------------------------------
    def lease_raw(self) -> dict:
        """The raw lease answer: {"status": "leased" | "wait" | "epoch-end", ...}."""
        body: dict = {"run": self.run, "rank": self.rank, "worldSize": self.world_size}
        if self.batch_size is not None:
            body["batchSize"] = self.batch_size
        if self.lease_ms is not None:
            body["leaseMs"] = self.lease_ms
        if self.prefetch is not None:
            body["prefetch"] = self.prefetch
        return self._call("POST", "/v1/lease", body)

    def lease(self, max_wait_s: float = 300.0) -> Optional[Batch]:
        """The next batch of this rank (a redelivery first), waiting while the feeder says so;
        None when this rank's epoch has no fresh batch left (the next call starts the next one)."""
        deadline = time.monotonic() + max_wait_s
        while True:
            r = self.lease_raw()
            if r["status"] == "leased":
                b = r["batch"]
                return Batch(id=b["id"], run=b["run"], rank=b["rank"], epoch=b["epoch"], index=b["index"],
                             attempt=b["attempt"], mix_version=b["mixVersion"], lease_id=r["leaseId"],
                             lease_deadline=b["leaseDeadline"], items=b["items"],
                             slots=r.get("slots", list(range(len(b["items"])))))
            if r["status"] == "epoch-end":
                return None
            if time.monotonic() > deadline:
                raise TimeoutError(f"feeder kept answering wait: {r.get('reason')}")
            time.sleep(r.get("retryAfterMs", 500) / 1000)

    next_batch = lease

    def ack(self, batch: Batch, rewards: Union[None, Sequence[Optional[float]], Mapping[int, Optional[float]]] = None,
            response_lengths: Optional[Sequence[Optional[int]]] = None, step: Optional[int] = None,
            slots: Optional[Sequence[int]] = None, rollouts: Optional[Sequence[Any]] = None) -> dict:
        """Acks slots of a batch; the rest stay leased. Which slots:
        - `rewards` a mapping {slot: reward}: those slots;
        - `slots` given: those slots, `rewards` / `response_lengths` (if any) parallel to them;
        - `rewards` a sequence without `slots`: one per item of `batch.items`, so `batch.slots`;
        - nothing: every slot not yet acked.
        A reward is any finite number (None: acked without one); NaN or infinity raise ValueError
        before anything is sent. `rollouts`, parallel to the slots acked: each slot's rollout rewards
        (a sequence) or {"mean", "count"}, None for none; the feeder's per-item pass rate (and
        band-pass) follows them, and a slot's reward, when not given, is their mean. `step`: the
        trainer's optimizer step, which band-pass counts cool-downs in. Returns {acked, items,
        rewards, remaining}."""
        if isinstance(rewards, Mapping):
            if slots is not None:
                raise ValueError("give slots either as the rewards' keys or as slots=, not both")
            slots = [int(s) for s in rewards]
            rewards = [rewards[s] for s in rewards]
        elif rewards is not None and slots is None:
            if len(rewards) != len(batch.items):
                raise ValueError(f"{len(rewards)} rewards for {len(batch.items)} items; "
                                 "pass a {slot: reward} mapping (or slots=) to ack a subset")
            slots = list(batch.slots)
        body = self._ref(batch)
        if slots is not None:
            body["slots"] = [int(s) for s in slots]
        if rewards is not None:
            body["rewards"] = [_reward(r, f"rewards[{i}]") for i, r in enumerate(rewards)]
        if rollouts is not None:
            body["rollouts"] = [_rollouts(r, f"rollouts[{i}]") for i, r in enumerate(rollouts)]
        if response_lengths is not None:
            body["responseLengths"] = [None if n is None else int(n) for n in response_lengths]
        if step is not None:
            body["step"] = step
        res = self._call("POST", "/v1/ack", body)
        batch.acked.update(body["slots"] if slots is not None else batch.pending)
        return res

    def release(self, batch: Batch) -> dict:
        """Gives the batch's unacked slots back untrained: this rank's next lease gets them first.
        Returns {released, items}."""
        return self._call("POST", "/v1/release", self._ref(batch))

    def extend(self, batch: Batch, lease_ms: Optional[int] = None) -> str:
        """Moves the lease's deadline to now + lease_ms (the feeder's leaseMs when None)."""
        body = self._ref(batch)
        if lease_ms is not None:
            body["leaseMs"] = lease_ms
        batch.lease_deadline = self._call("POST", "/v1/extend", body)["leaseDeadline"]
        return batch.lease_deadline

    def run_status(self) -> dict:
        """GET /v1/runs/{run}: batches, ranks, and per epoch {epoch, batchSize, planned, acked,
        rewarded, redelivered} in items."""
        return self._call("GET", f"/v1/runs/{urllib.parse.quote(self.run, safe='')}")

    status = run_status

    def item(self, qa_id: str) -> dict:
        """GET /v1/runs/{run}/items/{id}: one item's difficulty record in this run (rollouts,
        passes, weighted pass rate, prior, set aside until which step)."""
        run = urllib.parse.quote(self.run, safe="")
        return self._call("GET", f"/v1/runs/{run}/items/{urllib.parse.quote(qa_id, safe='')}")

    def items(self) -> Iterator[dict]:
        """Every item record of this run (GET /v1/runs/{run}/items, page by page)."""
        run = urllib.parse.quote(self.run, safe="")
        after = ""
        while True:
            page = self._call("GET", f"/v1/runs/{run}/items?limit=1000&after={urllib.parse.quote(after, safe='')}")
            yield from page["items"]
            if page["next"] is None:
                return
            after = page["next"]

    def reward(self, items: list) -> list:
        """Scores outputs on the feeder (POST /v1/reward); score() does the same locally."""
        return self._call("POST", "/v1/reward", {"items": items})["scores"]

    def batches(self, epochs: Optional[int] = 1) -> Iterator[Batch]:
        """Batches until `epochs` epochs have ended for this rank (None: forever). The caller acks
        each batch; one it does not ack is delivered again once its lease expires."""
        done = 0
        while epochs is None or done < epochs:
            b = self.lease()
            if b is None:
                done += 1
                continue
            yield b


try:  # a torch-style IterableDataset when torch is installed, a plain iterable otherwise
    from torch.utils.data import IterableDataset as _Base  # type: ignore
except Exception:  # noqa: BLE001 - torch is optional
    _Base = object  # type: ignore


class BatchDataset(_Base):  # type: ignore[misc, valid-type]
    """Yields the items of leased batches, acking each batch once all of its items were taken
    (auto_ack) or leaving the ack to the caller (client.ack(dataset.current, rewards))."""

    def __init__(self, client: FeederClient, epochs: Optional[int] = 1, auto_ack: bool = True):
        super().__init__()
        self.client = client
        self.epochs = epochs
        self.auto_ack = auto_ack
        self.current: Optional[Batch] = None

    def __iter__(self):
        for batch in self.client.batches(self.epochs):
            self.current = batch
            yield from batch.items
            if self.auto_ack:
                self.client.ack(batch)
