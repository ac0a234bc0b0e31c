"""Sweep PyTorch's OpInfo database through aten2onnx: export each sample at several opsets, run it in
onnxruntime and in aten2onnx.runtime, and compare with eager.

    python scripts/opinfo_sweep.py                       # float32, 2 samples, opsets 9 13 17 18 26
    python scripts/opinfo_sweep.py --ops add,sub --opsets 18 --samples 4 --json sweep.json -v
    python scripts/opinfo_sweep.py --dynamic --opsets 18   # every dim of every input symbolic (Dim.AUTO)
    python scripts/opinfo_sweep.py --differential          # the graph optimizer's own mismatches: "optimizer: ..."
    python scripts/opinfo_sweep.py --dtypes float16,int32,bool --opsets 18 --samples 1 --json sweep.json
                                                         # one table (and sweep.<dtype>.json) per dtype
    python scripts/opinfo_sweep.py --dtypes all          # every dtype in ALL_DTYPES
    python scripts/opinfo_sweep.py --dtypes float16 --opsets 18 --samples 1 --jobs 1 --record docs/coverage/sweep.json
                                                         # merge the result per dtype x opset into the file
                                                         # scripts/gen_operators.py renders in docs/operators.md

Each listed dtype is swept on its own, over the OpInfos that support it on CPU; float32, the default,
also takes OpInfos without float32 support at their first of int64, int32, bool, float64 (the float32
sweep's historical population). Outputs are compared with torch.testing.assert_close's default
tolerances for their dtype (integers and bools exactly), except float32 and complex64, which keep
the looser (1e-4, 1e-5) that onnxruntime's kernels need.

Where torch leaves the order of equal values unspecified (sort and argsort without stable=True, topk,
kthvalue, median, nanmedian, mode: eager's CPU kernels use an unstable sort, so among equal values its
indices are not reproducible by any other implementation), an index output that differs from eager's
passes if it picks equal values of the input (x.gather(dim, indices) equal to eager's); such OpInfos are
counted as "ties" in the summary (TIE_ORDER).

Each OpInfo is classified per opset as native (every sample passes in onnxruntime and our runtime
with no ATen fallback node), fallback (passes only counting ATen nodes run in our runtime), or fail
(with a reason category). Random ops and ops with nondeterministic output are skipped.

With --dynamic, each sample is captured with every dim of every input Dim.AUTO (torch.export keeps
symbolic the dims it can), and checked on the sample and, where eager takes it, on a second size: every
symbolic dim one larger (dims sharing a symbol alike), the added entries near copies of the last ones, so
the values stay in the op's domain; a failure there is reported as "second size: <category>".
"""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing
import os
import signal
import sys
import time
import traceback
import warnings
from typing import Any

DEFAULT_OPSETS = [9, 13, 17, 18, 26]
ALL_DTYPES = ("float16", "bfloat16", "float64", "int8", "int16", "int32", "int64", "uint8", "bool",
              "complex64", "complex128")
# (rtol, atol) for outputs of these dtypes; every other dtype takes torch.testing.assert_close's
# defaults (float16 1e-3/1e-5, bfloat16 1.6e-2/1e-5, float64 1e-7/1e-7, integers and bool exact).
TOLERANCES = {"float32": (1e-4, 1e-5), "complex64": (1e-4, 1e-5)}
# OpInfos whose outputs are uninitialized memory or random draws under a fixed seed check.
SKIP_NAMES = ("empty", "new_empty", "empty_like", "empty_strided", "new_empty_strided", "empty_permuted",
              "bernoulli", "multinomial", "normal", "rand", "randn", "randint", "rand_like", "randn_like",
              "randint_like", "uniform", "exponential", "geometric", "cauchy", "log_normal",
              # random in their samples: rrelu and fractional pooling draw noise when training, and
              # multi_head_attention_forward's sample trains with dropout
              "nn.functional.rrelu", "nn.functional.fractional_max_pool2d", "nn.functional.fractional_max_pool3d",
              "nn.functional.multi_head_attention_forward",
              # draw random projections inside (randn): the graph draws its own
              "pca_lowrank", "svd_lowrank")
STATUSES = ("native", "fallback", "fail")


def opinfo_name(op) -> str:
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


def is_skipped(op) -> str | None:
    if op.name in SKIP_NAMES or op.name.startswith(("empty", "new_empty")) or "rand" in op.name.split(".")[-1]:
        return "random or uninitialized output"
    if getattr(op, "has_nondeterministic_output", False):
        return "nondeterministic output"
    if "dropout" in op.name or "alpha_dropout" in op.name:
        return "random (training-mode dropout)"
    return None


# -- one sample as a function of its tensors ---------------------------------------------------------


def flatten_sample(sample) -> tuple[list, Any]:
    """The sample's tensors (list leaves included), and a spec to rebuild (input, args, kwargs)."""
    import torch.utils._pytree as pytree

    leaves, spec = pytree.tree_flatten((sample.input, tuple(sample.args), dict(sample.kwargs)))
    return leaves, spec


def make_module(op, leaves: list, spec):
    import torch
    import torch.utils._pytree as pytree

    positions = [i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]
    constants = list(leaves)

    class Sample(torch.nn.Module):
        def forward(self, *tensors):
            values = list(constants)
            for i, t in zip(positions, tensors):
                values[i] = t
            inp, args, kwargs = pytree.tree_unflatten(values, spec)
            return op.op(inp, *args, **kwargs)

    return Sample(), [leaves[i] for i in positions]


def every_dim_symbolic(inputs: list) -> tuple:
    """dynamic_shapes for Sample.forward(*tensors): every dim of every input Dim.AUTO (None for no inputs)."""
    from torch.export import Dim

    return (tuple({d: Dim.AUTO for d in range(t.dim())} for t in inputs),) if inputs else None


def second_size(ep, inputs: list) -> list | None:
    """The inputs with every symbolic dim of the captured program one larger (dims sharing a symbol alike),
    the added entries copies of the last ones along that dim (floats scaled by up to 1%, so no tie is made);
    None when no dim is symbolic."""
    import torch

    names = set(ep.graph_signature.user_inputs)
    vals = [n.meta.get("val") for n in ep.graph.nodes if n.op == "placeholder" and n.name in names]
    if len(vals) != len(inputs):
        return None
    grown, changed = [], False
    for t, val in zip(inputs, vals):
        if not isinstance(val, torch.Tensor):
            grown.append(t)
            continue
        for dim, size in enumerate(val.shape):
            if not isinstance(size, torch.SymInt):
                continue
            if not size.node.expr.is_symbol or t.shape[dim] == 0:
                return None
            copy = t.narrow(dim, t.shape[dim] - 1, 1)
            if copy.dtype.is_floating_point:  # not equal to the last (a tie makes sort's order ambiguous)
                generator = torch.Generator().manual_seed(dim)
                copy = copy * (1 + 0.01 * torch.rand(copy.shape, generator=generator, dtype=copy.dtype))
            t = torch.cat([t, copy], dim)
            changed = True
        grown.append(t)
    return grown if changed else None


def tensors_of(out) -> list:
    import torch
    import torch.utils._pytree as pytree

    leaves = pytree.tree_leaves(out)
    # a Python float is a double (the graph carries it as one)
    return [t if isinstance(t, torch.Tensor) else torch.tensor(t, dtype=torch.float64 if isinstance(t, float) else None)
            for t in leaves if isinstance(t, (torch.Tensor, bool, int, float))]


def tolerance(dtype, sweep_dtype: str) -> tuple:
    """(rtol, atol) for an output of `dtype` in the sweep of `sweep_dtype`: (None, None) is
    assert_close's default for the dtype. A float32 sweep's other floating outputs (a float64 number,
    a float16 cast) keep at least float32's tolerance, as they always had."""
    import torch
    from torch.testing._comparison import default_tolerances

    name = str(dtype).split(".")[1]
    if name in TOLERANCES:
        return TOLERANCES[name]
    if sweep_dtype in TOLERANCES and (dtype.is_floating_point or dtype.is_complex):
        r, a = TOLERANCES[sweep_dtype]
        dr, da = default_tolerances(torch.empty(0, dtype=dtype))
        return max(r, dr), max(a, da)
    return None, None


# OpInfo name -> (where its dim argument is: (position in args, keyword, default), the outputs that are indices
# along it) for the ops whose order among equal values torch leaves unspecified (see the module docstring).
TIE_ORDER = {"sort": ((0, "dim", -1), (1,)), "argsort": ((0, "dim", -1), (0,)), "topk": ((1, "dim", -1), (1,)),
             "kthvalue": ((1, "dim", -1), (1,)), "median": ((0, "dim", None), (1,)),
             "nanmedian": ((0, "dim", None), (1,)), "mode": ((0, "dim", -1), (1,))}


def tie_rule(op, sample) -> tuple[int, tuple[int, ...]] | None:
    """(dim, index output positions) when the sample's index outputs may order equal values as they like
    (TIE_ORDER, and for sort/argsort not stable=True); the input is the sample's first tensor."""
    import torch

    entry = TIE_ORDER.get(opinfo_name(op))
    if entry is None or not isinstance(sample.input, torch.Tensor) or sample.input.dim() == 0:
        return None
    (position, keyword, default), outputs = entry
    if sample.kwargs.get("stable"):
        return None
    dim = sample.args[position] if len(sample.args) > position else sample.kwargs.get(keyword, default)
    return None if dim is None else (dim, outputs)


def compare(got: list, want: list, dtype_name: str, ties: tuple | None = None) -> bool:
    """Each output against eager's within tolerance(output dtype, dtype_name), NaN equal to NaN. With
    ties = (x, dim, index output positions), an index output that differs from eager's passes if it picks
    values of x equal to those eager's picks; returns whether that was needed."""
    import torch

    if len(got) != len(want):
        raise AssertionError(f"{len(got)} outputs, eager has {len(want)}")
    by_value = False
    for i, (g, w) in enumerate(zip(got, want)):
        g = torch.as_tensor(g)
        g = g.reshape(w.shape) if g.numel() == w.numel() and g.shape != w.shape and g.dim() == 0 else g
        rtol, atol = tolerance(w.dtype, dtype_name)
        if ties is not None and i in ties[2] and g.shape == w.shape and not torch.equal(g, w):
            x, dim = ties[0], ties[1]
            picked = [x.gather(dim, t.unsqueeze(dim) if t.dim() < x.dim() else t) for t in (g, w)]
            if not same_values(*picked):
                raise AssertionError(f"output {i}: indices of different values than eager's")
            by_value = True
            continue
        torch.testing.assert_close(g, w, rtol=rtol, atol=atol, equal_nan=True)
    return by_value


def same_values(a, b) -> bool:
    """Equal shapes and values, NaN equal to NaN (complex32 compared as complex64)."""
    import torch

    if a.dtype == torch.complex32:
        a, b = a.to(torch.complex64), b.to(torch.complex64)
    return a.shape == b.shape and torch.equal(a.nan_to_num(), b.nan_to_num())


class Failure(Exception):
    def __init__(self, category: str, detail: str) -> None:
        super().__init__(f"{category}: {detail}")
        self.category = category
        self.detail = detail


def short(e: BaseException, n: int = 600) -> str:
    text = f"{type(e).__name__}: {e}".replace("\n", " ")
    return text[:n]


def run_exact(ep, inputs: list, expected: list, opset: int) -> tuple[bool, list[str], bool]:
    """(native, fallback ops, bitwise) for one sample exported with exact=True and run by
    ExportedModel's own session (as `exported.run` runs it), or Failure."""
    import torch

    import aten2onnx

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exported = aten2onnx.export(ep, tuple(inputs), opset=opset, fallback="aten", exact=True)
    except Exception as e:
        raise Failure("export error", short(e)) from e
    feeds = dict(zip(exported.input_names, [t.clone() for t in inputs]))  # a run writes inputs the op writes
    try:
        session = exported.session()
        torch.manual_seed(0)
        with torch.no_grad():
            got = session.run_torch(exported.carried_inputs(feeds))
        got = carried_outputs(exported, [got[name] for name in exported.output_names])
    except Exception as e:
        raise Failure("runtime error", short(e)) from e
    got = [torch.as_tensor(g) for g in got]
    bitwise = len(got) == len(expected) and all(
        g.dtype == w.dtype and same_values(g.reshape(w.shape) if g.numel() == w.numel() else g, w)
        for g, w in zip(got, expected))
    return not exported.fallback_ops, list(exported.fallback_ops), bitwise


def run_sample(ep, inputs: list, expected: list, opset: int, dtype_name: str,
               more: list[tuple[list, list]] = (), ties: tuple | None = None,
               differential: bool = False) -> tuple[bool, list[str], str | None, bool]:
    """(native, fallback ops, the node onnxruntime has no CPU kernel for or None, whether an index output
    passed only by the values it picks) for one sample at one opset, or Failure. more: other (inputs,
    expected) the same export is checked on (a second size), a failure there in a category "second size:
    ...". ties: (dim, index output positions) of tie_rule, the input being the first. bfloat16 is judged
    in our runtime: onnxruntime only loads the model. differential: the graph as translated
    (optimize=False) is checked first; where it passes and the optimized export fails, the failure's
    category reads "optimizer: ..." (a mismatch the graph optimizer made)."""
    if differential:
        _run_sample(ep, inputs, expected, opset, dtype_name, more, ties, optimize=False)
        try:
            return _run_sample(ep, inputs, expected, opset, dtype_name, more, ties)
        except Failure as f:
            f.category = f"optimizer: {f.category}"
            raise
    return _run_sample(ep, inputs, expected, opset, dtype_name, more, ties)


def _run_sample(ep, inputs: list, expected: list, opset: int, dtype_name: str, more: list[tuple[list, list]],
                ties: tuple | None, optimize: bool = True) -> tuple[bool, list[str], str | None, bool]:
    import aten2onnx

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exported = aten2onnx.export(ep, tuple(inputs), opset=opset, fallback="aten", optimize=optimize)
    except Exception as e:
        raise Failure("export error", short(e)) from e
    fallback = list(exported.fallback_ops)
    native, missing, by_value = True, None, False
    for k, (given, wanted) in enumerate([(inputs, expected), *more]):
        try:
            native, gap, tied = _check_export(exported, given, wanted, dtype_name,
                                              None if ties is None else (given[0], *ties))
        except Failure as f:
            if k:
                f.category = f"second size: {f.category}"
            raise
        missing = missing or gap
        by_value = by_value or tied
    return native, fallback, missing, by_value


def _check_export(exported, inputs: list, expected: list, dtype_name: str,
                  ties: tuple | None = None) -> tuple[bool, str | None, bool]:
    """(whether exported runs inputs natively (else it has fallback nodes), the node onnxruntime has no
    CPU kernel for or None, whether an index output passed by the values it picks (compare's ties)), its
    results matching expected in aten2onnx.runtime and, when native and onnxruntime has the kernels,
    onnxruntime; Failure otherwise."""
    import onnxruntime as ort
    import torch

    from aten2onnx.runtime import InferenceSession

    fallback = list(exported.fallback_ops)
    proto = exported.model_proto
    feeds = dict(zip(exported.input_names, inputs))
    try:
        # The export's own fallback namespaces are trusted, as ExportedModel.run trusts them.
        namespaces = tuple(sorted({"aten"} | {op.split("::", 1)[0] for op in fallback}))
        session = InferenceSession(proto, allowed_aten_namespaces=namespaces)
        # complex inputs and outputs travel as real pairs (a trailing axis of 2)
        got = session.run_torch(exported.carried_inputs(feeds))
        got = carried_outputs(exported, [got[name] for name in exported.output_names])
    except Exception as e:
        raise Failure("runtime error", short(e)) from e
    try:
        tied = compare(got, expected, dtype_name, ties)
    except Exception as e:
        raise Failure("runtime mismatch", short(e)) from e
    if fallback:
        return False, None, tied
    options = ort.SessionOptions()
    options.log_severity_level = 4
    options.intra_op_num_threads = 1
    try:
        sess = ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
    except Exception as e:
        missing = ort_missing_kernel(e)
        if missing:
            return True, missing, tied  # judged by our runtime; onnxruntime's CPU build lacks a kernel
        raise Failure("ORT error", short(e)) from e
    if any(t.dtype == torch.bfloat16 for t in list(feeds.values()) + list(expected) if isinstance(t, torch.Tensor)):
        return True, None, tied  # onnxruntime's Python API cannot pass bfloat16 tensors; judged by our runtime
    try:
        names = {i.name for i in sess.get_inputs()}
        # only the user outputs: the model also returns the new values of inputs it writes
        got = sess.run(list(exported.output_names),
                       exported.carried_inputs({k: v.detach().resolve_conj().resolve_neg().numpy()
                                                for k, v in feeds.items() if k in names}))
        got = carried_outputs(exported, got)
    except Exception as e:
        missing = ort_missing_kernel(e)
        if missing:
            return True, missing, tied
        raise Failure("ORT error", short(e)) from e
    try:
        tied = compare([torch.as_tensor(x) for x in got], expected, dtype_name, ties) or tied
    except Exception as e:
        raise Failure("ORT mismatch", short(e)) from e
    return True, None, tied


def ort_missing_kernel(e: BaseException) -> str | None:
    """'Op(version)' when onnxruntime refused the model for want of a CPU kernel (ort_gaps.py's kind
    of gap: not our failure, judged by our runtime), else None."""
    import re

    m = re.search(r"Could not find an implementation for (\S+\(\d+\))", str(e))
    return m.group(1) if m else None


def carried_outputs(exported, outputs: list) -> list:
    """Outputs in output_names order with complex ones (carried as real pairs) made complex again."""
    import torch

    from aten2onnx import _dtypes

    return [_dtypes.from_pairs(torch.as_tensor(x)) if name in exported.complex_outputs else x
            for name, x in zip(exported.output_names, outputs)]


def pick_dtypes(op, wanted: list[str]) -> list:
    """The first of `wanted` the OpInfo supports on CPU; with none, and float32 wanted, its first of
    int64, int32, bool, float64 (the float32 sweep's population); else none."""
    import torch

    supported = op.supported_dtypes("cpu")
    dtypes = [getattr(torch, d) for d in wanted if getattr(torch, d) in supported]
    if dtypes:
        return dtypes[:1]
    if "float32" not in wanted:
        return []
    for d in (torch.int64, torch.int32, torch.bool, torch.float64):
        if d in supported:
            return [d]
    return []


class Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise Timeout()


def sweep_op(task: tuple) -> dict:
    """Every sample x dtype x opset of one OpInfo; a dict for the report."""
    index, opsets, dtype_names, n_samples, timeout, *rest = task
    exact = bool(rest and rest[0])  # (the flags after the first five may be left out)
    dynamic = bool(len(rest) > 1 and rest[1])
    differential = bool(len(rest) > 2 and rest[2])
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    from aten2onnx.exporter.capture import capture

    torch.set_num_threads(1)
    op = op_db[index]
    name = opinfo_name(op)
    result: dict[str, Any] = {"name": name, "dtype": dtype_names[0], "opsets": {}}
    skip = is_skipped(op)
    if skip:
        result["skipped"] = skip
        return result
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout)
    start = time.time()
    per_opset: dict[int, dict] = {o: {"status": "native", "fallback_ops": set()} for o in opsets}
    if exact:
        for entry in per_opset.values():
            entry["bitwise"] = True

    def fail_all(category: str, detail: str) -> None:
        for o in opsets:
            entry = per_opset[o]
            if entry["status"] != "fail":
                entry.update(status="fail", category=category, detail=detail)

    try:
        dtypes = pick_dtypes(op, dtype_names)
        if not dtypes:
            result["skipped"] = "no supported dtype"
            return result
        if str(dtypes[0]).split(".")[1] != dtype_names[0]:
            result["ran_as"] = str(dtypes[0]).split(".")[1]
        samples_run = 0
        for dtype in dtypes:
            torch.manual_seed(0)
            samples = list(op.sample_inputs("cpu", dtype, requires_grad=False))[:n_samples]
            for sample in samples:
                leaves, spec = flatten_sample(sample)
                module, inputs = make_module(op, leaves, spec)
                try:
                    with torch.no_grad():
                        torch.manual_seed(0)
                        eager = tensors_of(module(*[t.clone() for t in inputs]))
                        torch.manual_seed(1)
                        again = tensors_of(module(*[t.clone() for t in inputs]))
                except Exception:
                    continue  # a sample eager itself rejects
                if not eager:
                    continue  # nothing to compare: the output has no tensors or numbers (an empty shape)
                if any(not same_values(a, b) for a, b in zip(eager, again) if a.layout == torch.strided):
                    result["skipped"] = "nondeterministic output"
                    return result
                if any(t.layout != torch.strided for t in eager + inputs):
                    fail_all("unsupported dtype", "sparse tensors")
                    continue
                samples_run += 1
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        # as aten2onnx.export captures
                        ep = capture(module, tuple(inputs), None, every_dim_symbolic(inputs) if dynamic else None)
                except Timeout:
                    raise
                except Exception as e:
                    fail_all("capture error", short(e))
                    continue
                more = []
                grown = second_size(ep, inputs) if dynamic else None
                if grown is not None:
                    try:
                        with torch.no_grad():
                            torch.manual_seed(0)
                            more.append((grown, tensors_of(module(*[t.clone() for t in grown]))))
                    except Exception:
                        pass  # the op does not take this size: checked on the sample only
                for opset in opsets:
                    entry = per_opset[opset]
                    if entry["status"] == "fail":
                        continue
                    try:
                        if exact:
                            native, fallback, bitwise = run_exact(ep, inputs, eager, opset)
                            entry["bitwise"] = entry["bitwise"] and bitwise
                        else:
                            native, fallback, missing, tied = run_sample(ep, inputs, eager, opset,
                                                                         str(dtype).split(".")[1], more,
                                                                         tie_rule(op, sample), differential)
                            if missing:
                                entry["ort_missing"] = missing
                            if tied:
                                entry["ties"] = True
                    except Timeout:
                        raise
                    except Failure as f:
                        entry.update(status="fail", category=f.category, detail=f.detail)
                        continue
                    except Exception as e:
                        entry.update(status="fail", category="sweep error", detail=short(e))
                        continue
                    if not native:
                        entry["status"] = "fallback"
                        entry["fallback_ops"].update(fallback)
        if samples_run == 0 and all(e["status"] != "fail" for e in per_opset.values()):
            result["skipped"] = "no sample eager accepts"
            return result
    except Timeout:
        fail_all("timeout", f"over {timeout}s")
    except Exception as e:
        fail_all("sweep error", short(e) + " " + traceback.format_exc()[-300:].replace("\n", " "))
    finally:
        signal.alarm(0)
    result["seconds"] = round(time.time() - start, 2)
    for o, entry in per_opset.items():
        entry["fallback_ops"] = sorted(entry["fallback_ops"])
        result["opsets"][str(o)] = entry
    return result


def summarize(results: list[dict], opsets: list[int], top: int) -> str:
    lines = []
    tested = [r for r in results if "skipped" not in r]
    lines.append(f"{len(results)} OpInfos, {len(results) - len(tested)} skipped, {len(tested)} tested")
    for o in opsets:
        counts = collections.Counter(r["opsets"][str(o)]["status"] for r in tested)
        n = len(tested) or 1
        native, fb, fail = counts["native"], counts["fallback"], counts["fail"]
        lines.append(f"opset {o:2d}: native {native}/{len(tested)} ({100 * native / n:.1f}%)  "
                     f"native+fallback {native + fb}/{len(tested)} ({100 * (native + fb) / n:.1f}%)  fail {fail}")
        no_kernel = sorted(f"{r['name']} ({r['opsets'][str(o)]['ort_missing']})" for r in tested
                           if r["opsets"][str(o)]["status"] == "native" and r["opsets"][str(o)].get("ort_missing"))
        if no_kernel:
            lines.append(f"          onnxruntime has no CPU kernel for {len(no_kernel)} of the {native} native "
                         f"(judged in our runtime; onnxruntime runs {native - len(no_kernel)}): " + ", ".join(no_kernel[:top])
                         + (" ..." if len(no_kernel) > top else ""))
        tied = sorted(r["name"] for r in tested if r["opsets"][str(o)]["status"] == "native"
                      and r["opsets"][str(o)].get("ties"))
        if tied:
            lines.append(f"          ties: {len(tied)} of the {native} native order equal values unlike eager "
                         f"(TIE_ORDER; indices of equal values): " + ", ".join(tied))
        if any("bitwise" in r["opsets"][str(o)] for r in tested):
            bitwise = [r for r in tested if r["opsets"][str(o)]["status"] == "native" and r["opsets"][str(o)]["bitwise"]]
            lines.append(f"          exact: bitwise {len(bitwise)} of the {native} native; not bitwise: " + ", ".join(
                r["name"] for r in tested if r["opsets"][str(o)]["status"] == "native"
                and not r["opsets"][str(o)]["bitwise"]))
    last = str(max(opsets))
    fallback_ops = collections.Counter(op for r in tested for op in r["opsets"][last].get("fallback_ops", []))
    if fallback_ops:
        lines.append(f"\nmost common fallback ops at opset {last}:")
        lines += [f"  {n:3d} {op}" for op, n in fallback_ops.most_common(top)]
    categories = collections.defaultdict(list)
    for r in tested:
        entry = r["opsets"][last]
        if entry["status"] == "fail":
            categories[entry["category"]].append(r["name"])
    if categories:
        lines.append(f"\nfailures at opset {last}:")
        for cat, names in sorted(categories.items(), key=lambda kv: -len(kv[1])):
            lines.append(f"  {cat} ({len(names)}): {', '.join(names[:top])}{' ...' if len(names) > top else ''}")
    lower = [o for o in opsets if str(o) != last]
    gaps = collections.Counter()
    for r in tested:
        for o in lower:
            if r["opsets"][str(o)]["status"] != "native" and r["opsets"][last]["status"] == "native":
                gaps[o] += 1
    if gaps:
        lines.append("\nnative at the newest opset but not at: " + ", ".join(f"opset {o}: {n}" for o, n in sorted(gaps.items())))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--opsets", default=",".join(map(str, DEFAULT_OPSETS)))
    parser.add_argument("--dtypes", default="float32")
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--ops", default="", help="comma-separated OpInfo names (name or name.variant); prefix match with a trailing *")
    parser.add_argument("--limit", type=int, default=0, help="only the first N OpInfos")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=int, default=120, help="seconds per OpInfo")
    parser.add_argument("--json", default="")
    parser.add_argument("--record", default="",
                        help="merge a compact result (counts and non-native OpInfos per dtype x opset, with the "
                             "command and date) into this JSON file, as docs/coverage/sweep.json is kept")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("-v", "--verbose", action="store_true", help="print every non-native result")
    parser.add_argument("--dynamic", action="store_true",
                        help="capture with every dim of every input Dim.AUTO; check on the sample and a second size")
    parser.add_argument("--exact", action="store_true",
                        help="export with exact=True and count the OpInfos whose outputs are bitwise equal to eager "
                             "in aten2onnx.runtime (onnxruntime is not run)")
    parser.add_argument("--differential", action="store_true",
                        help="also export each sample with optimize=False, checked first: a failure of the optimized "
                             "export where the graph as translated passes is counted as 'optimizer: ...'")
    args = parser.parse_args(argv)

    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    opsets = [int(o) for o in args.opsets.split(",")]
    wanted = [s for s in args.ops.split(",") if s]

    def selected(op) -> bool:
        if not wanted:
            return True
        name = opinfo_name(op)
        return any(name == w or op.name == w or (w.endswith("*") and name.startswith(w[:-1])) for w in wanted)

    indices = [i for i, op in enumerate(op_db) if selected(op)]
    if args.limit:
        indices = indices[:args.limit]
    dtype_names = list(ALL_DTYPES) if args.dtypes == "all" else [d for d in args.dtypes.split(",") if d]
    for d in dtype_names:
        if not isinstance(getattr(torch, d, None), torch.dtype):
            parser.error(f"--dtypes: {d!r} is not a torch dtype (use names such as float16,int32,bool, or all)")

    def supports(i: int, d: str) -> bool:  # float32 also takes OpInfos without it (pick_dtypes)
        return d == "float32" or getattr(torch, d) in op_db[i].supported_dtypes("cpu")

    tasks = [(i, opsets, [d], args.samples, args.timeout, args.exact, args.dynamic, args.differential)
             for d in dtype_names for i in indices if supports(i, d)]
    start = time.time()
    results = []
    if args.jobs > 1 and len(tasks) > 1:
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(args.jobs, maxtasksperchild=50) as pool:
            for r in pool.imap_unordered(sweep_op, tasks):
                results.append(r)
                report_one(r, args.verbose)
    else:
        for t in tasks:
            r = sweep_op(t)
            results.append(r)
            report_one(r, args.verbose)
    results.sort(key=lambda r: r["name"])
    by_dtype = {d: [r for r in results if r["dtype"] == d] for d in dtype_names}
    for d, rs in by_dtype.items():
        if len(dtype_names) > 1:
            print(f"\n== {d} ==")
        print(summarize(rs, opsets, args.top))
    print(f"\n{time.time() - start:.0f}s")
    if args.json:
        stem, ext = os.path.splitext(args.json)
        for d, rs in by_dtype.items():
            path = args.json if len(dtype_names) == 1 else f"{stem}.{d}{ext or '.json'}"
            with open(path, "w") as f:
                json.dump({"opsets": opsets, "dtypes": d, "samples": args.samples, "exact": args.exact,
                           "dynamic": args.dynamic, "results": rs}, f, indent=1)
    if args.record:
        if wanted or args.limit or args.exact or args.dynamic:
            parser.error("--record keeps whole sweeps only: no --ops, --limit, --exact or --dynamic")
        given = list(argv if argv is not None else sys.argv[1:])
        kept = [a for i, a in enumerate(given)  # what the result depends on: not where it was written
                if not a.startswith(("--record", "--json", "-v")) and not (i and given[i - 1] in ("--record", "--json"))]
        command = "python scripts/opinfo_sweep.py " + " ".join(kept)
        record(args.record, by_dtype, opsets, args.samples, command.strip())
    return 0


def record(path: str, by_dtype: dict[str, list[dict]], opsets: list[int], samples: int, command: str) -> None:
    """Merge per dtype x opset: the counts, the non-native OpInfos (name -> "fallback: ops" or "category"),
    the OpInfos passing by tie order, with the run's command, date and torch version. Other entries of the
    file are kept, so runs of different dtypes and opsets accumulate."""
    import datetime

    import torch

    data = {"runs": {}}
    if os.path.exists(path):
        with open(path) as f:
            data = json.load(f)
    import subprocess

    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    try:  # the commit swept, "-dirty" when tracked files other than the record itself differ from it
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        git = ["git", "-C", root]
        commit = subprocess.run([*git, "rev-parse", "--short=7", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
        changed = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no", "--", ".",
                                  f":!{os.path.relpath(os.path.abspath(path), root)}"],
                                 capture_output=True, text=True, check=True).stdout.strip()
        commit += "-dirty" if changed else ""
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    for d, rs in by_dtype.items():
        tested = [r for r in rs if "skipped" not in r]
        for o in opsets:
            not_native, ties = {}, []
            counts = collections.Counter()
            for r in tested:
                e = r["opsets"][str(o)]
                counts[e["status"]] += 1
                if e["status"] == "fallback":
                    not_native[r["name"]] = "fallback: " + ", ".join(e["fallback_ops"])
                elif e["status"] == "fail":
                    not_native[r["name"]] = e["category"]
                elif e.get("ties"):
                    ties.append(r["name"])
            data["runs"][f"{d}@{o}"] = {
                "dtype": d, "opset": o, "samples": samples, "tested": len(tested),
                **{s: counts[s] for s in STATUSES}, "ties": sorted(ties), "not_native": dict(sorted(not_native.items())),
                "command": command, "date": date, "commit": commit, "torch": torch.__version__.split("+")[0]}
    data["runs"] = dict(sorted(data["runs"].items()))
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        json.dump(data, f, indent=1, sort_keys=False)
        f.write("\n")


def report_one(r: dict, verbose: bool) -> None:
    if not verbose or "skipped" in r:
        return
    for o, entry in r["opsets"].items():
        if entry["status"] == "fallback":
            print(f"[{o}] {r['dtype']} {r['name']}: fallback {entry['fallback_ops']}", flush=True)
        elif entry["status"] == "fail":
            print(f"[{o}] {r['dtype']} {r['name']}: {entry['category']}: {entry['detail'][-220:]}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
