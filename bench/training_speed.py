"""Training-step speed: an aten2onnx.export_training export in aten2onnx.runtime and onnxruntime vs eager.

One training step is the forward and the backward of a causal language model with labels (the model's own
loss): eager PyTorch runs `model(input_ids=ids, labels=ids).loss.backward()` on the model in train mode
(gradients reset first), and both runtimes run the exported joint graph, which returns the loss and every
parameter gradient. With --optimizer sgd or adamw the step also applies that optimizer: eager its step(),
the export its update in the graph (export_training's optimizer=; TrainingModel.step in aten2onnx.runtime,
onnxruntime fed its `.updated` outputs back). For each model (GPT-2 by default; LLaMA with --models
gpt2,llama), in one run: the median step time of each runner, the ratios runtime/eager and ort/eager against
the eager anchor measured in the same run, and each runtime's error vs eager: the first step's loss, and its
gradients (largest error relative to each tensor's largest entry) or, with an optimizer, the parameters after
the run's 1 + rounds steps (with Adam(W) these errors are of the learning rate's order: a gradient that is
zero but for rounding, as the attention's key bias has, is normalized into a full step of either sign; SGD's
show the arithmetic's error). The runners take turns within each round and the order rotates
(runtime_speed.measure), so a noisy machine slows them alike.

Sizes (a few minutes on 2 cores): --layers 12 layers, hidden 256 (4 heads; LLaMA 2 kv heads, intermediate
512), vocab 8000, batch 2, sequence 64, dropout 0 (with dropout the runners would draw different masks).

    python bench/training_speed.py [--rounds 10] [--models gpt2] [--layers 12] [--opset 18] [--threads N]
                                   [--optimizer none|sgd|adamw]
"""

from __future__ import annotations

import argparse
import copy
import json
import warnings
from collections.abc import Callable

import numpy as np
import onnxruntime as ort
import torch

# The sibling scripts (on sys.path as this file's folder): the table cells and the interleaved timing.
from export_speed import _cell, _format
from runtime_speed import measure

import aten2onnx

BATCH, SEQ, HIDDEN, VOCAB = 2, 64, 256, 8000
Step = tuple[torch.Tensor, dict[str, torch.Tensor]]  # (loss, {parameter name: gradient}; {} with an optimizer)
Params = Callable[[], dict[str, torch.Tensor]]


def build(name: str, layers: int) -> torch.nn.Module:
    import transformers

    transformers.logging.set_verbosity_error()
    if name == "gpt2":
        return transformers.GPT2LMHeadModel(transformers.GPT2Config(
            n_layer=layers, n_embd=HIDDEN, n_head=4, vocab_size=VOCAB, n_positions=SEQ, use_cache=False,
            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0))
    if name == "llama":
        return transformers.LlamaForCausalLM(transformers.LlamaConfig(
            num_hidden_layers=layers, hidden_size=HIDDEN, num_attention_heads=4, num_key_value_heads=2,
            intermediate_size=2 * HIDDEN, vocab_size=VOCAB, max_position_embeddings=SEQ, use_cache=False))
    raise SystemExit(f"unknown model {name!r}; choose gpt2 or llama")


def optimizer_for(name: str, model: torch.nn.Module) -> torch.optim.Optimizer | None:
    if name == "none":
        return None
    if name == "sgd":
        return torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    return torch.optim.AdamW(model.parameters(), lr=1e-3)


def runners(model: torch.nn.Module, trained: aten2onnx.TrainingModel, kwargs: dict[str, torch.Tensor],
            optimizer: str, threads: int | None) -> tuple[dict[str, Callable[[], Step]], dict[str, Params]]:
    """name -> a call that runs one training step; and name -> the runner's parameters as its steps so
    far left them (with an optimizer; without one they do not move)."""
    reference = copy.deepcopy(model).train()
    step = optimizer_for(optimizer, reference)
    names = [name for name, p in reference.named_parameters() if name in trained.parameter_names]
    params = dict(reference.named_parameters())

    def eager() -> Step:
        reference.zero_grad(set_to_none=True)
        loss = reference(**kwargs).loss
        loss.backward()
        if step is not None:
            step.step()
            return loss.detach(), {}
        return loss.detach(), {name: params[name].grad for name in names}

    def runtime() -> Step:
        if step is not None:
            return trained.step(**kwargs), {}
        return trained.run(**kwargs)

    options = ort.SessionOptions()
    options.log_severity_level = 3
    if threads is not None:
        options.intra_op_num_threads = threads
    proto = trained.model_proto
    session = ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
    feeds = {name: kwargs[name].numpy() for name in trained.input_names}
    outputs = [o.name for o in proto.graph.output]
    # parameters and optimizer states: onnxruntime is fed each <state>.updated output back as <state>
    updates = json.loads(next((e.value for e in proto.metadata_props if e.key == "aten2onnx.state_updates"), "[]"))
    updates = {u["input"]: outputs.index(u["output"]) for u in updates}
    state: dict[str, np.ndarray] = {}

    def onnxruntime() -> Step:
        results = session.run(None, {**feeds, **state})
        if step is not None:
            state.update({name: results[i] for name, i in updates.items()})
            return torch.from_numpy(results[outputs.index("loss")]), {}
        loss, grads = trained.structure_outputs(results)
        return torch.from_numpy(loss), {name: torch.from_numpy(g) for name, g in grads.items()}

    parameters = {
        "eager": lambda: {name: params[name].detach() for name in names},
        "runtime": lambda: {name: trained.state_dict()[name] for name in names},
        "ort": lambda: {name: torch.from_numpy(state[name]) for name in names},
    }
    return {"eager": eager, "runtime": runtime, "ort": onnxruntime}, parameters


def relative_error(got: dict[str, torch.Tensor], want: dict[str, torch.Tensor]) -> float:
    """The largest error of any tensor relative to that tensor's largest entry."""
    return max(float((got[name] - w).abs().max() / w.abs().max().clamp_min(1e-30)) for name, w in want.items())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--models", default="gpt2")
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--opset", type=int, default=18)
    parser.add_argument("--threads", type=int, default=None, help="intra-op threads for torch and onnxruntime")
    parser.add_argument("--optimizer", choices=("none", "sgd", "adamw"), default="none",
                        help="the optimizer step each runner applies after the backward")
    options = parser.parse_args()
    if options.threads is not None:
        torch.set_num_threads(options.threads)
    torch.manual_seed(0)
    print(f"torch {torch.__version__} ({torch.get_num_threads()} threads), onnxruntime {ort.__version__}; "
          f"batch {BATCH}, seq {SEQ}, hidden {HIDDEN}, vocab {VOCAB}, {options.layers} layers, "
          f"{options.rounds} rounds, optimizer {options.optimizer}", flush=True)
    rows = []
    for name in options.models.split(","):
        model = build(name, options.layers)
        ids = torch.randint(0, VOCAB, (BATCH, SEQ))
        kwargs = {"input_ids": ids, "labels": ids}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trained = aten2onnx.export_training(model, (), kwargs, opset=options.opset,
                                                optimizer=optimizer_for(options.optimizer, model))
        if trained.fallback_ops:
            raise SystemExit(f"{name}: ATen fallback nodes {trained.fallback_ops}; onnxruntime cannot run the export")
        calls, parameters = runners(model, trained, kwargs, options.optimizer, options.threads)
        latency, outputs = measure(calls, options.rounds, reference_runs=0)
        row = {"model": name, "nodes": len(trained.model_proto.graph.node)}
        row.update({f"{runner} ms": t * 1e3 for runner, t in latency.items()})
        row["runtime/eager"] = latency["runtime"] / latency["eager"]
        row["ort/eager"] = latency["ort"] / latency["eager"]
        for runner in ("runtime", "ort"):
            row[f"{runner} loss err"] = float((outputs[runner][0] - outputs["eager"][0]).abs())
            if options.optimizer == "none":
                row[f"{runner} grad rel err"] = relative_error(outputs[runner][1], outputs["eager"][1])
            else:  # every runner has stepped 1 + rounds times from the same parameters
                row[f"{runner} param rel err"] = relative_error(parameters[runner](), parameters["eager"]())
        rows.append(row)
        print(_format(row), flush=True)
    print()
    width = {k: max(len(k), 8) + 2 for k in rows[0]}
    print(f"{'model':8}" + "".join(f"{k:>{width[k]}}" for k in rows[0] if k != "model"))
    for row in rows:
        print(f"{row['model']:8}" + "".join(f"{_cell(v):>{width[k]}}" for k, v in row.items() if k != "model"))


if __name__ == "__main__":
    main()
