"""Decompose before falling back: an FX node whose op no symbolic expresses is traced, through torch's
own decomposition of the op, into ATen pieces that the translator then translates one by one."""

from __future__ import annotations

import contextlib
from typing import Any, Callable

import torch
import torch.fx
from torch._guards import detect_fake_mode
from torch.fx.experimental.proxy_tensor import make_fx

from aten2onnx._torch_compat import size_hints


class NoDecomposition(Exception):
    """The op has no decomposition torch can trace on this node's inputs (the message says why)."""


class NoneKnown(NoDecomposition):
    """torch has no decomposition of the op at all."""


# Where torch keeps an op's decomposition, as the coverage table names it.
OWN_KERNEL = "CompositeImplicitAutograd"
TABLE = "torch._decomp"


def decomposition_source(op: torch._ops.OpOverload) -> str | None:
    """OWN_KERNEL when op has a CompositeImplicitAutograd kernel (the op's own definition in other ATen
    ops), else TABLE when torch._decomp's table has an entry for it; None when torch decomposes it not
    at all, or it writes in place (a mutating op is exported as its functional twin)."""
    if op._schema.is_mutable:
        return None
    if torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), torch._C.DispatchKey.CompositeImplicitAutograd):
        return OWN_KERNEL
    return TABLE if op in torch._decomp.decomposition_table else None


def decomposition(op: torch._ops.OpOverload) -> Callable[..., Any] | None:
    """torch's decomposition of op (see decomposition_source); None when it has none."""
    source = decomposition_source(op)
    if source == OWN_KERNEL:
        return op.decompose
    return torch._decomp.decomposition_table[op] if source == TABLE else None


def pieces(node: torch.fx.Node, op: torch._ops.OpOverload) -> tuple[torch.fx.GraphModule, list[torch.fx.Node]]:
    """node's op decomposed on node's own fake inputs: a graph module of ATen ops whose placeholders
    are the returned FX nodes (node's inputs, in order), its output what node makes. Symbolic sizes
    stay symbolic (the trace runs in the program's fake mode and ShapeEnv). Every piece is named
    `<node>/<piece>`, so the nodes it becomes form node's group (the exact call's scope, runtime/exact.py).
    Raises NoDecomposition when op has none, it cannot be traced here, or the trace would bake a
    size the program keeps symbolic."""
    decompose = decomposition(op)
    if decompose is None:
        raise NoneKnown("torch has no decomposition of it")
    inputs: list[torch.fx.Node] = []

    def collect(arg: Any) -> Any:
        if isinstance(arg, torch.fx.Node) and arg not in inputs:
            inputs.append(arg)
        return arg

    torch.fx.node.map_aggregate((node.args, node.kwargs), collect)
    vals = [arg.meta.get("val") for arg in inputs]
    if any(v is None for v in vals):
        raise NoDecomposition("an input has no example value to trace with")

    def traced(*given: Any) -> Any:
        bound = dict(zip(inputs, given))
        args, kwargs = torch.fx.node.map_aggregate(
            (node.args, node.kwargs), lambda a: bound[a] if isinstance(a, torch.fx.Node) else a)
        result = decompose(*args, **kwargs)
        if result is NotImplemented:
            raise NoDecomposition("its decomposition does not apply to these arguments")
        return result

    fake_mode = detect_fake_mode([v for v in vals if isinstance(v, torch.Tensor)]) or detect_fake_mode(
        [node.meta.get("val")])
    shape_env = getattr(fake_mode, "shape_env", None)
    replaced = dict(shape_env.replacements) if shape_env is not None else {}
    guards = len(shape_env.guards) if shape_env is not None else 0
    taken = []
    try:
        with fake_mode if fake_mode is not None else contextlib.nullcontext():
            gm = make_fx(traced, tracing_mode="symbolic" if shape_env is not None else "fake")(*vals)
    except NoDecomposition:
        raise
    except Exception as e:  # torch's decompositions raise whatever their ops raise on these arguments
        raise NoDecomposition(f"tracing its decomposition failed: {type(e).__name__}: {str(e).splitlines()[0]}") from e
    finally:
        if shape_env is not None:
            # the guards the trace took are the pieces' own: the program's ShapeEnv is left as capture made it
            taken = shape_env.guards[guards:]
            del shape_env.guards[guards:]
    for guard in taken:
        # a guard the program's own constraints imply (a view's divisibility) holds at every size the
        # program takes; any other (split's piece count) makes the pieces right at some sizes only
        if not _implied(shape_env, guard.expr):
            raise NoDecomposition(f"its decomposition holds only where {guard.expr}, which the program does not "
                                  "ensure")
    if shape_env is not None and any(r.is_number and replaced.get(s) != r for s, r in shape_env.replacements.items()):
        raise NoDecomposition("its decomposition would fix a symbolic size to its example value")
    _check_symbolic(node, gm)
    if shape_env is not None:
        _check_other_size(node, op, gm, inputs, vals, shape_env)
    for piece in gm.graph.nodes:
        piece.name = f"{node.name}/{piece.name}"
    return gm, inputs


def _check_symbolic(node: torch.fx.Node, gm: torch.fx.GraphModule) -> None:
    """The pieces' result keeps every size node's result has symbolic as a symbol (none baked)."""
    out = next(n for n in gm.graph.nodes if n.op == "output")
    made = torch.fx.node.map_aggregate(out.args[0], lambda a: a.meta.get("val") if isinstance(a, torch.fx.Node) else a)
    for want, got in zip(_tensors(node.meta.get("val")), _tensors(made)):
        if want is None or got is None:
            continue
        for w, h in zip(want.shape, got.shape):
            if isinstance(w, torch.SymInt) and not isinstance(h, torch.SymInt):
                raise NoDecomposition(f"its decomposition makes a size of {h} where the op's is symbolic ({w})")


# How much further from its example value each symbolic size is set to check the pieces at other sizes
# (smaller first, so the check stays cheap; several, so that some meet the op's divisibility rules).
_OTHER_SIZES = (-1, 1, -2, 2, -3, 3, -4, 4, 6, 8, 12)
# The pieces are checked at a smaller and at a larger size where the op takes them (split's
# decomposition is right at every smaller size and wrong at the next larger one).
_CHECKS = 2
_CHECK_ELEMENTS = 1 << 22  # the most elements an input made for the check may have


def _check_other_size(node: torch.fx.Node, op: torch._ops.OpOverload, gm: torch.fx.GraphModule,
                      inputs: list[torch.fx.Node], vals: list[Any], shape_env: Any) -> None:
    """The pieces computed on random inputs of another size against the op itself. A decomposition may
    take a branch for the example's sizes without a guard (torch's decompositions test sizes
    size-obliviously): traced once, it can be right at the example and wrong at the next size. Random
    pieces (dropout) are not compared; NoDecomposition when no other size could be checked or a check fails."""
    if any(torch.Tag.nondeterministic_seeded in getattr(p.target, "tags", ()) for p in gm.graph.nodes
           if p.op == "call_function"):
        return
    symbols = sorted({s for v in vals for s in _free_symbols(v)}, key=str)
    if not symbols:
        return
    known = size_hints(shape_env)
    hints, ranges = {}, {}
    for s in symbols:
        if s in known:  # a size of the inputs: its example's, and torch.export's own floor of 2
            hints[s], ranges[s] = int(known[s]), (2, None)
            continue
        least, most = _range(shape_env, s)  # a size read from data: no example, a range that may hold 0
        if least is None:
            raise NoDecomposition("its decomposition could not be checked at another size (a size has no example "
                                  "value and no lower bound)")
        hints[s], ranges[s] = max(least, min(4, most if most is not None else 4)), (least, most)
    generator = torch.Generator().manual_seed(0)
    checked: list[int] = []
    for step in _OTHER_SIZES:
        sizes = {s: h + step for s, h in hints.items()}
        if any(v < ranges[s][0] or (ranges[s][1] is not None and v > ranges[s][1]) for s, v in sizes.items()) \
                or (checked and (checked[0] > 0) == (step > 0)):
            continue  # a size outside its range, or one on the side already checked
        concrete = [_concrete(v, sizes, generator) for v in vals]
        if any(isinstance(c, torch.Tensor) and c.numel() > _CHECK_ELEMENTS for c in concrete):
            continue
        bound = dict(zip(inputs, concrete))
        args, kwargs = torch.fx.node.map_aggregate(
            (node.args, node.kwargs), lambda a: bound[a] if isinstance(a, torch.fx.Node) else a)
        with torch.no_grad():
            try:
                want = op(*args, **kwargs)
            except Exception:
                continue  # sizes (or random values) the op refuses: try others
            shown = ", ".join(f"{s}={v}" for s, v in sizes.items())
            try:
                # node by node, not gm's generated code (which names result types some ops lack, and prints
                # itself to stderr when it fails)
                got = torch.fx.Interpreter(gm).run(*concrete)
            except Exception as e:
                raise NoDecomposition(f"its traced pieces could not be run at {shown} to check them: "
                                      f"{type(e).__name__}: {str(e).strip().splitlines()[0]}") from e
            try:
                torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5, equal_nan=True)
            except Exception as e:
                raise NoDecomposition(f"its decomposition, traced at the example's sizes, is wrong at {shown}: "
                                      f"{type(e).__name__}: {str(e).strip().splitlines()[0]}") from e
        checked.append(step)
        if len(checked) == _CHECKS:
            return
    if not checked:
        raise NoDecomposition("its decomposition could not be checked at another size (the op refused every one tried)")


def _range(shape_env: Any, symbol: Any) -> tuple[int | None, int | None]:
    """The least and most a symbol can be, as the ShapeEnv bounds it (None where it does not)."""
    bounds = shape_env.var_to_range.get(symbol)
    if bounds is None:
        return None, None
    least, most = bounds.lower, bounds.upper
    return (int(least) if least.is_finite else None), (int(most) if most.is_finite else None)


def _implied(shape_env: Any, expr: Any) -> bool:
    try:
        return bool(shape_env._maybe_evaluate_static(expr) == True)  # noqa: E712  (a sympy boolean)
    except Exception:  # ShapeEnv's private evaluator; if it cannot say, the guard is not known to hold
        return False


def _free_symbols(val: Any) -> set:
    if isinstance(val, torch.Tensor):
        return {s for d in val.shape if isinstance(d, torch.SymInt) for s in d.node.expr.free_symbols}
    if isinstance(val, torch.SymInt):
        return set(val.node.expr.free_symbols)
    return set()


def _concrete(val: Any, sizes: dict, generator: torch.Generator) -> Any:
    """A real value like val (a fake tensor or a SymInt) with its symbols set to sizes; random data."""
    def size(d: Any) -> int:
        return int(d.node.expr.xreplace(sizes)) if isinstance(d, torch.SymInt) else int(d)

    if isinstance(val, torch.SymInt):
        return size(val)
    if not isinstance(val, torch.Tensor):
        return val
    shape = [size(d) for d in val.shape]
    if val.dtype == torch.bool:
        return torch.rand(shape, generator=generator) > 0.5
    if val.dtype.is_floating_point or val.dtype.is_complex:
        return torch.randn(shape, generator=generator).to(val.dtype)
    return torch.randint(0, 3, shape, generator=generator).to(val.dtype)


def _tensors(val: Any) -> list[torch.Tensor | None]:
    if isinstance(val, (tuple, list)):
        return [t for item in val for t in _tensors(item)]
    return [val if isinstance(val, torch.Tensor) else None]
