"""Run ONNX's own node conformance cases (onnx.backend.test.case.node) through aten2onnx.runtime.

    python scripts/conformance.py                    # all ~1884 cases: pass rate overall and per op
    python scripts/conformance.py --ops Add,MatMul   # only these ops (expanded function variants included)
    python scripts/conformance.py --limit 100 -v     # the first 100 cases, printing each failure

Outputs are compared as ONNX's backend tests compare them (onnx.backend.test.runner's assert_similar_outputs):
same element type and shape, and values within the case's own tolerances (rtol=1e-3, atol=1e-7 by default;
bfloat16 at least rtol=2^-6, two of its ULPs, as ONNX's runner allows), NaN equal to NaN. The runtime holds the
types torch lacks widened (int4 as int8, float4e2m1 as float32: runtime.kernel.SUB_BYTE), so such an output must
also be a value of its ONNX type (an int4 output of 9 is wrong even where int8 is the dtype). A model the runtime
refuses at session creation (InvalidModelError) is a failure, reported under the reason's category.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import io
import re
import signal
import sys
import time
import warnings
from typing import Any

import numpy as np
import onnx
import torch

from aten2onnx.errors import InvalidInputError, InvalidModelError, KernelError
from aten2onnx.runtime import InferenceSession
from aten2onnx.runtime.kernel import SUB_BYTE, from_numpy, tensor_from_proto, to_numpy

CASE_TIME_LIMIT_S = 20

# Ops whose outputs are random: only dtype and shape are compared, since values cannot match the
# generator that wrote the expected data. (ONNX's runner has no such exception and compares values,
# which no runtime but the one that generated the data can pass; onnxruntime skips these cases.)
RANDOM_OPS = frozenset({"Bernoulli", "RandomUniform", "RandomUniformLike", "RandomNormal", "RandomNormalLike",
                        "Multinomial"})

class Unsupported(Exception):
    """A case's data has a type this harness cannot hand to torch (maps, ...)."""


@dataclasses.dataclass
class Case:
    name: str
    op: str
    model: onnx.ModelProto
    data_sets: list
    rtol: float
    atol: float


@dataclasses.dataclass
class Result:
    case: Case
    passed: bool
    category: str  # "pass", or why not: "refused: ...", "bad input", "kernel error", "mismatch", ...
    detail: str = ""


def load_cases(ops: set[str] | None = None) -> list[Case]:
    """ONNX's node test cases, each tagged with the op it tests (expanded function variants too)."""
    import onnx.backend.test.case.node as node_cases

    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        np.seterr(all="ignore")
        raw = node_cases.collect_testcases()
    tested = node_cases._existing_names  # case name -> the NodeProto it was generated from
    cases = []
    for c in raw:
        node = tested.get(c.name) or tested.get(re.sub(r"_expanded.*$", "", c.name))
        op = node.op_type if node is not None else c.model.graph.node[0].op_type
        if ops is None or op in ops:
            cases.append(Case(c.name, op, c.model, c.data_sets, c.rtol, c.atol))
    return cases


def to_torch(value: Any) -> Any:
    """A case's input or expected output as the runtime holds it (see runtime.kernel.from_numpy)."""
    if value is None:
        return None
    if isinstance(value, onnx.TensorProto):
        try:
            return tensor_from_proto(value)
        except TypeError as e:  # an element type torch has no dtype for (float8e8m0, float6...)
            raise Unsupported(str(e)) from e
    if isinstance(value, (list, tuple)):
        return [to_torch(v) for v in value]
    if isinstance(value, dict):
        raise Unsupported("map values")
    array = np.asarray(value)
    try:
        return from_numpy(array)
    except TypeError as e:
        raise Unsupported(f"data of numpy dtype {array.dtype}") from e


def elem_type(value: Any) -> int | None:
    """The ONNX element type of a case's value (None: not a tensor, or one without a type)."""
    if isinstance(value, onnx.TensorProto):
        return value.data_type
    if isinstance(value, np.ndarray):
        try:
            return onnx.helper.np_dtype_to_tensor_dtype(value.dtype)
        except (KeyError, TypeError, ValueError):
            return None
    return None


def mismatch(expected: Any, actual: Any, rtol: float, atol: float, elem: Any = None) -> str | None:
    """Why actual differs from expected, or None when it matches. elem: the expected value's ONNX element type
    (a list of them for a sequence), which a value held widened must be a value of."""
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return f"expected a sequence of {len(expected)}, got {type(actual).__name__}"
        elems = elem if isinstance(elem, list) else [None] * len(expected)
        for e, a, t in zip(expected, actual, elems):
            why = mismatch(e, a, rtol, atol, t)
            if why:
                return why
        return None
    if expected is None or actual is None:
        return None if expected is actual else f"expected {type(expected).__name__}, got {type(actual).__name__}"
    if isinstance(expected, np.ndarray):  # strings
        if not isinstance(actual, np.ndarray):
            return f"expected a string tensor, got {type(actual).__name__}"
        if actual.shape != expected.shape:
            return f"shape {actual.shape}, expected {expected.shape}"
        same = [a == e for a, e in zip(actual.reshape(-1).tolist(), expected.reshape(-1).tolist())]
        return None if all(same) else f"{same.count(False)}/{len(same)} strings differ"
    if not isinstance(actual, torch.Tensor):
        return f"expected a tensor, got {type(actual).__name__}"
    if actual.dtype != expected.dtype:
        return f"dtype {actual.dtype}, expected {expected.dtype}"
    if tuple(actual.shape) != tuple(expected.shape):
        return f"shape {tuple(actual.shape)}, expected {tuple(expected.shape)}"
    a, e = actual.detach().cpu(), expected
    if elem in SUB_BYTE:
        narrow = from_numpy(to_numpy(a, elem))  # through the ONNX type's ml_dtypes array and back
        kept = (narrow == a) | (narrow.isnan() & a.isnan()) if a.dtype.is_floating_point else narrow == a
        if not bool(kept.all()):
            name = onnx.TensorProto.DataType.Name(elem)
            return f"{int((~kept).sum())}/{kept.numel()} values are not {name} values (held as {a.dtype})"
    if a.dtype == torch.bfloat16:
        rtol = max(rtol, 2 ** -6)
    if a.dtype.is_floating_point or a.dtype.is_complex:
        a64, e64 = a.to(torch.complex128 if a.dtype.is_complex else torch.float64), e.to(
            torch.complex128 if e.dtype.is_complex else torch.float64)
        close = torch.isclose(a64, e64, rtol=rtol, atol=atol, equal_nan=True)
    else:
        close = a == e
    if bool(close.all()):
        return None
    bad = int((~close).sum())
    if a.dtype.is_floating_point:
        diff = (a.to(torch.float64) - e.to(torch.float64)).abs()
        diff = diff[~close & ~diff.isnan()]
        worst = f", max abs diff {float(diff.max()):.3g}" if diff.numel() else ""
    else:
        worst = ""
    return f"{bad}/{close.numel()} values differ{worst}"


def _refusal_category(message: str) -> str:
    if "is newer than the newest" in message:
        return "refused: opset newer than MAX_OPSET"
    if "has no kernel" in message or "is not supported; kernels exist" in message:
        return "refused: no kernel"
    if "bad attributes" in message:
        return "refused: bad attributes"
    return "refused: other"


class _Timeout(Exception):
    pass


def _on_alarm(signum, frame):
    raise _Timeout()


def run_case(case: Case) -> Result:
    try:
        session = InferenceSession(case.model)
    except InvalidModelError as e:
        return Result(case, False, _refusal_category(str(e)), str(e))
    except Exception as e:  # a bug in the runtime, not a refusal
        return Result(case, False, "session crash", f"{type(e).__name__}: {e}")
    input_names = [i.name for i in case.model.graph.input]
    output_names = [o.name for o in case.model.graph.output]
    for inputs, outputs in case.data_sets:
        try:
            feeds = {name: to_torch(v) for name, v in zip(input_names, inputs)}
            expected = [to_torch(v) for v in outputs]
            elems = [[elem_type(x) for x in v] if isinstance(v, (list, tuple)) else elem_type(v) for v in outputs]
        except Unsupported as e:
            return Result(case, False, "unsupported data", str(e))
        try:
            actual = session.run_torch(feeds, output_names[:len(expected)])
        except InvalidInputError as e:
            return Result(case, False, "input refused", str(e))
        except KernelError as e:
            return Result(case, False, "kernel error", str(e))
        except _Timeout:
            raise
        except Exception as e:
            return Result(case, False, "run crash", f"{type(e).__name__}: {e}")
        for name, want, elem in zip(output_names, expected, elems):
            got = actual[name]
            if case.op in RANDOM_OPS and isinstance(want, torch.Tensor) and isinstance(got, torch.Tensor):
                want, got = want.new_zeros(want.shape), got.new_zeros(got.shape)  # dtype and shape only
            why = mismatch(want, got, case.rtol, case.atol, elem)
            if why:
                return Result(case, False, "mismatch", f"output {name!r}: {why}")
    return Result(case, True, "pass")


def run_cases(cases: list[Case], verbose: bool = False) -> list[Result]:
    results = []
    use_alarm = hasattr(signal, "SIGALRM")
    if use_alarm:
        previous = signal.signal(signal.SIGALRM, _on_alarm)
    try:
        for case in cases:
            if use_alarm:
                signal.alarm(CASE_TIME_LIMIT_S)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    result = run_case(case)
            except _Timeout:
                result = Result(case, False, "timeout", f"over {CASE_TIME_LIMIT_S} s")
            finally:
                if use_alarm:
                    signal.alarm(0)
            if verbose and not result.passed:
                print(f"FAIL {case.name} [{case.op}] {result.category}: {result.detail[:300]}")
            results.append(result)
    finally:
        if use_alarm:
            signal.signal(signal.SIGALRM, previous)
    return results


def report(results: list[Result]) -> None:
    from aten2onnx.runtime.ops import MAX_OPSET

    total = len(results)
    passed = sum(r.passed for r in results)
    print(f"\n{passed}/{total} passed ({100 * passed / max(total, 1):.1f}%)")
    in_range = [r for r in results if r.category != "refused: opset newer than MAX_OPSET"]
    in_passed = sum(r.passed for r in in_range)
    print(f"{in_passed}/{len(in_range)} passed ({100 * in_passed / max(len(in_range), 1):.1f}%) among cases "
          f"at opset <= MAX_OPSET ({MAX_OPSET})")
    print("\nfailures by category:")
    for category, n in collections.Counter(r.category for r in results if not r.passed).most_common():
        print(f"  {n:5d}  {category}")
    per_op: dict[str, list[Result]] = collections.defaultdict(list)
    for r in results:
        per_op[r.case.op].append(r)
    print("\nper op (passed/total), worst first:")
    rows = sorted(per_op.items(), key=lambda kv: (sum(r.passed for r in kv[1]) - len(kv[1]), kv[0]))
    for op, rs in rows:
        ok = sum(r.passed for r in rs)
        why = collections.Counter(r.category for r in rs if not r.passed).most_common(2)
        note = "" if ok == len(rs) else "  " + ", ".join(f"{c} x{n}" for c, n in why)
        print(f"  {op:32s} {ok:4d}/{len(rs):<4d}{note}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", help="comma-separated op types to run (default: all)")
    parser.add_argument("--limit", type=int, help="run at most this many cases")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every failure")
    args = parser.parse_args(argv)
    torch.set_num_threads(max(1, min(torch.get_num_threads(), 2)))
    start = time.perf_counter()
    cases = load_cases(set(args.ops.split(",")) if args.ops else None)
    if args.limit is not None:
        cases = cases[:args.limit]
    results = run_cases(cases, verbose=args.verbose)
    report(results)
    print(f"\n{len(cases)} cases in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
