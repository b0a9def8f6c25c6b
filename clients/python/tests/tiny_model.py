"""A tiny Qwen2 and its tokenizer, built here: nothing is downloaded (no model hub is reachable), and
a step of GRPO on it takes a fraction of a second on one CPU core. Its answers are random: the tests
check the plumbing (leases, acks, rewards), not learning."""

from __future__ import annotations

from pathlib import Path

CORPUS = [
    "Which organelle makes ATP? A) Mitochondria B) Ribosome C) Golgi apparatus D) Nucleus",
    "Think it through, then give the letter of the correct option as \\boxed{X}.",
    "Think it through, then give a short final answer as \\boxed{answer}. answer 12 fermentation",
    "user assistant system: The answer is \\boxed{A} \\boxed{B} \\boxed{C} \\boxed{D}",
]
CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}"
)


def tiny_tokenizer():
    """A byte-level BPE trained on CORPUS with `tokenizers`, as a transformers tokenizer with a chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(CORPUS, trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<unk>", "<pad>", "<eos>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    t = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>", eos_token="<eos>")
    t.chat_template = CHAT_TEMPLATE
    return t


def tiny_model(tokenizer, seed: int = 0):
    """A one-layer Qwen2 (hidden size 16) from a config, randomly initialised."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=512,
                         pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                         bos_token_id=None)
    return Qwen2ForCausalLM(config)


def save_tiny_model(directory: Path) -> Path:
    """The model and tokenizer saved as a from_pretrained directory (what --model takes)."""
    tokenizer = tiny_tokenizer()
    tiny_model(tokenizer).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory
