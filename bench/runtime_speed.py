"""Runtime speed: aten2onnx.runtime vs eager PyTorch, onnxruntime and onnx's ReferenceEvaluator.

For each model (12-layer GPT-2, LLaMA and BERT, as in export_speed.py) exported by aten2onnx, in
one run: the median latency of eager PyTorch (under torch.inference_mode), aten2onnx.runtime
(InferenceSession.run_torch), onnxruntime (CPUExecutionProvider) and onnx.reference's
ReferenceEvaluator; their ratios; and each runner's max abs error vs eager. The runners take turns
within each round, and the order rotates from round to round, so that a noisy machine slows them
all alike rather than whichever happened to run during a slow spell. The reference evaluator takes
seconds per run, so it runs only in the first --reference-runs rounds.

Each library uses its own default thread count unless --threads is given (torch's intra-op threads
and onnxruntime's intra_op_num_threads; numpy's BLAS, under the reference evaluator, keeps its own).
On a shared machine, a torch pool as wide as the machine stalls at every parallel region whenever
another process holds a core, which can swing a run by 2x or more; --threads 1 avoids that.

    python bench/runtime_speed.py [--rounds 20] [--models gpt2,llama,bert] [--layers 12] [--opset 18]
                                  [--reference-runs 1] [--skip-reference] [--threads N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
import onnx.reference
import onnxruntime as ort
import torch

# The sibling script (on sys.path as this file's folder): the same models and the same table cells.
from export_speed import BATCH, SEQ, VOCAB, _cell, _format, build

import aten2onnx
from aten2onnx.runtime import InferenceSession

RUNTIME_TARGET = 1.15  # runtime/eager at most
REFERENCE_TARGET = 10.0  # reference/runtime at least


def runners(model: torch.nn.Module, exported: aten2onnx.ExportedModel, ids: torch.Tensor,
            with_reference: bool, threads: int | None) -> dict[str, Callable[[], np.ndarray]]:
    """name -> a call that runs the model once on `ids` and returns the first output as numpy."""
    proto = exported.model_proto
    name = exported.input_names[0]
    session = InferenceSession(proto)
    output = session.get_outputs()[0].name
    options = ort.SessionOptions()
    options.log_severity_level = 3  # quiet; the rest at onnxruntime's defaults unless --threads
    if threads is not None:
        options.intra_op_num_threads = threads
    ort_session = ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
    feeds = {name: ids.numpy()}

    def eager():
        with torch.inference_mode():
            return model(ids).last_hidden_state.numpy()

    calls = {
        "eager": eager,
        "runtime": lambda: session.run_torch({name: ids}, [output])[output].numpy(),
        "ort": lambda: ort_session.run(None, feeds)[0],
    }
    if with_reference:
        reference = onnx.reference.ReferenceEvaluator(proto)
        calls["reference"] = lambda: reference.run(None, feeds)[0]
    return calls


def measure(calls: dict[str, Callable[[], np.ndarray]], rounds: int, reference_runs: int) -> tuple[dict, dict]:
    """Medians in seconds and first outputs, per runner. One warm-up call each gives the outputs."""
    outputs = {name: call() for name, call in calls.items()}
    times: dict[str, list[float]] = {name: [] for name in calls}
    names = list(calls)
    for r in range(rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            if name == "reference" and r >= reference_runs:
                continue
            start = time.perf_counter()
            calls[name]()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}, outputs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--models", default="gpt2,llama,bert")
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--opset", type=int, default=18)
    parser.add_argument("--reference-runs", type=int, default=1, help="timed ReferenceEvaluator runs (after one warm-up)")
    parser.add_argument("--skip-reference", action="store_true", help="leave out onnx.reference.ReferenceEvaluator")
    parser.add_argument("--threads", type=int, default=None, help="intra-op threads for torch and onnxruntime")
    options = parser.parse_args()
    if options.threads is not None:
        torch.set_num_threads(options.threads)
    torch.manual_seed(0)
    print(f"torch {torch.__version__} ({torch.get_num_threads()} threads), onnxruntime {ort.__version__}, "
          f"onnx {onnx.__version__}; batch {BATCH}, seq {SEQ}, {options.rounds} rounds", flush=True)
    rows = []
    for name in options.models.split(","):
        model = build(name, options.layers).eval()
        ids = torch.randint(0, VOCAB, (BATCH, SEQ))
        exported = aten2onnx.export(model, (ids,), opset=options.opset)
        calls = runners(model, exported, ids, not options.skip_reference, options.threads)
        latency, outputs = measure(calls, options.rounds, max(1, min(options.reference_runs, options.rounds)))
        row = {"model": name, "nodes": len(exported.model_proto.graph.node)}
        row.update({f"{runner} ms": t * 1e3 for runner, t in latency.items()})
        row["runtime/eager"] = latency["runtime"] / latency["eager"]
        if "reference" in latency:
            row["reference/runtime"] = latency["reference"] / latency["runtime"]
        row["ort/eager"] = latency["ort"] / latency["eager"]
        for runner, out in outputs.items():
            if runner != "eager":
                row[f"{runner} err"] = float(np.abs(out - outputs["eager"]).max())
        rows.append(row)
        print(_format(row), flush=True)
    print()
    width = {k: max(len(k), 8) + 2 for k in rows[0]}
    print(f"{'model':8}" + "".join(f"{k:>{width[k]}}" for k in rows[0] if k != "model"))
    for row in rows:
        print(f"{row['model']:8}" + "".join(f"{_cell(v):>{width[k]}}" for k, v in row.items() if k != "model"))
    worst = max(r["runtime/eager"] for r in rows)
    print(f"\nslowest aten2onnx.runtime/eager latency ratio: {worst:.2f}x (target <= {RUNTIME_TARGET}x)")
    if not options.skip_reference:
        least = min(r["reference/runtime"] for r in rows)
        print(f"smallest ReferenceEvaluator/aten2onnx.runtime latency ratio: {least:.1f}x (target >= {REFERENCE_TARGET:g}x)")


if __name__ == "__main__":
    main()
