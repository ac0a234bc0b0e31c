"""Peak memory and time of exporting a LLaMA, as a ratio to its weights' bytes.

Each measurement runs in a fresh child process and reports its peak RSS (getrusage's ru_maxrss of the
child: every page it held resident, the interpreter and its imports included) and its wall time. Per model
size:

- `export_llm(folder)`: aten2onnx.export_llm from the transformers folder (safetensors) into a new folder,
  and with optimize="onnxruntime"; with precision="int4" (standard: DequantizeLinear of int4 weights, and
  fused: MatMulNBits) and precision="float16";
- `genai builder`: onnxruntime-genai's model builder on the same folder (CPU; fp32, int4, fp16);
- `export+save`: the model loaded with from_pretrained, `aten2onnx.export`, `save(external_data=True)` (the save
  gives back each weight's mapped pages once written);
- `loaded only`: from_pretrained alone (transformers maps the safetensors: pages are resident once read);
- `loaded, all read`: from_pretrained, one forward and every weight read: what holding the model's own pages
  costs (resident once read, until given back);
- `torch.onnx`: torch.onnx.export(dynamo=True) of the loaded model with external data (with --torch-onnx).

The models are random LLaMAs written by bench/llama_folder.py (no download, never built whole), float32:
"1gb" (hidden 1024, 16 layers), "3gb" (hidden 2048, 14 layers) and "8b" (LLaMA-3-8B's shape, 32 GB: larger
than this machine's memory). A child that would exhaust the machine's memory is stopped (when less than
1 GiB is available) and reported so.

    python bench/export_memory.py [--sizes 1gb,3gb] [--cases llm,llm_int4,genai_int4,...] [--torch-onnx]
    python bench/export_memory.py --sizes 8b --cases llm_int4,llm_ort_int4,llm_fp16,genai_int4 --folder /big/disk/llama-8b
    python bench/export_memory.py --sizes 3gb --cases llm,llm_ort,genai --rounds 3 --errors --folder /work/llama3gb

Seconds are each tool's whole fresh process (interpreter start and imports included, as a user runs it):
ours from the child's start, the builder's its own process. With --rounds, the cases run interleaved,
each round every case once, and the median is printed beside every round's figure; --errors runs each
export in onnxruntime against transformers' float32 logits on a 12-token prompt (max abs difference).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

def make_folder(size: str, folder: str) -> None:
    from llama_folder import write_folder  # (bench/, beside this script)

    write_folder(folder, size, "float32", shard_gb=1.0)


def weight_bytes(folder: str) -> int:
    return sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder) if f.endswith(".safetensors"))


def child(case: str, folder: str, out: str) -> None:
    """Runs in the child: one export, then the peak RSS as JSON on the last line of stdout."""
    import warnings

    import torch

    warnings.simplefilter("ignore")
    start = time.time()
    if case in OURS:
        import aten2onnx
        aten2onnx.export_llm(folder, out, progress=False, **OURS[case])
    elif case in BUILDER:
        subprocess.run([sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", folder, "-o", out,
                        "-p", BUILDER[case], "-e", "cpu", "-c", os.path.join(out, "cache")], check=True,
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
    # the builder: its own process's wall time, from its start (interpreter and imports included); ours: the
    # end, which the parent reads from this process's start (interpreter and imports included too)
    seconds = time.time() - start if case in BUILDER else None
    usage = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)  # the builder runs in a grandchild
    peak = max(usage.ru_maxrss, children.ru_maxrss) * 1024
    print(json.dumps({"peak": peak, "seconds": seconds, "end": time.time(), "torch": torch.__version__}))


def check(case: str, folder: str, out: str) -> None:
    """Runs in a child: the export's logits (onnxruntime, from an empty cache) against transformers' float32
    model on one prompt; prints the max abs difference as JSON."""
    import numpy as np
    import onnxruntime
    import torch
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()
    text = model.config.get_text_config()
    head = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
    ids = torch.randint(3, model.config.vocab_size, (1, 12), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        want = model(ids).logits.float().numpy()
    del model
    session = onnxruntime.InferenceSession(os.path.join(out, "model.onnx"), providers=["CPUExecutionProvider"])
    feeds = {}
    for given in session.get_inputs():
        if given.name == "input_ids":
            feeds[given.name] = ids.numpy()
        elif given.name == "attention_mask":
            feeds[given.name] = np.ones(ids.shape, np.int64)
        elif given.name == "position_ids":
            feeds[given.name] = np.arange(ids.shape[1])[None]
        else:
            dtype = np.float16 if "float16" in given.type else np.float32
            heads = given.shape[1] if isinstance(given.shape[1], int) else text.num_key_value_heads
            size = given.shape[3] if isinstance(given.shape[3], int) else head  # (the builder's is named)
            feeds[given.name] = np.zeros((1, heads, 0, size), dtype)
    got = session.run(["logits"], feeds)[0].astype(np.float32)
    print(json.dumps({"error": float(np.abs(got - want).max())}))


OURS = {"llm": {}, "llm_ort": dict(optimize="onnxruntime"), "llm_int4": dict(precision="int4"),
        "llm_ort_int4": dict(precision="int4", optimize="onnxruntime"), "llm_fp16": dict(precision="float16")}
BUILDER = {"genai": "fp32", "genai_int4": "int4", "genai_fp16": "fp16"}
LOW_MEMORY = 1 << 30  # a child is stopped when the machine has less available


def available_memory() -> int:
    with open("/proc/meminfo") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))


def measure(case: str, folder: str, out_root: str | None, keep: str | None = None, checked: bool = False
            ) -> tuple[int | None, float | None, float | None, str]:
    """(peak RSS, seconds, max abs error of the logits against transformers or None, why it failed)."""
    kept = os.path.join(keep, case) if keep else None
    if kept:
        shutil.rmtree(kept, ignore_errors=True)
        os.makedirs(kept)
    with (contextlib.nullcontext(kept) if kept else tempfile.TemporaryDirectory(dir=out_root)) as out:
        start = time.time()
        child_process = subprocess.Popen([sys.executable, __file__, "--child", case, folder, out], text=True,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        stopped = False
        while child_process.poll() is None:
            if available_memory() < LOW_MEMORY:  # it would not fit: stopped before the machine swaps or kills
                os.killpg(child_process.pid, signal.SIGKILL)
                stopped = True
                break
            time.sleep(0.05)
        stdout, stderr = child_process.communicate()
        if stopped:
            return None, None, None, f"stopped after {time.time() - start:.0f} s: the machine's memory ran out"
        if child_process.returncode != 0:
            return None, None, None, (stderr.strip().splitlines() or ["failed"])[-1][:120]
        result = json.loads(stdout.strip().splitlines()[-1])
        seconds = result["seconds"] if result["seconds"] is not None else result["end"] - start
        error = None
        if checked:
            run = subprocess.run([sys.executable, __file__, "--check", case, folder, out], text=True,
                                 capture_output=True)
            lines = run.stdout.strip().splitlines()
            error = json.loads(lines[-1])["error"] if run.returncode == 0 and lines else float("nan")
    return result["peak"], seconds, error, ""


LABELS = {"llm": "export_llm(folder)", "llm_ort": "  optimize=onnxruntime", "llm_int4": "  int4",
          "llm_ort_int4": "  int4, onnxruntime", "llm_fp16": "  float16", "export_save": "export+save",
          "loaded": "loaded only", "touched": "loaded, all read", "genai": "genai builder fp32",
          "genai_int4": "genai builder int4", "genai_fp16": "genai builder fp16", "torch_onnx": "torch.onnx"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--check", dest="check_child", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--make", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--sizes", default="1gb,3gb")
    parser.add_argument("--cases", default="llm,llm_ort,genai,llm_int4,llm_ort_int4,genai_int4,export_save,loaded,touched")
    parser.add_argument("--folder", help="make (or reuse) the model folder here rather than in a temporary one")
    parser.add_argument("--out", help="write the exports under this folder (default: the temporary folder's disk)")
    parser.add_argument("--keep", help="write each case's export to KEEP/<case> and keep it (to run it after)")
    parser.add_argument("--torch-onnx", action="store_true", help="also torch.onnx (slow)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="interleaved rounds of every case; the medians are printed (peak: the largest)")
    parser.add_argument("--errors", action="store_true",
                        help="run each export in onnxruntime against transformers' float32 logits (max abs error)")
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    if args.check_child:
        check(*args.check_child)
        return
    if args.make:
        make_folder(*args.make)
        return
    cases = args.cases.split(",") + (["torch_onnx"] if args.torch_onnx else [])
    # This process imports no torch and builds no model: Linux keeps a process's peak RSS across exec, so a
    # child forked from a large parent would report the parent's peak as its own.
    print("peak RSS (getrusage) of a fresh child process per export, as a ratio to the weights' bytes")
    for size in args.sizes.split(","):
        with tempfile.TemporaryDirectory() as scratch:
            folder = args.folder or os.path.join(scratch, size)
            if not os.path.isfile(os.path.join(folder, "model.safetensors.index.json")):
                subprocess.run([sys.executable, __file__, "--make", size, folder], check=True, capture_output=True)
            weights = weight_bytes(folder)
            print(f"\nllama-{size}: weights {weights / 2**30:.2f} GiB (float32 safetensors); this machine has "
                  f"{available_memory() / 2**30:.1f} GiB available")
            print(f"  {'export':22} {'peak GiB':>9} {'x weights':>10} {'seconds':>8}  {'all rounds':24}"
                  + ("  max abs error of logits" if args.errors else ""))
            found: dict[str, list[tuple[int, float, float | None]]] = {case: [] for case in cases}
            failed: dict[str, str] = {}
            for _ in range(args.rounds):  # interleaved: each round runs every case once
                for case in cases:
                    if case in failed:
                        continue
                    peak, seconds, error, why = measure(case, folder, args.out, args.keep, args.errors)
                    if peak is None:
                        failed[case] = why
                    else:
                        found[case].append((peak, seconds, error))
            peaks: dict[str, int] = {}
            times: dict[str, float] = {}
            for case in cases:
                if case in failed:
                    print(f"  {LABELS[case]:22} failed: {failed[case]}")
                    continue
                peaks[case] = max(p for p, _, _ in found[case])
                times[case] = statistics.median(t for _, t, _ in found[case])
                errors = [e for _, _, e in found[case] if e is not None]
                rounds = " ".join(f"{t:.1f}" for _, t, _ in found[case])
                print(f"  {LABELS[case]:22} {peaks[case] / 2**30:9.2f} {peaks[case] / weights:9.2f}x "
                      f"{times[case]:8.1f}  {rounds:24}" + (f"  {max(errors):.2e}" if errors else ""))
            if "export_save" in peaks and "torch_onnx" in peaks:
                print(f"  export+save / torch.onnx: {peaks['export_save'] / peaks['torch_onnx']:.2f}x")
            for ours, theirs in (("llm", "genai"), ("llm_ort", "genai"), ("llm_int4", "genai_int4"),
                                 ("llm_ort_int4", "genai_int4"), ("llm_fp16", "genai_fp16")):
                if ours in peaks and theirs in peaks:
                    print(f"  {LABELS[ours].strip()} / {LABELS[theirs]}: memory {peaks[ours] / peaks[theirs]:.2f}x, "
                          f"time {times[ours] / times[theirs]:.2f}x")

if __name__ == "__main__":
    main()
