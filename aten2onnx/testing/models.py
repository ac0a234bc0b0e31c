"""Random small models for differential testing of the exporter, and the check that runs them.

A `Program` is a model written as data: inputs of random dtypes and shapes (dim 0 possibly dynamic),
buffers, weights, and a list of Python statements over them drawn from an op table (elementwise math,
Python scalars, reductions, shapes and views, indexing, matmul/conv/norms, casts, in-place writes
through views into intermediates, inputs and buffers). It prints as the Python source of its module.
`check_program` exports it at each opset and compares eager PyTorch with onnxruntime and
aten2onnx.runtime over several runs (state carried, fresh values, fresh sizes of dynamic dims): the
export must match or raise our error.

    from hypothesis import given
    from aten2onnx.testing import check_program, programs

    @given(programs())
    def test_exporter(program):
        check_program(program)

Values are chosen so that eager and an exported model can agree to the last bit where it matters:
floats start on a grid of quarters, and ops that jump at a threshold (floor, comparisons, argmax,
casts to integers) only take values every op before them computed exactly. A drawn statement that
eager PyTorch rejects is drawn again, so every program runs in eager.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import random
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol

import numpy as np
import onnx
import torch
import torch.nn.functional as F  # noqa: N812  (the programs' own spelling)
import torch.utils._pytree as pytree
from torch.overrides import TorchFunctionMode

import aten2onnx
from aten2onnx._compare import difference, ort_can_run, ort_session
from aten2onnx._onnx_graphs import graphs

try:
    from hypothesis import strategies as st
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("aten2onnx.testing needs hypothesis: pip install hypothesis") from e

__all__ = ["Outcome", "Program", "ProgramMismatch", "check_program", "generate", "programs", "shrink"]

FLOATS = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
INTS = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)
# Drawn input dtypes, float32 first (where hypothesis shrinks to) and most often.
DTYPES = (torch.float32, torch.float32, torch.float32, torch.int64, torch.float64, torch.float16, torch.bool,
          torch.int32, torch.int8, torch.uint8, torch.bfloat16, torch.int16)
OPSETS = (18, 9, 11, 13, 17, 20, 23, 26)
# Wider than DEFAULT_TOLERANCES: a program chains several ops, each rounding on its own, and a norm
# divides the rounding of a mean by sqrt(eps).
TOLERANCES = {torch.float16: (1e-2, 1e-2), torch.bfloat16: (5e-2, 5e-2), torch.float32: (1e-4, 1e-4),
              torch.float64: (1e-7, 1e-9)}
MAX_ELEMENTS = 4096


class Draw(Protocol):
    """Where a program's random choices come from: hypothesis (which can shrink them) or a seeded RNG."""

    def integer(self, low: int, high: int) -> int: ...

    def choice(self, options: Sequence[Any]) -> Any: ...

    def chance(self, percent: int) -> bool: ...


class RandomDraw:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def integer(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)

    def choice(self, options: Sequence[Any]) -> Any:
        return options[self.rng.randrange(len(options))]

    def chance(self, percent: int) -> bool:
        return self.rng.randrange(100) < percent


class HypothesisDraw:
    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw

    def integer(self, low: int, high: int) -> int:
        return self.draw(st.integers(low, high))

    def choice(self, options: Sequence[Any]) -> Any:
        return options[self.draw(st.integers(0, len(options) - 1))]

    def chance(self, percent: int) -> bool:
        return self.draw(st.integers(0, 99)) >= 100 - percent  # shrinks to "no"


# -- programs -------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Tensor:
    """An input, buffer or weight: its name in the program, shape and dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: torch.dtype


@dataclasses.dataclass(frozen=True)
class Step:
    """One statement of forward: `target = code`, or a bare `code` that writes in place."""

    target: str | None
    code: str

    def line(self) -> str:
        return f"{self.target} = {self.code}" if self.target else self.code


@dataclasses.dataclass(frozen=True)
class Program:
    inputs: tuple[Tensor, ...]
    buffers: tuple[Tensor, ...]
    weights: tuple[Tensor, ...]
    steps: tuple[Step, ...]
    outputs: tuple[str, ...]
    dynamic: bool  # dim 0 of the inputs of the example batch size is exported as the dynamic dim "batch"
    batch: int
    seed: int

    def source(self) -> str:
        """The module as Python."""
        lines = ["class Model(torch.nn.Module):", "    def __init__(self):", "        super().__init__()"]
        lines += [f"        self.register_buffer({b.name!r}, torch.zeros({list(b.shape)}, dtype={b.dtype}))"
                  for b in self.buffers]
        lines += [f"        self.{w.name} = torch.nn.Parameter(torch.zeros({list(w.shape)}, dtype={w.dtype}))"
                  for w in self.weights]
        lines.append(f"    def forward(self, {', '.join(i.name for i in self.inputs)}):")
        lines += [f"        {step.line()}" for step in self.steps]
        lines.append(f"        return ({', '.join(self.outputs)},)" if self.outputs else "        return ()")
        return "\n".join(lines)

    def describe(self) -> str:
        """The source with what it is called on."""
        ins = ", ".join(f"{i.name}: {_dtype_name(i.dtype)}{list(i.shape)}" for i in self.inputs)
        dims = "; dim 0 of inputs of size {} is dynamic ('batch')".format(self.batch) if self.dynamic else ""
        return f"{self.source()}\n# called on {ins}{dims}; values from seed {self.seed} (Program.tensors)"

    def __repr__(self) -> str:
        return self.describe()

    def build(self) -> torch.nn.Module:
        """The module, with weights and buffers drawn from the seed."""
        namespace = {"torch": torch, "F": F}
        exec(compile(self.source(), "<aten2onnx.testing program>", "exec"), namespace)  # noqa: S102 (our own source)
        module = namespace["Model"]()
        generator = torch.Generator().manual_seed(self.seed + 7919)
        with torch.no_grad():
            for spec in self.buffers + self.weights:
                getattr(module, spec.name).copy_(_values(spec.shape, spec.dtype, generator))
        return module.eval()

    def tensors(self, run: int = 0, batch: int | None = None, resized: Sequence[str] = ()) -> list[torch.Tensor]:
        """Input values for one run (run 0 is the example), with dim 0 of the inputs named in
        `resized` of size `batch`."""
        generator = torch.Generator().manual_seed(self.seed * 31 + run)
        out = []
        for spec in self.inputs:
            shape = spec.shape
            if batch is not None and spec.name in resized:
                shape = (batch, *shape[1:])
            out.append(_values(shape, spec.dtype, generator))
        return out

    def dynamic_shapes(self) -> dict[str, dict[int, str]] | None:
        if not self.dynamic:
            return None
        return {i.name: {0: "batch"} for i in self.inputs if i.shape and i.shape[0] == self.batch}


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _values(shape: tuple[int, ...], dtype: torch.dtype, generator: torch.Generator) -> torch.Tensor:
    """Values eager and exported models compute on alike: floats on a grid of quarters in [-4, 4]
    (sums and products of a few are exact), integers across their range for narrow types (wrapping
    is part of the semantics) and small otherwise, bools half true."""
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=generator).bool()
    if dtype.is_floating_point:
        return (torch.randint(-16, 17, shape, generator=generator) / 4).to(dtype)
    low, high = {torch.uint8: (0, 256), torch.int8: (-128, 128)}.get(dtype, (-20, 21))
    return torch.randint(low, high, shape, generator=generator).to(dtype)


# -- generation -----------------------------------------------------------------------------------------


@dataclasses.dataclass
class Val:
    """A value while a program is drawn: its name, example tensor, and whether every op before it
    computed it exactly (see the module docstring)."""

    name: str
    tensor: torch.Tensor
    exact: bool

    @property
    def dtype(self) -> torch.dtype:
        return self.tensor.dtype

    @property
    def rank(self) -> int:
        return self.tensor.dim()

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.tensor.shape)


class Context:
    """What a statement maker sees: the values so far, the draw, and ways to add weights."""

    def __init__(self, draw: Draw, values: list[Val], module: Any, weights: int) -> None:
        self.d = draw
        self.values = values
        self.module = module
        self.existing = weights  # weights the program already has
        self.weights: list[Tensor] = []  # weights this statement adds

    def pick(self, accept: Callable[[Val], bool] = lambda v: True) -> Val | None:
        options = [v for v in self.values if accept(v)]
        return self.d.choice(options[::-1]) if options else None  # the most recent first

    def dim(self, v: Val) -> int:
        return self.d.integer(-v.rank, v.rank - 1)

    def scalar(self, dtype: torch.dtype) -> str:
        if dtype == torch.bool:
            return self.d.choice(["True", "False"])
        if dtype.is_floating_point:
            return repr(self.d.integer(-12, 12) / 4)
        return repr(self.d.integer(-3, 5))

    def weight(self, shape: tuple[int, ...], dtype: torch.dtype) -> str:
        """A new weight of the program (values from its seed when built)."""
        spec = Tensor(f"w{self.existing + len(self.weights)}", tuple(shape), dtype)
        self.weights.append(spec)
        setattr(self.module, spec.name, _values(spec.shape, dtype, torch.Generator().manual_seed(self.existing)))
        return f"self.{spec.name}"


class Made(NamedTuple):
    """A drawn statement: its code; for a write in place, the name of the value it writes into; and
    whether what it computes (or writes) is exact."""

    code: str
    writes: str | None
    exact: bool


Maker = Callable[[Context], "Made | None"]


def _float(v: Val) -> bool:
    return v.dtype.is_floating_point


def _numeric(v: Val) -> bool:
    return v.dtype != torch.bool


def _finite(v: Val) -> bool:
    """Whether a value has no NaN or infinity. Exported graphs depart from eager on them in a few ops,
    known deviations the fuzzer draws those ops only on finite values for: onnxruntime's MaxPool and
    ArgMax skip NaN and its Unique drops it; attention masks by selecting where eager adds -inf
    (keeping 0 * inf's NaN); linear resizing weighs an infinity by 0 where eager's kernel skips it."""
    return not v.dtype.is_floating_point or bool(torch.isfinite(v.tensor).all())


def _broadcastable(a: Val, b: Val) -> bool:
    try:
        torch.broadcast_shapes(a.shape, b.shape)
        return True
    except RuntimeError:
        return False


def _fits(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Whether shape broadcasts to target without growing it."""
    try:
        return tuple(torch.broadcast_shapes(shape, target)) == tuple(target)
    except RuntimeError:
        return False


def _other(ctx: Context, a: Val, accept: Callable[[Val], bool] = lambda v: True) -> Val | None:
    return ctx.pick(lambda v: _broadcastable(a, v) and accept(v))


UNARY_INEXACT = ["torch.exp({})", "torch.log({}.abs() + 1)", "torch.sqrt({}.abs())", "torch.sin({})", "torch.tanh({})",
                 "torch.sigmoid({})", "torch.erf({})", "torch.rsqrt({}.abs() + 0.5)", "torch.reciprocal({})",
                 "torch.expm1({})", "F.gelu({})", "F.gelu({}, approximate='tanh')", "F.silu({})", "F.softplus({})",
                 "F.elu({})", "F.leaky_relu({}, 0.1)", "F.hardswish({})", "F.mish({})", "torch.atan({})",
                 "torch.cos({})", "F.logsigmoid({})", "torch.special.log_ndtr({})"]
UNARY_EXACT = ["-{}", "{}.abs()", "torch.relu({})", "F.relu6({})", "F.hardtanh({})", "{}.square()"]
JUMPS = ["{}.floor()", "{}.ceil()", "{}.round()", "{}.trunc()", "{}.sign()", "{}.frac()", "({} > 0)",
         "torch.isnan({})", "{}.to(torch.int64)", "{}.to(torch.int32)", "{}.to(torch.uint8)", "{}.to(torch.int8)",
         "{}.to(torch.bool)", "torch.isinf({})"]  # not signbit: a NaN's sign bit is the arithmetic's that made it
BINARY_EXACT = ["{} + {}", "{} - {}", "{} * {}", "torch.maximum({}, {})", "torch.minimum({}, {})",
                "torch.fmax({}, {})", "torch.fmin({}, {})", "torch.add({}, {}, alpha=2)", "torch.sub({}, {}, alpha=3)"]
BINARY_INEXACT = ["{} / {}", "torch.hypot({}, {})", "torch.logaddexp({}, {})", "torch.pow({}.abs() + 0.5, {})",
                  "torch.xlogy({}, {}.abs())", "torch.lerp({}, {}, 0.25)"]
# (atan2 and copysign jump with the sign of a zero, which rounding decides for an inexact one)
BINARY_JUMPS = ["{} == {}", "{} != {}", "{} < {}", "{} <= {}", "{} > {}", "{} >= {}", "torch.remainder({}, {})",
                "torch.atan2({}, {})", "torch.copysign({}, {})",
                "torch.fmod({}, {})", "torch.floor_divide({}, {})", "torch.logical_and({}, {})",
                "torch.logical_or({}, {})", "torch.logical_xor({}, {})", "torch.div({}, {}, rounding_mode='trunc')",
                "torch.div({}, {}, rounding_mode='floor')"]
BITWISE = ["{} & {}", "{} | {}", "{} ^ {}", "torch.bitwise_left_shift({}, {}.abs() % 3)",
           "torch.bitwise_right_shift({}, {}.abs() % 3)", "torch.gcd({}, {})"]
SCALAR = ["{a} + {s}", "{s} - {a}", "{a} * {s}", "{a} / {s}", "{a} ** 2", "{a} - {s}", "{s} * {a}", "{a} // {s}",
          "{a} % {s}", "torch.clamp({a}, min={s})", "torch.clamp({a}, max={s})", "{a} > {s}", "{a} == {s}",
          "torch.where({a} > {s}, {a}, {s})", "{a}.masked_fill({a} > {s}, {s})", "torch.full_like({a}, {s})",
          "{a} + {a}.shape[0]" , "{a} * ({a}.numel() % 3 + 1)"]


def _unary(ctx: Context) -> Made | None:
    a = ctx.pick()
    if a is None:
        return None
    kind = ctx.d.integer(0, 2)
    if kind == 0 and _numeric(a):
        return Made(ctx.d.choice(UNARY_EXACT).format(a.name), None, a.exact)
    if kind == 1:
        return Made(ctx.d.choice(UNARY_INEXACT).format(a.name), None, False)
    if a.exact:
        return Made(ctx.d.choice(JUMPS).format(a.name), None, True)
    return None


def _binary(ctx: Context) -> Made | None:
    a = ctx.pick()
    if a is None:
        return None
    b = _other(ctx, a)
    if b is None:
        return None
    kind = ctx.d.integer(0, 3)
    if kind == 0:
        exact = a.exact and b.exact and not (a.dtype in (torch.float16, torch.bfloat16) or b.dtype in (torch.float16, torch.bfloat16))
        return Made(ctx.d.choice(BINARY_EXACT).format(a.name, b.name), None, exact)
    if kind == 1:
        return Made(ctx.d.choice(BINARY_INEXACT).format(a.name, b.name), None, False)
    if kind == 2 and a.exact and b.exact:
        return Made(ctx.d.choice(BINARY_JUMPS).format(a.name, b.name), None, True)
    if kind == 3 and not _float(a) and not _float(b):
        return Made(ctx.d.choice(BITWISE).format(a.name, b.name), None, True)
    return None


def _scalar(ctx: Context) -> Made | None:
    a = ctx.pick()
    if a is None:
        return None
    template = ctx.d.choice(SCALAR)
    jumps = any(op in template for op in ("//", "%", ">", "=="))
    if jumps and not a.exact:
        return None
    code = template.format(a=a.name, s=ctx.scalar(ctx.d.choice([a.dtype, torch.float32, torch.int64])))
    return Made(code, None, a.exact and "/" not in template.replace("//", ""))


def _where(ctx: Context) -> Made | None:
    cond = ctx.pick(lambda v: v.dtype == torch.bool)
    a = ctx.pick()
    if cond is None or a is None:
        return None
    b = _other(ctx, a, lambda v: _broadcastable(cond, v))
    if b is None or not _broadcastable(cond, a):
        return None
    return Made(f"torch.where({cond.name}, {a.name}, {b.name})", None, a.exact and b.exact)


REDUCTIONS_EXACT = ["{a}.sum(dim=({d}, 0))", "{a}.amax(dim=[0, {d}], keepdim=True)", "{a}.sum({d})", "{a}.amax({d})", "{a}.amin({d})", "{a}.sum(dim={d}, keepdim=True)",
                    "{a}.amax(dim={d}, keepdim=True)", "{a}.cumsum({d})", "{a}.any({d})", "{a}.all({d})",
                    "{a}.max(dim={d}).values", "{a}.min(dim={d}, keepdim=True).values", "{a}.sum()", "{a}.amax()",
                    "{a}.flip({d}).cummax({d}).values", "{a}.sort(dim={d}).values", "{a}.sort(dim={d}, descending=True).values"]
REDUCTIONS_INEXACT = ["{a}.mean({d})", "{a}.mean()", "{a}.prod({d})", "torch.logsumexp({a}, {d})", "{a}.var({d})",
                      "{a}.std(dim={d}, keepdim=True)", "torch.softmax({a}, {d})", "torch.log_softmax({a}, {d})",
                      "torch.linalg.vector_norm({a}, dim={d})", "{a}.norm()", "{a}.cumprod({d})",
                      "torch.logcumsumexp({a}, {d})", "{a}.mean(dim=[{d}], keepdim=True)"]
# Indices of extremes where PyTorch defines which of equal values wins (the first; a stable sort);
# topk's and an unstable sort's order among equal values is unspecified.
INDICES = ["{a}.argmax({d})", "{a}.argmin(dim={d}, keepdim=True)", "{a}.max(dim={d}).indices", "{a}.argmax()",
           "{a}.sort(dim={d}, stable=True).indices", "{a}.topk(1, dim={d}).values"]


def _reduction(ctx: Context) -> Made | None:
    a = ctx.pick(lambda v: v.rank > 0)
    if a is None:
        return None
    d = ctx.dim(a)
    kind = ctx.d.integer(0, 2)
    if kind == 0:
        return Made(ctx.d.choice(REDUCTIONS_EXACT).format(a=a.name, d=d), None, a.exact)
    if kind == 1:
        return Made(ctx.d.choice(REDUCTIONS_INEXACT).format(a=a.name, d=d), None, False)
    if a.exact and _finite(a):  # see _finite
        return Made(ctx.d.choice(INDICES).format(a=a.name, d=d), None, True)
    return None


def _shape(ctx: Context) -> Made | None:
    a = ctx.pick()
    if a is None:
        return None
    r, n = a.rank, a.name
    d = ctx.dim(a) if r else 0
    options = [f"{n}.reshape(-1)", f"{n}.unsqueeze({ctx.d.integer(-r - 1, r)})", f"{n}.clone()", f"{n}.contiguous()",
               f"{n}.expand(2, *{n}.shape)", f"{n}.repeat({', '.join(['2'] + ['1'] * r)})", f"{n}[None]"]
    if r >= 1:
        size = a.shape[d]
        options += [f"{n}.flip({d})", f"{n}.roll({ctx.d.integer(-2, 2)}, {d})", f"{n}.transpose({d}, {ctx.dim(a)})",
                    f"{n}.permute({', '.join(map(str, reversed(range(r))))})", f"{n}.flatten()", f"{n}.squeeze({d})",
                    f"torch.cat([{n}, {n}], dim={d})", f"torch.stack([{n}, {n}], dim={d})",
                    f"{n}.narrow({d}, {ctx.d.integer(0, size - 1)}, 1)" if size else f"{n}.clone()",
                    f"{n}.select({d}, {ctx.d.integer(-size, size - 1)})" if size else f"{n}.clone()",
                    f"{n}[{ctx.d.integer(-a.shape[0], a.shape[0] - 1)}]" if a.shape[0] else f"{n}.clone()",
                    f"{n}[1:]", f"{n}[::2]", f"{n}[..., -1:]", f"{n}[:-1]", f"{n}.split(2, dim={d})[0]",
                    f"{n}.chunk(2, dim={d})[-1]", f"{n}.reshape({n}.shape[0], -1)", f"{n}.movedim({d}, 0)",
                    f"F.pad({n}, (1, 2))", f"{n}.unflatten(0, ({n}.shape[0], 1))", f"{n}.view(-1)"
                    if a.tensor.is_contiguous() else f"{n}.reshape(-1)", f"{n}.tile(2)"]
    if r >= 2:
        options += [f"{n}.tril()", f"{n}.triu(1)", f"{n}.t()" if r == 2 else f"{n}.mT", f"{n}.diagonal()",
                    f"{n}.flatten(0, 1)", f"{n}[:, 1:3]", f"{n}[..., ::2, :]", f"{n}.unfold({d}, 1, 1)"]
    return Made(ctx.d.choice(options), None, a.exact)


def _index(ctx: Context) -> Made | None:
    a = ctx.pick(lambda v: v.rank > 0 and v.tensor.numel() > 0)
    if a is None:
        return None
    n, d = a.name, ctx.dim(a)
    size = a.shape[d]

    def idx(count: int, k: int) -> str:
        return f"torch.tensor({[ctx.d.integer(-k, k - 1) for _ in range(count)]})"

    mask = ctx.pick(lambda v: v.dtype == torch.bool and v.shape == a.shape)
    options = [f"{n}.index_select({d}, torch.tensor({[ctx.d.integer(0, size - 1) for _ in range(3)]}))" if size else None,
               f"{n}[{idx(ctx.d.integer(1, 3), a.shape[0])}]", f"{n}[..., {idx(2, a.shape[-1])}]"]
    if a.rank >= 2:
        options += [f"{n}[{idx(2, a.shape[0])}, {idx(2, a.shape[1])}]", f"{n}[:, {idx(2, a.shape[1])}]",
                    f"{n}[{idx(2, a.shape[0])}[:, None], {idx(3, a.shape[1])}]"]
        index_shape = list(a.shape)
        index_shape[d] = max(1, size - 1)
        gather = torch.randint(0, max(size, 1), index_shape, generator=torch.Generator().manual_seed(ctx.d.integer(0, 99)))
        options.append(f"{n}.gather({d}, torch.tensor({gather.tolist()}))")
    if mask is not None:
        options += [f"{n}[{mask.name}]", f"{n}.masked_fill({mask.name}, {ctx.scalar(a.dtype)})"]
    choice = ctx.d.choice([o for o in options if o is not None])
    return Made(choice, None, a.exact)


def _linear(ctx: Context) -> Made | None:
    # float32 and float64: a half-type product rounds its terms, and a cancelling sum after it moves
    # by more than any fixed tolerance (float16 [3] @ [3, 3] then linear: 5% apart, eager against itself
    # in another order)
    a = ctx.pick(lambda v: v.dtype in (torch.float32, torch.float64) and v.rank >= 1)
    if a is None:
        return None
    k = a.shape[-1]
    kind = ctx.d.integer(0, 5)
    if kind == 0:
        return Made(f"{a.name} @ {ctx.weight((k, ctx.d.integer(1, 4)), a.dtype)}", None, False)
    if kind == 1:
        out = ctx.d.integer(1, 4)
        return Made(f"F.linear({a.name}, {ctx.weight((out, k), a.dtype)}, {ctx.weight((out,), a.dtype)})", None, False)
    if kind == 2 and a.exact:  # see _norm
        return Made(f"F.layer_norm({a.name}, ({k},))", None, False)
    if kind == 3 and a.rank == 4 and a.shape[1] >= 1:
        weight = ctx.weight((2, a.shape[1], 1, 1), a.dtype)
        return Made(f"F.conv2d({a.name}, {weight}, padding={ctx.d.integer(0, 1)})", None, False)
    if kind == 4 and a.rank == 3:
        weight = ctx.weight((2, a.shape[1], 1), a.dtype)
        return Made(f"F.conv1d({a.name}, {weight}, stride={ctx.d.integer(1, 2)})", None, False)
    if kind == 5 and a.rank >= 2:
        b = ctx.pick(lambda v: v.dtype == a.dtype and v.rank >= 1 and v.shape[0] == k)
        return Made(f"{a.name} @ {b.name}", None, False) if b is not None else None
    return None


def _norm(ctx: Context) -> Made | None:
    """Norms, attention, pooling, resizing and embeddings on float values of the ranks they take."""
    a = ctx.pick(lambda v: v.dtype in FLOATS and v.rank >= 2 and v.tensor.numel() > 0)
    if a is None:
        return None
    n, r, c = a.name, a.rank, a.shape[1]
    options = [f"torch.softmax({n}, -1, dtype=torch.float32)", f"F.dropout({n}, 0.5, training=False)"]
    if r in (3, 4):
        options += [f"F.interpolate({n}, scale_factor=2, mode='nearest')", f"F.adaptive_avg_pool{r - 2}d({n}, 1)",
                    f"F.avg_pool{r - 2}d({n}, 1)"]
        if _finite(a):  # see _finite
            options += [f"F.max_pool{r - 2}d({n}, 1)", f"F.scaled_dot_product_attention({n}, {n}, {n})",
                        f"F.scaled_dot_product_attention({n}, {n}, {n}, is_causal=True)"]
            # a mask of the scores [..., S, S], bool or added to them, broadcast over the query rows (one per
            # key), over the keys (one per row), or another value that broadcasts to them
            scores = (*a.shape[:-1], a.shape[-2])
            m = ctx.pick(lambda v: v.dtype in FLOATS and 2 <= v.rank <= r and _finite(v) and _fits(v.shape, scores))
            masks = [f"{n}.sum(-1, keepdim=True).transpose(-1, -2)", f"{n}.sum(-1, keepdim=True)"]
            for mask in masks + ([m.name] if m is not None else []):
                options += [f"F.scaled_dot_product_attention({n}, {n}, {n}, attn_mask={mask} > 0)",
                            f"F.scaled_dot_product_attention({n}, {n}, {n}, attn_mask={mask}.to({n}.dtype))"]
            # keys and values of another length (cross-attention), with a mask of one per key
            kv = ctx.pick(lambda v: v.dtype == a.dtype and v.rank == r and tuple(v.shape[:-2]) == tuple(a.shape[:-2])
                          and v.shape[-1] == a.shape[-1] and _finite(v) and v is not a)
            if kv is not None:
                keys = f"{kv.name}.sum(-1, keepdim=True).transpose(-1, -2)"
                options += [f"F.scaled_dot_product_attention({n}, {kv.name}, {kv.name})",
                            f"F.scaled_dot_product_attention({n}, {kv.name}, {kv.name}, attn_mask={keys} > 0)",
                            f"F.scaled_dot_product_attention({n}, {kv.name}, {kv.name}, attn_mask={keys}.to({n}.dtype))"]
    if r == 3 and _finite(a):
        options.append(f"F.interpolate({n}, size=5, mode='linear')")
    if a.exact:  # a norm divides by the spread, which rounding noise in an inexact near-constant input is
        options += [f"F.layer_norm({n}, ({a.shape[-1]},), WEIGHT, BIAS)", f"F.normalize({n}, dim={ctx.dim(a)})",
                    f"F.rms_norm({n}, ({a.shape[-1]},))"]
        if r in (3, 4):
            options += [f"F.group_norm({n}, 1)", f"F.batch_norm({n}, torch.arange({c}.0).to({n}.dtype), "
                        f"torch.arange(1.0, {c + 1}.0).to({n}.dtype))", f"F.instance_norm({n})"]
    code = ctx.d.choice(options)
    if "WEIGHT" in code:  # weights only for the statement drawn
        code = code.replace("WEIGHT", ctx.weight((a.shape[-1],), a.dtype)).replace("BIAS", ctx.weight((a.shape[-1],), a.dtype))
    return Made(code, None, False)


def _embedding(ctx: Context) -> Made | None:
    a = ctx.pick(lambda v: v.dtype in (torch.int64, torch.int32) and v.tensor.numel() > 0)
    if a is None:
        return None
    rows = int(a.tensor.abs().max()) + 1
    if rows > 64:
        return None
    return Made(f"F.embedding({a.name}.abs(), {ctx.weight((rows, 3), torch.float32)})", None, False)


def _cast(ctx: Context) -> Made | None:
    a = ctx.pick()
    if a is None:
        return None
    # float to float rounds the same everywhere (to nearest even), so exactness carries over
    target = ctx.d.choice(["float()", "double()", "half()", "to(torch.bfloat16)", "to(torch.float32)"])
    return Made(f"{a.name}.{target}", None, a.exact or not _float(a))


def _sizes(ctx: Context) -> Made | None:
    """Tensors made at sizes read from a (possibly dynamic) dim: SymInt arithmetic in the graph."""
    a = ctx.pick(lambda v: v.rank > 0)
    if a is None:
        return None
    n = a.name
    made = [f"torch.arange({n}.shape[0])", f"torch.zeros({n}.shape[0], 2)", f"torch.ones_like({n})",
            f"{n}.new_full(({n}.shape[-1],), 2)", f"torch.arange({n}.shape[0]) * {n}.shape[0]",
            f"{n}.new_zeros({n}.shape)", f"{n}.new_zeros({n}.shape[0] * 2)", f"torch.arange({n}.shape[0] + 1)",
            f"torch.full(({n}.shape[0],), {n}.shape[-1])", f"{n}.new_ones({n}.shape[0], 1) * {n}.shape[0]",
            f"torch.arange({n}.shape[0]).unsqueeze(1) < {n}.shape[0] - 1"]
    read = [f"{n}[: {n}.shape[0] // 2 + 1]", f"F.pad({n}, (0, {n}.shape[-1]))", f"{n}.reshape({n}.shape[0], -1).sum(1)",
            f"torch.zeros_like({n}) + torch.arange({n}.shape[-1])"]
    if a.rank >= 2:
        read += [f"{n}.reshape({n}.shape[0] * {n}.shape[1], -1)", f"{n}.view({n}.shape[0], -1)"
                 if a.tensor.is_contiguous() else f"{n}.flatten(1)"]
    code = ctx.d.choice(made + read)
    return Made(code, None, code in made or a.exact)


def _scatter(ctx: Context) -> Made | None:
    a = ctx.pick(lambda v: v.rank >= 1 and v.tensor.numel() > 0 and v.dtype != torch.bool)
    if a is None:
        return None
    n, size = a.name, a.shape[0]
    rows = sorted({ctx.d.integer(0, size - 1) for _ in range(2)})  # unique: index_copy's order is then defined
    index = f"torch.tensor({rows})"
    piece = f"{n}[:{len(rows)}]"
    options = [f"{n}.index_add(0, {index}, {piece})", f"{n}.index_copy(0, {index}, {piece} * 2)",
               f"{n}.index_put(({index},), {piece}, accumulate=True)", f"{n}.index_fill(0, {index}, 1)",
               f"torch.zeros_like({n}).scatter_add(0, {index}.reshape(-1, *[1] * ({n}.dim() - 1)).expand_as({piece}), {piece})"]
    return Made(ctx.d.choice(options), None, a.exact)


def _data_dependent(ctx: Context) -> Made | None:
    """Results whose size is read from values: nonzero, masked_select, unique; and torch.cond."""
    a = ctx.pick(lambda v: v.rank >= 1 and v.exact)
    if a is None:
        return None
    n = a.name
    options = [f"torch.nonzero({n})", f"{n}[{n} > 0]", f"torch.masked_select({n}, {n} != 0)",
               f"torch.cond({n}.sum() > 0, lambda t: t * 2, lambda t: t - 1, ({n},))"]
    if _finite(a):  # see _finite
        options.append(f"torch.unique({n})" if a.dtype != torch.bool else f"torch.unique({n}.int())")
    return Made(ctx.d.choice(options), None, True)


INPLACE = ["{v}.add_({s})", "{v}.mul_({s})", "{v}.zero_()", "{v}.fill_({s})", "{v}.clamp_(min={s})",
           "{v}.sub_({s})", "{v}.copy_({s})", "{v}.neg_()", "{v}.abs_()"]


def _write(ctx: Context) -> Made | None:
    """An in-place write into an intermediate, an input or a buffer, through a view of it."""
    a = ctx.pick(lambda v: v.rank > 0 and v.tensor.numel() > 0)
    if a is None:
        return None
    n = a.name
    views = ["", "[0]", "[1:]", "[..., :1]", f".select({ctx.dim(a)}, 0)", f".narrow({ctx.dim(a)}, 0, 1)",
             f"[{[ctx.d.integer(0, a.shape[0] - 1)]}]", ".view(-1)" if a.tensor.is_contiguous() else ""]
    if a.rank >= 2:
        views += [".t()[0]" if a.rank == 2 else ".transpose(0, 1)[0]", "[:, 1]", ".diagonal()", "[1:, :1]"]
    view = ctx.d.choice(views)
    # eager rejects a source that does not broadcast to the view; an inexact float written into an
    # integer or bool tensor is truncated or tested for zero there, which jumps
    source = ctx.pick(lambda v: v.exact or not _float(v) or _float(a))
    if source is not None and ctx.d.chance(50):
        value, exact = source.name, source.exact
    else:
        value, exact = ctx.scalar(a.dtype), True
    if ctx.d.chance(25):
        return Made(f"{n}{view}[...] = {value}", n, exact)
    return Made(ctx.d.choice(INPLACE).format(v=f"{n}{view}", s=value), n, exact)


MAKERS: list[tuple[Maker, int]] = [(_unary, 4), (_binary, 5), (_scalar, 3), (_where, 1), (_reduction, 3),
                                   (_shape, 4), (_index, 2), (_linear, 2), (_write, 3), (_norm, 2),
                                   (_embedding, 1), (_cast, 1), (_sizes, 3), (_scatter, 1),
                                   (_data_dependent, 1)]
_WEIGHTED = [maker for maker, weight in MAKERS for _ in range(weight)]


def generate(d: Draw, *, max_steps: int = 8, seed: int | None = None) -> Program:
    """A program drawn from d (see the module docstring); every statement runs in eager PyTorch."""
    seed = d.integer(0, 2**16) if seed is None else seed
    batch = d.integer(2, 4)
    dynamic = d.chance(40)
    inputs = []
    for i in range(d.integer(1, 3)):
        rank = d.integer(0, 4)
        shape = tuple([batch] + [d.integer(1, 4) for _ in range(rank - 1)]) if rank else ()
        inputs.append(Tensor(f"x{i}", shape, d.choice(DTYPES)))
    buffers = []
    if d.chance(30):
        like = d.choice(inputs)
        shape = like.shape[1:] if like.shape else ()
        buffers.append(Tensor("b0", shape, d.choice([torch.float32, torch.int64, like.dtype])))
    program = Program(tuple(inputs), tuple(buffers), (), (), (), dynamic, batch, seed)
    module = program.build()
    values = [Val(spec.name, t, True) for spec, t in zip(inputs, program.tensors())]
    values += [Val(f"self.{b.name}", getattr(module, b.name), True) for b in buffers]
    env: dict[str, Any] = {"torch": torch, "F": F, "self": module, **{v.name: v.tensor for v in values[:len(inputs)]}}
    steps: list[Step] = []
    weights: list[Tensor] = []
    for _ in range(d.integer(1, max_steps)):
        for _attempt in range(6):
            ctx = Context(d, values, module, len(weights))
            made = d.choice(_WEIGHTED)(ctx)
            if made is None:
                continue
            target = None if made.writes else f"v{len(steps)}"
            snapshot = [(t, t.clone()) for t in _tensors(env, module)]
            try:
                with torch.no_grad(), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    result = _execute(made.code, target, env)
                accepted = target is None or _acceptable(result)
            except Exception:  # eager rejects the statement (a dtype, shape or value it does not take)
                accepted = False
            if not accepted:
                for tensor, saved in snapshot:
                    tensor.copy_(saved)
                env.pop(target, None)
                for w in ctx.weights:
                    delattr(module, w.name)
                continue
            weights.extend(ctx.weights)
            steps.append(Step(target, made.code))
            if target is not None:
                values.append(Val(target, result, made.exact))
            elif not made.exact:  # the written value, and every view of it, is no longer exact
                written = next(v for v in values if v.name == made.writes)
                for v in values:
                    if v.tensor.untyped_storage().data_ptr() == written.tensor.untyped_storage().data_ptr():
                        v.exact = False
            break
    results = [v for v in values if v.name.startswith("v")]
    if not results:
        steps.append(Step("v_out", f"{inputs[0].name} * 1" if inputs[0].dtype != torch.bool else f"{inputs[0].name} & True"))
        outputs = ("v_out",)
    else:
        outputs = tuple(dict.fromkeys([results[-1].name] + [d.choice(results).name for _ in range(d.integer(0, 2))]))
    return Program(tuple(inputs), tuple(buffers), tuple(weights), tuple(steps), outputs, dynamic, batch, seed)


def _execute(code: str, target: str | None, env: dict[str, Any]) -> Any:
    if target is None:
        exec(code, env)  # noqa: S102 (a statement of our own program)
        return None
    env[target] = eval(code, env)  # noqa: S307
    return env[target]


def _tensors(env: dict[str, Any], module: torch.nn.Module) -> list[torch.Tensor]:
    """The tensors that own the memory a statement could write: values, inputs, buffers (a view is
    restored through its base)."""
    tensors = [v for v in env.values() if isinstance(v, torch.Tensor)] + list(module.buffers())
    roots = {}
    for t in tensors:
        root = t._base if t._base is not None else t
        roots[root.untyped_storage().data_ptr()] = root
    return list(roots.values())


def _acceptable(result: Any) -> bool:
    return (isinstance(result, torch.Tensor) and not result.dtype.is_complex and result.layout == torch.strided
            and result.numel() <= MAX_ELEMENTS and result.dim() <= 6)


def programs(*, max_steps: int = 8) -> st.SearchStrategy[Program]:
    """A hypothesis strategy of programs; it shrinks toward fewer, simpler statements on float32."""

    @st.composite
    def draw_program(draw: st.DrawFn) -> Program:
        return generate(HypothesisDraw(draw), max_steps=max_steps)

    return draw_program()


# -- checking -------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What one export of a program did. status: "match"; "refused" (our error, allowed; also a run that fails on inputs outside what the export
    warned torch.export assumed, NarrowedExportWarning); "deviation" (an
    onnxruntime disagreement known to be onnxruntime's on NaN or inf, allowed); "mismatch"
    (a runtime disagrees with eager), "invalid" (onnx.checker or onnxruntime rejects the model),
    "escape" (an exception that is not ours, or our InternalError), "changed" (the export changed the
    model), "crash" (a built-in symbolic failed and its node fell back): bugs."""

    opset: int
    status: str
    detail: str = ""

    @property
    def bug(self) -> bool:
        return self.status in ("mismatch", "invalid", "escape", "changed", "crash")


class ProgramMismatch(AssertionError):
    """A program's export disagreed with eager PyTorch (or crashed, or wrote an invalid model)."""

    def __init__(self, program: Program, outcome: Outcome) -> None:
        super().__init__(f"opset {outcome.opset}: {outcome.status}: {outcome.detail}\n{program.describe()}")
        self.program = program
        self.outcome = outcome


def check_program(program: Program, *, opsets: Sequence[int] | None = None, runs: int = 3,
                  runtimes: Sequence[str] = ("onnxruntime", "aten2onnx"), exact: bool = False,
                  optimize: bool | str = True) -> list[Outcome]:
    """Export the program at each opset (default: 18 and one the program's seed picks) and compare;
    raises ProgramMismatch for the first bug, else returns the outcomes. exact: export with exact=True
    and hold aten2onnx.runtime to bitwise equality with eager. optimize: as for aten2onnx.export (the
    graph optimizer's rewrites, onnxruntime's contrib ops included, are held to eager like the
    translation)."""
    outcomes = examine(program, opsets=opsets, runs=runs, runtimes=runtimes, exact=exact, optimize=optimize)
    for outcome in outcomes:
        if outcome.bug:
            raise ProgramMismatch(program, outcome)
    return outcomes


def examine(program: Program, *, opsets: Sequence[int] | None = None, runs: int = 3,
            runtimes: Sequence[str] = ("onnxruntime", "aten2onnx"), exact: bool = False,
            optimize: bool | str = True) -> list[Outcome]:
    """The outcome of exporting the program at each opset, without raising."""
    if opsets is None:
        opsets = sorted({18, OPSETS[program.seed % len(OPSETS)]})
    return [_examine_at(program, opset, runs, runtimes, exact, optimize) for opset in opsets]


def _examine_at(program: Program, opset: int, runs: int, runtimes: Sequence[str], exact: bool = False,
                optimize: bool | str = True) -> Outcome:
    module = program.build()
    before = {k: v.clone() for k, v in module.state_dict().items()}
    example = program.tensors()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            exported = aten2onnx.export(module, tuple(t.clone() for t in example), opset=opset,
                                        dynamic_shapes=program.dynamic_shapes(), exact=exact, optimize=optimize)
    except aten2onnx.InternalError as e:
        return Outcome(opset, "escape", f"{str(e).splitlines()[0]}")
    except aten2onnx.Aten2OnnxError as e:
        return Outcome(opset, "refused", f"{type(e).__name__}: {' '.join(str(e).splitlines()[:2])}")
    except Exception as e:  # anything else is a bug: export raises only our errors
        return Outcome(opset, "escape", f"export raised {type(e).__name__}: {e}")
    crashed = [str(w.message) for w in caught if "Please report this" in str(w.message)]
    if crashed:  # a built-in symbolic failed; its node fell back (right, but a bug to fix)
        return Outcome(opset, "crash", crashed[0])
    changed = [k for k, v in module.state_dict().items() if not torch.equal(v, before[k])]
    if changed:
        return Outcome(opset, "changed", f"export changed the model's {changed}")
    try:
        onnx.checker.check_model(exported.model_proto, full_check=True)
    except Exception as e:
        return Outcome(opset, "invalid", f"onnx.checker: {e}")
    # torch.export assumed something of the inputs (NarrowedExportWarning): a run on inputs outside the
    # assumption may fail (an error, as torch's own program raises), never give other values
    narrowed = next((str(w.message) for w in caught if issubclass(w.category, aten2onnx.NarrowedExportWarning)), None)
    try:
        return _compare_runs(program, module, exported, opset, runs, runtimes, exact, narrowed)
    except _Bug as bug:
        return Outcome(opset, bug.status, str(bug))


class _Bug(Exception):
    def __init__(self, status: str, detail: str, *, discrete: bool = False) -> None:
        super().__init__(detail)
        self.status = status
        self.discrete = discrete  # an integer, bool or shape disagreement (no tolerance applies)


def _compare_runs(program: Program, module: torch.nn.Module, exported: aten2onnx.ExportedModel, opset: int,
                  runs: int, runtimes: Sequence[str], exact: bool = False, narrowed: str | None = None) -> Outcome:
    from aten2onnx.runtime import InferenceSession

    eager = copy.deepcopy(module)
    proto = exported.model_proto
    namespaces = tuple(sorted({"aten"} | {op.split("::", 1)[0] for op in exported.fallback_ops}))
    ours = InferenceSession(proto, allowed_aten_namespaces=namespaces) if "aten2onnx" in runtimes else None
    ort = _ort_session(proto) if "onnxruntime" in runtimes and ort_can_run(exported) else None
    updates = json.loads({p.key: p.value for p in proto.metadata_props}.get("aten2onnx.state_updates", "[]"))
    # inputs whose dim 0 stayed dynamic (torch.export may have fixed some); each run gives them a new size
    resized = [name for name, info in zip([i.name for i in program.inputs], proto.graph.input)
               if info.type.tensor_type.shape.dim and info.type.tensor_type.shape.dim[0].dim_param == "batch"]
    ort_state: dict[str, np.ndarray] = {}
    precision = _Precisions()
    for run in range(runs):
        inputs = program.tensors(run, program.batch + run if run else None, resized)
        with torch.no_grad(), precision:
            try:
                eager_inputs = [t.clone() for t in inputs]
                expected = list(eager(*eager_inputs))
            except Exception:
                break  # eager rejects these inputs (an integer division by zero): nothing to compare
        tolerance = precision.loosest()
        feeds = dict(zip(exported.input_names, inputs))
        state = {b.name: getattr(eager, b.name) for b in program.buffers}
        written = {name: t for name, t in zip([i.name for i in program.inputs], eager_inputs)}
        if ours is not None:
            ours_feeds = {k: v.clone() for k, v in feeds.items()}
            try:
                with torch.no_grad():  # as eager ran: exact mode follows the caller's grad mode
                    results = ours.run_torch(ours_feeds)
            except Exception as e:
                if narrowed is not None:
                    return Outcome(opset, "refused", f"run {run}: aten2onnx.runtime raised {type(e).__name__} on inputs "
                                                     f"outside what the export warned of: {narrowed[:200]}")
                raise _Bug("mismatch", f"run {run}: aten2onnx.runtime raised {type(e).__name__}: {e}") from e
            try:
                _match(f"run {run}: aten2onnx.runtime", exported, results, expected, updates, ours_feeds, state, written,
                       tolerance, bitwise=exact)
            except _Bug as bug:
                return _deviation(bug, opset, program, precision, _EAGER_NONFINITE,
                                  "eager's kernel departs from its math on NaN or inf")
        if ort is not None:
            ort_feeds = {k: v.numpy() for k, v in feeds.items()}
            try:
                names = [o.name for o in ort.get_outputs()]
                results = dict(zip(names, ort.run(None, {**ort_feeds, **ort_state})))
            except Exception as e:
                if narrowed is not None:
                    return Outcome(opset, "refused", f"run {run}: onnxruntime raised on inputs outside what the "
                                                     f"export warned of: {narrowed[:200]}")
                raise _Bug("mismatch", f"run {run}: onnxruntime raised {e}") from e
            for u in updates:
                if u["kind"] == "buffer":
                    ort_state[u["input"]] = results[u["output"]]
                else:
                    ort_feeds[u["input"]] = results[u["output"]]
            tensors = {k: torch.from_numpy(np.asarray(v)) for k, v in results.items()}
            fed = {k: torch.from_numpy(np.asarray(v)) for k, v in ort_feeds.items()}
            try:
                _match(f"run {run}: onnxruntime", exported, tensors, expected, updates, fed, state, written, tolerance)
            except _Bug as bug:
                positional = sorted(_ORT_POSITIONAL & {n.op_type for graph in graphs(proto.graph) for n in graph.node})
                carried = precision.carried()
                if not bug.discrete and ours is not None and carried > 0 and _close_within(
                        exported, tensors, expected, carried):
                    return Outcome(opset, "deviation", f"{bug} (within {carried:.3g}, what onnxruntime's kernels' "
                                                       "last-ulp differences on intermediates as large as "
                                                       f"{precision.magnitude:.3g} carry; our runtime agrees)")
                if bug.discrete and ours is not None and _saturated_product(exported, tensors, expected):
                    return Outcome(opset, "deviation", f"{bug} (onnxruntime's integer ReduceProd saturates on "
                                                       "overflow, where eager's product wraps; our runtime agrees)")
                if bug.discrete and positional:
                    return Outcome(opset, "deviation", f"{bug} (onnxruntime's {', '.join(positional)} kernels give "
                                                       "equal inputs results an ulp apart at different positions, which "
                                                       "a discrete op after them (unique, a comparison) can tell apart)")
                return _deviation(bug, opset, program, precision, _ORT_NONFINITE + _EAGER_NONFINITE,
                                  "a known onnxruntime or eager deviation on NaN or inf",
                                  nodes={n.op_type for graph in graphs(proto.graph) for n in graph.node})
    return Outcome(opset, "match")


def _saturated_product(exported: aten2onnx.ExportedModel, results: dict[str, Any], expected: list[Any]) -> bool:
    """Whether the graph has an integer ReduceProd and onnxruntime's disagreeing integer outputs hold its
    type's bound where eager's do not: onnxruntime clamps an overflowing product, eager wraps it."""
    if not any(n.op_type == "ReduceProd" for graph in graphs(exported.model_proto.graph) for n in graph.node):
        return False
    for got, want in zip(pytree.tree_leaves(exported.structure_outputs(results)), expected):
        if not isinstance(want, torch.Tensor) or want.dtype.is_floating_point or want.dtype == torch.bool:
            continue
        got = torch.as_tensor(got).to(want.dtype)
        if got.shape == want.shape and not torch.equal(got, want):
            info = torch.iinfo(want.dtype)
            differ = got != want
            if not bool(((got[differ] == info.max) | (got[differ] == info.min)).all()):
                return False
    return True


def _close_within(exported: aten2onnx.ExportedModel, results: dict[str, Any], expected: list[torch.Tensor],
                  atol: float) -> bool:
    """Whether every float output is within atol of eager's (others equal)."""
    got = pytree.tree_leaves(exported.structure_outputs(results))
    for g, e in zip(got, expected):
        g = torch.as_tensor(g)
        if not isinstance(e, torch.Tensor) or g.shape != e.shape:
            return False
        if e.dtype.is_floating_point:
            if not torch.allclose(g.to(e.dtype), e, rtol=1e-3, atol=atol, equal_nan=True):
                return False
        elif not torch.equal(g.to(e.dtype), e):
            return False
    return True


def _deviation(bug: _Bug, opset: int, program: Program, precision: _Precisions, ops: tuple[str, ...],
               why: str, nodes: set[str] = frozenset()) -> Outcome:
    """A runtime's disagreement as a known deviation, when eager met NaN or inf on the run and the program
    uses one of `ops`, or its graph (`nodes`, its op types) one of _ORT_NONFINITE_NODES; otherwise the bug,
    raised."""
    if precision.nonfinite and (any(op in program.source() for op in ops) or nodes & _ORT_NONFINITE_NODES):
        return Outcome(opset, "deviation", f"{bug} ({why})")
    raise bug


# Ops whose onnxruntime kernels depart from eager on NaN and infinities (MaxPool and ArgMax skip NaN,
# ReduceMax/ReduceMin keep a NaN only where it comes first along the axis, Unique drops it, Where turns
# a -0 into +0, attention and linear Resize weigh an infinity by 0): an onnxruntime disagreement on a
# run where eager met NaN or inf is a known deviation, when these ops are in the program;
# aten2onnx.runtime must still agree.
_ORT_NONFINITE = ("max_pool", "argmax", "argmin", ".indices", "amax", "amin", ".max(", ".min(", "unique",
                  "scaled_dot_product_attention", "interpolate", "atan2", "where", "masked_fill", "clamp")
# The same for onnxruntime's Where in the graph, whatever op the export spelled with it (xlogy's x == 0 case):
# Where turns a -0 it picks into +0, which a later reciprocal or division makes an infinity of the other sign.
_ORT_NONFINITE_NODES = frozenset({"Where"})


# onnxruntime's float32 kernels that give equal inputs results an ulp apart at different positions of one
# tensor (a vectorized body and a scalar tail): a discrete op after them (unique, a comparison, a sort's ties)
# can turn that into a different shape or value where eager's, and our runtime's, agree. An onnxruntime
# disagreement in an integer, bool or shape result of a graph holding one of them is a known deviation
# (aten2onnx.runtime must still agree). tests/test_fuzz_models.py checks each is still so.
_ORT_POSITIONAL = frozenset({"Atan", "Sin", "Cos", "Asin", "Acos", "Softplus", "Log"})


# Ops whose eager CPU kernel departs from torch's own math reference on NaN and infinities: the fused
# attention kernel takes a NaN score as masked out (a weight of 0) where the reference, and the export,
# give NaN (torch.ops.aten._scaled_dot_product_attention_math agrees with the export); sinh and cosh's
# vectorized float32 kernel overflows to inf for |x| in (88.7, 89.4], where the value is finite (2.2e38)
# and eager's own scalar kernel, on a tensor too short to vectorize, gives it (eager disagrees with itself
# by tensor length). A disagreement of either runtime on a run where eager met NaN or inf is a known
# deviation when these are in the program.
_EAGER_NONFINITE = ("scaled_dot_product_attention", "sinh", "cosh")


def _ort_session(proto: onnx.ModelProto) -> Any:
    try:
        return ort_session(proto, log_severity=4)
    except Exception as e:
        if "NOT_IMPLEMENTED" in str(e) or "Could not find an implementation" in str(e):
            return None  # onnxruntime has no kernel for a type: a coverage gap, not a wrong answer
        raise _Bug("invalid", f"onnxruntime cannot load the model: {e}") from e


class _Precisions(TorchFunctionMode):
    """What eager computed on the way: the float dtypes (a float32 result of a float16 computation is
    only as close as float16 allows), and whether some value was NaN or infinite (see _ORT_NONFINITE)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[torch.dtype] = set()
        self.nonfinite = False
        self.magnitude = 0.0  # the largest finite float value eager computed on the way

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001 (torch's protocol)
        result = func(*args, **(kwargs or {}))
        for t in pytree.tree_leaves(result):
            if isinstance(t, torch.Tensor):
                self.seen.add(t.dtype)
                if t.dtype.is_floating_point and t.numel() and not t.is_complex():
                    finite = torch.isfinite(t)
                    if not bool(finite.all()):
                        self.nonfinite = True
                    if bool(finite.any()):
                        self.magnitude = max(self.magnitude, float(t[finite].abs().max()))
        return result

    def carried(self) -> float:
        """An absolute error an output may carry from the last-ulp differences of another runtime's kernels
        on intermediates as large as the largest eager met (a difference of two such values keeps theirs)."""
        eps = max((torch.finfo(d).eps for d in self.seen if d.is_floating_point and not d.is_complex), default=0.0)
        return 16 * eps * self.magnitude

    def loosest(self) -> tuple[float, float] | None:
        tolerances = [TOLERANCES[d] for d in self.seen if d in TOLERANCES]
        return max(tolerances) if tolerances else None


def _match(where: str, exported: aten2onnx.ExportedModel, results: dict[str, Any], expected: list[torch.Tensor],
           updates: list[dict], feeds: dict[str, torch.Tensor], state: dict[str, torch.Tensor],
           written: dict[str, torch.Tensor], tolerance: tuple[float, float] | None, bitwise: bool = False) -> None:
    got = pytree.tree_leaves(exported.structure_outputs(results))
    if len(got) != len(expected):
        raise _Bug("mismatch", f"{where} returned {len(got)} outputs, eager {len(expected)}")
    pairs = [(f"output {i}", g, e) for i, (g, e) in enumerate(zip(got, expected))]
    for update in updates:
        if update["kind"] == "buffer":
            pairs.append((f"buffer {update['input']}", results[update["output"]], state[update["input"]]))
    for name, tensor in written.items():
        if name in feeds:
            pairs.append((f"input {name} after the run", feeds[name], tensor))
    for what, g, e in pairs:
        rtol, atol = (None, None)
        if isinstance(e, torch.Tensor) and e.dtype.is_floating_point:
            rtol, atol = (0.0, 0.0) if bitwise else max(TOLERANCES.get(e.dtype, (0, 0)), tolerance or (0, 0))
        problem = difference(torch.as_tensor(g) if not isinstance(g, torch.Tensor) and isinstance(e, torch.Tensor)
                             else g, e, rtol, atol)
        if problem is not None:
            floats = isinstance(e, torch.Tensor) and e.dtype.is_floating_point
            same_shape = isinstance(g, (torch.Tensor, np.ndarray)) and isinstance(e, torch.Tensor) \
                and tuple(g.shape) == tuple(e.shape)
            raise _Bug("mismatch", f"{where}: {what}: {problem}", discrete=not (floats and same_shape))


# -- shrinking ------------------------------------------------------------------------------------------


def shrink(program: Program, still_fails: Callable[[Program], bool], *, budget: int = 200) -> Program:
    """A smaller program that still fails: statements and outputs removed one at a time, the
    dynamic dim dropped, while `still_fails` holds (for runs outside hypothesis, which shrinks itself)."""
    best = program
    changed = True
    while changed and budget > 0:
        changed = False
        for candidate in _simpler(best):
            budget -= 1
            if _runs_in_eager(candidate) and still_fails(candidate):
                best, changed = candidate, True
                break
            if budget <= 0:
                break
    return best


def _simpler(p: Program) -> list[Program]:
    code = "\n".join(step.code for step in p.steps)
    out = []
    unused = tuple(w for w in p.weights if f"self.{w.name}" not in code)
    if unused:
        out.append(dataclasses.replace(p, weights=tuple(w for w in p.weights if w not in unused)))
    if p.dynamic:
        out.append(dataclasses.replace(p, dynamic=False))
    if len(p.outputs) > 1:
        out += [dataclasses.replace(p, outputs=(o,)) for o in p.outputs]
    for i, step in enumerate(p.steps):
        rest = p.steps[:i] + p.steps[i + 1:]
        if step.target in p.outputs:
            earlier = [s.target for s in p.steps[:i] if s.target]
            if not earlier:
                continue
            outputs = tuple(dict.fromkeys(earlier[-1] if o == step.target else o for o in p.outputs))
            out.append(dataclasses.replace(p, steps=rest, outputs=outputs))
        else:
            out.append(dataclasses.replace(p, steps=rest))
    return out


def _runs_in_eager(p: Program) -> bool:
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            p.build()(*p.tensors())
        return True
    except Exception:
        return False
