"""GRPO with TRL on the feeder's live mix, for as many epochs as asked, on a GPU or on the CPU.

  bash deploy/trainer-venv.sh                          # torch, trl, ... and this client in .deploy/trainer-venv
  bioalchemy run &                                     # serves the feeder on 127.0.0.1:8787
  .deploy/trainer-venv/bin/python clients/python/examples/trl_grpo.py --model Qwen/Qwen2.5-0.5B-Instruct --epochs 2

The dataset leases as the trainer reads (bioalchemy_client.trl); each optimizer step acks the items
it trained, each with the mean reward of its completions, their mean length and the step; at the end
what was fetched and not trained is given back. The reward is the feeder's verifiable reward. The
paper's settings are the defaults: 5 rollouts per prompt, temperature 0.6. Prints a JSON summary last.
"""

import argparse
import json
import math

import torch
from trl import GRPOConfig, GRPOTrainer

from bioalchemy_client import FeederClient
from bioalchemy_client.trl import FeederFeed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default="http://127.0.0.1:8787")
    ap.add_argument("--run", default="trl-grpo")
    ap.add_argument("--model", default="Qwen/Qwen2.5-0.5B-Instruct", help="a model name or from_pretrained directory")
    ap.add_argument("--epochs", type=int, default=1, help="feeder epochs to train (the training ends after them)")
    ap.add_argument("--max-steps", type=int, default=None,
                    help="stop earlier (default: the steps the feeder's current epoch size times --epochs takes)")
    ap.add_argument("--num-generations", type=int, default=5)
    ap.add_argument("--prompts-per-step", type=int, default=2)
    ap.add_argument("--max-completion-length", type=int, default=1024)
    ap.add_argument("--batch-size", type=int, default=32, help="prompts per leased batch")
    ap.add_argument("--output-dir", default="grpo-out")
    args = ap.parse_args()

    feed = FeederFeed(FeederClient(args.url, run=args.run, batch_size=args.batch_size), epochs=args.epochs)
    # The stream ends the training after --epochs; max_steps (required with a streaming dataset)
    # only shapes the learning-rate schedule unless it is smaller.
    max_steps = args.max_steps or math.ceil(feed.epoch_items() * args.epochs / args.prompts_per_step)
    gpu = torch.cuda.is_available()
    config = GRPOConfig(
        output_dir=args.output_dir,
        use_cpu=not gpu,
        bf16=gpu and torch.cuda.is_bf16_supported(),
        # The feeder shuffles each epoch; TRL's shuffle would read the stream through a 1,000-item buffer.
        shuffle_dataset=False,
        num_generations=args.num_generations,
        per_device_train_batch_size=args.num_generations * args.prompts_per_step,
        temperature=0.6,
        max_completion_length=args.max_completion_length,
        max_steps=max_steps,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
    )
    trainer = GRPOTrainer(model=args.model, reward_funcs=feed.reward, args=config,
                          train_dataset=feed.dataset(), callbacks=[feed.callback])
    trainer.train()
    print(json.dumps({"steps": trainer.state.global_step, "acked": feed.acked_items,
                      "released": feed.released_items, "mean_reward_by_epoch": feed.mean_reward_by_epoch()}))


if __name__ == "__main__":
    main()
