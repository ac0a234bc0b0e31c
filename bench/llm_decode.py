"""LLM decode speed in onnxruntime-genai: aten2onnx.export_llm's models, standard ONNX ("aten2onnx") and
with onnxruntime's fused contrib ops (optimize="onnxruntime", "a2o-ort"), against onnxruntime-genai's own
model builder, on the same random-init LLaMA weights saved locally (with a tokenizer built here), at each
precision asked for (float32: the builder's fp32; int4 and int8: export_llm(precision=...) and the
builder's -p int4/int8, both quantizing per block of 32 with onnxruntime's quantizer).

Per precision and model, in one run: export time, prefill latency (the prompt appended to a fresh
generator) and per-token decode latency (each generate_next_token after the prefill), medians over
interleaved rounds whose order rotates; ratios against the builder's model of that precision (the anchor);
whether each generates the same greedy tokens as transformers (float32) and as the builder's model; and the
largest distance of its prefill logits from float32 transformers' (the error against eager).

    python bench/llm_decode.py [--precisions float32,int4] [--layers 4] [--hidden 256] [--prompt 64] [--new 32]
                               [--rounds 7] [--threads 2]

Needs onnxruntime-genai, and for the builder onnx_ir (pip install onnxruntime-genai onnx_ir).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import torch

import aten2onnx


def build_folder(folder: str, layers: int, hidden: int, vocab: int) -> torch.nn.Module:
    import tokenizers
    import transformers

    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=hidden * 3,
                                      num_hidden_layers=layers, num_attention_heads=max(hidden // 64, 2),
                                      num_key_value_heads=max(hidden // 128, 1), max_position_embeddings=1024,
                                      bos_token_id=1, eos_token_id=2, pad_token_id=0)
    model = transformers.LlamaForCausalLM(config).eval()
    model.save_pretrained(folder)
    tokenizer = tokenizers.Tokenizer(tokenizers.models.WordLevel({f"t{i}": i for i in range(vocab)}, unk_token="t0"))
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tokenizer.save(os.path.join(folder, "tokenizer.json"))
    return model


def set_threads(folder: str, threads: int) -> None:
    path = os.path.join(folder, "genai_config.json")
    config = json.load(open(path))
    config["model"]["decoder"]["session_options"]["intra_op_num_threads"] = threads
    config["model"]["decoder"]["session_options"]["inter_op_num_threads"] = 1
    json.dump(config, open(path, "w"), indent=4)


def timed_generation(model, prompt: np.ndarray, new: int) -> tuple[float, float, list[int]]:
    """(prefill seconds, median seconds per decoded token, the tokens)."""
    import onnxruntime_genai as og

    params = og.GeneratorParams(model)
    params.set_search_options(max_length=prompt.shape[1] + new, do_sample=False)
    generator = og.Generator(model, params)
    start = time.perf_counter()
    generator.append_tokens(prompt)
    prefill = time.perf_counter() - start
    steps = []
    while not generator.is_done():
        start = time.perf_counter()
        generator.generate_next_token()
        steps.append(time.perf_counter() - start)
    return prefill, statistics.median(steps[1:] or steps), [int(t) for t in generator.get_sequence(0)]


BUILDER_PRECISION = {"float32": "fp32", "float16": "fp16", "int4": "int4", "int8": "int8"}


def prefill_logits(model, prompt: np.ndarray) -> np.ndarray:
    """genai's logits for the prompt's last position."""
    import onnxruntime_genai as og

    params = og.GeneratorParams(model)
    params.set_search_options(max_length=prompt.shape[1] + 1, do_sample=False)
    generator = og.Generator(model, params)
    generator.append_tokens(prompt)
    return np.asarray(generator.get_output("logits"))[0, -1]


def main() -> None:
    import onnxruntime_genai as og

    parser = argparse.ArgumentParser()
    parser.add_argument("--precisions", default="float32,int4")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--vocab", type=int, default=1024)
    parser.add_argument("--prompt", type=int, default=64)
    parser.add_argument("--new", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=2)
    options = parser.parse_args()
    torch.set_num_threads(options.threads)
    root = tempfile.mkdtemp(prefix="llm_decode_")
    hf = os.path.join(root, "hf")
    model = build_folder(hf, options.layers, options.hidden, options.vocab)
    torch.manual_seed(1)
    prompt = torch.randint(3, options.vocab, (1, options.prompt))
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=options.new,
                              do_sample=False, eos_token_id=None, pad_token_id=0)[0].tolist()
        eager_logits = model(prompt).logits[0, -1].numpy()
    print(f"LLaMA {options.layers} layers, hidden {options.hidden}, vocab {options.vocab}; prompt {options.prompt}, "
          f"{options.new} new tokens; {options.threads} threads; {options.rounds} rounds; onnxruntime-genai "
          f"{og.__version__}")
    for precision in options.precisions.split(","):
        folders, export_seconds = {}, {}
        start = time.perf_counter()
        folders["builder"] = os.path.join(root, f"builder-{precision}")
        subprocess.run([sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", hf, "-o", folders["builder"],
                        "-p", BUILDER_PRECISION[precision], "-e", "cpu"], check=True, capture_output=True)
        export_seconds["builder"] = time.perf_counter() - start
        for name, optimize in (("aten2onnx", None), ("a2o-ort", "onnxruntime")):
            start = time.perf_counter()
            folders[name] = os.path.join(root, f"{name}-{precision}")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                aten2onnx.export_llm(hf, folders[name], optimize=optimize, precision=precision)
            export_seconds[name] = time.perf_counter() - start
        for folder in folders.values():
            set_threads(folder, options.threads)
        models = {name: og.Model(folder) for name, folder in folders.items()}
        prefill: dict[str, list[float]] = {name: [] for name in models}
        decode: dict[str, list[float]] = {name: [] for name in models}
        tokens: dict[str, list[int]] = {}
        names = list(models)
        for r in range(options.rounds + 1):  # round 0 warms up
            shift = r % len(names)
            for name in names[shift:] + names[:shift]:
                p, d, tokens[name] = timed_generation(models[name], prompt.numpy(), options.new)
                if r:
                    prefill[name].append(p)
                    decode[name].append(d)
        errors = {name: float(np.abs(prefill_logits(m, prompt.numpy()) - eager_logits).max())
                  for name, m in models.items()}
        print(f"\n{precision}")
        print(f"{'model':<10} {'export s':>9} {'prefill ms':>11} {'decode ms/token':>16} {'prefill/builder':>16} "
              f"{'decode/builder':>15} {'max err vs eager':>17} {'= transformers':>15} {'= builder':>10}")
        anchor_prefill, anchor_decode = statistics.median(prefill["builder"]), statistics.median(decode["builder"])
        for name in names:
            p, d = statistics.median(prefill[name]), statistics.median(decode[name])
            print(f"{name:<10} {export_seconds[name]:>9.2f} {p * 1e3:>11.3f} {d * 1e3:>16.4f} {p / anchor_prefill:>16.2f} "
                  f"{d / anchor_decode:>15.2f} {errors[name]:>17.2e} {str(tokens[name] == want):>15} "
                  f"{str(tokens[name] == tokens['builder']):>10}")

if __name__ == "__main__":
    main()
