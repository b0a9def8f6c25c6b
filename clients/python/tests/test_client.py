import pytest

from bioalchemy_client import BatchDataset, FeederClient, FeederError


def test_lease_extend_ack_and_status(feeder):
    c = FeederClient(feeder.url, run="t", rank=1, world_size=2)
    b = c.next_batch()
    assert b.rank == 1 and b.index % 2 == 1 and len(b.items) == 16
    row = b.items[0]
    for col in ("data_source", "prompt", "ability", "reward_model", "ground_truth", "answer", "solution", "extra_info"):
        assert col in row
    c.extend(b, lease_ms=5000)
    assert c.ack(b, rewards=[1.0] * 16)["items"] == 16
    with pytest.raises(FeederError) as e:
        c.ack(b)
    assert e.value.status == 409 and "already acked" in e.value.reason
    assert c.status()["ackedItems"] == 16


def test_ranks_are_disjoint_and_an_epoch_ends(feeder):
    seen = set()
    for rank in range(2):
        c = FeederClient(feeder.url, run="ep", rank=rank, world_size=2)
        for b in c.batches(epochs=1):
            for it in b.items:
                key = (it["extra_info"]["qa_id"], it["extra_info"]["copy"])
                assert key not in seen
                seen.add(key)
            c.ack(b)
    assert len(seen) == FeederClient(feeder.url, run="ep").status()["planned"]


def test_bad_input_is_a_4xx_with_a_reason(feeder):
    with pytest.raises(FeederError) as e:
        FeederClient(feeder.url, run="x", rank=3, world_size=2).lease()
    assert e.value.status == 400 and "rank" in e.value.reason
    with pytest.raises(FeederError) as e:
        FeederClient(feeder.url, run="never").status()
    assert e.value.status == 404


def test_dataset_yields_items_and_acks(feeder):
    c = FeederClient(feeder.url, run="ds", batch_size=50)
    items = list(BatchDataset(c, epochs=1))
    assert len(items) == c.status()["planned"] == c.status()["ackedItems"]


def test_reward_endpoint_agrees_with_local_score(feeder):
    from bioalchemy_client import score

    items = [{"kind": "mcq", "ground_truth": "C", "options": ["a", "b", "c", "d"], "output": o}
             for o in ["Answer: C", "\\boxed{B}", "B or C"]]
    remote = FeederClient(feeder.url, run="r").reward(items)
    local = [score(i["kind"], i["ground_truth"], i["output"], options=i["options"]) for i in items]
    assert [r["score"] for r in remote] == [l["score"] for l in local] == [1, 0, 0]


def test_per_slot_acks_release_and_epoch_counts(feeder):
    c = FeederClient(feeder.url, run="slots")
    b = c.lease()
    assert b.slots == list(range(16))
    # A subset with raw rewards (no [-1, 1] range); the rest stays leased.
    assert c.ack(b, {0: 2.5, 3: -4.0}, step=1) == {"acked": b.id, "items": 2, "rewards": 2, "remaining": 14}
    assert b.pending == [s for s in range(16) if s not in (0, 3)]
    assert c.release(b) == {"released": b.id, "items": 14}
    with pytest.raises(FeederError) as e:
        c.ack(b, slots=[1])
    assert e.value.status == 409 and e.value.code == "not-leased"
    again = c.lease()
    assert again.id == b.id and again.attempt == 2 and again.slots == b.pending
    assert [it["extra_info"]["qa_id"] for it in again.items] == [b.items[s]["extra_info"]["qa_id"] for s in again.slots]
    assert c.ack(again, [float(i) for i in range(14)], step=2)["remaining"] == 0
    epoch = c.run_status()["epochs"][0]
    assert (epoch["acked"], epoch["rewarded"], epoch["redelivered"]) == (16, 16, 14)


def test_a_loader_fetching_ahead_crosses_the_epoch_end_without_waiting(feeder):
    # The trainer's loop: lease the next batch before acking the one being trained.
    c = FeederClient(feeder.url, run="ahead")
    held = c.lease()
    epochs_seen = []
    while len(epochs_seen) < 2:
        nxt = c.lease(max_wait_s=5)
        if nxt is None:
            epochs_seen.append(held.epoch)
            nxt = c.lease(max_wait_s=5)
        c.ack(held, [1.0] * len(held.items))
        held = nxt
    c.release(held)
    status = c.run_status()
    assert [e["acked"] == e["planned"] for e in status["epochs"][:2]] == [True, True]
    assert all(e["redelivered"] == 0 for e in status["epochs"])


def test_bad_acks_are_refused_with_a_reason_code(feeder):
    c = FeederClient(feeder.url, run="badack", world_size=2)
    b = c.lease()
    with pytest.raises(ValueError, match="finite"):
        c.ack(b, {0: float("nan")})
    with pytest.raises(ValueError, match="finite"):
        c.ack(b, [float("inf")] + [0.0] * 15)
    other = FeederClient(feeder.url, run="badack", rank=1, world_size=2)
    for call, code in [
        (lambda: other.ack(b), "other-rank"),
        (lambda: other.release(b), "other-rank"),
        (lambda: other.extend(b), "other-rank"),
        (lambda: c.ack(b, slots=[16]), "bad-slot"),
        (lambda: c._call("POST", "/v1/ack", {**c._ref(b), "slots": [0], "rewards": ["NaN"]}), "bad-reward"),
    ]:
        with pytest.raises(FeederError) as e:
            call()
        assert e.value.code == code and e.value.status in (400, 409) and e.value.reason
    assert c.run_status()["epochs"][0]["acked"] == 0
    c.ack(b, slots=[0])
    with pytest.raises(FeederError) as e:
        c.ack(b, slots=[0, 1])
    assert (e.value.status, e.value.code) == (409, "slot-already-acked")
    assert c.ack(b)["items"] == 15
