"""A GRPO smoke run with numpy only: a tiny softmax policy over the option letters.

For each leased batch: 5 rollouts per prompt sampled from the policy, scored with the verifiable
reward, group-normalised advantages, one policy-gradient step, then an ack carrying each item's
mean reward. The policy and the progress are checkpointed after every step, so a run killed and
started again resumes (the feeder delivers the batch it held again once its lease expires).

  python examples/grpo_smoke.py --url http://127.0.0.1:8787 --run smoke --epochs 3
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from bioalchemy_client import FeederClient, score  # noqa: E402

ROLLOUTS = 5
FORMATS = ["Answer: {}", "\\boxed{{{}}}", "<think>Let me see.</think>\nThe answer is ({})", "{})"]


def load(path):
    if path and os.path.exists(path):
        with open(path) as f:
            s = json.load(f)
        return {k: np.array(v) for k, v in s["logits"].items()}, s["epochs"]
    return {}, {}


def save(path, logits, epochs):
    if not path:
        return
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"logits": {k: v.tolist() for k, v in logits.items()}, "epochs": epochs}, f)
    os.replace(tmp, path)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--run", default="smoke")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--lr", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--checkpoint", default=None)
    ap.add_argument("--lease-ms", type=int, default=None)
    args = ap.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    logits, epochs = load(args.checkpoint)  # epochs: {epoch: [reward sum, rollouts]}
    # One batch at a time, so no lease from the next epoch while one of this epoch is held: a
    # batch a killed run of this script held is delivered again once its lease runs out, before
    # the epoch ends.
    client = FeederClient(args.url, run=args.run, lease_ms=args.lease_ms, prefetch=0)
    while True:
        batch = client.next_batch()
        if batch is None:
            if client.status()["ranks"][0]["epoch"] >= args.epochs:
                break
            continue
        if batch.epoch >= args.epochs:
            # A batch of an epoch past the last one wanted (cut ahead): given back untrained, or it
            # would stay leased to this run until its lease ran out.
            client.release(batch)
            break
        rewards = []
        for item in batch.items:
            info = item["extra_info"]
            if info["kind"] != "mcq":
                rewards.append(None)  # the letter policy does not answer free-form questions
                continue
            n = len(info["options"])
            theta = logits.setdefault(info["qa_id"], np.zeros(n))
            p = np.exp(theta - theta.max())
            p /= p.sum()
            picks = rng.choice(n, size=ROLLOUTS, p=p)
            outputs = [FORMATS[k % len(FORMATS)].format("ABCDEFGHIJ"[a]) for k, a in enumerate(picks)]
            r = np.array([score("mcq", item["answer"], o, options=info["options"])["score"] for o in outputs],
                         dtype=float)
            adv = (r - r.mean()) / (r.std() + 1e-6)
            grad = np.zeros(n)
            for a, g in zip(picks, adv):
                grad += g * (np.eye(n)[a] - p)
            logits[info["qa_id"]] = theta + args.lr * grad / ROLLOUTS
            rewards.append(float(r.mean()))
            tot = epochs.setdefault(str(batch.epoch), [0.0, 0])
            tot[0] += float(r.sum())
            tot[1] += ROLLOUTS
        save(args.checkpoint, logits, epochs)
        client.ack(batch, rewards=rewards)
    means = [epochs[k][0] / max(1, epochs[k][1]) for k in sorted(epochs, key=int)]
    for k, m in zip(sorted(epochs, key=int), means):
        print(f"epoch {k}: mean reward {m:.3f}")
    print(json.dumps({"mean_reward_by_epoch": means}))
    return means


if __name__ == "__main__":
    main()
