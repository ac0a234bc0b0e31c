"""onnxruntime's integer kernels, per op and operand types: how far each is from the exact result, on this
CPU and on one without VNNI (qemu emulating a Haswell, when qemu-user is installed), and how fast each runs
here against the float op computing the same thing.

The spellings the exporter can choose for a quantized matmul or convolution: MatMulInteger, ConvInteger,
QLinearMatMul, QLinearConv, and onnxruntime's QGemm, DynamicQuantizeMatMul and MatMulIntegerToFloat, each
with uint8 or int8 activations and uint8, int8 or reduced-range (7-bit) int8 weights; the anchor is the
float MatMul or Conv of the dequantized operands (what the quantized eager model computes). Operands span
their whole range (weights at +-127), as a calibrated model's do. Errors are against the exact integer sums
(float64 reference for the requantizing ops, in units of the output's quantization step); latency is the
median of paired per-round ratios to the float op, on one thread.

    python bench/integer_kernels.py [--rounds 15] [--inner 10] [--k 256,1024,4096]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from collections.abc import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(__file__))
from ort_latency import measure, paired, session  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from aten2onnx.testing import cpus  # noqa: E402

U8, S8 = np.uint8, np.int8
ONNX_TYPE = {U8: TensorProto.UINT8, S8: TensorProto.INT8, np.float32: TensorProto.FLOAT, np.int32: TensorProto.INT32}
MS = "com.microsoft"


def operands(rng: np.random.Generator, a_type, b_type, a_shape, b_shape, reduced: bool):
    """Activations and weights over their whole range (reduced: weights within 7 bits), with zero points:
    uint8 activations around 128 (an asymmetric quantization), int8 weights symmetric, uint8 weights 128."""
    a = rng.integers(0, 256, a_shape).astype(U8) if a_type is U8 else rng.integers(-128, 128, a_shape).astype(S8)
    limit = 64 if reduced else 128
    w = rng.integers(-limit + 1, limit, b_shape)
    b = (w + 128).astype(U8) if b_type is U8 else w.astype(S8)
    return a, np.array(128 if a_type is U8 else 0, a_type), b, np.array(128 if b_type is U8 else 0, b_type)


def model(nodes, inputs, outputs, initializers) -> bytes:
    graph = helper.make_graph(nodes, "kernel", inputs, outputs, [numpy_helper.from_array(v, k) for k, v in initializers.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid(MS, 1)])
    m.ir_version = 9
    return m.SerializeToString()


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, ONNX_TYPE[dtype], list(shape))


class Case:
    """One spelling at one shape: its model, feeds, the exact result, and how to measure its error."""

    def __init__(self, label, data, feeds, exact, step=1.0):
        self.label, self.data, self.feeds, self.exact, self.step = label, data, feeds, exact, step

    def error(self, out: np.ndarray) -> float:
        return float(np.abs(out.astype(np.float64) - self.exact).max() / self.step)


def matmul_cases(rng, m, k, n) -> list[Case]:
    cases = []
    a_scale, b_scale = 0.02, 0.01
    for a_t, b_t, reduced in ((U8, S8, False), (U8, U8, False), (S8, S8, False), (S8, U8, False), (U8, S8, True)):
        a, az, b, bz = operands(rng, a_t, b_t, (m, k), (k, n), reduced)
        acc = (a.astype(np.int64) - int(az)) @ (b.astype(np.int64) - int(bz))
        tag = f"{np.dtype(a_t).name[:-1]}{np.dtype(b_t).name[:-1]}".replace("uint", "u").replace("int", "s") + \
            ("-7bit" if reduced else "")
        init = {"b": b, "az": az, "bz": bz}
        cases.append(Case(f"MatMulInteger {tag}", model(
            [helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])],
            [vi("a", a_t, (m, k))], [vi("y", np.int32, (m, n))], init), {"a": a}, acc))
        # requantizing kernels: y = round(acc * a_scale * b_scale / y_scale) + y_zp
        y_scale = float(np.abs(acc).max()) * a_scale * b_scale / 127
        real = acc * a_scale * b_scale
        init_q = dict(init, a_s=np.array(a_scale, np.float32), b_s=np.array(b_scale, np.float32),
                      y_s=np.array(y_scale, np.float32), y_z=np.array(128 if a_t is U8 else 0, a_t))
        cases.append(Case(f"QLinearMatMul {tag}", model(
            [helper.make_node("QLinearMatMul", ["a", "a_s", "az", "b", "b_s", "bz", "y_s", "y_z"], ["y"])],
            [vi("a", a_t, (m, k))], [vi("y", a_t, (m, n))], init_q), {"a": a},
            np.clip(np.round(real / y_scale), -128, 127) + (128 if a_t is U8 else 0), step=1.0))
        cases.append(Case(f"MatMulIntegerToFloat {tag}", model(
            [helper.make_node("MatMulIntegerToFloat", ["a", "b", "a_s", "b_s", "az", "bz"], ["y"], domain=MS)],
            [vi("a", a_t, (m, k))], [vi("y", np.float32, (m, n))], init_q), {"a": a}, real,
            step=a_scale * b_scale))
        if a_t is U8:  # DynamicQuantizeMatMul quantizes its float input to uint8 itself
            x = ((a.astype(np.float32) - 128) * a_scale)
            cases.append(Case(f"DynamicQuantizeMatMul {tag}", model(
                [helper.make_node("DynamicQuantizeMatMul", ["x", "b", "b_s", "bz"], ["y"], domain=MS)],
                [vi("x", np.float32, (m, k))], [vi("y", np.float32, (m, n))], init_q), {"x": x},
                x.astype(np.float64) @ ((b.astype(np.float64) - int(bz)) * b_scale), step=a_scale * b_scale * 2))
    a, _, b, _ = operands(rng, U8, S8, (m, k), (k, n), False)
    af, bf = (a.astype(np.float32) - 128) * 0.02, b.astype(np.float32) * 0.01
    cases.append(Case("MatMul float32", model([helper.make_node("MatMul", ["a", "b"], ["y"])],
                                               [vi("a", np.float32, (m, k))], [vi("y", np.float32, (m, n))], {"b": bf}),
                      {"a": af}, af.astype(np.float64) @ bf.astype(np.float64), step=0.0002))
    return cases


def conv_cases(rng, c, hw, out) -> list[Case]:
    cases = []
    for a_t, b_t, reduced in ((U8, S8, False), (U8, U8, False), (S8, S8, False), (U8, S8, True)):
        a, az, b, bz = operands(rng, a_t, b_t, (1, c, hw, hw), (out, c, 3, 3), reduced)
        import torch  # the exact reference: an int64 convolution as float64 (sums below 2^53)

        acc = torch.nn.functional.conv2d(torch.from_numpy(a.astype(np.float64) - int(az)),
                                         torch.from_numpy(b.astype(np.float64) - int(bz)), padding=1).numpy()
        tag = f"{np.dtype(a_t).name[:-1]}{np.dtype(b_t).name[:-1]}".replace("uint", "u").replace("int", "s") + \
            ("-7bit" if reduced else "")
        init = {"w": b, "az": az, "bz": bz}
        cases.append(Case(f"ConvInteger {tag}", model(
            [helper.make_node("ConvInteger", ["a", "w", "az", "bz"], ["y"], pads=[1, 1, 1, 1])],
            [vi("a", a_t, a.shape)], [vi("y", np.int32, acc.shape)], init), {"a": a}, acc))
        y_scale = float(np.abs(acc).max()) * 0.0002 / 127
        init_q = dict(init, a_s=np.array(0.02, np.float32), b_s=np.array(0.01, np.float32),
                      y_s=np.array(y_scale, np.float32), y_z=np.array(128 if a_t is U8 else 0, a_t))
        cases.append(Case(f"QLinearConv {tag}", model(
            [helper.make_node("QLinearConv", ["a", "a_s", "az", "w", "b_s", "bz", "y_s", "y_z"], ["y"], pads=[1, 1, 1, 1])],
            [vi("a", a_t, a.shape)], [vi("y", a_t, acc.shape)], init_q), {"a": a},
            np.clip(np.round(acc * 0.0002 / y_scale), -128, 127) + (128 if a_t is U8 else 0)))
    a, _, b, _ = operands(rng, U8, S8, (1, c, hw, hw), (out, c, 3, 3), False)
    af, bf = (a.astype(np.float32) - 128) * 0.02, b.astype(np.float32) * 0.01
    import torch

    exact = torch.nn.functional.conv2d(torch.from_numpy(af.astype(np.float64)), torch.from_numpy(bf.astype(np.float64)),
                                       padding=1).numpy()
    cases.append(Case("Conv float32", model([helper.make_node("Conv", ["a", "w"], ["y"], pads=[1, 1, 1, 1])],
                                             [vi("a", np.float32, a.shape)], [vi("y", np.float32, exact.shape)], {"w": bf}),
                      {"a": af}, exact, step=0.0002))
    return cases


def report(title: str, cases: list[Case], anchor: str, rounds: int, inner: int, emulated: bool) -> None:
    sessions, failed = {}, {}
    for case in cases:
        try:
            sessions[case.label] = session(case.data)
        except Exception as e:  # noqa: BLE001 (no kernel for these types: reported, not measured)
            failed[case.label] = str(e).strip().splitlines()[0][:70]
    here = {c.label: c.error(sessions[c.label].run(None, c.feeds)[0]) for c in cases if c.label in sessions}
    without_vnni = {}
    if emulated:
        ran = [c for c in cases if c.label in sessions]
        for c, (out,) in zip(ran, cpus.run_onnxruntime([(c.data, c.feeds) for c in ran])):
            without_vnni[c.label] = c.error(out)
    calls: dict[str, list[Callable[[], object]]] = {
        c.label: [lambda s=sessions[c.label], f=c.feeds: s.run(None, f)] for c in cases if c.label in sessions}
    cells = measure(calls, rounds, inner)
    print(f"\n{title}   (error: max over outputs, in steps of the result; time: vs {anchor})")
    print(f"  {'spelling':34} {'error here':>11} {'no VNNI':>9} {'ms':>8} {'vs float':>9}")
    for c in cases:
        if c.label in failed:
            print(f"  {c.label:34} no kernel: {failed[c.label]}")
            continue
        emu = f"{without_vnni[c.label]:9.3g}" if c.label in without_vnni else f"{'-':>9}"
        print(f"  {c.label:34} {here[c.label]:11.3g} {emu} {statistics.median(cells[c.label]) * 1e3:8.3f} "
              f"{paired(cells, c.label, anchor):8.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--inner", type=int, default=10)
    parser.add_argument("--k", default="256,1024,4096")
    parser.add_argument("--no-emulation", action="store_true", help="skip the CPU without VNNI")
    args = parser.parse_args()
    emulated = not args.no_emulation and cpus.available()
    import onnxruntime as ort

    print(f"onnxruntime {ort.__version__}; CPU without VNNI emulated: {'yes (qemu, Haswell)' if emulated else 'no'}")
    rng = np.random.default_rng(0)
    for k in (int(v) for v in args.k.split(",")):
        report(f"matmul [32, {k}] x [{k}, 512]", matmul_cases(rng, 32, k, 512), "MatMul float32", args.rounds,
               args.inner, emulated)
    for c in (64, 256):
        report(f"conv 3x3, {c} -> 64 channels, 28x28 (K = {9 * c})", conv_cases(rng, c, 28, 64), "Conv float32",
               args.rounds, args.inner, emulated)


if __name__ == "__main__":
    main()
