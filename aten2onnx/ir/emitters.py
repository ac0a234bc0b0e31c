"""The ONNX spelling of the ops whose signature changed across opsets, decided in one place.

A handler writes `g.reduce("ReduceSum", x, axes, keepdims)`, `g.unsqueeze(x, axes)`, `g.squeeze(x, axes)`,
`g.split(x, sizes, axis)`, `g.slice(x, starts, ends, axes, steps)` or `g.softmax("Softmax", x, axis)` once, and
gets the spelling of the op version in effect at the builder's opset: whether axes, split sizes and slice bounds
are attributes (ReduceSum before 13, the other reductions before 18, Squeeze/Unsqueeze/Split before 13, Slice
before 10, which slices a static dim by positions where its attributes cannot say it) or inputs, and whether
Softmax/LogSoftmax work along one axis (from 13) or flatten to 2-D at it. `g.topk` writes k as an attribute or
an input and keeps the smallest where the version can (11; before, the largest of x with its order reversed); `g.pool` writes ceil_mode and dilations where the
version has them (10); `g.gather` wraps negative indices where Gather reads none (before 11); `g.gather_elements` is a Gather
from the flattened tensor before GatherElements (11); `g.round` is spelled with Floor before Round (11); `g.gemm`
is MatMul and Add for the integers onnxruntime has no Gemm for; `g.matmul_integer` shifts int8 operands to
uint8, the pair onnxruntime's kernels sum exactly on every x86 CPU;
`g.scatter_elements` is Scatter before 11, and it and `g.scatter_nd` take the reductions the version has (16,
18). Where an op's version takes no such element type, or does not exist yet, `g.equal`, `g.less_or_equal`,
`g.greater_or_equal`, `g.max`, `g.min` and `g.clip` write the same result with older ops (Equal on floats from
11, LessOrEqual from 12, Max/Min/Clip on integers from 12, Clip's bounds as inputs from 11). A spelling the
version cannot say is NotImplementedError (the node falls back), naming the opset that can. The version in
effect, its inputs, attributes and types are read from `onnx.defs` (and ort_gaps.py), not written here; the few
facts onnx.defs states only in prose are the constants at the end.

This module is the one place that reads the opset to spell an op. ../shared/STYLE.md's first habit
(handlers and their helpers never ask the opset) holds everywhere else: what an opset changes in how
an op is *written* is decided here, and what it changes in how an ATen op is *translated* (a new op
such as LayerNormalization at 17) is a handler registered at that opset.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Sequence

import onnx
import torch

from aten2onnx import _dtypes
from aten2onnx.ir import lazy, op_types

if TYPE_CHECKING:
    from aten2onnx.ir.builder import Value


@functools.cache
def takes_input(op_type: str, name: str, opset: int) -> bool:
    """Whether the version of op_type in effect at opset (the default domain) has an input called name."""
    return any(i.name == name for i in onnx.defs.get_schema(op_type, opset).inputs)


@functools.cache
def has_attribute(op_type: str, name: str, opset: int) -> bool:
    """Whether the version of op_type in effect at opset (the default domain) has an attribute called name."""
    return name in onnx.defs.get_schema(op_type, opset).attributes


@functools.cache
def since_version(op_type: str, opset: int) -> int:
    """The version of op_type in effect at opset: the newest at or below it."""
    return onnx.defs.get_schema(op_type, opset).since_version


class Emitters:
    """GraphBuilder's versioned ops (GraphBuilder mixes this in; `self` is the builder)."""

    opset: int

    def _as_input(self, op_type: str, name: str) -> bool:
        return takes_input(op_type, name, self.opset)

    def _runs(self, op_type: str, *values: Value | None) -> bool:
        """Whether the version of op_type in effect exists and takes the values' dtypes, as they are or computed
        in a wider type the builder casts to (op_types), with a kernel in onnxruntime."""
        sig = op_types.signature(op_type, self.opset)
        if sig is None:
            return False
        for i, value in enumerate(values):
            formal = sig.input_type(i)
            if value is None or value.dtype is None or formal not in sig.allowed:
                continue
            if not (sig.takes(formal, value.dtype, "runs") or op_types.wider_type(sig, formal, value.dtype)):
                return False
        return True

    def equal(self, a: Value, b: Value) -> Value:
        """a == b (one dtype). Where Equal takes no such type (floats before 11), a value equals another
        that it is neither below nor above, NaN equal to nothing."""
        if self._runs("Equal", a, b):
            return self.op("Equal", a, b)
        differ = self.op("Or", self.op("Less", a, b), self.op("Greater", a, b))
        if a.dtype is not None and a.dtype.is_floating_point:
            differ = self.op("Or", differ, self.op("Or", self.op("IsNaN", a), self.op("IsNaN", b)))
        return self.op("Not", differ)

    def less_or_equal(self, a: Value, b: Value) -> Value:
        """a <= b (one dtype): LessOrEqual from 12, before it Less or equal (NaN compares false either way)."""
        if self._runs("LessOrEqual", a, b):
            return self.op("LessOrEqual", a, b)
        return self.op("Or", self.op("Less", a, b), self.equal(a, b))

    def greater_or_equal(self, a: Value, b: Value) -> Value:
        """a >= b (one dtype): GreaterOrEqual from 12, before it Greater or equal."""
        if self._runs("GreaterOrEqual", a, b):
            return self.op("GreaterOrEqual", a, b)
        return self.op("Or", self.op("Greater", a, b), self.equal(a, b))

    def max(self, a: Value, b: Value) -> Value:
        """The larger of a and b (one dtype): Max, or where it takes no such type (integers before 12)
        a compare and select."""
        return self._extremum("Max", "Greater", a, b)

    def min(self, a: Value, b: Value) -> Value:
        """The smaller of a and b (one dtype): Min, or a compare and select (see max)."""
        return self._extremum("Min", "Less", a, b)

    def _extremum(self, op_type: str, pick: str, a: Value, b: Value) -> Value:
        if self._runs(op_type, a, b):
            return self.op(op_type, a, b)
        return self.op("Where", self.op(pick, a, b), a, b)

    def clip(self, x: Value, lo: Value | None, hi: Value | None) -> Value:
        """x clamped to [lo, hi], bounds 0-d values of x's dtype (None: unbounded). Clip takes its bounds as
        float attributes before 11 (constants only) and as inputs from it, and integers only from 12; where
        it cannot, the bounds are Max and Min. A missing float bound is an infinity, since Clip's own default
        (the largest finite number) would clamp inf."""
        # onnxruntime fuses a Relu feeding a Clip, and its fusion fails on float64 bounds ("Unexpected data
        # type for Clip 'min'") and, before Clip takes inputs (11), on a negative upper bound (the fused lower
        # bound 0 passes it): Max and Min there, which it runs as they are
        negative_high = hi is not None and hi.const is not None and float(hi.const) < 0
        avoid = x.dtype == torch.float64 or (negative_high and not self._as_input("Clip", "min"))
        if self._runs("Clip", x) and not avoid:
            low, high = lo, hi
            if x.dtype is not None and x.dtype.is_floating_point:
                low = self.const(-math.inf, like=x) if lo is None else lo
                high = self.const(math.inf, like=x) if hi is None else hi
            if self._as_input("Clip", "min"):
                return self.op("Clip", x, low, high)
            if low is not None and high is not None and low.const is not None and high.const is not None:
                return self.op("Clip", x, min=float(low.const), max=float(high.const))
        if lo is not None:
            x = self.max(x, lo)
        if hi is not None:
            x = self.min(x, hi)
        return x

    def quantize_linear(self, x: Value, scale: Value, zero_point: Value, *, axis: int | None = None,
                        block_size: int | None = None) -> Value | None:
        """QuantizeLinear: saturate(round(x / scale) + zero_point) in zero_point's dtype, one scale for the
        tensor (0-d scale), one per index along axis (1-D scale, from 13) or one per block of block_size
        along axis (scale of x's rank, from 21); None where the version in effect has no such form or does
        not take the types as they are, or onnxruntime has no kernel for them (the caller writes the
        arithmetic). No type is widened: the result's type is the quantization's."""
        return self._linear_quantization("QuantizeLinear", x, scale, zero_point, axis, block_size)

    def dequantize_linear(self, q: Value, scale: Value, zero_point: Value | None, *, axis: int | None = None,
                          block_size: int | None = None) -> Value | None:
        """DequantizeLinear: (q - zero_point) * scale in scale's dtype, the forms of quantize_linear; None
        where the version in effect cannot say it (see quantize_linear)."""
        return self._linear_quantization("DequantizeLinear", q, scale, zero_point, axis, block_size)

    def matmul_integer(self, a: Value, b: Value, a_zero_point: Value | None = None,
                       b_zero_point: Value | None = None) -> Value:
        """(a - a_zero_point) @ (b - b_zero_point) summed in int32, for int8/uint8 a and b: MatMulInteger of
        uint8 operands (an int8 one shifted by 128, its zero point too: the same differences, exactly);
        where MatMulInteger does not run (before 10), a MatMul of int32s.

        Why uint8 x uint8 (measured with onnxruntime 1.32, MatMulInteger [32, K] x [K, 512], K 256 to 4096,
        operands over their whole range): its x86 uint8 x int8 kernel sums pairs of products in saturating
        16-bit arithmetic (PMADDUBSW) on every CPU without VNNI (most deployed x86 CPUs: AVX2, and AVX-512
        without VNNI), where 98% to 100% of the sums came out wrong, by up to 260,000; int8 x int8 is exact
        but a generic kernel, 12x to 17x slower; uint8 x uint8 widens to 16 bits before multiplying
        (PMADDWD), exact on every CPU, at 2.2x to 2.5x the time of uint8 x int8 where VNNI makes that one
        exact too. A file runs on CPUs its exporter never saw, so it gets the spelling right on all."""
        if not self._runs("MatMulInteger", a, b):
            int32 = _dtypes.to_onnx(torch.int32)
            a, b = (v if zero is None else self.op("Sub", self.op("Cast", v, to=int32), self.op("Cast", zero, to=int32))
                    for v, zero in ((a, a_zero_point), (b, b_zero_point)))
            return self.op("MatMul", self.op("Cast", a, to=int32), self.op("Cast", b, to=int32))
        a, a_zero_point = self.as_uint8(a, a_zero_point)
        b, b_zero_point = self.as_uint8(b, b_zero_point)
        return self.op("MatMulInteger", a, b, a_zero_point, b_zero_point)

    def as_uint8(self, q: Value, zero_point: Value | None) -> tuple[Value, Value]:
        """An int8 quantized value and its zero point (None: 0) as uint8, both shifted by 128 (q - zero_point
        unchanged); uint8 ones as they are, with a zero point of 0 where there is none. A constant is
        shifted once, here (a weight stays one initializer of the same bytes)."""
        if zero_point is None:
            zero_point = self.const(0, dtype=q.dtype)
        if q.dtype != torch.int8:
            return q, zero_point
        return self._shifted(q), self._shifted(zero_point)

    def _shifted(self, v: Value) -> Value:
        if v.const is not None and v.kind in ("initializer", "const"):
            shifted = lazy.apply(_plus_128, v.const)
            return self.initializer(f"{v.name}.uint8", shifted) if v.kind == "initializer" else self.const(shifted)
        wide = self.op("Add", self.op("Cast", v, to=_dtypes.to_onnx(torch.int16)), self.const(128, dtype=torch.int16))
        return self.op("Cast", wide, to=_dtypes.to_onnx(torch.uint8))

    def _linear_quantization(self, op_type: str, x: Value, scale: Value, zero_point: Value | None, axis: int | None,
                             block_size: int | None) -> Value | None:
        sig = op_types.signature(op_type, self.opset)
        if sig is None:
            return None
        for i, value in enumerate((x, scale, zero_point)):
            formal = sig.input_type(i)
            if value is not None and formal in sig.allowed and not sig.takes(formal, value.dtype, "runs"):
                return None
        attrs: dict[str, int] = {}
        if axis is not None:
            if not has_attribute(op_type, "axis", self.opset) or (scale.rank or 0) > 1 and block_size is None:
                return None
            attrs["axis"] = axis
        if block_size is not None:
            if not has_attribute(op_type, "block_size", self.opset):
                return None
            attrs["block_size"] = block_size
        inputs = [x, scale] if zero_point is None else [x, scale, zero_point]
        return self.op(op_type, *inputs, **attrs)

    def gemm(self, a: Value, b: Value, c: Value | None = None, *, alpha: float = 1.0, beta: float = 1.0,
             trans_b: bool = False) -> Value:
        """alpha * (a @ b, b transposed if trans_b) + beta * c, for 2-D a and b. Gemm; integers, which
        onnxruntime has no Gemm kernel for (ONNX takes them from 9), are MatMul, the scalings and Add,
        exact as Gemm's. Floats keep Gemm wherever it runs or not: its one rounding is eager's."""
        if self._runs("Gemm", a, b, c) or (a.dtype is not None and a.dtype.is_floating_point):
            return self.op("Gemm", a, b, c, alpha=float(alpha), beta=float(beta), transB=int(trans_b))
        if trans_b:
            b = self.op("Transpose", b, perm=[1, 0])
        y = self.op("MatMul", a, b)
        if alpha != 1:
            y = self.op("Mul", y, self.const(alpha, like=y))
        if c is None:
            return y
        return self.op("Add", y, c if beta == 1 else self.op("Mul", c, self.const(beta, like=c)))

    def reduce(self, op_type: str, x: Value, axes: Sequence[int] | None, keepdims: bool) -> Value:
        """A Reduce* over axes; all axes when axes is None or empty (as ATen reads an empty dim list). A 0-d
        x is its own reduction (the reductions ATen lowers here are the identity on one element)."""
        if x.rank == 0:
            return x
        if not axes:
            return self.op(op_type, x, keepdims=int(keepdims))
        if self._as_input(op_type, "axes"):
            return self.op(op_type, x, self.const(list(axes), dtype=torch.int64), keepdims=int(keepdims))
        return self.op(op_type, x, axes=list(axes), keepdims=int(keepdims))

    def reshape_to_sizes(self, x: Value, shape: Value) -> Value:
        """x reshaped to a shape of sizes read from the graph (no -1): a 0 there is a size of 0, not
        Reshape's "copy the input's dim", which allowzero says from opset 14. Before (from Slice taking its
        bounds as inputs, 10), x's elements and as many zeros as make up the shape with each 0 read as 1
        (none where no size is 0) are reshaped to that shape, then sliced to the sizes asked: a copy of x,
        the price of a size that may be 0. At opset 9 a 0 still reads as the input's dim."""
        if has_attribute("Reshape", "allowzero", self.opset):
            return self.op("Reshape", x, shape, allowzero=1)
        if not self._as_input("Slice", "starts") or x.dtype is None:
            return self.op("Reshape", x, shape)
        zero, one = self.const([0], dtype=torch.int64), self.const([1], dtype=torch.int64)
        at_least_one = self.op("Where", self.op("Equal", shape, zero), one, shape)
        extra = self.op("Sub", self.op("ReduceProd", at_least_one, keepdims=1), self.op("Size", x))
        flat = self.op("Reshape", x, self.const([-1], dtype=torch.int64))
        zeros = self.op("ConstantOfShape", extra, value=torch.zeros(1, dtype=x.dtype))
        whole = self.op("Reshape", self.op("Concat", flat, zeros, axis=0), at_least_one)
        return self.op("Slice", whole, self.op("Mul", shape, zero), shape)

    def unsqueeze(self, x: Value, axes: Sequence[int]) -> Value:
        if self._as_input("Unsqueeze", "axes"):
            return self.op("Unsqueeze", x, self.const(list(axes), dtype=torch.int64))
        return self.op("Unsqueeze", x, axes=list(axes))

    def squeeze(self, x: Value, axes: Sequence[int] | None = None) -> Value:
        """Squeeze the axes (every dim of size 1 when None)."""
        if axes is None:
            return self.op("Squeeze", x)
        if self._as_input("Squeeze", "axes"):
            return self.op("Squeeze", x, self.const(list(axes), dtype=torch.int64))
        return self.op("Squeeze", x, axes=list(axes))

    def split(self, x: Value, sizes: Sequence[int | Value], axis: int) -> list[Value]:
        """x cut along axis into pieces of the given sizes (one piece: x itself). Sizes may be graph values
        (SymInts); where Split takes its sizes as an attribute, such pieces are Slices between running sums."""
        if len(sizes) == 1:
            return [x]
        if self._as_input("Split", "split"):
            return list(self.op("Split", x, self.int_list(sizes), outputs=len(sizes), axis=axis))
        if all(isinstance(s, int) for s in sizes):
            return list(self.op("Split", x, outputs=len(sizes), axis=axis, split=list(sizes)))
        pieces: list[Value] = []
        start: int | Value = 0
        for size in sizes:
            if isinstance(start, int) and isinstance(size, int):
                end: int | Value = start + size
            else:
                end = self.op("Add", *(self.int_list([v]) for v in (start, size)))
            pieces.append(self.slice(x, [start], [end], [axis]))
            start = end
        return pieces

    def pad(self, x: Value, pads: Sequence[int | Value], mode: str = "constant",
            value: float | int | None = None) -> Value:
        """x padded by pads (ONNX's order: every axis' begin, then every axis' end; ints, or 0-d int graph values
        for widths computed in the graph) in mode (constant, reflect, edge), with value in constant mode. Pad
        takes pads as an attribute, and its value as a float, before 11, and no integers there (int64 and bool,
        which no wider type Pad takes holds, are padded by Concat with filled blocks instead, by static widths).
        Widths in the graph where Pad takes an attribute, or for a dtype it does not run, are
        NotImplementedError."""
        static = all(isinstance(p, int) for p in pads)
        if mode == "constant" and not self._runs("Pad", x) and x.shape is not None and static and min(pads, default=0) >= 0:
            return self._pad_by_concat(x, pads, 0 if value is None else value)
        if not static and not (self._as_input("Pad", "pads") and self._runs("Pad", x)):
            raise NotImplementedError(f"opset {self.opset} Pad takes no widths computed in the graph for {x.dtype}; "
                                      f"export at opset {_first_with_input('Pad', 'pads')} or later")
        if self._as_input("Pad", "pads"):
            inputs = [self.int_list(list(pads))]
            if mode == "constant" and value is not None:
                inputs.append(self.const(value, like=x))
            return self.op("Pad", x, *inputs, mode=mode)
        return self.op("Pad", x, pads=list(pads), mode=mode, value=float(value or 0))

    def _pad_by_concat(self, x: Value, pads: Sequence[int], value: float | int | bool) -> Value:
        rank = len(x.shape)
        sizes = list(x.shape)
        for axis in range(rank):
            before, after = pads[axis], pads[axis + rank]
            if not (before or after):
                continue
            blocks = [self._filled([n if d == axis else s for d, s in enumerate(sizes)], x, value) if n else None
                      for n in (before, after)]
            x = self.op("Concat", *(p for p in (blocks[0], x, blocks[1]) if p is not None), axis=axis)
            sizes[axis] = sizes[axis] + before + after if isinstance(sizes[axis], int) else None
            x.shape = tuple(sizes)
        return x

    def _filled(self, sizes: Sequence[int | str | None], like: Value, value: float | int | bool) -> Value:
        """A tensor of `sizes` filled with value in like's dtype; a size that is not an int is like's size
        on that axis, read from its shape."""
        dims = [self.const([n], dtype=torch.int64) if isinstance(n, int)
                else self.slice(self.op("Shape", like), [d], [d + 1], [0]) for d, n in enumerate(sizes)]
        shape = self.op("Concat", *dims, axis=0) if len(dims) > 1 else dims[0]
        return self.op("ConstantOfShape", shape, value=torch.tensor([value], dtype=like.dtype))

    def slice(self, x: Value, starts: Sequence[int | Value], ends: Sequence[int | Value], axes: Sequence[int],
              steps: Sequence[int] | None = None) -> Value:
        """x[starts:ends:steps] along axes, with Python's reading of bounds (negative from the end, clamped; a
        negative step walks back). Bounds may be graph values (SymInts) where Slice takes them as inputs. Where
        it takes attributes (before opset 10: constant bounds, step 1), an axis of a static dim is sliced by
        positions instead: a Gather of those it takes (other steps), a Compress of those in [start, end) (bounds
        computed in the graph, step 1); anything else is NotImplementedError (the node falls back)."""
        if self._as_input("Slice", "starts"):
            inputs = [self.int_list(list(starts)), self.int_list(list(ends)), self.const(list(axes), dtype=torch.int64)]
            if steps is not None:
                inputs.append(self.const(list(steps), dtype=torch.int64))
            return self.op("Slice", x, *inputs)
        steps = [1] * len(axes) if steps is None else list(steps)
        if all(isinstance(b, int) for b in [*starts, *ends]) and all(s == 1 for s in steps):
            return self.op("Slice", x, starts=list(starts), ends=list(ends), axes=list(axes))
        for start, end, axis, step in zip(starts, ends, axes, steps):
            sliced = self._slice_by_positions(x, start, end, axis, step)
            if sliced.shape is None and x.shape is not None:  # the other axes keep their sizes for the next
                sliced.shape = x.shape[:axis] + (None,) + x.shape[axis + 1:]
            x = sliced
        return x

    def _slice_by_positions(self, x: Value, start: int | Value, end: int | Value, axis: int, step: int) -> Value:
        size = x.shape[axis] if x.shape is not None else None
        constant = isinstance(start, int) and isinstance(end, int)
        if not isinstance(size, int) or not isinstance(step, int) or not (constant or step == 1):
            raise NotImplementedError(f"opset {self.opset} Slice takes only constant bounds and step 1; "
                                      f"export at opset {_first_with_input('Slice', 'starts')} or later")
        if constant and step == 1:
            return self.op("Slice", x, starts=[start], ends=[end], axes=[axis])
        if constant:
            positions = list(range(size))[start:end:step]
            return self.op("Gather", x, self.const(positions, dtype=torch.int64), axis=axis)

        def bound(v: int | Value) -> Value:
            if isinstance(v, int):
                v = self.const(min(v, size), dtype=torch.int64)
            elif v.dtype != torch.int64:
                v = self.op("Cast", v, to=onnx.TensorProto.INT64)
            negative = self.op("Less", v, self.const(0, dtype=torch.int64))
            return self.op("Where", negative, self.op("Add", v, self.const(size, dtype=torch.int64)), v)

        positions = self.const(torch.arange(size))
        from_start = self.op("Not", self.op("Less", positions, bound(start)))
        keep = self.op("And", from_start, self.op("Less", positions, bound(end)))
        return self.op("Compress", x, keep, axis=axis)

    def topk(self, x: Value, k: int | Value, axis: int, largest: bool = True) -> tuple[Value, Value]:
        """The k largest (or smallest) entries along axis, sorted, ties lower index first, and their indices;
        k an int or a one-element int graph value. TopK takes k as an attribute before 10 (an int only) and
        as an input from it, and keeps the largest only before 11: there the smallest are the largest of x
        under an order-reversing map that is its own inverse and exact (-x for floats, -1 - x, that is ~x,
        for signed integers, the type's maximum - x for unsigned ones, Not for bools), mapped back.
        Anything else is NotImplementedError."""
        if not largest and not has_attribute("TopK", "largest", self.opset):
            if x.dtype is not None and x.dtype.is_floating_point:
                return self._smallest_floats(x, k, axis)
            values, indices = self.topk(self._reversed_order(x), k, axis)
            return self._reversed_order(values), indices
        order = {"largest": int(largest), "sorted": 1} if has_attribute("TopK", "largest", self.opset) else {}
        if not self._as_input("TopK", "K"):
            if not isinstance(k, int):
                raise NotImplementedError(f"opset {self.opset} TopK takes k as an attribute; export at opset "
                                          f"{_first_with_input('TopK', 'K')} or later")
            return self.op("TopK", x, outputs=2, axis=axis, k=k)
        if isinstance(k, int):
            k_value = self.const([k], dtype=torch.int64)
        else:
            k_value = k if k.dtype == torch.int64 else self.op("Cast", k, to=onnx.TensorProto.INT64)
            if k_value.rank != 1:
                k_value = self.op("Reshape", k_value, self.const([1], dtype=torch.int64))
        return self.op("TopK", x, k_value, outputs=2, axis=axis, **order)

    def _smallest_floats(self, x: Value, k: int | Value, axis: int) -> tuple[Value, Value]:
        """The k smallest floats first, NaN last (as the largest, as TopK and eager rank it), ties lower index
        first, before TopK keeps the smallest (11). -x reverses the order of numbers, but a NaN stays the
        largest, so it would come first: two stable passes instead (TopK's ties keep the order they meet),
        the first putting the NaNs last, the second ordering by -x with NaN as -inf, where a tie with +inf
        keeps the first pass's order (+inf before NaN). Static shapes only: the passes compose by
        gather_elements (GatherElements arrives at 11)."""
        size = x.shape[axis] if x.shape is not None else None
        if not isinstance(size, int):
            raise NotImplementedError(f"the smallest floats with NaN last along a dim known only when run need "
                                      f"TopK's largest=0 (opset 11); this is opset {self.opset}")
        if not isinstance(k, int) or not all(isinstance(d, int) for d in x.shape):
            raise NotImplementedError(f"the smallest floats with NaN last need static sizes before TopK's "
                                      f"largest=0 (opset 11); this is opset {self.opset}")
        nan = self.op("IsNaN", x)
        numbers = self.op("Cast", self.op("Not", nan), to=onnx.TensorProto.FLOAT)  # 1, and 0 for NaN
        _, first = self.topk(numbers, size, axis)
        first.shape = tuple(x.shape)
        key = self.op("Where", nan, self.const(-math.inf, like=x), self.op("Neg", x))
        key.shape = tuple(x.shape)
        _, second = self.topk(self.gather_elements(key, first, axis), k, axis)
        second.shape = tuple(k if d == axis % len(x.shape) else n for d, n in enumerate(x.shape))
        indices = self.gather_elements(first, second, axis)
        return self.gather_elements(x, indices, axis), indices

    def _reversed_order(self, x: Value) -> Value:
        """x under an exact order-reversing involution (see topk); x's dtype must be known."""
        if x.dtype == torch.bool:
            return self.op("Not", x)
        if x.dtype is not None and x.dtype.is_floating_point:
            return self.op("Neg", x)
        if x.dtype is None or x.dtype.is_complex:
            raise NotImplementedError(f"TopK keeps the largest only at opset {self.opset}, and {x.dtype} has no "
                                      f"order to reverse; export at opset {_first_with_attribute('TopK', 'largest')}")
        top = -1 if x.dtype.is_signed else torch.iinfo(x.dtype).max  # -1 - x is ~x: no overflow
        return self.op("Sub", self.const(top, like=x), x)

    def gather(self, x: Value, indices: Value, axis: int) -> Value:
        """x's entries at indices along axis, a negative index counting from the end. Gather reads negative
        indices so from 11; before, they are wrapped by the axis' size first (constant ones fold)."""
        if since_version("Gather", self.opset) < GATHER_NEGATIVE_INDICES:
            size = x.shape[axis] if x.shape is not None else None
            if isinstance(size, int):
                n = self.const(size, like=indices)
            else:
                n = self.op("Gather", self.op("Shape", x), self.const(axis, dtype=torch.int64), axis=0)
                if indices.dtype != torch.int64:
                    n = self.op("Cast", n, to=_dtypes.to_onnx(indices.dtype))
            negative = self.op("Less", indices, self.const(0, like=indices))
            indices = self.op("Where", negative, self.op("Add", indices, n), indices)
        return self.op("Gather", x, indices, axis=axis)

    def round(self, x: Value) -> Value:
        """x rounded half to even, as torch.round. Round arrives at 11; before, from Floor exactly: f = floor(x),
        d = x - f (exact), plus one where d > 0.5 or d == 0.5 and f is odd."""
        if op_types.signature("Round", self.opset) is not None:
            return self.op("Round", x)
        f = self.op("Floor", x)
        d = self.op("Sub", x, f)
        half, two = self.const(0.5, like=x), self.const(2.0, like=x)
        odd = self.op("Sub", f, self.op("Mul", self.op("Floor", self.op("Div", f, two)), two))  # 1 where f is odd
        up = self.op("Or", self.op("Greater", d, half),
                     self.op("And", self.equal(d, half), self.equal(odd, self.const(1.0, like=x))))
        return self.op("Add", f, self.op("Cast", up, to=_dtypes.to_onnx(x.dtype)))

    def gather_elements(self, x: Value, indices: Value, axis: int) -> Value:
        """x's entries at indices along axis, every other coordinate that of the index (a negative index
        counting from the end). GatherElements arrives at 11; before, with static shapes, it is a Gather
        from x flattened at each index's flat position (a constant offset per position plus the index
        times the axis' stride); a dynamic shape there is NotImplementedError."""
        if op_types.signature("GatherElements", self.opset) is not None:
            return self.op("GatherElements", x, indices, axis=axis)
        shapes = (x.shape, indices.shape)
        if any(s is None or not all(isinstance(d, int) for d in s) for s in shapes):
            raise NotImplementedError(f"GatherElements arrives at opset 11; at {self.opset} it is spelled with "
                                      "Gather on static shapes only; export at opset 11 or later")
        x_shape, i_shape = list(x.shape), list(indices.shape)
        axis = axis % max(len(x_shape), 1)
        strides = [math.prod(x_shape[d + 1:]) for d in range(len(x_shape))]
        grids = torch.meshgrid(*[torch.arange(n) for n in i_shape], indexing="ij") if i_shape else ()
        base = sum((grids[d] * strides[d] for d in range(len(i_shape)) if d != axis),
                   torch.zeros(i_shape, dtype=torch.int64))
        index = indices if indices.dtype == torch.int64 else self.op("Cast", indices, to=onnx.TensorProto.INT64)
        n = self.const(x_shape[axis], dtype=torch.int64)
        index = self.op("Where", self.op("Less", index, self.const(0, dtype=torch.int64)), self.op("Add", index, n), index)
        flat = self.op("Add", self.const(base), self.op("Mul", index, self.const(strides[axis], dtype=torch.int64)))
        out = self.op("Gather", self.op("Reshape", x, self.const([-1], dtype=torch.int64)), flat, axis=0)
        out.shape = tuple(i_shape)  # the indices' shape, as GatherElements gives
        return out

    def pool(self, op_type: str, x: Value, *, ceil_mode: bool = False, dilations: Sequence[int] | None = None,
             outputs: int = 1, **attributes) -> Value | tuple[Value, ...]:
        """MaxPool or AveragePool with the attributes given. ceil_mode (both) and dilations (MaxPool; AveragePool
        from 19) are attributes from the version that gains them; before it only their defaults can be said,
        but for MaxPool's ceil_mode on static spatial sizes: the windows ceil mode adds are those that more
        padding at the end gives (MaxPool's padding never wins, and its indices count in the unpadded input).
        That is also how it is said where ONNX's ceil mode would count one more window than torch's (one
        starting in the end padding, which torch drops). Anything else is NotImplementedError."""
        if ceil_mode and op_type == "MaxPool":
            spatial = x.shape[2:] if x.shape is not None else None
            if spatial is not None and all(isinstance(n, int) for n in spatial):
                args = (list(spatial), attributes["kernel_shape"], attributes.get("strides"), attributes.get("pads"),
                        dilations)
                if not has_attribute(op_type, "ceil_mode", self.opset) or _ceil_pads(*args, onnx_rule=True) != _ceil_pads(*args):
                    attributes["pads"] = _ceil_pads(*args)
                    ceil_mode = False
        versioned = {"ceil_mode": (int(ceil_mode), not ceil_mode)}  # name: (value, whether it is the default)
        if dilations is not None:
            versioned["dilations"] = (list(dilations), all(d == 1 for d in dilations))
        for name, (value, is_default) in versioned.items():
            if has_attribute(op_type, name, self.opset):
                attributes[name] = value
            elif not is_default:
                raise NotImplementedError(f"opset {self.opset} {op_type} has no {name}; export at opset "
                                          f"{_first_with_attribute(op_type, name)} or later")
        return self.op(op_type, x, outputs=outputs, **attributes)

    def scatter_elements(self, data: Value, indices: Value, updates: Value, axis: int,
                         reduction: str | None = None) -> Value:
        """data with updates written at indices along axis, or combined with what is there by reduction ("add",
        "mul", "max", "min"). ScatterElements arrives at 11, where it replaces Scatter, the same op without
        reductions; see _scatter_reduction for those."""
        op_type = "ScatterElements" if op_types.signature("ScatterElements", self.opset) is not None else "Scatter"
        if reduction is not None and not self._has_scatter_reduction(op_type, reduction):
            return self._scatter_by_one_hot(data, indices, updates, axis, reduction)
        return self.op(op_type, data, indices, updates, axis=axis, **self._scatter_reduction(op_type, reduction))

    def _scatter_by_one_hot(self, data: Value, indices: Value, updates: Value, axis: int, reduction: str) -> Value:
        """A reducing ScatterElements where the version has no such reduction (before 16; max and min before
        18): a one-hot mask compares each update's index with every row of data's axis, the updates it picks
        (the reduction's identity elsewhere) are reduced over the indices' axis, and the result is combined
        with data. Off the axis, indices no larger than data, as ScatterElements takes them; data's rows
        past them take the identity (static sizes only)."""
        if data.dtype == torch.bool:  # or (add, max) and and (mul, min), computed on 0s and 1s
            as_int = [self.op("Cast", v, to=onnx.TensorProto.INT32) for v in (data, updates)]
            as_int[0].shape, as_int[1].shape = data.shape, updates.shape
            picked = "max" if reduction in ("add", "max") else "min"
            out = self._scatter_by_one_hot(as_int[0], indices, as_int[1], axis, picked)
            return self.op("Cast", out, to=onnx.TensorProto.BOOL)
        rank = data.rank
        if rank is None or indices.rank != rank or indices.shape is None or data.shape is None \
                or data.dtype is None or reduction not in _ONE_HOT_REDUCE:
            raise NotImplementedError(f"opset {self.opset} has no scatter reduction {reduction!r} for this input; "
                                      "export at opset 16 (add, mul) or 18 (max, min)")
        identity = self.const(_identity(reduction, data.dtype), dtype=data.dtype)
        depth = self.slice(self.op("Shape", data), [axis], [axis + 1], [0])
        hot = self.op("OneHot", self.op("Cast", indices, to=onnx.TensorProto.INT64), depth,
                      self.const([0, 1], dtype=torch.int64), axis=-1)
        picked = self.op("Where", self.op("Cast", hot, to=onnx.TensorProto.BOOL), self.unsqueeze(updates, [rank]),
                         identity)  # indices' shape + [rows of data's axis]
        reduced = self.reduce(_ONE_HOT_REDUCE[reduction], picked, [axis], keepdims=False)
        gathered = self.op("Transpose", reduced, perm=list(range(axis)) + [rank - 1] + list(range(axis, rank - 1)))
        sizes = [data.shape[d] if d == axis else indices.shape[d] for d in range(rank)]
        for d in range(rank):
            if d == axis or indices.shape[d] == data.shape[d]:
                continue
            if not (isinstance(indices.shape[d], int) and isinstance(data.shape[d], int)):
                raise NotImplementedError(f"opset {self.opset} has no scatter reduction {reduction!r}, and the "
                                          "one-hot spelling needs static sizes where indices are smaller than data")
            filler_sizes = [data.shape[d] - indices.shape[d] if k == d else sizes[k] for k in range(rank)]
            gathered = self.op("Concat", gathered, self._filled(filler_sizes, data, _identity(reduction, data.dtype)),
                               axis=d)
            sizes[d] = data.shape[d]
        gathered.shape = data.shape
        if reduction in ("max", "min"):
            return self.max(data, gathered) if reduction == "max" else self.min(data, gathered)
        return self.op("Add" if reduction == "add" else "Mul", data, gathered)

    def _has_scatter_reduction(self, op_type: str, reduction: str) -> bool:
        try:
            self._scatter_reduction(op_type, reduction)
        except NotImplementedError:
            return False
        return True

    def scatter_nd(self, data: Value, indices: Value, updates: Value, reduction: str | None = None) -> Value:
        """ScatterND (from 11), its updates combined by reduction where given (see _scatter_reduction)."""
        return self.op("ScatterND", data, indices, updates, **self._scatter_reduction("ScatterND", reduction))

    def _scatter_reduction(self, op_type: str, reduction: str | None) -> dict[str, str]:
        """The reduction attribute, where the version in effect has that reduction (SCATTER_REDUCTIONS); a
        reduction it lacks is NotImplementedError. (An op the opset does not define, g.op refuses.)"""
        if reduction is None or op_types.signature(op_type, self.opset) is None:
            return {}
        version = since_version(op_type, self.opset)
        taken = next((names for since, names in sorted(SCATTER_REDUCTIONS.items(), reverse=True) if version >= since),
                     ())
        if reduction not in taken:
            first = min(since for since, names in SCATTER_REDUCTIONS.items() if reduction in names)
            raise NotImplementedError(f"opset {self.opset} {op_type} has no reduction {reduction!r}; "
                                      f"export at opset {first} or later")
        return {"reduction": reduction}

    def softmax(self, op_type: str, x: Value, axis: int) -> Value:
        """Softmax or LogSoftmax along one axis (0 <= axis < rank). Where the op flattens to 2-D at its axis,
        that is the same only for the last axis; another is moved last and back."""
        rank = x.rank
        if since_version(op_type, self.opset) >= SOFTMAX_ALONG_ONE_AXIS or axis == rank - 1:
            return self.op(op_type, x, axis=axis)
        perm = list(range(rank))
        perm[axis], perm[-1] = perm[-1], perm[axis]
        y = self.op(op_type, self.op("Transpose", x, perm=perm), axis=rank - 1)
        return self.op("Transpose", y, perm=perm)


# Gather reads a negative index as counting from the end from this version (its signature is the same).
GATHER_NEGATIVE_INDICES = 11

# The reductions ScatterElements and ScatterND take, by the version that brings them (named in the reduction
# attribute's description only, so written here).
SCATTER_REDUCTIONS = {16: ("add", "mul"), 18: ("add", "mul", "max", "min")}

# Softmax and LogSoftmax flatten the input to 2-D at `axis` before this version; from it they work along
# `axis` alone (the schema's signature is the same: its meaning changed).
SOFTMAX_ALONG_ONE_AXIS = 13


def _ceil_pads(sizes: list[int], kernel: Sequence[int], strides: Sequence[int] | None, pads: Sequence[int] | None,
               dilations: Sequence[int] | None, *, onnx_rule: bool = False) -> list[int]:
    """pads with the end ones grown so that floor-mode pooling gives ceil mode's windows, as torch counts
    them: rounded up, less a last window that would start past the input and the begin padding (with
    onnx_rule, as ONNX's ceil_mode counts them: rounded up only)."""
    n = len(sizes)
    strides = list(strides or [1] * n)
    pads = list(pads or [0] * (2 * n))
    dilations = list(dilations or [1] * n)
    for i, size in enumerate(sizes):
        span = dilations[i] * (kernel[i] - 1) + 1
        room = size + pads[i] + pads[n + i] - span
        out = -(-room // strides[i]) + 1
        if not onnx_rule and (out - 1) * strides[i] >= size + pads[i]:
            out -= 1
        pads[n + i] += max((out - 1) * strides[i] + span - (size + pads[i] + pads[n + i]), 0)
    return pads


def _first_with_input(op_type: str, name: str) -> int:
    """The first version of op_type with an input called name."""
    return _first_version(op_type, lambda schema: any(i.name == name for i in schema.inputs))


def _first_with_attribute(op_type: str, name: str) -> int:
    """The first version of op_type with an attribute called name."""
    return _first_version(op_type, lambda schema: name in schema.attributes)


def _first_version(op_type: str, has) -> int:
    """The oldest version of op_type in the run of newest versions whose schema `has` holds for."""
    version = onnx.defs.get_schema(op_type, onnx.defs.onnx_opset_version()).since_version
    while True:
        try:
            older = onnx.defs.get_schema(op_type, version - 1)
        except onnx.defs.SchemaError:
            return version
        if not has(older):
            return version
        version = older.since_version


# a reducing scatter spelled by a one-hot mask (Emitters._scatter_by_one_hot): the Reduce op per reduction
_ONE_HOT_REDUCE = {"add": "ReduceSum", "mul": "ReduceProd", "max": "ReduceMax", "min": "ReduceMin"}


def _identity(reduction: str, dtype: torch.dtype) -> int | float:
    """The value a reduction leaves the other operand unchanged with, in dtype."""
    if reduction in ("add", "mul"):
        return 0 if reduction == "add" else 1
    if dtype.is_floating_point:
        return -math.inf if reduction == "max" else math.inf
    info = torch.iinfo(dtype)
    return info.min if reduction == "max" else info.max


def _plus_128(t: torch.Tensor) -> torch.Tensor:
    """An int8 tensor shifted to uint8 (+128)."""
    return (t.to(torch.int16) + 128).to(torch.uint8)

