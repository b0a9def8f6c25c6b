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
