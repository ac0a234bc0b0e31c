"""Tidying (bitwise): nodes that do nothing bypassed, chains of Reshapes or of Transposes collapsed to one;
no value changes, only which node makes it."""

from __future__ import annotations

from aten2onnx import _dtypes
from aten2onnx.exporter.rewrites.core import Context, Rewrite, _constant, _Groups, _Uses
from aten2onnx.ir import lazy
from aten2onnx.ir.builder import Node, Value, live_nodes, static_ints


def _tidy(nodes: list[Node], outputs: list[Value]) -> list[Node]:
    """nodes with chains of Reshapes and Transposes collapsed and no-ops bypassed, until none is left."""
    nodes = live_nodes(nodes, outputs)
    while True:  # (a chain collapsed into a no-op, once bypassed, can join the next chain)
        count = len(nodes)
        nodes = live_nodes(_bypass_no_ops(_collapse_chains(nodes), outputs), outputs)
        if len(nodes) == count:
            return nodes


def _is_no_op(node: Node) -> bool:
    if node.domain or node.call is not None or not node.inputs or node.inputs[0] is None:
        return False
    x, out = node.inputs[0], node.outputs[0]
    if node.op_type == "Identity":
        return True
    if node.op_type == "Cast":
        return x.typed and x.dtype is not None and _dtypes.to_onnx(x.dtype) == node.attrs.get("to") and not x.complex
    if node.op_type == "Reshape":
        shape = static_ints(node.inputs[1]) if len(node.inputs) > 1 else None
        if shape is None or x.shape is None or None in x.shape or (node.attrs.get("allowzero", 0) and 0 in shape):
            return False
        return _same_shape(tuple(x.shape), shape)
    if node.op_type == "Transpose":
        perm = node.attrs.get("perm")
        return perm is not None and list(perm) == sorted(perm)
    if node.op_type in ("Mul", "Div"):  # (x * 1 and x / 1 are x, bit for bit, whatever x holds)
        one = node.inputs[1]
        return (one is not None and _constant(one) and not lazy.is_lazy(one.const) and one.const.numel() == 1
                and bool(one.const.reshape(()) == 1)
                and one.dtype == x.dtype and x.rank is not None and one.const.dim() <= x.rank)
    return False


def _copies_kept(shape: list[int], first: Node) -> bool:
    """Whether each dim a Reshape to `shape` copies (0) from first's result is the same dim of first's
    input, so that the Reshape may read first's input instead."""
    if 0 not in shape:
        return True
    before, after = first.inputs[0].shape, first.outputs[0].shape
    return (before is not None and after is not None and "allowzero" not in first.attrs
            and all(i < min(len(before), len(after)) and before[i] is not None and before[i] == after[i]
                    for i, n in enumerate(shape) if n == 0))


def _same_shape(dims: tuple, shape: list[int]) -> bool:
    """Whether a Reshape to `shape` (whose 0s copy) of a tensor of dims, static or symbolic, gives dims:
    each entry copies its dim (0) or is that static dim, one -1 at most standing for the last unknown."""
    if len(dims) != len(shape) or shape.count(-1) > 1:
        return False
    unknown = [i for i, (d, n) in enumerate(zip(dims, shape)) if n != 0 and n != d]
    return not unknown or (len(unknown) == 1 and shape[unknown[0]] == -1)


def _bypass_no_ops(nodes: list[Node], outputs: list[Value]) -> list[Node]:
    uses = _Uses(nodes, outputs)
    groups = _Groups(nodes)
    kept = []
    for node in nodes:
        if _is_no_op(node) and groups.alone(node) and uses.replace(node.outputs[0], node.inputs[0]):
            continue
        kept.append(node)
    return kept


def _collapse_chains(nodes: list[Node]) -> list[Node]:
    """A Reshape of a Reshape reads the first one's input (when the second's shape is constant and copies
    no dim, 0, from the first's result); a Transpose of a Transpose reads the first's input, permuted by
    both. The first stays for its other readers, if any."""
    groups = _Groups(nodes)
    for node in nodes:
        if node.domain or node.call is not None or not node.inputs or node.inputs[0] is None:
            continue
        first = node.inputs[0].producer
        if (first is None or first.op_type != node.op_type or first.domain or first.call is not None
                or not groups.may_join(node, first)):
            continue
        if node.op_type == "Reshape" and len(node.inputs) > 1 and "allowzero" not in node.attrs:
            shape = static_ints(node.inputs[1])
            if shape is not None and first.inputs[0] is not None and _copies_kept(shape, first):
                node.inputs = [first.inputs[0], node.inputs[1]]
        elif node.op_type == "Transpose" and node.attrs.get("perm") is not None and first.attrs.get("perm") is not None:
            inner, outer = list(first.attrs["perm"]), list(node.attrs["perm"])
            node.attrs = dict(node.attrs, perm=[inner[axis] for axis in outer])
            node.inputs = [first.inputs[0]]
    return nodes


def _run(nodes: list[Node], ctx: Context) -> list[Node]:
    return _tidy(nodes, ctx.outputs)


TIDY = Rewrite("tidy", "bitwise", _run)
