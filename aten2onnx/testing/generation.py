"""Drawing random `Program`s for the differential model fuzzer (testing/models.py): statements drawn from
an op table (elementwise math, Python scalars, reductions, shapes and views, indexing, matmul/conv/norms,
casts, in-place writes through views into intermediates, inputs and buffers), each run in eager as it is
drawn, so that every program runs in eager.

Values are chosen so that eager and an exported model can agree to the last bit where it matters:
floats start on a grid of quarters, and ops that jump at a threshold (floor, comparisons, argmax,
casts to integers) only take values every op before them computed exactly. A drawn statement that
eager PyTorch rejects is drawn again.
"""

from __future__ import annotations

import dataclasses
import random
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol

import torch
import torch.nn.functional as F  # noqa: N812  (the programs' own spelling)

from aten2onnx.testing.program import Program, Step, Tensor, tensor_values

try:
    from hypothesis import strategies as st
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("aten2onnx.testing needs hypothesis: pip install hypothesis") from e

__all__ = ["Draw", "HypothesisDraw", "RandomDraw", "generate", "programs"]

FLOATS = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
INTS = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)
# Drawn input dtypes, float32 first (where hypothesis shrinks to) and most often.
DTYPES = (torch.float32, torch.float32, torch.float32, torch.int64, torch.float64, torch.float16, torch.bool,
          torch.int32, torch.int8, torch.uint8, torch.bfloat16, torch.int16)
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
        generator = torch.Generator().manual_seed(self.existing)
        setattr(self.module, spec.name, tensor_values(spec.shape, dtype, generator))
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
