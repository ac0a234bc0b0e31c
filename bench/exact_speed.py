"""Exact mode's cost: one model exported by default and with exact=True, run in aten2onnx.runtime.

For each model (GPT-2, LLaMA and BERT as in export_speed.py, --layers deep), in one run: the median
latency of eager PyTorch (under torch.no_grad: exact mode runs in the caller's grad mode), the default
export in aten2onnx.runtime, and the exact export in aten2onnx.runtime; the ratios exact/eager and
exact/default; and whether each export's output is bitwise eager's (the exact one must be). The runners
take turns within each round and the order rotates, so a noisy machine slows them alike.

    python bench/exact_speed.py [--rounds 15] [--models gpt2,llama,bert] [--layers 4] [--threads N]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import torch

# The sibling script (on sys.path as this file's folder): the same models and the same table cells.
from export_speed import BATCH, SEQ, VOCAB, _format, build
from runtime_speed import measure  # interleaved, rotating rounds; medians

import aten2onnx


def runners(model: torch.nn.Module, ids: torch.Tensor, opset: int) -> dict[str, Callable[[], torch.Tensor]]:
    default = aten2onnx.export(model, (ids,), opset=opset)
    exact = aten2onnx.export(model, (ids,), opset=opset, exact=True)

    def run(exported: aten2onnx.ExportedModel) -> Callable[[], torch.Tensor]:
        def call() -> torch.Tensor:
            with torch.no_grad():
                return exported.run(ids).last_hidden_state
        return call

    def eager() -> torch.Tensor:
        with torch.no_grad():
            return model(ids).last_hidden_state

    return {"eager": eager, "default": run(default), "exact": run(exact)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--models", default="gpt2,llama,bert")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--opset", type=int, default=18)
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads")
    options = parser.parse_args()
    if options.threads is not None:
        torch.set_num_threads(options.threads)
    torch.manual_seed(0)
    print(f"torch {torch.__version__} ({torch.get_num_threads()} threads); batch {BATCH}, seq {SEQ}, "
          f"{options.layers} layers, {options.rounds} rounds", flush=True)
    for name in options.models.split(","):
        model = build(name, options.layers).eval()
        ids = torch.randint(0, VOCAB, (BATCH, SEQ))
        latency, outputs = measure(runners(model, ids, options.opset), options.rounds, reference_runs=0)
        row = {"model": name}
        row.update({f"{runner} ms": t * 1e3 for runner, t in latency.items()})
        row["exact/eager"] = latency["exact"] / latency["eager"]
        row["exact/default"] = latency["exact"] / latency["default"]
        row["default bitwise"] = bool(torch.equal(outputs["default"], outputs["eager"]))
        row["exact bitwise"] = bool(torch.equal(outputs["exact"], outputs["eager"]))
        print(_format(row), flush=True)


if __name__ == "__main__":
    main()
