"""Peak memory of exporting a LLaMA, as a ratio to its weights' bytes.

Each measurement runs in a fresh child process and reports its peak RSS (getrusage's ru_maxrss of the
child: every page it held resident, the interpreter and its imports included). Per model size:

- `export_llm(folder)`: aten2onnx.export_llm from the transformers folder (safetensors) into a new folder,
  and with optimize="onnxruntime";
- `export+save`: the model loaded with from_pretrained, `aten2onnx.export`, `save(external_data=True)` (the save
  gives back each weight's mapped pages once written);
- `loaded only`: from_pretrained alone (transformers maps the safetensors: pages are resident once read);
- `loaded, all read`: from_pretrained, one forward and every weight read: what holding the model's own pages
  costs (resident once read, until given back);
- `genai builder`: onnxruntime-genai's model builder on the same folder (fp32, CPU);
- `torch.onnx`: torch.onnx.export(dynamo=True) of the loaded model with external data (with --torch-onnx).

The models are random-init LLaMAs from configs (no download), float32, saved with save_pretrained in a
temporary folder: "1gb" (hidden 1024, 16 layers) and "3gb" (hidden 2048, 14 layers).

    python bench/export_memory.py [--sizes 1gb,3gb] [--cases llm,export_save,...] [--torch-onnx]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

SIZES = {
    "1gb": dict(hidden_size=1024, intermediate_size=2816, num_hidden_layers=16, num_attention_heads=16,
                num_key_value_heads=4, vocab_size=32000),
    "3gb": dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=14, num_attention_heads=16,
                num_key_value_heads=4, vocab_size=32000),
}


def make_folder(size: str, folder: str) -> None:
    import tokenizers
    import torch
    import transformers

    config = transformers.LlamaConfig(**SIZES[size], max_position_embeddings=2048, tie_word_embeddings=False,
                                      bos_token_id=1, eos_token_id=2, pad_token_id=0)
    torch.manual_seed(0)
    with torch.no_grad():
        model = transformers.LlamaForCausalLM(config).eval()
    model.save_pretrained(folder, max_shard_size="1GB")  # sharded: the 3gb model in four files
    vocab = {f"t{i}": i for i in range(config.vocab_size)}
    tokenizer = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="t0"))
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tokenizer.save(os.path.join(folder, "tokenizer.json"))  # the builder and genai need one


def weight_bytes(folder: str) -> int:
    return sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder) if f.endswith(".safetensors"))


def child(case: str, folder: str, out: str) -> None:
    """Runs in the child: one export, then the peak RSS as JSON on the last line of stdout."""
    import warnings

    import torch

    warnings.simplefilter("ignore")
    start = time.perf_counter()
    if case in ("llm", "llm_ort"):
        import aten2onnx
        aten2onnx.export_llm(folder, out, progress=False, optimize="onnxruntime" if case == "llm_ort" else None)
    elif case == "genai":
        subprocess.run([sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", folder, "-o", out,
                        "-p", "fp32", "-e", "cpu", "-c", os.path.join(out, "cache")], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    else:
        import torch
        import transformers
        model = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()
        ids = torch.ones(1, 8, dtype=torch.long)
        if case == "touched":  # every weight read once (a forward reads all but the embedding's other rows)
            with torch.no_grad():
                model(ids, use_cache=False)
                sum(float(t.float().sum()) for t in model.state_dict().values())
        elif case == "export_save":
            import aten2onnx
            exported = aten2onnx.export(model, (ids,), {"use_cache": False}, progress=False)
            exported.save(os.path.join(out, "model.onnx"), external_data=True)
        elif case == "torch_onnx":
            program = torch.onnx.export(model, (ids,), kwargs={"use_cache": False}, dynamo=True, verbose=False)
            program.save(os.path.join(out, "model.onnx"), external_data=True)
    seconds = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)  # the builder runs in a grandchild
    peak = max(usage.ru_maxrss, children.ru_maxrss) * 1024
    print(json.dumps({"peak": peak, "seconds": seconds, "torch": torch.__version__}))


def measure(case: str, folder: str) -> tuple[int | None, float | None, str]:
    with tempfile.TemporaryDirectory() as out:
        run = subprocess.run([sys.executable, __file__, "--child", case, folder, out], capture_output=True, text=True)
    if run.returncode != 0:
        return None, None, (run.stderr.strip().splitlines() or ["failed"])[-1][:120]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    return result["peak"], result["seconds"], ""


LABELS = {"llm": "export_llm(folder)", "llm_ort": "  optimize=onnxruntime", "export_save": "export+save", "loaded": "loaded only",
          "touched": "loaded, all read",
          "genai": "genai builder", "torch_onnx": "torch.onnx"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--make", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--sizes", default="1gb,3gb")
    parser.add_argument("--cases", default="llm,llm_ort,genai,export_save,loaded,touched")
    parser.add_argument("--torch-onnx", action="store_true", help="also torch.onnx (slow)")
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    if args.make:
        make_folder(*args.make)
        return
    cases = args.cases.split(",") + (["torch_onnx"] if args.torch_onnx else [])
    # This process imports no torch and builds no model: Linux keeps a process's peak RSS across exec, so a
    # child forked from a large parent would report the parent's peak as its own.
    print("peak RSS (getrusage) of a fresh child process per export, as a ratio to the weights' bytes")
    for size in args.sizes.split(","):
        with tempfile.TemporaryDirectory() as folder:
            subprocess.run([sys.executable, __file__, "--make", size, folder], check=True, capture_output=True)
            weights = weight_bytes(folder)
            print(f"\nllama-{size}: weights {weights / 2**30:.2f} GiB (float32 safetensors)")
            print(f"  {'export':22} {'peak GiB':>9} {'x weights':>10} {'seconds':>8}")
            peaks: dict[str, int] = {}
            for case in cases:
                peak, seconds, why = measure(case, folder)
                if peak is None:
                    print(f"  {LABELS[case]:22} failed: {why}")
                else:
                    peaks[case] = peak
                    print(f"  {LABELS[case]:22} {peak / 2**30:9.2f} {peak / weights:9.2f}x {seconds:8.1f}")
            if "export_save" in peaks and "torch_onnx" in peaks:
                print(f"  export+save / torch.onnx: {peaks['export_save'] / peaks['torch_onnx']:.2f}x")
            if "llm" in peaks and "genai" in peaks:
                print(f"  export_llm(folder) / genai builder: {peaks['llm'] / peaks['genai']:.2f}x")


if __name__ == "__main__":
    main()
