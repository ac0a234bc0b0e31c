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
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import signal
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
    start = time.perf_counter()
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
    seconds = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)  # the builder runs in a grandchild
    peak = max(usage.ru_maxrss, children.ru_maxrss) * 1024
    print(json.dumps({"peak": peak, "seconds": seconds, "torch": torch.__version__}))


OURS = {"llm": {}, "llm_ort": dict(optimize="onnxruntime"), "llm_int4": dict(precision="int4"),
        "llm_ort_int4": dict(precision="int4", optimize="onnxruntime"), "llm_fp16": dict(precision="float16")}
BUILDER = {"genai": "fp32", "genai_int4": "int4", "genai_fp16": "fp16"}
LOW_MEMORY = 1 << 30  # a child is stopped when the machine has less available


def available_memory() -> int:
    with open("/proc/meminfo") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))


def measure(case: str, folder: str, out_root: str | None, keep: str | None = None
            ) -> tuple[int | None, float | None, str]:
    kept = os.path.join(keep, case) if keep else None
    if kept:
        shutil.rmtree(kept, ignore_errors=True)
        os.makedirs(kept)
    with (contextlib.nullcontext(kept) if kept else tempfile.TemporaryDirectory(dir=out_root)) as out:
        start = time.perf_counter()
        child_process = subprocess.Popen([sys.executable, __file__, "--child", case, folder, out], text=True,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        stopped = False
        while child_process.poll() is None:
            if available_memory() < LOW_MEMORY:  # it would not fit: stopped before the machine swaps or kills
                os.killpg(child_process.pid, signal.SIGKILL)
                stopped = True
                break
            time.sleep(0.25)
        stdout, stderr = child_process.communicate()
    if stopped:
        return None, None, f"stopped after {time.perf_counter() - start:.0f} s: the machine's memory ran out"
    if child_process.returncode != 0:
        return None, None, (stderr.strip().splitlines() or ["failed"])[-1][:120]
    result = json.loads(stdout.strip().splitlines()[-1])
    return result["peak"], result["seconds"], ""


LABELS = {"llm": "export_llm(folder)", "llm_ort": "  optimize=onnxruntime", "llm_int4": "  int4",
          "llm_ort_int4": "  int4, onnxruntime", "llm_fp16": "  float16", "export_save": "export+save",
          "loaded": "loaded only", "touched": "loaded, all read", "genai": "genai builder fp32",
          "genai_int4": "genai builder int4", "genai_fp16": "genai builder fp16", "torch_onnx": "torch.onnx"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--make", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--sizes", default="1gb,3gb")
    parser.add_argument("--cases", default="llm,llm_ort,genai,llm_int4,llm_ort_int4,genai_int4,export_save,loaded,touched")
    parser.add_argument("--folder", help="make (or reuse) the model folder here rather than in a temporary one")
    parser.add_argument("--out", help="write the exports under this folder (default: the temporary folder's disk)")
    parser.add_argument("--keep", help="write each case's export to KEEP/<case> and keep it (to run it after)")
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
        with tempfile.TemporaryDirectory() as scratch:
            folder = args.folder or os.path.join(scratch, size)
            if not os.path.isfile(os.path.join(folder, "model.safetensors.index.json")):
                subprocess.run([sys.executable, __file__, "--make", size, folder], check=True, capture_output=True)
            weights = weight_bytes(folder)
            print(f"\nllama-{size}: weights {weights / 2**30:.2f} GiB (float32 safetensors); this machine has "
                  f"{available_memory() / 2**30:.1f} GiB available")
            print(f"  {'export':22} {'peak GiB':>9} {'x weights':>10} {'seconds':>8}")
            peaks: dict[str, int] = {}
            times: dict[str, float] = {}
            for case in cases:
                peak, seconds, why = measure(case, folder, args.out, args.keep)
                if peak is None:
                    print(f"  {LABELS[case]:22} failed: {why}")
                else:
                    peaks[case], times[case] = peak, seconds
                    print(f"  {LABELS[case]:22} {peak / 2**30:9.2f} {peak / weights:9.2f}x {seconds:8.1f}")
            if "export_save" in peaks and "torch_onnx" in peaks:
                print(f"  export+save / torch.onnx: {peaks['export_save'] / peaks['torch_onnx']:.2f}x")
            for ours, theirs in (("llm", "genai"), ("llm_ort", "genai"), ("llm_int4", "genai_int4"),
                                 ("llm_ort_int4", "genai_int4"), ("llm_fp16", "genai_fp16")):
                if ours in peaks and theirs in peaks:
                    print(f"  {LABELS[ours].strip()} / {LABELS[theirs]}: memory {peaks[ours] / peaks[theirs]:.2f}x, "
                          f"time {times[ours] / times[theirs]:.2f}x")

if __name__ == "__main__":
    main()
