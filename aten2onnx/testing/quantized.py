"""Random quantized models for differential testing: a random network of linear and convolution layers at
sizes where integer sums are large (K up to 1024), joined by activations, norms, residual sums, pooling
and reshapes, quantized by PT2E (X86InductorQuantizer: static, dynamic, QAT) or by a torchao `quantize_`
config (int8 dynamic, int8, int4 and float8 weight-only), then exported and run in onnxruntime and
aten2onnx.runtime against the quantized eager model.

    from aten2onnx.testing.quantized import check_quantized, generate_quantized
    check_quantized(generate_quantized(seed))    # raises QuantizedMismatch for a wrong answer

The bound (as tests/test_quantized_cpus.py): a quarter of the most quantization moved an element from the float
model, plus how far the quantized eager model itself moves when every float it quantizes moves one ulp
(own_rounding: a float op computed in another order moves a value on a rounding edge a whole step); for
onnxruntime at least how far its result for the model's plain QDQ file is (qdq_file_error: its QDQ kernels'
own requantization, which any QDQ exporter's file gets). With `emulate`, onnxruntime also runs
as a CPU without VNNI runs it (aten2onnx.testing.cpus), where integer kernels of some operand types saturate.
Needs torchao (the package's quant extra).
"""

from __future__ import annotations

import dataclasses
import os
import random
import tempfile
import warnings
from collections.abc import Sequence

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

import aten2onnx
from aten2onnx._compare import ort_session

__all__ = ["QuantizedMismatch", "QuantizedProgram", "QuantizedOutcome", "check_quantized", "examine_quantized",
           "generate_quantized", "bounds", "own_rounding", "qdq_file_error"]

# how a program is quantized: PT2E with X86InductorQuantizer, or one of torchao's quantize_ configs
METHODS = ("pt2e-static", "pt2e-dynamic", "pt2e-qat", "int8-dynamic", "int8-weight-only", "int4-weight-only",
           "int4-weight-only-per-channel", "float8-weight-only")
WIDTHS = (8, 16, 32, 64, 96, 128, 256, 512, 1024)


@dataclasses.dataclass(frozen=True)
class QuantizedProgram:
    """A float model as Python source (layers in __init__, statements in forward), its input's shape and
    spread, how it is quantized, and how it is exported."""

    layers: tuple[str, ...]
    steps: tuple[str, ...]
    input_shape: tuple[int, ...]
    spread: float
    method: str
    opset: int
    optimize: bool | str
    seed: int

    def source(self) -> str:
        lines = ["class Model(torch.nn.Module):", "    def __init__(self):", "        super().__init__()"]
        lines += [f"        {layer}" for layer in self.layers]
        lines.append("    def forward(self, x):")
        lines += [f"        {step}" for step in self.steps]
        return "\n".join(lines)

    def describe(self) -> str:
        return (f"{self.source()}\n# x = torch.randn({list(self.input_shape)}) * {self.spread}; quantized by "
                f"{self.method}; exported at opset {self.opset}, optimize={self.optimize!r}; seed {self.seed}")

    def build(self) -> torch.nn.Module:
        namespace = {"torch": torch, "F": torch.nn.functional}
        exec(compile(self.source(), "<aten2onnx.testing quantized program>", "exec"), namespace)  # noqa: S102
        torch.manual_seed(self.seed)
        return namespace["Model"]().eval()

    def example(self) -> torch.Tensor:
        return torch.randn(self.input_shape, generator=torch.Generator().manual_seed(self.seed + 1)) * self.spread


class _Drawing:
    """A program being drawn: its layers, statements and the shape of each value."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.layers: list[str] = []
        self.steps: list[str] = []
        self.shapes: dict[str, tuple[int, ...]] = {}

    def layer(self, code: str) -> str:
        name = f"l{len(self.layers)}"
        self.layers.append(f"self.{name} = {code}")
        return f"self.{name}"

    def step(self, code: str, shape: tuple[int, ...]) -> str:
        name = f"v{len(self.steps)}"
        self.steps.append(f"{name} = {code}")
        self.shapes[name] = shape
        return name


def _draw_step(d: _Drawing, x: str) -> str:
    """One statement on value x: its result's name."""
    rng, shape = d.rng, d.shapes[x]
    width = rng.choice(WIDTHS)
    choices = ["linear", "linear", "act", "act", "residual", "norm", "matmul"]
    if len(shape) == 4:
        choices = ["conv", "conv", "conv", "act", "act", "residual", "pool", "batch_norm", "flatten"]
    kind = rng.choice(choices)
    if kind == "linear":
        return d.step(f"{d.layer(f'torch.nn.Linear({shape[-1]}, {width}, bias={rng.random() < 0.8})')}({x})",
                      shape[:-1] + (width,))
    if kind == "conv":
        k = rng.choice((1, 3, 3))
        stride = rng.choice((1, 1, 2))
        groups = rng.choice((1, 1, 1, shape[1])) if width % shape[1] == 0 else 1
        conv = d.layer(f"torch.nn.Conv2d({shape[1]}, {width if groups == 1 else shape[1]}, {k}, stride={stride}, "
                       f"padding={k // 2}, groups={groups})")
        size = lambda n: (n + 2 * (k // 2) - k) // stride + 1  # noqa: E731
        return d.step(f"{conv}({x})", (shape[0], width if groups == 1 else shape[1], size(shape[2]), size(shape[3])))
    if kind == "act":
        return d.step(f"{rng.choice(['torch.relu', 'F.gelu', 'torch.sigmoid', 'F.hardswish', 'torch.tanh'])}({x})",
                      shape)
    if kind == "residual":
        same = [v for v, s in d.shapes.items() if s == shape and v != x]
        if not same:
            return d.step(f"torch.relu({x})", shape)
        return d.step(f"{x} + {rng.choice(same)}", shape)
    if kind == "norm":
        return d.step(f"{d.layer(f'torch.nn.LayerNorm({shape[-1]})')}({x})", shape)
    if kind == "batch_norm":
        return d.step(f"{d.layer(f'torch.nn.BatchNorm2d({shape[1]})')}({x})", shape)
    if kind == "matmul" and len(shape) == 3:
        return d.step(f"torch.softmax({x} @ {x}.transpose(1, 2) / {shape[-1] ** 0.5:.4f}, -1) @ {x}", shape)
    if kind == "pool" and min(shape[2:]) >= 2:
        return d.step(f"F.{rng.choice(['max_pool2d', 'avg_pool2d'])}({x}, 2)",
                      (shape[0], shape[1], shape[2] // 2, shape[3] // 2))
    if kind == "flatten" or len(shape) == 4:
        return d.step(f"{x}.mean((2, 3))", shape[:2])
    return d.step(f"torch.relu({x})", shape)


def generate_quantized(seed: int, *, max_steps: int = 6) -> QuantizedProgram:
    """A quantized program drawn from seed: a few layers, a method, an opset and optimize's value."""
    rng = random.Random(seed)
    d = _Drawing(rng)
    form = rng.choice(("vector", "sequence", "image"))
    batch = rng.choice((1, 2, 4, 8))
    shape = {"vector": (batch, rng.choice(WIDTHS)), "sequence": (batch, rng.choice((4, 16)), rng.choice(WIDTHS[:6])),
             "image": (batch if batch <= 2 else 2, rng.choice((3, 8, 16, 32, 64)), 12, 12)}[form]
    d.shapes["x"] = shape
    value = "x"
    for _ in range(rng.randint(1, max_steps)):
        value = _draw_step(d, value)
    if len(d.shapes[value]) == 4:
        value = d.step(f"{value}.mean((2, 3))", d.shapes[value][:2])
    # a last linear layer: every program has a quantizable layer, and a float result
    d.step(f"{d.layer(f'torch.nn.Linear({d.shapes[value][-1]}, {rng.choice(WIDTHS[:5])})')}({value})", ())
    d.steps.append(f"return {d.steps[-1].split(' = ')[0]}")
    method = rng.choice(METHODS)
    opset = (rng.choice((21, 23)) if method.startswith("int4") else rng.choice((19, 21, 23)) if method.startswith("float8")
             else rng.choice((13, 17, 18, 21, 23)))
    return QuantizedProgram(tuple(d.layers), tuple(d.steps), shape, rng.choice((0.5, 1.0, 3.0, 10.0)), method, opset,
                            rng.choice((True, True, "onnxruntime")), seed)


def quantize(program: QuantizedProgram, model: torch.nn.Module, x: torch.Tensor) -> torch.nn.Module | None:
    """The model quantized by the program's method; None where the method finds nothing to quantize (a
    torchao config meets no Linear whose width it takes)."""
    import torchao.quantization as tq
    from torchao.quantization import quantize_

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if program.method.startswith("pt2e"):
            import torchao.quantization.pt2e.quantizer.x86_inductor_quantizer as xiq
            from torchao.quantization.pt2e import move_exported_model_to_eval
            from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e, prepare_qat_pt2e

            mode = program.method.split("-")[1]
            quantizer = xiq.X86InductorQuantizer()
            quantizer.set_global(xiq.get_default_x86_inductor_quantization_config(is_dynamic=mode == "dynamic",
                                                                                 is_qat=mode == "qat"))
            captured = torch.export.export(model, (x,)).module()
            if mode == "qat":
                prepared = prepare_qat_pt2e(captured, quantizer)
                prepared(x)
                move_exported_model_to_eval(prepared)
            else:
                prepared = prepare_pt2e(captured, quantizer)
                prepared(x)
            return convert_pt2e(prepared)
        linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
        if program.method.startswith("int4"):
            group = "per-channel" if program.method.endswith("per-channel") else 32
            if group == 32 and not any(m.in_features % 32 == 0 for m in linears):
                return None
            config = tq.IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=tq.PerAxis(0)
                                             if group == "per-channel" else tq.PerGroup(32))
            quantize_(model, config, filter_fn=lambda m, _: isinstance(m, torch.nn.Linear)
                      and (group == "per-channel" or m.in_features % 32 == 0))
            return model
        config = {"int8-dynamic": tq.Int8DynamicActivationInt8WeightConfig, "int8-weight-only": tq.Int8WeightOnlyConfig,
                  "float8-weight-only": tq.Float8WeightOnlyConfig}[program.method]()
        quantize_(model, config)
        return model


@dataclasses.dataclass(frozen=True)
class QuantizedOutcome:
    """status: "match", "skipped" (nothing to quantize, or the quantizer or torch.export refused the float
    model), "refused" (our error: allowed), "mismatch" (a runtime further from the quantized model than the
    bound), "escape" (an exception not ours): the last two are bugs. errors: each runtime's max distance."""

    status: str
    detail: str = ""
    errors: dict = dataclasses.field(default_factory=dict)
    bounds: tuple = (0.0, 0.0)

    @property
    def bug(self) -> bool:
        return self.status in ("mismatch", "escape")


class QuantizedMismatch(AssertionError):
    def __init__(self, program: QuantizedProgram, outcome: QuantizedOutcome) -> None:
        super().__init__(f"{outcome.status}: {outcome.detail}\n{program.describe()}")
        self.program, self.outcome = program, outcome


# the ops that turn floats into quantized integers (PT2E's and torchao's), and those that choose the scale they
# divide by from the floats themselves
_QUANTIZE_OPS = frozenset({"quantized_decomposed::quantize_per_tensor", "quantized_decomposed::quantize_per_channel",
                           "quantized_decomposed::quantize_per_token", "quantized_decomposed::quantize_per_channel_group",
                           "torchao::quantize_affine", "quantized_decomposed::choose_qparams",
                           "quantized_decomposed::choose_qparams_symmetric", "quantized_decomposed::choose_qparams_per_token",
                           "quantized_decomposed::choose_qparams_per_token_asymmetric", "torchao::choose_qparams_affine"})


class _Nudged(TorchDispatchMode):
    """Every float a quantization op reads (or chooses its scale from) moved by ulps up or down at random, the
    same tensor the same way for every op that reads it: what computing the ops before it in another order
    (another runtime's kernels) does to it."""

    def __init__(self, generator: torch.Generator, up: float = 0.5) -> None:
        super().__init__()
        self.generator = generator
        self.up = up  # the chance an element moves up: 1 and 0 are a kernel that rounds one way
        self.nudged: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}  # id(x) -> (x, x nudged)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func._schema.name in _QUANTIZE_OPS and args and isinstance(args[0], torch.Tensor) \
                and args[0].is_floating_point():
            args = (self.nudge(args[0]), *args[1:])
        return func(*args, **kwargs)

    def nudge(self, x: torch.Tensor) -> torch.Tensor:
        """x with each element moved up or down by two ulps of x's largest finite magnitude: a sum rounds by the
        ulps of its terms, not of its result, so an element a sum cancelled to near 0 moves as much as the
        largest, and a chain of ops by a few (a conv stack and a mean before a quantized linear, in
        aten2onnx.runtime: 25 of the element's own ulps, 2 of the largest's)."""
        if not x.is_floating_point():
            return x  # (token ids and other integers are what they are)
        if id(x) not in self.nudged:
            up = torch.rand(x.shape, generator=self.generator) < self.up
            finite = x[torch.isfinite(x)].abs()
            largest = finite.max() if finite.numel() else torch.zeros((), dtype=x.dtype)
            step = 2 * (torch.nextafter(largest, torch.tensor(float("inf"), dtype=x.dtype)) - largest)
            self.nudged[id(x)] = (x, x + torch.where(up, step, -step))
        return self.nudged[id(x)][1]


class _NudgedLinearInputs(TorchFunctionMode):
    """The activation a linear layer of tensor-subclass weights reads (torchao's: it quantizes the activation in
    plain aten ops, which _Nudged cannot tell apart) moved as _Nudged moves it."""

    def __init__(self, nudging: _Nudged) -> None:
        super().__init__()
        self.nudging = nudging

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if (func is torch.nn.functional.linear and len(args) > 1 and type(args[1]) is not torch.Tensor
                and isinstance(args[1], torch.Tensor) and type(args[0]) is torch.Tensor and args[0].is_floating_point()):
            args = (self.nudging.nudge(args[0]), *args[1:])
        return func(*args, **kwargs)


def own_rounding(model: torch.nn.Module, x: torch.Tensor, want: torch.Tensor, draws: int = 3) -> float:
    """How far the quantized eager model moves when every float it quantizes moves up or down by two ulps of its
    tensor's largest magnitude (the most of all up, all down and `draws` random draws): where a value sits on a
    rounding edge, a float op computed in another order moves it a whole step. An export can be no closer than
    this without computing every float op as eager does (exact=True)."""
    moved = 0.0
    with torch.no_grad():
        for seed in range(draws + 2):
            # every element up, every element down (a kernel biased one way, as onnxruntime's Tanh is above 1:
            # a range symmetric about 0 puts a dynamic zero point on the tie 127.5), then at random
            nudging = _Nudged(torch.Generator().manual_seed(seed), up=(1.0, 0.0)[seed] if seed < 2 else 0.5)
            with nudging, _NudgedLinearInputs(nudging):
                nudged = model(nudging.nudge(x))
            moved = max(moved, float((nudged - want).abs().max()))
    return moved


def qdq_file_error(model: torch.nn.Module, x: torch.Tensor, want: torch.Tensor, opset: int) -> float:
    """How far onnxruntime's result for the model's plain QDQ file (exported with optimize=False: what any QDQ
    exporter writes) is from the quantized model, its int8 weights dequantized from uint8 (+128 with their zero
    points: the same values) so that onnxruntime sums integers exactly on every CPU: the rounding onnxruntime's
    own QDQ kernels add (QLinearConv requantizes by its own arithmetic, with the bias rounded to the integer
    sum's step). (onnxruntime's own session.x64quantprecision does the same, but fails to load some files.)"""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported = aten2onnx.export(model, (x,), opset=opset, optimize=False)
    proto = exported.model_proto
    _unsigned_weights(proto)
    options = ort.SessionOptions()
    options.log_severity_level = 4
    session = ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return float(np.abs(session.run(None, {exported.input_names[0]: x.numpy()})[0] - want.numpy()).max())


def _unsigned_weights(proto: onnx.ModelProto) -> None:
    """Each DequantizeLinear of an int8 initializer reads it (and its zero point) shifted to uint8."""
    graph = proto.graph
    initializers = {i.name: i for i in graph.initializer}
    shifted: dict[str, str] = {}

    def uint8(name: str) -> str:
        if name not in shifted:
            values = numpy_helper.to_array(initializers[name]).astype(np.int16) + 128
            graph.initializer.append(numpy_helper.from_array(values.astype(np.uint8), f"{name}.uint8"))
            shifted[name] = f"{name}.uint8"
        return shifted[name]

    for node in graph.node:
        if node.op_type != "DequantizeLinear" or node.domain or node.input[0] not in initializers \
                or initializers[node.input[0]].data_type != onnx.TensorProto.INT8:
            continue
        weight, scale, zero = (list(node.input) + ["", ""])[:3]
        if zero:
            if zero not in initializers:
                continue
            zero = uint8(zero)
        else:
            if scale not in initializers:
                continue
            zero = f"{node.output[0]}.zero_point.uint8"
            graph.initializer.append(numpy_helper.from_array(
                np.full(tuple(initializers[scale].dims), 128, np.uint8), zero))
        del node.input[:]
        node.input.extend([uint8(weight), scale, zero])


def bounds(model: torch.nn.Module, x: torch.Tensor, want: torch.Tensor, fp: torch.Tensor, opset: int
           ) -> tuple[float, float]:
    """How far from the quantized model's `want` aten2onnx.runtime's and onnxruntime's results may be (see the
    module docstring): a quarter of quantization's own effect plus the model's own rounding (a runtime's float
    kernels move values on rounding edges where they will, its allowance on top), for onnxruntime at least
    what its QDQ kernels do to the plain QDQ file; 1% more, for the float rounding around a step that flipped."""
    bound = 0.25 * float((want - fp).abs().max()) + own_rounding(model, x, want)
    return 1.01 * bound, 1.01 * max(bound, qdq_file_error(model, x, want, opset))


def examine_quantized(programs: Sequence[QuantizedProgram], *, emulate: bool = False) -> list[QuantizedOutcome]:
    """Each program's outcome; with emulate, onnxruntime also runs them as a CPU without VNNI (all in one
    emulated process, reading the files from a temporary folder removed after)."""
    with tempfile.TemporaryDirectory(prefix="aten2onnx-quantized-") as folder:
        return _examine(programs, emulate, folder)


def _examine(programs: Sequence[QuantizedProgram], emulate: bool, folder: str) -> list[QuantizedOutcome]:
    from aten2onnx.runtime import InferenceSession

    outcomes: list[QuantizedOutcome | None] = []
    pending = []  # (index, path, feeds, want, bound, errors) awaiting the emulated run
    for index, program in enumerate(programs):
        model, x = program.build(), program.example()
        try:
            with torch.no_grad():
                fp = model(x)
                q_model = quantize(program, model, x)
                if q_model is None:
                    outcomes.append(QuantizedOutcome("skipped", "nothing to quantize"))
                    continue
                want = q_model(x)
        except Exception as e:  # noqa: BLE001 (the quantizer's or torch.export's refusal of the float model)
            outcomes.append(QuantizedOutcome("skipped", f"quantization failed: {type(e).__name__}: {e}"[:300]))
            continue
        try:
            bound, ort_bound = bounds(q_model, x, want, fp, program.opset)
        except Exception as e:  # noqa: BLE001 (the plain file's export refused: the default export's check tells)
            outcomes.append(QuantizedOutcome("refused", f"{type(e).__name__}: {str(e).splitlines()[0]}"[:300]))
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                exported = aten2onnx.export(q_model, (x,), opset=program.opset, optimize=program.optimize)
        except aten2onnx.InternalError as e:
            outcomes.append(QuantizedOutcome("escape", str(e).splitlines()[0]))
            continue
        except aten2onnx.Aten2OnnxError as e:
            outcomes.append(QuantizedOutcome("refused", f"{type(e).__name__}: {str(e).splitlines()[0]}"))
            continue
        except Exception as e:  # noqa: BLE001 (export raises only our errors)
            outcomes.append(QuantizedOutcome("escape", f"export raised {type(e).__name__}: {e}"[:500]))
            continue
        feeds = {exported.input_names[0]: x.numpy()}
        errors = {}
        try:
            ours = InferenceSession(exported.model_proto, allowed_aten_namespaces=("aten",))
            errors["aten2onnx.runtime"] = float(np.abs(np.asarray(ours.run(None, feeds)[0]) - want.numpy()).max())
            session = ort_session(exported.model_proto, log_severity=4)
            errors["onnxruntime"] = float(np.abs(session.run(None, feeds)[0] - want.numpy()).max())
        except Exception as e:  # noqa: BLE001 (a runtime that cannot run our file is a bug)
            outcomes.append(QuantizedOutcome("mismatch", f"a runtime failed: {type(e).__name__}: {e}"[:500], errors,
                                             (bound, ort_bound)))
            continue
        outcomes.append(None)
        path = os.path.join(folder, f"{index}.onnx")
        exported.save(path)
        pending.append((index, path, feeds, want.numpy(), (bound, ort_bound), errors))
    if emulate and pending:
        from aten2onnx.testing import cpus

        for (_, _, _, want, _, errors), (out,) in zip(pending, cpus.run_onnxruntime([(p[1], p[2]) for p in pending])):
            errors["onnxruntime without VNNI"] = float(np.abs(out - want).max())
    for index, _, _, _, (bound, ort_bound), errors in pending:
        far = {k: v for k, v in errors.items() if not v <= (ort_bound if k.startswith("onnxruntime") else bound)}
        outcomes[index] = QuantizedOutcome("mismatch" if far else "match",
                                           f"further than {bound:.3g} (onnxruntime: {ort_bound:.3g}) from the quantized "
                                           f"model: {far}" if far else "", errors, (bound, ort_bound))
    return outcomes


def check_quantized(program: QuantizedProgram, *, emulate: bool = False) -> QuantizedOutcome:
    """The program's outcome; raises QuantizedMismatch for a bug."""
    outcome, = examine_quantized([program], emulate=emulate)
    if outcome.bug:
        raise QuantizedMismatch(program, outcome)
    return outcome
