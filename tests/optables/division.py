"""Floor and truncating division, remainder and fmod on NaN, infinities and signed zeros (0/0, x/0, inf/inf,
x/inf, -0 quotients and remainders), tensor by tensor and by numbers, and what reads their results (atan2,
comparisons, where, sign, reciprocals), in float16, bfloat16, float32 and float64, at opsets 9, 13 and 18."""

from __future__ import annotations

import dataclasses
import itertools
import math

import torch

from optable import Entry

nan, inf = math.nan, math.inf
HALF_AND_FULL = (torch.float16, torch.float32, torch.float64)
BF16 = (torch.bfloat16,)  # bfloat16 exports natively from opset 13 (Cast)
# both integer-valued and not, dividing exactly (a float64 opset-9 remainder is exact for these)
VALUES = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 3.0, -3.0, 0.5, -7.0, inf, -inf, nan]
NUMBERS = [0.0, -0.0, 2.0, -2.5, inf, -inf, nan]


def pairs(dtype):
    """Every pair of VALUES, as two tensors."""
    a, b = zip(*itertools.product(VALUES, VALUES))
    return torch.tensor(a, dtype=dtype), torch.tensor(b, dtype=dtype)


def inexact_pairs(dtype):
    """Divisors no float holds exactly, whose quotients sit next to whole numbers: 1 // 0.1 is 9.0 (fmod(1, 0.1)
    is 0.09999...), where Floor(1 / 0.1) is 10.0."""
    a, b = zip(*itertools.product([1.0, -1.0, 2.5, -2.5, 3.0, 0.5, 7.0, -0.0], [0.1, -0.1, 0.3, -0.7]))
    return torch.tensor(a, dtype=dtype), torch.tensor(b, dtype=dtype)


def half_quotients(dtype):
    """Quotients up to thousands, where half arithmetic rounds its steps' results by whole numbers."""
    return (torch.randn(4096) * 50).to(dtype), torch.randn(4096).to(dtype)


def floor(a, b):
    return torch.div(a, b, rounding_mode="floor")


def trunc(a, b):
    return torch.div(a, b, rounding_mode="trunc")


def by_numbers(numbers):
    """Each division of a tensor by each number, and of each number by the tensor. A half tensor divides by
    a number in float32 with the number unrounded (floor and trunc), and by a half number otherwise."""
    def fn(a, b):
        return tuple(out for s in numbers for out in (
            floor(a, s), trunc(a, s), a // s, torch.remainder(a, s), torch.fmod(a, s), torch.remainder(s, a), s // a))
    return fn


def on_every_dtype(entry: Entry) -> list[Entry]:
    """entry at float16, float32 and float64 at its opsets, and at bfloat16 from opset 13."""
    return [dataclasses.replace(entry, dtypes=HALF_AND_FULL),
            dataclasses.replace(entry, dtypes=BF16, opsets=tuple(sorted({max(o, 13) for o in entry.opsets})))]


DIVISION = ("aten::div.Tensor_mode",)
REMAINDERS = ("aten::remainder.Tensor", "aten::fmod.Tensor")
SCALARS = ("aten::div.Tensor_mode", "aten::floor_divide.default", "aten::remainder.Scalar", "aten::fmod.Scalar",
           "aten::remainder.Scalar_Tensor")

OPSETS = (9, 13, 18)


def inexact(a, b):
    """Tensor by tensor and by numbers no float holds exactly."""
    return (floor(a, b), trunc(a, b), torch.remainder(a, b), torch.fmod(a, b)) + by_numbers([0.1, -0.3])(a, b)


ENTRIES = [
    Entry("floor_divide", lambda a, b: (floor(a, b), torch.floor_divide(a, b)), [pairs], opsets=OPSETS,
          keys=DIVISION + ("aten::floor_divide.default",), signed_zeros=True),
    Entry("div_trunc", trunc, [pairs], opsets=OPSETS, keys=DIVISION, signed_zeros=True),
    Entry("remainder_fmod", lambda a, b: (torch.remainder(a, b), torch.fmod(a, b)), [pairs], opsets=OPSETS,
          keys=REMAINDERS, signed_zeros=True),
    Entry("by_numbers", by_numbers(NUMBERS), [pairs], opsets=OPSETS, keys=SCALARS, signed_zeros=True),
    Entry("inexact", inexact, [inexact_pairs], opsets=(13, 18), keys=DIVISION + REMAINDERS + SCALARS,
          signed_zeros=True),
    # what reads a quotient or remainder: atan2 of 0/0's NaN over a zero is NaN, no quarter turn (fuzz_models
    # seed 96000000, program 96000193), of a -0 quotient -0 or -pi, and atan2(+-inf, +-inf) an odd multiple of
    # pi/4
    Entry("atan2_of_quotients", lambda a, b: (torch.atan2(floor(a, b), b), torch.atan2(b, floor(a, b)),
                                              torch.atan2(trunc(a, b), a),
                                              torch.atan2(torch.remainder(a, b), torch.fmod(a, b)),
                                              torch.atan2(a, b), torch.atan2(a // 0.0, a), torch.atan2(a // -inf, a)),
          [pairs], opsets=OPSETS, keys=DIVISION + REMAINDERS + ("aten::atan2.default", "aten::floor_divide.default"),
          signed_zeros=True),
    Entry("comparisons_of_quotients", lambda a, b: (floor(a, b) > 0, floor(a, b) == a, torch.remainder(a, b) <= 0,
                                                    torch.fmod(a, b) != b, trunc(a, b) < floor(a, b),
                                                    torch.isnan(a // b), torch.isinf(torch.fmod(a, b)),
                                                    torch.signbit(floor(a, b)) & ~torch.isnan(floor(a, b))),
          [pairs], opsets=OPSETS, keys=DIVISION + REMAINDERS + ("aten::floor_divide.default", "aten::signbit.default")),
    Entry("sign_reciprocal_of_quotients", lambda a, b: (torch.sign(floor(a, b)), torch.sign(torch.fmod(a, b)),
                                                        1 / floor(a, b), 1 / trunc(a, b), 1 / torch.remainder(a, b),
                                                        1 / torch.fmod(a, b)),
          [pairs], opsets=OPSETS, keys=DIVISION + REMAINDERS, signed_zeros=True),
    # a half tensor by a half tensor divides in half arithmetic, each step rounded, and by one value (a tensor of
    # one element) in float32, rounded once (-24.64 // 0.01239 is -1988 for the first, -1989 for the second); a
    # quotient's parity shows a unit's difference beyond the tolerance
    Entry("half_quotients", lambda a, b: tuple(out for q in (floor(a, b), trunc(a, b), floor(a, b[:1]), trunc(a, b[0]),
                                                             floor(a[0], b))
                                               for out in (q, torch.fmod(q, 2))),
          [half_quotients], opsets=OPSETS, keys=DIVISION + ("aten::fmod.Scalar",)),
    # zeros' signs not compared: onnxruntime's Where gives +0.0 for a -0.0 it picks from its first branch, a
    # known onnxruntime deviation (aten2onnx.testing.models._ORT_NONFINITE); NaN and infinities are
    Entry("where_of_quotients", lambda a, b: torch.where(trunc(a, b) < 1, floor(a, b), torch.fmod(a, b)), [pairs],
          opsets=OPSETS, keys=DIVISION + ("aten::fmod.Tensor", "aten::where.self")),
]

TABLE = [entry for e in ENTRIES for entry in on_every_dtype(e)] + [
    # without Mod (before opset 10) the remainder is a - trunc(a / b) * b, computed in float64 for narrower floats
    Entry("inexact_before_mod", inexact, [inexact_pairs], (torch.float16, torch.float32), opsets=(9,),
          keys=DIVISION + REMAINDERS + SCALARS, signed_zeros=True),
    Entry("inexact_before_mod_float64", inexact, [inexact_pairs], (torch.float64,), opsets=(9,),
          keys=DIVISION + REMAINDERS + SCALARS, signed_zeros=True).xfail(
        "no Mod before opset 10: a - trunc(a / b) * b, whose float64 product n * b rounds (fmod(1, 0.1) is 0, "
        "1 // 0.1 is 10); narrower floats compute it in float64, where it is exact"),
]
