"""Write a random-init LLaMA folder as transformers saves one (config.json, sharded safetensors with their
index, a word-level tokenizer.json), one shard at a time: a model larger than this machine's memory (the
"8b" shape is LLaMA-3-8B's: 8.0e9 parameters, 32 GB in float32) is never built, only its tensors, each
drawn as transformers initializes it (normal with std initializer_range, norms ones) from a generator seeded
by its index, so that the same command writes the same bytes.

    python bench/llama_folder.py OUT [--shape 8b|3gb|1gb] [--dtype float32] [--shard-gb 4]
"""

from __future__ import annotations

import argparse
import json
import os
import time

SHAPES = {
    "8b": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
               num_key_value_heads=8, vocab_size=128256, rope_theta=500000.0, max_position_embeddings=8192),
    "3gb": dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=14, num_attention_heads=16,
                num_key_value_heads=4, vocab_size=32000, max_position_embeddings=2048),
    "1gb": dict(hidden_size=1024, intermediate_size=2816, num_hidden_layers=16, num_attention_heads=16,
                num_key_value_heads=4, vocab_size=32000, max_position_embeddings=2048),
}


def write_folder(folder: str, shape: str, dtype: str = "float32", shard_gb: float = 4.0) -> int:
    """Writes the folder; returns the weights' bytes."""
    import tokenizers
    import torch
    import transformers
    from safetensors.torch import save_file

    os.makedirs(folder, exist_ok=True)
    config = transformers.LlamaConfig(**SHAPES[shape], tie_word_embeddings=False, bos_token_id=1, eos_token_id=2,
                                      pad_token_id=0, dtype=dtype)
    config.architectures = ["LlamaForCausalLM"]  # (as a model's save_pretrained writes it; the builder reads it)
    config.save_pretrained(folder)
    with torch.device("meta"):
        shapes = [(name, tuple(p.shape)) for name, p in transformers.LlamaForCausalLM(config).named_parameters()]
    torch_dtype = getattr(torch, dtype)
    limit = int(shard_gb * 2**30)
    shards: list[list[str]] = [[]]
    sizes = [0]
    for name, size in shapes:
        nbytes = torch.Size(size).numel() * torch_dtype.itemsize
        if shards[-1] and sizes[-1] + nbytes > limit:
            shards.append([])
            sizes.append(0)
        shards[-1].append(name)
        sizes[-1] += nbytes
    index = {name: i for i, (name, _) in enumerate(shapes)}
    dims = dict(shapes)
    files = [f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors" for i in range(len(shards))]
    for names, file in zip(shards, files):
        tensors = {}
        for name in names:
            if name.endswith("norm.weight"):
                tensors[name] = torch.ones(dims[name], dtype=torch_dtype)
            else:
                generator = torch.Generator().manual_seed(index[name])
                tensors[name] = torch.empty(dims[name], dtype=torch_dtype).normal_(
                    0, config.initializer_range, generator=generator)
        save_file(tensors, os.path.join(folder, file), metadata={"format": "pt"})
        del tensors
    total = sum(sizes)
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total},
                   "weight_map": {name: file for names, file in zip(shards, files) for name in names}}, f, indent=2)
    vocab = {f"t{i}": i for i in range(config.vocab_size)}
    tokenizer = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="t0"))
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tokenizer.save(os.path.join(folder, "tokenizer.json"))  # the builder and genai need one
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--shape", choices=sorted(SHAPES), default="8b")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--shard-gb", type=float, default=4.0)
    options = parser.parse_args()
    start = time.perf_counter()
    total = write_folder(options.out, options.shape, options.dtype, options.shard_gb)
    print(f"wrote {options.out}: {total / 2**30:.2f} GiB of {options.dtype} weights in "
          f"{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
