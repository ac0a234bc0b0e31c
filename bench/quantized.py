"""onnxruntime latency, file size and accuracy of quantized exports against the float export and torch.onnx's.

For each model and quantization, in one run: aten2onnx's export of the float model (the anchor), aten2onnx's
export of the quantized model by default and with optimize="onnxruntime", and torch.onnx's dynamo export of the
same quantized model where it has one (it fails on some forms, and drops torchao's weight-only quantization to
float weights: its file size shows it). Quantizations: PT2E static and dynamic with X86InductorQuantizer (CNN,
MLP, a tiny BERT) and torchao's quantize_ with int8 weight-only, int8 dynamic activation + int8 weight, int4
weight-only per group (MLP). Each file runs in onnxruntime's CPU provider with one thread at its default graph
optimization, two sessions per file made in mirrored order; rounds interleave the files, each cell the median of
--inner runs; a ratio is the median of per-round ratios to the float export's cell.

Accuracy is against the quantized eager model: the largest and the mean absolute difference on this CPU, and the
largest on a CPU without VNNI (onnxruntime under qemu emulating a Haswell, where its uint8 x int8 kernels
saturate; aten2onnx.testing.cpus), printed beside quantization's own effect (quantized against float eager).
A row is right when both maxima are within aten2onnx.testing.quantized.bounds; a speed-up counts only there.

Needs torchao (`pip install -e ".[quant]"`), onnxscript for torch.onnx's export, qemu-user for the column
without VNNI.

    python bench/quantized.py [--cases cnn-static,...] [--rounds 20] [--inner 5] [--opset 18] [--no-emulation]

(--opset is raised to 21 for the int4 case.)
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import torch

import aten2onnx

sys.path.insert(0, os.path.dirname(__file__))
from ort_latency import measure, mirrored_sessions, paired  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from aten2onnx.testing import cpus  # noqa: E402
from aten2onnx.testing.quantized import bounds  # noqa: E402

import torchao.quantization as tq  # noqa: E402
import torchao.quantization.pt2e.quantizer.x86_inductor_quantizer as xiq  # noqa: E402
from torchao.quantization import quantize_  # noqa: E402
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e  # noqa: E402


class CNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(32, 64, 3, stride=2, padding=1),
            torch.nn.ReLU(), torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.ReLU(),
            torch.nn.Conv2d(64, 128, 3, stride=2, padding=1), torch.nn.ReLU())
        self.head = torch.nn.Linear(128, 10)

    def forward(self, x):
        return self.head(self.features(x).mean((2, 3)))


def mlp() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                               torch.nn.Linear(1024, 256))


class LastHidden(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x).last_hidden_state


def bert() -> torch.nn.Module:
    import transformers

    config = transformers.BertConfig(vocab_size=1000, hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                                     intermediate_size=1024, max_position_embeddings=128)
    return LastHidden(transformers.BertModel(config, add_pooling_layer=False))


MODELS = {"cnn": (CNN, lambda g: torch.randn(4, 3, 64, 64, generator=g)),
          "mlp": (mlp, lambda g: torch.randn(32, 512, generator=g)),
          "bert": (bert, lambda g: torch.randint(0, 1000, (2, 64), generator=g))}
TORCHAO = {"int8-weight-only": lambda: tq.Int8WeightOnlyConfig(),
           "int8-dynamic": lambda: tq.Int8DynamicActivationInt8WeightConfig(),
           "int4-weight-only-g32": lambda: tq.IntxWeightOnlyConfig(weight_dtype=torch.int4,
                                                                    granularity=tq.PerGroup(32))}
# 4-bit weights need opset 21 (int4 and blocked DequantizeLinear, which onnxruntime runs as MatMulNBits)
OPSET_AT_LEAST = {"mlp-int4-weight-only-g32": 21}
CASES = ["cnn-static", "cnn-dynamic", "mlp-static", "mlp-dynamic", "bert-static", "bert-dynamic"] + \
        [f"mlp-{name}" for name in TORCHAO]


def first(out) -> torch.Tensor:
    return out.last_hidden_state if hasattr(out, "last_hidden_state") else out


def quantized(case: str, model: torch.nn.Module, x: torch.Tensor) -> torch.nn.Module:
    how = case.split("-", 1)[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if how in ("static", "dynamic"):
            quantizer = xiq.X86InductorQuantizer()
            quantizer.set_global(xiq.get_default_x86_inductor_quantization_config(is_dynamic=how == "dynamic"))
            prepared = prepare_pt2e(torch.export.export(model, (x,)).module(), quantizer)
            for _ in range(4):
                prepared(x)
            return convert_pt2e(prepared)
        quantize_(model, TORCHAO[how]())
        return model


def torch_onnx(model: torch.nn.Module, x: torch.Tensor, opset: int) -> bytes | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            program = torch.onnx.export(model, (x,), dynamo=True, opset_version=opset, verbose=False)
        return program.model_proto.SerializeToString()
    except Exception as e:
        print(f"  torch.onnx failed: {type(e).__name__}: {str(e).strip().splitlines()[-1][:160]}")
        return None


def errors(out: np.ndarray, want: np.ndarray) -> tuple[float, float]:
    difference = np.abs(out.astype(np.float64) - want)
    return float(difference.max()), float(difference.mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--inner", type=int, default=5)
    parser.add_argument("--opset", type=int, default=18)
    parser.add_argument("--no-emulation", action="store_true", help="skip onnxruntime without VNNI (qemu)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    logging.disable(logging.WARNING)
    emulated = not args.no_emulation and cpus.available()
    print(f"torch {torch.__version__}, onnxruntime {ort.__version__}; 1 thread, {args.rounds} rounds of {args.inner} runs, "
          f"medians of paired ratios to aten2onnx's float export; errors against the quantized eager model here"
          f"{' and on a CPU without VNNI (qemu, Haswell)' if emulated else ''}")
    for case in args.cases.split(","):
        opset = max(args.opset, OPSET_AT_LEAST.get(case, 0))
        factory, example = MODELS[case.split("-", 1)[0]]
        torch.manual_seed(0)
        model = factory().eval()
        x = example(torch.Generator().manual_seed(0))
        with torch.no_grad():
            fp = first(model(x))
        files = {"aten2onnx float": aten2onnx.export(model, (x,), opset=opset).model_proto.SerializeToString()}
        q_model = quantized(case, model, x)
        with torch.no_grad():
            want = first(q_model(x))
        files["aten2onnx quantized"] = aten2onnx.export(q_model, (x,), opset=opset).model_proto.SerializeToString()
        files["aten2onnx onnxruntime"] = aten2onnx.export(q_model, (x,), opset=opset, optimize="onnxruntime"
                                                          ).model_proto.SerializeToString()
        print(f"\n{case} (opset {opset})")
        theirs = torch_onnx(q_model, x, opset)
        if theirs is not None:
            files["torch.onnx quantized"] = theirs
        bound, ort_bound = bounds(q_model, x, want, fp, opset)
        effect = errors(want.numpy(), fp.numpy().astype(np.float64))
        sessions = mirrored_sessions(files)
        name = {label: s[0].get_inputs()[0].name for label, s in sessions.items()}
        here = {label: errors(s[0].run(None, {name[label]: x.numpy()})[0], want.numpy()) for label, s in sessions.items()}
        without_vnni = {}
        if emulated:
            outs = cpus.run_onnxruntime([(data, {name[label]: x.numpy()}) for label, data in files.items()])
            without_vnni = {label: errors(out[0], want.numpy()) for label, out in zip(files, outs)}
        calls = {label: [lambda s=s, n=name[label]: s.run(None, {n: x.numpy()}) for s in group]
                 for label, group in sessions.items()}
        cells = measure(calls, args.rounds, args.inner)
        print(f"  quantization's own effect (quantized vs float eager): max {effect[0]:.2e}, mean {effect[1]:.2e}; "
              f"bound {ort_bound:.2e} (aten2onnx.testing.quantized.bounds)")
        print(f"  {'export':22} {'nodes':>6} {'MB':>6} {'ms':>8} {'vs float':>9} {'max err':>9} {'mean err':>9} "
              f"{'no VNNI':>9}  right")
        for label, data in files.items():
            nodes = len(onnx.load_from_string(data).graph.node)
            worst = max(here[label][0], without_vnni.get(label, (0.0,))[0])
            right = "-" if label == "aten2onnx float" else "yes" if worst <= ort_bound else "WRONG"
            emu = f"{without_vnni[label][0]:9.2e}" if label in without_vnni else f"{'-':>9}"
            print(f"  {label:22} {nodes:6d} {len(data) / 2**20:6.2f} {statistics.median(cells[label]) * 1e3:8.3f} "
                  f"{paired(cells, label, 'aten2onnx float'):8.2f}x {here[label][0]:9.2e} {here[label][1]:9.2e} {emu}  "
                  f"{right}")
        if "torch.onnx quantized" in cells:
            print(f"  aten2onnx quantized / torch.onnx quantized: latency "
                  f"{paired(cells, 'aten2onnx quantized', 'torch.onnx quantized'):.2f}x, size "
                  f"{len(files['aten2onnx quantized']) / len(files['torch.onnx quantized']):.2f}x")


if __name__ == "__main__":
    main()
