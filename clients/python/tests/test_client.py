import pytest
from hypothesis import given
from hypothesis import strategies as st

from bioalchemy_client import BatchDataset, FeederClient, FeederError
from bioalchemy_client.client import _rollouts


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


# -- difficulty (issue 44): rollouts in acks, the per-item record, band-pass ---------------------

_finite = st.floats(min_value=-10, max_value=10, allow_nan=False, allow_infinity=False)


@given(st.lists(_finite, min_size=1, max_size=16))
def test_rollouts_of_rewards_carry_their_count(rewards):
    assert _rollouts(rewards, "r") == {"count": len(rewards), "rewards": rewards}


@given(st.lists(_finite, max_size=8), st.sampled_from([float("nan"), float("inf"), float("-inf")]), st.data())
def test_a_rollout_reward_that_is_not_finite_is_refused_before_sending(rewards, bad, data):
    at = data.draw(st.integers(min_value=0, max_value=len(rewards)))
    with pytest.raises(ValueError, match="finite"):
        _rollouts(rewards[:at] + [bad] + rewards[at:], "r")


def test_acks_with_rollouts_make_a_per_item_record_and_bad_ones_are_refused(feeder):
    c = FeederClient(feeder.url, run="rollouts")
    b = c.lease()
    n = len(b.items)
    with pytest.raises(ValueError, match="count is 3"):
        c.ack(b, rollouts=[{"count": 3, "rewards": [1, 0]}] * n)
    with pytest.raises(FeederError) as e:
        c._call("POST", "/v1/ack", {**c._ref(b), "rollouts": [{"count": 3, "rewards": [1, 0]}] * n})
    assert (e.value.status, e.value.code) == (400, "rollout-count-mismatch")
    assert list(c.items()) == []
    res = c.ack(b, rollouts=[[1.0, 0.0, 1.0, 1.0]] + [{"mean": 0.0, "count": 4}] * (n - 1), step=7)
    assert res["rewards"] == n
    first = c.item(b.items[0]["extra_info"]["qa_id"])
    assert (first["rollouts"], first["passes"], first["passRate"], first["step"]) == (4, 3, 0.75, 7)
    assert {r["id"]: r["flatGroups"] for r in c.items()}[b.items[1]["extra_info"]["qa_id"]] == 1


def test_difficulty_state_after_kill_9_equals_the_state_before(feeder_factory):
    band = '{"floor":0.2,"ceiling":0.8,"minRollouts":4,"cooldownSteps":5,"exploreShare":0}'
    f = feeder_factory(items=200, lease_ms=60000, batch_size=16, band_pass=band)
    c = FeederClient(f.url, run="killed")
    for step in range(1, 9):
        b = c.lease()
        if b is None:
            b = c.lease()
        c.ack(b, rollouts=[[float((step + i) % 3 == 0)] * 4 for i in range(len(b.items))], step=step)
    before = list(c.items())
    assert any(r["aside"] for r in before) and len(before) > 50
    f.kill()
    f.start()
    assert list(FeederClient(f.url, run="killed").items()) == before
