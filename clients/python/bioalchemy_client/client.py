"""Lease, ack and extend rollout batches over the feeder's HTTP API (stdlib only)."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional, Sequence


class FeederError(Exception):
    """A refused request: the HTTP status, the feeder's error code and its reason."""

    def __init__(self, status: int, code: str, reason: str):
        super().__init__(f"{status} {code}: {reason}")
        self.status = status
        self.code = code
        self.reason = reason


@dataclass
class Batch:
    """One leased batch: its items are the feeder's superset rows (verl / TRL columns)."""

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


class FeederClient:
    """One trainer rank of one run. Ranks of a run get disjoint batches; a batch not acked before
    its lease expires is delivered again (to the same rank)."""

    def __init__(self, url: str, run: str, rank: int = 0, world_size: int = 1,
                 batch_size: Optional[int] = None, lease_ms: Optional[int] = None, timeout: float = 30.0,
                 token: Optional[str] = None):
        self.url = url.rstrip("/")
        # The bearer token a feeder off loopback requires (server.tokenEnv, BIOALCHEMY_FEEDER_TOKEN).
        self.token = token if token is not None else os.environ.get("BIOALCHEMY_FEEDER_TOKEN") or None
        self.run = run
        self.rank = rank
        self.world_size = world_size
        self.batch_size = batch_size
        self.lease_ms = lease_ms
        self.timeout = timeout

    # -- HTTP ------------------------------------------------------------------------------------
    def _call(self, method: str, path: str, body: Optional[dict] = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
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

    # -- the API ---------------------------------------------------------------------------------
    def lease(self) -> dict:
        """The raw lease answer: {"status": "leased" | "wait" | "epoch-end", ...}."""
        body: dict = {"run": self.run, "rank": self.rank, "worldSize": self.world_size}
        if self.batch_size is not None:
            body["batchSize"] = self.batch_size
        if self.lease_ms is not None:
            body["leaseMs"] = self.lease_ms
        return self._call("POST", "/v1/lease", body)

    def next_batch(self, max_wait_s: float = 300.0) -> Optional[Batch]:
        """The next batch of this rank, waiting while the feeder says so; None at the epoch's end."""
        deadline = time.monotonic() + max_wait_s
        while True:
            r = self.lease()
            if r["status"] == "leased":
                b = r["batch"]
                return Batch(id=b["id"], run=b["run"], rank=b["rank"], epoch=b["epoch"], index=b["index"],
                             attempt=b["attempt"], mix_version=b["mixVersion"], lease_id=r["leaseId"],
                             lease_deadline=b["leaseDeadline"], items=b["items"])
            if r["status"] == "epoch-end":
                return None
            if time.monotonic() > deadline:
                raise TimeoutError(f"feeder kept answering wait: {r.get('reason')}")
            time.sleep(r.get("retryAfterMs", 500) / 1000)

    def ack(self, batch: Batch, rewards: Optional[Sequence[Optional[float]]] = None,
            response_lengths: Optional[Sequence[Optional[int]]] = None, step: Optional[int] = None) -> dict:
        body: dict = {"run": self.run, "batchId": batch.id, "leaseId": batch.lease_id}
        if rewards is not None:
            body["rewards"] = [None if r is None else float(r) for r in rewards]
        if response_lengths is not None:
            body["responseLengths"] = list(response_lengths)
        if step is not None:
            body["step"] = step
        return self._call("POST", "/v1/ack", body)

    def extend(self, batch: Batch, lease_ms: Optional[int] = None) -> str:
        body: dict = {"run": self.run, "batchId": batch.id, "leaseId": batch.lease_id}
        if lease_ms is not None:
            body["leaseMs"] = lease_ms
        batch.lease_deadline = self._call("POST", "/v1/extend", body)["leaseDeadline"]
        return batch.lease_deadline

    def status(self) -> dict:
        return self._call("GET", f"/v1/runs/{self.run}")

    def reward(self, items: list) -> list:
        """Scores outputs on the feeder (POST /v1/reward); score() does the same locally."""
        return self._call("POST", "/v1/reward", {"items": items})["scores"]

    def batches(self, epochs: Optional[int] = 1) -> Iterator[Batch]:
        """Batches until `epochs` epochs have ended for this rank (None: forever). The caller acks
        each batch; one it does not ack is delivered again once its lease expires."""
        done = 0
        while epochs is None or done < epochs:
            b = self.next_batch()
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
