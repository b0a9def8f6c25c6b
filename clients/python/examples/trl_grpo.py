"""GRPO with TRL on the feeder's live mix (not run in CI: it needs a GPU and a model).

  pip install -e clients/python trl datasets transformers accelerate
  bioalchemy run &                                    # serves the feeder on 127.0.0.1:8787
  python clients/python/examples/trl_grpo.py --model Qwen/Qwen2.5-0.5B-Instruct

The dataset streams the feeder's leased batches (each batch is acked, with the mean reward of its
items, when the next one is taken), and the reward function is the same verifiable reward as the
feeder's POST /v1/reward. The paper's settings: 5 rollouts per prompt, temperature 0.6.
"""

import argparse

from datasets import IterableDataset
from trl import GRPOConfig, GRPOTrainer

from bioalchemy_client import FeederClient, compute_score


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="http://127.0.0.1:8787")
    ap.add_argument("--run", default="trl-grpo")
    ap.add_argument("--model", default="Qwen/Qwen2.5-0.5B-Instruct")
    ap.add_argument("--max-steps", type=int, default=50)
    args = ap.parse_args()

    client = FeederClient(args.url, run=args.run, batch_size=32)

    def rows():
        for batch in client.batches(epochs=None):
            for item in batch.items:
                yield {"prompt": item["prompt"], "ground_truth": item["ground_truth"],
                       "extra_info": item["extra_info"]}
            client.ack(batch)

    def reward(completions, ground_truth, extra_info, **_):
        texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
        return [compute_score("bioalchemy", t, g, e) for t, g, e in zip(texts, ground_truth, extra_info)]

    config = GRPOConfig(output_dir="grpo-out", num_generations=5, temperature=0.6, max_completion_length=1024,
                        per_device_train_batch_size=10, max_steps=args.max_steps, logging_steps=1)
    trainer = GRPOTrainer(model=args.model, reward_funcs=reward, args=config,
                          train_dataset=IterableDataset.from_generator(rows))
    trainer.train()


if __name__ == "__main__":
    main()
