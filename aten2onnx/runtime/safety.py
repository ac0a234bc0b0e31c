"""The runtime's one safety rule: which torch ops a model file may make it run (an ATen node names one).
Decided from the op's schema at session creation; a short deny list covers what a schema cannot say.

A model is untrusted input. The rule admits an overload only if calling it is pure: it writes none
of its arguments, returns tensors or numbers, takes only arguments a model can state (tensors,
numbers, strings, dtypes), and is not one of the ops below whose schema hides a side effect. Every
path that runs a torch op because a file names it (ATen nodes, fused groups) calls `check_op`.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Collection, Union

import torch

from aten2onnx import _aten_node
from aten2onnx.errors import InvalidModelError

# A caller's widening or narrowing of the rule (InferenceSession(allowed_aten_ops=...)): a predicate
# on the overload, which replaces the rule (call `refusal` inside to build on it), or a collection
# of overload keys ("aten::add.Tensor"), which are then exactly the overloads that run.
AllowedOps = Union[Callable[[torch._ops.OpOverload], bool], Collection[str], None]

# Argument kinds (as _aten_node.schema_kind names them) an ATen node can state; anything else
# (Storage, Stream, Dict, generic `t`, script classes) gives the op an object a file must not make.
_ARGUMENT_KINDS = frozenset({"Tensor", "int", "SymInt", "float", "bool", "number", "complex", "str", "ScalarType",
                             "Layout", "Device", "MemoryFormat", "Generator"})
_RETURN_TYPES = frozenset({"Tensor", "int", "SymInt", "float", "bool", "Scalar", "number", "complex"})
# A str argument named so is a file path: the op reads or writes files.
_PATH_ARGUMENT = re.compile(r"file|path", re.IGNORECASE)

# What the schema cannot tell, by operator name (namespace::name, without the overload). Keep short;
# each entry says why.
DENY: tuple[tuple[re.Pattern, str], ...] = tuple((re.compile(pattern), reason) for pattern, reason in (
    (r"_unsafe$", "it skips the checks of its arguments (an *_unsafe constructor)"),
    (r"::_reshape_alias", "it reads memory at sizes and strides the model gives, without bounds checks"),
    (r"::_unsafe_view$", "its result aliases its input, which its schema does not declare"),
    (r"::_copy_from", "it writes into its `dst` argument, which its schema does not declare"),
    (r"^aten::resize(_as)?$", "it returns uninitialized memory"),
    # torch checks none of these against the data they index: each crashed the process when given a
    # forged index, offset or length (tests/test_runtime_security.py keeps one case of each)
    (r"max_pool\dd_with_indices_backward|adaptive_max_pool\dd_backward|_embedding_bag\w*backward|"
     r"segment_reduce|ctc_loss|_sobol_engine", "it trusts indices, offsets or lengths that a model can forge"),
    (r"_helper$|_foreach_|_fused_(adam|adamw|adagrad|sgd)|_amp_|^aten::range$",
     "it is a helper its public op calls only with checked arguments (it crashed on forged ones)"),
    (r"batch_norm_(backward\w*|elemt|gather_stats\w*|stats)$|_batch_norm_impl_index",
     "it crashes on forged saved or running statistics"),
    (r"sparse|(^|_)(coo|csr|csc|bsr|bsc)(_|$)|nested|jagged|mkldnn",
     "it makes tensors of a layout whose invariants a model could break (sparse, nested, mkldnn)"),
    (r"batch_dim|_dual(_copy)?$|_fw_primal|functorch|zerotensor|feature_meta",
     "it belongs to autograd or vmap internals, whose tensors the runtime cannot hold"),
    (r"_nnpack|cudnn|miopen|(^|_)mps(_|$)|fbgemm|_cslt|_cufft|xnnpack|_flash_attention|_efficient_attention|"
     r"_scaled_dot_product_(flash|efficient|cudnn|fused)|_triton|int4pack|int8pack|_dyn_quant|_int_mm|"
     r"_mixed_dtypes|_thnn_|_slow_conv",
     "it is one backend's kernel, which torch calls only with arguments it checked first"),
    (r"quantize_per|_make_per_|quantized|qparams", "it makes quantized tensors or their parameters from unchecked ones"),
    (r"^(prim|profiler|c10d|_c10d_functional\w*|symm_mem|_dtensor|debugprims|inductor\w*|rngprims)::",
     "it belongs to the interpreter, profiler, distributed or compiler internals"),
))
# Arguments some ops update in place although their schemas do not say so (native_batch_norm and
# batch_norm in training mode): the runtime passes copies.
RUNNING_STATE = frozenset({"running_mean", "running_var"})
# Ops whose results are uninitialized memory (empty, new_empty, empty_strided, ...): they run, and the
# runtime zeroes what they return, so a model never reads what the process left in its heap.
UNINITIALIZED = re.compile(r"::(_?empty|new_empty)")
# Ops whose kernels crash on inputs that are not finite (LAPACK's eigenvalue balancing on NaN).
FINITE_INPUTS = re.compile(r"::_?linalg_eigvals$")
# Internal ops whose kernels index with `dim` as given, where the public op they serve has wrapped and
# checked it: a negative or repeated dim reads out of bounds (aten::_fft_r2c at dim=[-2] segfaults).
NORMALIZED_DIMS = re.compile(r"::_fft_")
# Ops whose argument named `dims` holds counts, not dims (tile's repetitions): not checked against the rank.
DIMS_ARE_COUNTS = frozenset({"aten::tile"})


def argument_problem(op: torch._ops.OpOverload, arguments: dict[str, Any]) -> str | None:
    """Why the values an admitted op is about to get must not reach its kernel, or None. Checked on
    every call: a `dim` within the rank of the op's first tensor (some kernels index with it
    unchecked; the internal FFT ops' kernels need it in 0..rank-1 and without repeats), both running statistics for a batch norm that is not training (its kernels crash
    without them), and finite inputs where FINITE_INPUTS says so."""
    tensors = [t for v in arguments.values() for t in (v if isinstance(v, list) else [v]) if isinstance(t, torch.Tensor)]
    if tensors:
        rank = tensors[0].dim()
        normalized = NORMALIZED_DIMS.search(op._schema.name)
        for name in ("dim",) if op._schema.name in DIMS_ARE_COUNTS else ("dim", "dims"):
            dims = arguments.get(name)
            listed = dims if isinstance(dims, list) else [dims]
            for d in listed:
                if isinstance(d, int) and not -(rank + 1) <= d <= rank:
                    return f"{name} {d} is outside the rank {rank} of its input"
                if normalized and isinstance(d, int) and not 0 <= d < rank:
                    return f"{name} {d} is not one of its input's dims 0..{rank - 1}, as this internal op's kernel needs"
            if normalized and len(set(listed)) != len(listed):
                return f"{name} {listed} repeats a dim"
    takes_statistics = op._overloadname == "no_stats" or any(arg.name == "running_mean" for arg in op._schema.arguments)
    # native_batch_norm_backward names it train
    training = arguments.get("training", arguments.get("train", arguments.get("use_input_stats", False)))
    if takes_statistics and not training and (arguments.get("running_mean") is None or arguments.get("running_var") is None):
        return "a batch norm that is not training needs both running statistics"
    if FINITE_INPUTS.search(op._schema.name) and any(t.is_floating_point() and not t.isfinite().all() for t in tensors):
        return "its input has infinities or NaN, on which its kernel crashes"
    return None


def op_key(op: torch._ops.OpOverload) -> str:
    """The overload's key, as fallback_ops and allowed_aten_ops spell it: "aten::add.Tensor"."""
    return f"{op._schema.name}.{op._overloadname}"


def refusal(op: torch._ops.OpOverload) -> str | None:
    """Why a model may not run `op`, or None when the rule admits it."""
    schema = op._schema
    for arg in schema.arguments:
        if arg.alias_info is not None and arg.alias_info.is_write:
            return f"it writes its argument {arg.name!r}"
    if not schema.returns:
        return "it returns nothing, so it runs only for a side effect"
    for arg in schema.arguments:
        kind, _, optional = _aten_node.schema_kind(arg)
        if kind not in _ARGUMENT_KINDS or (kind == "Generator" and not optional):
            return f"its argument {arg.name!r} is a {arg.real_type}, which a model cannot give"
        if kind == "str" and _PATH_ARGUMENT.search(arg.name):
            return f"its argument {arg.name!r} is a file path"
    for ret in schema.returns:
        if _spelled(ret.real_type) not in _RETURN_TYPES:
            return f"it returns a {ret.real_type}"
    names = {arg.name for arg in schema.arguments}
    if any(ret.alias_info is not None for ret in schema.returns) and names & {"stride", "storage_offset"}:
        return "it makes a view at sizes and strides the model gives"
    for pattern, reason in DENY:
        if pattern.search(schema.name):
            return reason
    return None


def _spelled(real_type: torch._C.Type) -> str:
    """A schema type as the schema writes it: Tensor[], int?, Scalar."""
    return str(real_type).replace("List[", "").replace("Optional[", "").replace("]", "")


def is_safe(op: torch._ops.OpOverload) -> bool:
    """The rule itself: whether a model may run `op` when the session widens or narrows nothing."""
    return refusal(op) is None


def permits(allowed: AllowedOps, key: str) -> bool:
    """Whether the overload named by key ("aten::gelu.default") may run under `allowed`."""
    namespace, rest = key.split("::", 1)
    name, overload = rest.rsplit(".", 1)
    try:
        check_op(getattr(getattr(getattr(torch.ops, namespace), name), overload), allowed)
    except (AttributeError, InvalidModelError):
        return False
    return True


def check_op(op: torch._ops.OpOverload, allowed: AllowedOps = None) -> None:
    """Raise InvalidModelError unless `op` may run: by the rule, or by the session's `allowed`."""
    if allowed is None:
        reason = refusal(op)
        if reason is not None:
            raise InvalidModelError(f"{op_key(op)} may not run from a model file: {reason}. If you trust this "
                                    f"model, allow it with InferenceSession(..., allowed_aten_ops=...)")
    elif callable(allowed):
        if not allowed(op):
            raise InvalidModelError(f"{op_key(op)} is refused by the session's allowed_aten_ops predicate")
    elif op_key(op) not in allowed:
        raise InvalidModelError(f"{op_key(op)} is not among the session's allowed_aten_ops")
