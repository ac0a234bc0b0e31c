"""Every narrow ONNX element type (float8 x4, float8e8m0, float4e2m1, float6 x2, int4/uint4, int2/uint2) through Cast,
CastLike, QuantizeLinear and DequantizeLinear on adversarial values: NaN, +-inf, values past each type's range,
rounding ties, subnormals, -0. aten2onnx.runtime is checked value for value (NaN equal to NaN, -0 apart from +0)
against onnx's reference evaluator, and against onnxruntime where it has the kernel. Where one of them departs
from ONNX's spec (Cast's and QuantizeLinear's docs, docs/technical/*.md), the entry says for which values, what
the spec gives there (checked against the runtime), and why."""

from __future__ import annotations

import dataclasses
import warnings
from typing import Callable

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto as TP, helper
from onnx.reference import ReferenceEvaluator

from aten2onnx.errors import InvalidInputError
from aten2onnx.runtime import InferenceSession

F32, F16, F64, BF16 = TP.FLOAT, TP.FLOAT16, TP.DOUBLE, TP.BFLOAT16
FLOAT8 = (TP.FLOAT8E4M3FN, TP.FLOAT8E4M3FNUZ, TP.FLOAT8E5M2, TP.FLOAT8E5M2FNUZ)
SMALL_INTS = {TP.INT4: (4, True), TP.UINT4: (4, False), TP.INT2: (2, True), TP.UINT2: (2, False)}

# Zeros, NaN, infinities; ties at each type's step (0.25 and 0.75 in float4, 2.5 in the integers, 464 between
# float8e4m3fn's 448 and 480, 61440 between float8e5m2's 57344 and 65536); each type's largest value and just
# past it; float8 subnormals (2^-9 is e4m3fn's smallest, 2^-17 e5m2fnuz's) and values halfway below them;
# float32 subnormals (2^-127 is float8e8m0's smallest, 2^-130 under it) and 2^127 (its largest) and past it.
ADVERSARIAL = np.array(
    [0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 0.25, 0.75, 1.25, 1.75, 2.5, -2.5, 3.5, 5.0, 5.5, 6.0, 6.5, -7.0,
     7.5, 8.0, 9.0, 15.5, 16.0, 17.0, -9.0, 28.0, 30.0, 240.0, 248.0, 448.0, 464.0, 465.0, 480.0, -1e6, 57344.0,
     61440.0, 61441.0, 2.0 ** -9, 2.0 ** -10, 1.5 * 2.0 ** -10, 2.0 ** -17, 2.0 ** -18, 3 * 2.0 ** -19, 1e-7, -1e-7,
     2.0 ** -127, 2.0 ** -130, 2.0 ** 127, 1.5 * 2.0 ** 127, 3e38, 0.124, 1.1],
    dtype=np.float32)
NON_NEGATIVE = ADVERSARIAL[~np.signbit(ADVERSARIAL)]  # float8e8m0 of a negative value is unspecified
FINITE = ADVERSARIAL[np.isfinite(ADVERSARIAL) & (np.abs(ADVERSARIAL) < 6e4)]  # within float16's range


def np_type(elem: int):
    return helper.tensor_dtype_to_np_dtype(elem)


def every_value(elem: int) -> np.ndarray:
    """Every value of an element type of 8 bits or fewer, from its bit patterns."""
    if elem in SMALL_INTS:
        bits, signed = SMALL_INTS[elem]
        low = -(1 << (bits - 1)) if signed else 0
        return np.arange(low, low + (1 << bits)).astype(np_type(elem))
    if elem == TP.FLOAT4E2M1:
        return np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], ml_dtypes.float4_e2m1fn)
    return np.arange(256, dtype=np.uint8).view(np_type(elem))


@dataclasses.dataclass
class Differs:
    """Where an implementation departs from the spec: the inputs (a mask of the entry's x), the spec's result
    there, and why. `spec` None: the spec leaves these values open; the runtime is not checked on them."""

    where: Callable[[np.ndarray], np.ndarray]
    spec: Callable[[np.ndarray], np.ndarray] | None
    reason: str


@dataclasses.dataclass
class Entry:
    id: str
    op: str
    x: np.ndarray
    out: int  # the output's element type
    attrs: dict = dataclasses.field(default_factory=dict)
    others: list = dataclasses.field(default_factory=list)  # (name, value, element type) after x
    opset: int = 25
    reference: Differs | None = None  # where onnx's reference evaluator departs from the spec
    reference_runs: bool = True  # False: the reference refuses the entry; `reference` gives the spec everywhere
    onnxruntime: Differs | None = None  # where onnxruntime does


def model(e: Entry) -> onnx.ModelProto:
    values = [("x", e.x, helper.np_dtype_to_tensor_dtype(e.x.dtype))] + e.others
    node = helper.make_node(e.op, [name for name, _, _ in values], ["y"], **e.attrs)
    graph = helper.make_graph([node], e.id, [helper.make_tensor_value_info(n, t, v.shape) for n, v, t in values],
                              [helper.make_tensor_value_info("y", e.out, e.x.shape)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", e.opset)], ir_version=11)


def feeds(e: Entry) -> dict[str, np.ndarray]:
    return {"x": e.x, **{name: value for name, value, _ in e.others}}


def keys(values: np.ndarray) -> list:
    """Values as comparable keys: NaN equal to NaN (a NaN's sign is not kept by every conversion: float8.md), -0
    apart from +0."""
    with np.errstate(invalid="ignore"):
        wide = np.asarray(values).astype(np.float64).reshape(-1)
    return ["nan" if np.isnan(v) else (float(v), bool(np.signbit(v))) for v in wide]


def check(ours: np.ndarray, theirs: np.ndarray, x: np.ndarray, differs: Differs | None, who: str) -> None:
    mask = differs.where(x.astype(np.float64)).reshape(-1) if differs else np.zeros(x.size, bool)
    got, want = keys(ours), keys(theirs)
    bad = [(float(v), g, w) for v, g, w, m in zip(x.reshape(-1).astype(np.float64), got, want, mask) if not m and g != w]
    assert not bad, f"{who} differs (x, ours, theirs): {bad[:8]}"
    if differs is not None and differs.spec is not None and mask.any():
        spec = keys(differs.spec(x.astype(np.float64)[mask.reshape(x.shape)]))
        ours_there = [g for g, m in zip(got, mask) if m]
        assert ours_there == spec, f"ours {ours_there} where the spec gives {spec} ({differs.reason})"


def wrap(values: np.ndarray, elem: int) -> np.ndarray:
    """Integers kept to their low bits, as ONNX's fixed-point casts keep them."""
    bits, signed = SMALL_INTS[elem]
    v = np.mod(values.astype(np.int64), 1 << bits)
    return np.where(signed & (v >= 1 << (bits - 1)), v - (1 << bits), v)


def fraction(x: np.ndarray) -> np.ndarray:
    return np.isfinite(x) & (x != np.round(x))


def _int_cast(elem: int) -> Entry:
    x = ADVERSARIAL[np.isfinite(ADVERSARIAL) & (np.abs(ADVERSARIAL) < 2 ** 31)]  # out of int32: undefined
    return Entry(f"cast-{TP.DataType.Name(elem)}", "Cast", x, elem, {"to": elem},
                 reference=Differs(fraction, lambda v: wrap(np.round(v), elem),
                                   "the spec rounds to nearest even (docs/technical/int4.md, int2.md); the reference, "
                                   "through ml_dtypes, truncates"),
                 onnxruntime=Differs(lambda v: fraction(v) & (v * 2 == np.round(v * 2)), None,
                                     "onnxruntime rounds ties away from zero"))


def _e8m0_cast(saturate: int, mode: str) -> Entry:
    tiny, big = 2.0 ** -127, 2.0 ** 127

    def spec(v):
        with np.errstate(divide="ignore", invalid="ignore"):
            low = np.exp2(np.floor(np.log2(v)))  # the power of two at or below v
        rounded = {"up": np.where(v > low, 2 * low, low), "down": low,
                   "nearest": np.where(v >= 1.5 * low, 2 * low, low)}[mode]
        rounded = np.where(v < tiny, tiny if saturate else np.nan, rounded)
        rounded = np.where(v > big, big if saturate else np.nan, rounded)
        return np.where(np.isnan(v), np.nan, rounded)

    return Entry(f"cast-e8m0-{mode}-saturate{saturate}", "Cast", NON_NEGATIVE, TP.FLOAT8E8M0,
                 {"to": TP.FLOAT8E8M0, "saturate": saturate, "round_mode": mode},
                 reference=Differs(lambda v: np.isinf(v) | (v <= tiny) | (v > big), spec,
                                   "Cast's table: infinity saturates to 2^127 (the reference gives NaN); 2^-127 and "
                                   "below are the smallest value, or NaN without saturate (the reference rounds float32 "
                                   "subnormals up to 2^-126); past 2^127 is NaN without saturate, before rounding"))


def _float8_cast(elem: int, saturate: int, source: int = F32) -> Entry:
    ort_note = None
    if not saturate and elem == TP.FLOAT8E4M3FN:
        ort_note = Differs(lambda v: np.abs(v) == 480, None, "onnxruntime gives 448 for 480, which is past 448")
    if not saturate and elem == TP.FLOAT8E5M2:
        ort_note = Differs(lambda v: np.abs(v) >= 61440, None,
                           "onnxruntime gives NaN where rounding passes 57344; the table says infinity")
    with np.errstate(over="ignore"):  # past float16's range: infinity, as it should
        x = ADVERSARIAL.astype(np_type(source))
    return Entry(f"cast-{TP.DataType.Name(source)}-to-{TP.DataType.Name(elem)}-saturate{saturate}", "Cast", x, elem,
                 {"to": elem, "saturate": saturate}, onnxruntime=ort_note)


FLOAT4_NAN = Differs(np.isnan, lambda v: np.full(v.shape, 6.0),
                     "docs/technical/float4.md and onnxruntime: NaN is 6; the reference (ml_dtypes) gives -0")


def _float6_cast(elem: int) -> Entry:
    largest = {TP.FLOAT6E2M3: 7.5, TP.FLOAT6E3M2: 28.0}[elem]
    return Entry(f"cast-{TP.DataType.Name(elem)}", "Cast", ADVERSARIAL, elem, {"to": elem}, opset=28,
                 reference=Differs(lambda v: np.isnan(v) | (np.signbit(v) & (np.abs(v) < 2 ** -5)),
                                   lambda v: np.where(np.isnan(v), largest, 0.0),
                                   "docs/technical/float6.md: NaN saturates to the largest value and -0 is 0; the "
                                   "reference (ml_dtypes) gives -0 for both"))


CASTS = [
    *[_float8_cast(elem, saturate) for elem in FLOAT8 for saturate in (1, 0)],
    *[_float8_cast(elem, 1, source) for elem in FLOAT8 for source in (F16, F64, BF16)],
    Entry("cast-float4e2m1", "Cast", ADVERSARIAL, TP.FLOAT4E2M1, {"to": TP.FLOAT4E2M1}, reference=FLOAT4_NAN),
    Entry("cast-float16-to-float4e2m1", "Cast", FINITE.astype(np.float16), TP.FLOAT4E2M1,
          {"to": TP.FLOAT4E2M1}, reference=FLOAT4_NAN),
    *[_int_cast(elem) for elem in SMALL_INTS],
    *[_e8m0_cast(saturate, mode) for saturate in (1, 0) for mode in ("up", "down", "nearest")],
    *[_float6_cast(elem) for elem in (TP.FLOAT6E2M3, TP.FLOAT6E3M2)],
    # from every value of each narrow type, to wider types and between narrow ones
    *[Entry(f"cast-{TP.DataType.Name(src)}-to-{TP.DataType.Name(dst)}", "Cast", every_value(src), dst, {"to": dst})
      for src in (*FLOAT8, TP.FLOAT8E8M0, TP.FLOAT4E2M1) for dst in (F32, F16, BF16)],
    *[Entry(f"cast-{TP.DataType.Name(src)}-to-{TP.DataType.Name(dst)}", "Cast", every_value(src), dst, {"to": dst})
      for src, dst in [(TP.FLOAT8E4M3FN, TP.FLOAT8E5M2), (TP.FLOAT8E5M2, TP.FLOAT8E4M3FNUZ),
                       (TP.FLOAT4E2M1, TP.FLOAT8E5M2FNUZ)]],
    Entry("cast-FLOAT8E4M3FNUZ-to-FLOAT4E2M1", "Cast", every_value(TP.FLOAT8E4M3FNUZ), TP.FLOAT4E2M1,
          {"to": TP.FLOAT4E2M1}, reference=FLOAT4_NAN),
    *[Entry(f"cast-{TP.DataType.Name(src)}-to-{TP.DataType.Name(dst)}", "Cast", every_value(src), dst, {"to": dst})
      for src in SMALL_INTS for dst in (F32, TP.INT8, TP.UINT8, src)],
    # between the small integer types: the low bits, as Cast keeps them for every fixed-point pair
    *[Entry(f"cast-{TP.DataType.Name(src)}-to-{TP.DataType.Name(dst)}", "Cast", every_value(src), dst, {"to": dst},
            reference_runs=False, reference=Differs(lambda v: np.ones(v.shape, bool), lambda v, d=dst: wrap(v, d),
                                                    "the reference cannot cast between ml_dtypes' small integers"))
      for src in SMALL_INTS for dst in SMALL_INTS if src != dst],
]

CAST_LIKES = [
    Entry("castlike-int4", "CastLike", ADVERSARIAL[np.isfinite(ADVERSARIAL) & (np.abs(ADVERSARIAL) < 100)], TP.INT4,
          others=[("like", np.zeros(1, ml_dtypes.int4), TP.INT4)], reference=_int_cast(TP.INT4).reference,
          onnxruntime=_int_cast(TP.INT4).onnxruntime),
    Entry("castlike-uint2", "CastLike", np.array([0, 1, 2, 3, 4, 5, -1], np.float32), TP.UINT2,
          others=[("like", np.zeros(1, ml_dtypes.uint2), TP.UINT2)]),
    Entry("castlike-float4e2m1", "CastLike", ADVERSARIAL, TP.FLOAT4E2M1,
          others=[("like", np.zeros(1, ml_dtypes.float4_e2m1fn), TP.FLOAT4E2M1)], reference=FLOAT4_NAN),
    Entry("castlike-e8m0", "CastLike", NON_NEGATIVE, TP.FLOAT8E8M0, {"saturate": 0, "round_mode": "nearest"},
          others=[("like", np.ones(1, ml_dtypes.float8_e8m0fnu), TP.FLOAT8E8M0)], reference_runs=False,
          reference=Differs(lambda v: np.ones(v.shape, bool), _e8m0_cast(0, "nearest").reference.spec,
                            "the reference's CastLike stops at version 19 (no round_mode): Cast's table everywhere"),
          onnxruntime=Differs(lambda v: np.isfinite(v) & (v > 0) & (np.exp2(np.ceil(np.log2(np.where(v > 0, v, 1))))
                                                                    != _e8m0_cast(0, "nearest").reference.spec(v)),
                              None, "onnxruntime's CastLike rounds up whatever round_mode says (its Cast does not)")),
    Entry("castlike-e4m3fnuz-no-saturate", "CastLike", ADVERSARIAL, TP.FLOAT8E4M3FNUZ, {"saturate": 0},
          others=[("like", np.zeros(1, ml_dtypes.float8_e4m3fnuz), TP.FLOAT8E4M3FNUZ)]),
]


def _scale(value: float, like: np.ndarray, elem: int = F32) -> tuple:
    return ("scale", np.full(like, value, np_type(elem)), elem)


def _zero(values, elem: int) -> tuple:
    return ("zero_point", np.asarray(values).astype(np_type(elem)), elem)


def overflows(limit: float) -> Differs:
    """Integer quantization of a quotient x / scale past `limit` (infinite in the division's type) saturates, as
    the spec's formula says; the reference casts rint(inf) to int32 first, the int32 minimum, which clips to the
    type's lowest value. (NaN is undefined for integer outputs: no entry quantizes one.)"""
    return Differs(lambda v: np.abs(v) >= limit, None, "an infinite x / scale saturates to the range's end; the "
                                                       "reference's int32 conversion of it gives the lowest value")


def _int_quantize(elem: int, zero) -> Entry:
    x = ADVERSARIAL[~np.isnan(ADVERSARIAL)]
    return Entry(f"quantize-{TP.DataType.Name(elem)}", "QuantizeLinear", x, elem,
                 others=[_scale(0.5, ()), _zero(zero, elem)], reference=overflows(2.0 ** 127))


QUANTIZES = [
    *[_int_quantize(elem, zero) for elem, zero in [(TP.INT8, -3), (TP.UINT8, 200), (TP.INT16, -300), (TP.UINT16, 7),
                                                   (TP.INT4, -3), (TP.UINT4, 9), (TP.INT2, -1), (TP.UINT2, 2)]],
    *[Entry(f"quantize-{TP.DataType.Name(elem)}-saturate{saturate}", "QuantizeLinear", ADVERSARIAL, elem,
            {"saturate": saturate}, others=[_scale(0.5, ()), _zero(0, elem)],
            onnxruntime=Differs(lambda v: np.abs(v) == 240, None, "onnxruntime gives 448 for 480, which is past 448")
            if (elem, saturate) == (TP.FLOAT8E4M3FN, 0) else None)
      for elem in FLOAT8 for saturate in (1, 0)],
    Entry("quantize-float4e2m1", "QuantizeLinear", ADVERSARIAL, TP.FLOAT4E2M1,
          others=[_scale(0.5, ()), _zero(0, TP.FLOAT4E2M1)],
          reference=Differs(lambda v: np.isnan(v) | ((v == 0) & np.signbit(v)), lambda v: np.where(np.isnan(v), 6, v),
                            FLOAT4_NAN.reason + "; a zero point of 0 keeps -0, as the float8 types do in onnxruntime "
                            "and the reference, where the reference's float4 path adds it (-0 + 0 is +0)")),
    # the output type from output_dtype alone; a per-axis scale; a float16 division (precision)
    Entry("quantize-output-dtype-int4", "QuantizeLinear", FINITE, TP.INT4, {"output_dtype": TP.INT4},
          others=[_scale(0.25, ())]),
    Entry("quantize-per-axis-uint4", "QuantizeLinear", FINITE[:42].reshape(3, 14), TP.UINT4, {"axis": 0},
          others=[("scale", np.array([0.5, 2.0, 0.125], np.float32), F32), _zero([1, 8, 15], TP.UINT4)]),
    Entry("quantize-precision-float16", "QuantizeLinear", FINITE, TP.INT8, {"precision": F16},
          others=[_scale(0.1, ()), _zero(0, TP.INT8)], opset=23, reference=overflows(65504 * 0.1)),
    Entry("quantize-float16-e4m3fn", "QuantizeLinear", FINITE.astype(np.float16), TP.FLOAT8E4M3FN,
          others=[_scale(3.0, (), F16), _zero(0, TP.FLOAT8E4M3FN)]),
    # blocks of 2 along axis 1, the last one short: x [3, 5], scales [3, 3]
    Entry("quantize-blocked-int2", "QuantizeLinear", FINITE[:15].reshape(3, 5), TP.INT2, {"axis": 1, "block_size": 2},
          others=[("scale", np.array([[0.5, 1, 2], [4, 0.25, 8], [1, 1, 16]], np.float32), F32),
                  _zero([[0, -1, 1], [0, 0, -2], [1, 0, 0]], TP.INT2)]),
    Entry("quantize-e8m0-scale", "QuantizeLinear", FINITE, TP.INT8, {"precision": F32},
          others=[("scale", np.array([0.5], ml_dtypes.float8_e8m0fnu), TP.FLOAT8E8M0), _zero([2], TP.INT8)]),
]


def _dequantize(elem: int, zero=None, scale: float = 0.75, out_dtype: int = 0) -> Entry:
    x = every_value(elem)
    others = [_scale(scale, ())] + ([_zero(zero, elem)] if zero is not None else [])
    attrs = {"output_dtype": out_dtype} if out_dtype else {}
    return Entry(f"dequantize-{TP.DataType.Name(elem)}" + (f"-to-{TP.DataType.Name(out_dtype)}" if out_dtype else ""),
                 "DequantizeLinear", x, out_dtype or F32, attrs, others=others)


DEQUANTIZES = [
    *[_dequantize(elem, zero) for elem, zero in [(TP.INT4, -3), (TP.UINT4, 9), (TP.INT2, -1), (TP.UINT2, 2),
                                                 (TP.INT8, 5), (TP.UINT8, 128)]],
    *[_dequantize(elem) for elem in (*FLOAT8, TP.FLOAT4E2M1)],
    _dequantize(TP.FLOAT8E5M2, out_dtype=F16, scale=2.0 ** 10),
    Entry("dequantize-e8m0-scale", "DequantizeLinear", every_value(TP.INT4), F16, {"output_dtype": F16},
          others=[("scale", np.array([2.0 ** -3], ml_dtypes.float8_e8m0fnu), TP.FLOAT8E8M0)]),
    Entry("dequantize-blocked-uint4", "DequantizeLinear", every_value(TP.UINT4)[:15].reshape(3, 5), F32,
          {"axis": 1, "block_size": 2},
          others=[("scale", np.array([[0.5, 1, 2], [4, 0.25, 8], [1, 1, 16]], np.float32), F32),
                  _zero([[0, 1, 15], [7, 8, 3], [1, 0, 0]], TP.UINT4)]),
]

TABLE = CASTS + CAST_LIKES + QUANTIZES + DEQUANTIZES


@pytest.mark.parametrize("entry", TABLE, ids=[e.id for e in TABLE])
def test_matches_onnx_reference(entry: Entry):
    m = model(entry)
    ours = InferenceSession(m).run(None, feeds(entry))[0]
    assert ours.dtype == np_type(entry.out)
    if not entry.reference_runs:
        check(ours, ours, entry.x, entry.reference, "onnx's reference")  # the spec on every value
        return
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        theirs = ReferenceEvaluator(m).run(None, feeds(entry))[0]
    check(ours, theirs, entry.x, entry.reference, "onnx's reference")


def onnxruntime_result(entry: Entry) -> np.ndarray:
    """onnxruntime's result, cast to float32 in the graph (exactly: it hands no narrow type to numpy), its narrow
    inputs made initializers (it takes none from numpy either), at the entry's opset or the first earlier one whose
    schema has the entry's types and that onnxruntime has a kernel for. Skips where there is none."""
    errors = []
    for opset in sorted({entry.opset, 24, 23, 21, 19}, reverse=True):
        if opset > entry.opset:
            continue
        m = model(dataclasses.replace(entry, opset=opset))
        m.graph.node.append(helper.make_node("Cast", ["y"], ["y32"], to=F32))
        m.graph.output[0].CopyFrom(helper.make_tensor_value_info("y32", F32, entry.x.shape))
        given = {}
        for name, value in feeds(entry).items():
            if value.dtype.type.__module__ == "numpy":
                given[name] = value
            else:
                m.graph.initializer.append(onnx.numpy_helper.from_array(value, name))
        try:
            onnx.checker.check_model(m, full_check=True)  # the types are that opset's
            sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        except Exception as e:
            errors.append(f"opset {opset}: {str(e).splitlines()[0][:100]}")
            continue
        return sess.run(None, given)[0]
    pytest.skip(f"onnxruntime {ort.__version__} does not run it: {errors}")


@pytest.mark.parametrize("entry", TABLE, ids=[e.id for e in TABLE])
def test_matches_onnxruntime(entry: Entry):
    theirs = onnxruntime_result(entry)
    ours = InferenceSession(model(entry)).run(None, feeds(entry))[0].astype(np.float32)
    check(ours, theirs, entry.x, entry.onnxruntime, "onnxruntime")


STRING_CASTS = [
    (TP.STRING, F32, np.array(["3.14", "1e-5", "+INF", "inf", "-INF", "NaN", "nan", "-0", "100.5", "1E8"], object)),
    (TP.STRING, F16, np.array(["3.14", "1e-5", "+INF", "-inf", "NaN", "-0", "1E8", "65519", "65520"], object)),
    (TP.STRING, TP.INT32, np.array(["3", "-7", "12", "2147483647"], object)),
    (TP.STRING, TP.INT64, np.array(["9007199254740993", "-9223372036854775808"], object)),
    (F32, TP.STRING, np.array([0.1, -0.0, np.nan, np.inf, -np.inf, 1e20, 3.0, 2.0 ** -149], np.float32)),
    (F16, TP.STRING, np.array([0.1, 2.5, -65504], np.float16)),
    (F64, TP.STRING, np.array([0.1, 1 / 3, 1e300], np.float64)),
    (TP.INT8, TP.STRING, np.array([-128, 0, 127], np.int8)),
    (TP.BOOL, TP.STRING, np.array([True, False])),
]


@pytest.mark.parametrize("source, target, x", STRING_CASTS,
                         ids=[f"{TP.DataType.Name(s)}-to-{TP.DataType.Name(t)}" for s, t, _ in STRING_CASTS])
def test_strings_cast_as_the_reference_does(source: int, target: int, x: np.ndarray):
    """Cast to and from strings: numbers as numpy writes them, text parsed with ONNX's INF/NaN spellings."""
    e = Entry("string", "Cast", x, target, {"to": target})
    ours = InferenceSession(model(e)).run(None, {"x": x})[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = ReferenceEvaluator(model(e)).run(None, {"x": x})[0]
    if target == TP.STRING:
        assert ours.tolist() == theirs.tolist()
    else:
        assert ours.dtype == theirs.dtype and keys(ours) == keys(theirs)


def test_small_integers_cast_to_strings_as_integers():
    x = np.array([-8, 7, 0], ml_dtypes.int4)
    e = Entry("int4-string", "Cast", x, TP.STRING, {"to": TP.STRING})
    assert InferenceSession(model(e)).run(None, {"x": x})[0].tolist() == ["-8", "7", "0"]


def test_narrow_values_travel_packed_through_initializers_and_outputs():
    """Packed 4- and 2-bit initializers and outputs (onnx.numpy_helper's packing): an int4 weight, a uint2 zero
    point and a float4 result, read and written as ONNX stores them."""
    w = np.array([[-8, 7, 3], [0, -1, 5]], ml_dtypes.int4)
    zero = np.array([1, 3], ml_dtypes.uint2)
    nodes = [helper.make_node("DequantizeLinear", ["w", "scale"], ["dq"], axis=0),
             helper.make_node("Cast", ["dq"], ["f4"], to=TP.FLOAT4E2M1),
             helper.make_node("QuantizeLinear", ["x", "qscale", "zero"], ["q"], axis=0)]
    inits = [onnx.numpy_helper.from_array(w, "w"), onnx.numpy_helper.from_array(np.array([0.5, 0.25], np.float32), "scale"),
             onnx.numpy_helper.from_array(zero, "zero"), onnx.numpy_helper.from_array(np.array([1.0, 0.5], np.float32), "qscale")]
    graph = helper.make_graph(nodes, "packed", [helper.make_tensor_value_info("x", F32, [2])],
                              [helper.make_tensor_value_info("f4", TP.FLOAT4E2M1, [2, 3]),
                               helper.make_tensor_value_info("q", TP.UINT2, [2])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)], ir_version=11)
    x = np.array([1.4, -3.0], np.float32)
    f4, q = InferenceSession(m.SerializeToString()).run(None, {"x": x})
    ref_f4, ref_q = ReferenceEvaluator(m).run(None, {"x": x})
    assert f4.dtype == ml_dtypes.float4_e2m1fn and q.dtype == ml_dtypes.uint2
    assert keys(f4) == keys(ref_f4) and keys(q) == keys(ref_q)
    packed = onnx.numpy_helper.from_array(q, "q")  # written back as ONNX stores it: four values a byte
    assert q.tolist() == [2, 0] and packed.raw_data == bytes([0b00_10])


def _identity(elem: int) -> onnx.ModelProto:
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "id",
                              [helper.make_tensor_value_info("x", elem, [3])], [helper.make_tensor_value_info("y", elem, [3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)], ir_version=11)


@pytest.mark.parametrize("elem, feed, ok", [
    (TP.INT4, [-8, 7, 0], True), (TP.INT4, [-9, 0, 0], False), (TP.UINT2, [0, 3, 1], True), (TP.UINT2, [4, 0, 0], False),
    (TP.FLOAT4E2M1, [0.5, -6.0, 3.0], True), (TP.FLOAT4E2M1, [0.25, 0, 0], False), (TP.FLOAT4E2M1, [np.nan, 0, 0], False),
])
def test_narrow_feeds_must_be_values_of_their_type(elem: int, feed: list, ok: bool):
    """A torch feed of a narrow type is held widened (int4 as int8): one outside the type's values is refused."""
    session = InferenceSession(_identity(elem))
    value = torch.tensor(feed, dtype={TP.INT4: torch.int8, TP.UINT2: torch.uint8}.get(elem, torch.float32))
    if ok:
        assert torch.equal(session.run_torch({"x": value})["y"], value)
    else:
        with pytest.raises(InvalidInputError, match="not tensor"):
            session.run_torch({"x": value})


def test_int4_tensors_as_aten2onnx_holds_them_are_fed_as_they_are():
    """aten2onnx's own int4 tensors (int8 bytes viewed as torch.int4, one value a byte) feed an INT4 input."""
    value = torch.tensor([-8, 7, 3], dtype=torch.int8).view(torch.int4)
    out = InferenceSession(_identity(TP.INT4)).run(None, {"x": np.array([-8, 7, 3], ml_dtypes.int4)})[0]
    assert out.dtype == ml_dtypes.int4
    got = InferenceSession(_identity(TP.INT4)).run_torch({"x": value})["y"]
    assert got.dtype == torch.int8 and got.tolist() == [-8, 7, 3]
