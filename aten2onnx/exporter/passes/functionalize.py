"""Rewrite in-place ops into functional ones before translation, through views, inputs and buffers.

Aliasing comes from torch.export itself: nodes whose example values share a storage are aliases.
In each storage group the first node is the base; every other member is reached from it by a
chain of view ops. An in-place write to a member becomes its functional twin, scattered back into
the base through the inverse of that chain (select_scatter, slice_scatter, ...). Later readers of
any member see the base's new value: views are rebuilt from it when read (once per version), and
the member just written reuses the value computed for it. A mutated input or buffer becomes an
extra output. What the pass cannot prove right raises Unsupported, and the caller falls back to
torch's own functionalization.
"""

from __future__ import annotations

import dataclasses
import operator
from typing import Any

import torch
import torch.fx
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind
from torch.fx.experimental.symbolic_shapes import statically_known_true
from torch.multiprocessing.reductions import StorageWeakRef

from aten2onnx.errors import ExportError
from aten2onnx.exporter.passes.program import OutputRole, Program
from aten2onnx.exporter.provenance import source_of
from aten2onnx.registry import functional_twin, is_mutating, written_arguments

aten = torch.ops.aten


class Unsupported(Exception):
    """An aliasing pattern this pass does not handle; the message says which."""


# View ops the pass can write through: each maps (parent, new value of the view, the view's other
# args and kwargs) to the new value of the parent. Identity aliases (alias, detach, an in-place op's result) are skipped.
def _inverse_select(g, parent, value, args, kwargs):
    return g.call_function(aten.select_scatter.default, (parent, value, *args))


def _inverse_slice(g, parent, value, args, kwargs):
    return g.call_function(aten.slice_scatter.default, (parent, value, *args), kwargs)


def _inverse_narrow(g, parent, value, args, kwargs):
    dim, start, length = args
    return g.call_function(aten.slice_scatter.default, (parent, value, dim, start, start + length))


def _inverse_diagonal(g, parent, value, args, kwargs):
    return g.call_function(aten.diagonal_scatter.default, (parent, value, *args), kwargs)


def _inverse_as_strided(g, parent, value, args, kwargs):
    return g.call_function(aten.as_strided_scatter.default, (parent, value, *args), kwargs)


def _inverse_reshape(g, parent, value, args, kwargs):
    # View-like reshapes keep the row-major element order, so reshaping back is the inverse.
    shape = list(parent.meta["val"].shape)
    if not all(isinstance(d, int) for d in shape):
        shape = [d if isinstance(d, int) else g.call_function(aten.sym_size.int, (parent, i)) for i, d in enumerate(shape)]
    return g.call_function(aten.reshape.default, (value, shape))


def _inverse_transpose(g, parent, value, args, kwargs):
    return g.call_function(aten.transpose.int, (value, *args))


def _inverse_t(g, parent, value, args, kwargs):
    return g.call_function(aten.t.default, (value,))


def _inverse_permute(g, parent, value, args, kwargs):
    dims = [d % len(args[0]) for d in args[0]]
    inverse = sorted(range(len(dims)), key=dims.__getitem__)
    return g.call_function(aten.permute.default, (value, inverse))


# Views that give a list of pieces along one dim, which getitem then picks from: (dim's position among
# the args); written through, the pair (list view, getitem) is one slice (select, for unbind) of the parent.
_LIST_VIEWS = {aten.split.Tensor: 2, aten.split_with_sizes.default: 2, aten.chunk.default: 2, aten.unbind.int: 1,
               aten.tensor_split.sections: 2, aten.tensor_split.indices: 2}


def _inverse_piece(g, parent, pieces, value, producer: torch.fx.Node, index: int) -> Any:
    """The parent with piece `index` of the list view `producer` (whose replayed list is `pieces`)
    replaced by value: the piece starts where the pieces before it end, their sizes read from the example
    values where static, else from the replayed pieces when run."""
    vals, whole = producer.meta.get("val"), parent.meta.get("val")
    if not isinstance(vals, (list, tuple)) or not isinstance(whole, torch.Tensor):
        raise Unsupported(f"the pieces of {producer.name!r} have no example value")
    at = _LIST_VIEWS[producer.target]
    dim = producer.args[at] if len(producer.args) > at else producer.kwargs.get("dim", 0)
    dim %= whole.dim()
    index %= len(vals)
    if producer.target is aten.unbind.int:
        return g.call_function(aten.select_scatter.default, (parent, value, dim, index))
    start: Any = 0
    for j in range(index + 1):
        length = vals[j].shape[dim]
        if not isinstance(length, int):
            length = g.call_function(aten.sym_size.int, (g.call_function(operator.getitem, (pieces, j)), dim))
        if j == index:
            end = start + length if isinstance(start, int) and isinstance(length, int) else \
                g.call_function(operator.add, (start, length))
        else:
            start = start + length if isinstance(start, int) and isinstance(length, int) else \
                g.call_function(operator.add, (start, length))
    return g.call_function(aten.slice_scatter.default, (parent, value, dim, start, end))


_INVERSES = {
    aten.select.int: _inverse_select,
    aten.slice.Tensor: _inverse_slice,
    aten.narrow.default: _inverse_narrow,
    aten.diagonal.default: _inverse_diagonal,
    aten.as_strided.default: _inverse_as_strided,
    aten.view.default: _inverse_reshape,
    aten._unsafe_view.default: _inverse_reshape,
    aten.reshape.default: _inverse_reshape,
    aten.unsqueeze.default: _inverse_reshape,
    aten.squeeze.dim: _inverse_reshape,
    aten.squeeze.dims: _inverse_reshape,
    aten.squeeze.default: _inverse_reshape,
    aten.flatten.using_ints: _inverse_reshape,
    aten.unflatten.int: _inverse_reshape,
    aten.view_as.default: _inverse_reshape,
    aten.transpose.int: _inverse_transpose,
    aten.t.default: _inverse_t,
    aten.permute.default: _inverse_permute,
}
# Ops that, sharing their input's storage, returned that very tensor.
_IDENTITY_ALIASES = {aten.alias.default, aten.detach.default, aten.detach_.default, aten.lift_fresh.default,
                     aten.contiguous.default, aten.to.dtype, aten.to.dtype_layout, aten.to.device,
                     aten.type_as.default}


# Dropouts, which eager gives back their input itself outside training (`train` is their third
# argument), though torch.export's example value for them is a new tensor.
_DROPOUTS = {aten.dropout.default, aten.feature_dropout.default, aten.alpha_dropout.default,
             aten.feature_alpha_dropout.default}


def _eval_dropout(node: torch.fx.Node) -> bool:
    return node.target in _DROPOUTS and len(node.args) > 2 and node.args[2] is False


def _returned_its_input(node: torch.fx.Node) -> bool:
    """Whether an op gave back its first argument itself though its schema promises a new tensor
    (dropout outside training, a no-op conversion): the same storage, offset, sizes and strides."""
    if node.target in _IDENTITY_ALIASES or _eval_dropout(node):
        return True
    val, first = node.meta.get("val"), node.args[0].meta.get("val") if node.args else None
    if not isinstance(val, torch.Tensor) or not isinstance(first, torch.Tensor):
        return False
    try:
        return (val.untyped_storage()._cdata == first.untyped_storage()._cdata and val.dtype == first.dtype
                and val.dim() == first.dim() and _known_equal(val.storage_offset(), first.storage_offset())
                and all(map(_known_equal, val.shape, first.shape)) and all(map(_known_equal, val.stride(), first.stride())))
    except (NotImplementedError, RuntimeError):
        return False


def _known_equal(a: Any, b: Any) -> bool:
    """Equal for every value of the symbols: `==` of two SymInts answers for the example's sizes only
    (x[:n // 2 + 1] of a size-2 x is all of x, of a size-5 one not)."""
    return statically_known_true(a == b)


def _reads_what_it_writes(written: torch.fx.Node, source: torch.fx.Node, limit: int = 1 << 22) -> bool:
    """Whether an in-place write reads, at some element, memory it writes at another element
    (x[:, 1] = x[:-1]): eager's result then depends on its copy order. Decided from the example values'
    strides where they are static and small; a source at exactly the written positions (x.add_(x)) is
    no hazard."""
    dst, src = written.meta.get("val"), source.meta.get("val")
    if not isinstance(dst, torch.Tensor) or not isinstance(src, torch.Tensor):
        return False
    try:
        if dst.untyped_storage()._cdata != src.untyped_storage()._cdata:
            return False
        shapes = [list(t.shape) + list(t.stride()) + [t.storage_offset()] for t in (dst, src)]
        if not all(isinstance(d, int) for shape in shapes for d in shape) or dst.numel() > limit:
            return False
        src_shape = torch.broadcast_shapes(src.shape, dst.shape)
    except (RuntimeError, NotImplementedError):
        return False
    if tuple(src_shape) != tuple(dst.shape):
        return False
    extent = 1 + max(t.storage_offset() + sum((n - 1) * st for n, st in zip(t.shape, t.stride())) for t in (dst, src))
    memory = torch.arange(extent)
    dst_at = memory.as_strided(dst.shape, dst.stride(), dst.storage_offset()).reshape(-1)
    src_at = memory.as_strided(src.shape, src.stride(), src.storage_offset()).expand(dst.shape).reshape(-1)
    writer = torch.full((extent,), -1, dtype=torch.int64)
    writer[dst_at] = torch.arange(dst_at.numel())
    read = writer[src_at]  # which element's write each element reads back, -1 for none
    return bool(((read >= 0) & (read != torch.arange(read.numel()))).any())


def _overlaps(node: torch.fx.Node) -> bool:
    """Whether a view's elements share memory (an expanded dim): eager writes each shared element once
    per view element, which no functional graph computes (torch's functionalization sums them)."""
    val = node.meta.get("val")
    return isinstance(val, torch.Tensor) and any(statically_known_true(stride == 0) and not statically_known_true(size == 1)
                                                 for size, stride in zip(val.shape, val.stride()))


def _replayable(node: torch.fx.Node) -> bool:
    """A view op the pass can apply again to a new base: one whose result aliases its first argument
    (per its schema), or an item of a list of views (split, unbind, chunk)."""
    if node.target in _INVERSES:
        return True
    if node.target is operator.getitem:
        return True
    if isinstance(node.target, torch._ops.OpOverload):
        returns = node.target._schema.returns
        first = node.target._schema.arguments[0] if node.target._schema.arguments else None
        return bool(returns) and returns[0].alias_info is not None and first is not None and first.alias_info is not None
    return False


def _storage(node: torch.fx.Node) -> StorageWeakRef | None:
    val = node.meta.get("val")
    if isinstance(val, torch.Tensor) and not isinstance(val, torch.nn.Parameter):
        try:
            return StorageWeakRef(val.untyped_storage())
        except (NotImplementedError, RuntimeError):
            return None
    return None


def _writes_values(node: torch.fx.Node) -> bool:
    """An in-place op that changes values: detach_ (which torch.tensor(...) in forward adds to its
    constant) writes only autograd metadata, and is translated as the identity it is."""
    return (node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload) and is_mutating(node.target)
            and node.target is not aten.detach_.default)


def needs_rewrite(gm: torch.fx.GraphModule) -> bool:
    return any(_writes_values(n) for n in gm.graph.nodes)


class _Rewriter:
    def __init__(self, ep: ExportedProgram, gm: torch.fx.GraphModule) -> None:
        self.ep = ep
        self.old = gm.graph
        self.new = torch.fx.Graph()
        self.mapped: dict[torch.fx.Node, torch.fx.Node] = {}
        self.base: dict[torch.fx.Node, torch.fx.Node] = {}  # alias -> base (old graph)
        self.chain: dict[torch.fx.Node, list[torch.fx.Node]] = {}  # alias -> view nodes from its base
        self.current: dict[torch.fx.Node, torch.fx.Node] = {}  # base -> its latest value (new graph)
        self.version: dict[torch.fx.Node, int] = {}
        # (base, view-chain signature, base version) -> that view's value: two views made the same
        # way from the same base version are one value.
        self.memo: dict[tuple, torch.fx.Node] = {}
        self.dropped_in: list[torch.fx.Node] = []  # eval dropouts whose result (their input) is written into
        self.writers: dict[torch.fx.Node, torch.fx.Node] = {}  # base -> the last op that wrote it
        self.fake_mode = torch._guards.detect_fake_mode(
            [n.meta["val"] for n in gm.graph.nodes if isinstance(n.meta.get("val"), torch.Tensor)])

    # -- aliasing ---------------------------------------------------------------------------------
    def _classify(self) -> set[torch.fx.Node]:
        """Group nodes by storage; returns the bases that some op writes to. Only aliases of
        written bases need a view chain: other alias groups are copied as they are."""
        first: dict[StorageWeakRef, torch.fx.Node] = {}
        same: dict[StorageWeakRef, StorageWeakRef] = {}  # an eval dropout's storage is its input's in eager
        for node in self.old.nodes:
            storage = _storage(node)
            if storage is None:
                continue
            if _eval_dropout(node) and isinstance(node.args[0], torch.fx.Node) and _storage(node.args[0]) is not None:
                same[storage] = same.get(_storage(node.args[0]), _storage(node.args[0]))
            elif _writes_values(node):
                # an in-place op returns what it wrote (its schema says so), whatever storage its example value
                # got (torch.export gives a written constant's result a storage of its own)
                written = self._written(node)
                if written is not None and _storage(written) is not None:
                    same[storage] = same.get(_storage(written), _storage(written))
            storage = same.get(storage, storage)
            if storage not in first:
                first[storage] = node
            else:
                self.base[node] = first[storage]
        written = {self._root(w) for w in map(self._written, self._mutations()) if w is not None}
        self.dropped_in = [n for n in self.old.nodes if _eval_dropout(n) and self._root(n) in written]
        for node, base in self.base.items():
            if base in written:
                self.chain[node] = self._chain_to(node, base)
        return written

    def _mutations(self) -> list[torch.fx.Node]:
        return [n for n in self.old.nodes if _writes_values(n)]

    def _chain_to(self, node: torch.fx.Node, base: torch.fx.Node) -> list[torch.fx.Node]:
        steps: list[torch.fx.Node] = []
        current = node
        while current is not base:
            if current.op != "call_function" or not current.args or not isinstance(current.args[0], torch.fx.Node):
                raise Unsupported(f"node {node.name!r} aliases {base.name!r} in a way the pass cannot follow")
            target = current.target
            if _returned_its_input(current) or (isinstance(target, torch._ops.OpOverload) and is_mutating(target)):
                written = self._written(current)
                current = written if written is not None else current.args[0]
                continue
            if not _replayable(current):
                raise Unsupported(f"node {node.name!r} aliases {base.name!r} through {target}, which the pass cannot follow")
            steps.append(current)
            current = current.args[0]
        return steps[::-1]

    def _written(self, node: torch.fx.Node) -> torch.fx.Node | None:
        names = written_arguments(node.target)
        if len(names) != 1:
            return None
        schema = node.target._schema
        for i, arg in enumerate(schema.arguments):
            if arg.name == names[0]:
                value = node.args[i] if not arg.kwarg_only and i < len(node.args) else node.kwargs.get(arg.name)
                return value if isinstance(value, torch.fx.Node) else None
        return None

    def _root(self, node: torch.fx.Node) -> torch.fx.Node:
        return self.base.get(node, node)

    # -- building the new graph -------------------------------------------------------------------
    def _emit(self, target: Any, args: tuple, kwargs: dict | None, like: torch.fx.Node) -> torch.fx.Node:
        """A new node, with the original's source metadata and an example value computed by
        running the op on fake tensors."""
        node = self.new.call_function(target, tuple(args), kwargs or {})
        for key in ("stack_trace", "nn_module_stack", "source_fn_stack", "from_node"):
            if key in like.meta:
                node.meta[key] = like.meta[key]
        vals = torch.fx.node.map_aggregate((args, kwargs or {}), lambda a: a.meta.get("val") if isinstance(a, torch.fx.Node) else a)
        try:
            with self.fake_mode:
                node.meta["val"] = target(*vals[0], **vals[1])
        except Exception as e:
            raise Unsupported(f"could not compute {target} for {like.name!r}: {e}") from e
        return node

    def _signature(self, chain: list[torch.fx.Node]) -> tuple:
        return tuple((step.target, _freeze(self._args(step.args[1:])), _freeze(self._args(dict(step.kwargs))))
                     for step in chain)

    def _view_value(self, base: torch.fx.Node, chain: list[torch.fx.Node], upto: int) -> torch.fx.Node:
        """chain[:upto] applied to the base's current value; each prefix is built once per version."""
        signature = self._signature(chain)
        value = self.current[base]
        for i in range(upto):
            key = (base, signature[:i + 1], self.version[base])
            if key not in self.memo:
                step = chain[i]
                self.memo[key] = self._emit(step.target, (value, *self._args(step.args[1:])), self._args(step.kwargs), step)
            value = self.memo[key]
        return value

    def _resolve(self, node: torch.fx.Node) -> torch.fx.Node:
        base = self._root(node)
        if base not in self.version:
            return self.mapped[node]
        chain = self.chain.get(node, [])
        return self._view_value(base, chain, len(chain))

    def _args(self, args: Any) -> Any:
        return torch.fx.node.map_arg(args, self._resolve)

    def _scatter(self, written: torch.fx.Node, value: torch.fx.Node) -> None:
        """`written` now holds `value`: write it back into its base through the view chain."""
        base = self._root(written)
        chain = self.chain.get(written, [])
        if any(_overlaps(step) for step in [*chain, written]):
            raise ExportError(f"{written.name!r} at {source_of(written) or '?'} is written in place through an expanded view, whose "
                              "elements share memory; eager writes each shared element once per view element, which "
                              "an exported graph cannot repeat. Write into the tensor before expanding it, or clone "
                              "the expanded view first")
        picked = {i for i, step in enumerate(chain) if step.target is operator.getitem and i > 0
                  and chain[i - 1] is step.args[0] and chain[i - 1].target in _LIST_VIEWS}
        blocked = [step for i, step in enumerate(chain)
                   if step.target not in _INVERSES and i not in picked and i + 1 not in picked]
        if blocked:
            raise Unsupported(f"{written.name!r} is written through {blocked[0].target}, which the pass cannot invert")
        parents = [self._view_value(base, chain, i) for i in range(len(chain))]
        new = value
        i = len(chain) - 1
        while i >= 0:
            step = chain[i]
            if i in picked:  # a piece of a list view: the pair is one slice of the list view's parent
                new = _inverse_piece(_Builder(self, step), parents[i - 1], parents[i], new, chain[i - 1], step.args[1])
                i -= 2
                continue
            new = _INVERSES[step.target](_Builder(self, step), parents[i], new, self._args(step.args[1:]),
                                         self._args(step.kwargs))
            i -= 1
        self.current[base] = new
        self.version[base] += 1
        self.memo[(base, self._signature(chain), self.version[base])] = value

    def run(self) -> tuple[torch.fx.GraphModule, list[OutputRole]]:
        mutated = self._classify()
        for node in self.old.nodes:
            if node.op == "output":
                return self._finish(node)
            if _writes_values(node):
                self._rewrite_mutation(node)
            elif node in self.base and self._root(node) in mutated:
                pass  # an alias of a written tensor: rebuilt from the base's current value when read
            elif node.op == "placeholder":
                copy = self.new.placeholder(node.name)
                copy.meta = dict(node.meta)
                self.mapped[node] = copy
            else:
                self.mapped[node] = self.new.node_copy(node, self._resolve)
            if node in mutated:
                self.current[node] = self.mapped[node]
                self.version[node] = 0
        raise Unsupported("graph has no output node")

    def _rewrite_mutation(self, node: torch.fx.Node) -> None:
        written = self._written(node)
        twin = functional_twin(node.target)
        if written is None or twin is None:
            raise Unsupported(f"{node.target} writes several arguments or has no functional twin")
        for other in node.all_input_nodes:
            if other is not written and _reads_what_it_writes(written, other):
                raise ExportError(f"{node.name!r} at {source_of(node) or '?'} writes into {written.name!r} from "
                                  f"{other.name!r}, which shares some of its memory at other positions: eager reads "
                                  "elements the same write has already changed, in an order no graph has. Write "
                                  f"from a copy ({other.name}.clone())")
        args, kwargs = self._twin_args(node, twin)
        if twin is aten.copy.default and args[1] is self._resolve(written) and _same_meta(args[0], args[1]):
            return  # copying a view's own current value back into it changes nothing
        value = self._emit(twin, args, kwargs, node)
        self.writers[self._root(written)] = node
        target_dtype = written.meta["val"].dtype
        if value.meta["val"].dtype != target_dtype:  # in-place ops cast their result to the written dtype
            value = self._emit(aten._to_copy.default, (value,), {"dtype": target_dtype}, node)
        before, after = written.meta.get("val"), value.meta.get("val")
        if (written in self.base and isinstance(before, torch.Tensor) and isinstance(after, torch.Tensor)
                and (before.dim() != after.dim() or any(isinstance(a, int) and isinstance(b, int) and a != b
                                                        for a, b in zip(before.shape, after.shape)))):
            # (resize_ of a view: eager changes the view's own sizes and leaves its base as it was; no
            # functional graph gives the view a new shape and keeps it writing into its base)
            raise ExportError(f"{node.name!r} at {source_of(node) or '?'} changes the shape of {written.name!r}, a view "
                              f"of another tensor ({tuple(before.shape)} -> {tuple(after.shape)}), which no exported "
                              "graph can keep as a view; resize a copy instead (v = v.clone().resize_(...)) or reshape "
                              "it (v = v.reshape(...))")
        self._scatter(written, value)

    def _twin_args(self, node: torch.fx.Node, twin: torch._ops.OpOverload) -> tuple[tuple, dict]:
        """The in-place node's arguments for its functional twin, by schema name (a twin may take them in
        another order: polygamma(n, self) for polygamma_(self, n))."""
        mine = [a.name for a in node.target._schema.arguments]
        theirs = [a for a in twin._schema.arguments]
        if [a.name for a in theirs] != mine[:len(theirs)]:
            given = dict(zip(mine, node.args))
            given.update(node.kwargs)
            kwargs = {a.name: given[a.name] for a in theirs if a.name in given}
            return (), self._args(kwargs)
        names = {a.name for a in theirs}
        kwargs = {k: v for k, v in node.kwargs.items() if k in names}
        positional = len([a for a in theirs if not a.kwarg_only])
        return self._args(tuple(node.args[:positional])), self._args(kwargs)

    def _finish(self, output: torch.fx.Node) -> tuple[torch.fx.GraphModule, list[OutputRole]]:
        results = list(torch.fx.node.map_arg(output.args[0], self._resolve))
        specs = {s.arg.name: s for s in self.ep.graph_signature.input_specs}
        roles, updates = [], []
        for base, version in self.version.items():
            if version == 0:
                continue
            if base.op != "placeholder":
                continue  # an intermediate: its new value reached every reader already
            spec = specs[base.name]
            before, after = base.meta.get("val"), self.current[base].meta.get("val")
            if isinstance(before, torch.Tensor) and isinstance(after, torch.Tensor) and (
                    before.dim() != after.dim() or not all(map(_known_equal, before.shape, after.shape))):
                writer = self.writers.get(base)
                raise ExportError(f"{writer.name if writer is not None else base.name!r} at "
                                  f"{source_of(writer) if writer is not None else '?'} changes the shape of "
                                  f"{base.name!r} ({tuple(before.shape)} -> {tuple(after.shape)}), an input or the "
                                  "model's state, whose shape an exported model keeps across calls; write into a new "
                                  "tensor instead (y = x.new_empty(...) or a resized copy)")
            if spec.kind in (InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
                # a buffer, or a tensor the model keeps elsewhere (a plain attribute, a global): its state
                roles.append(OutputRole("buffer", spec.target))
            elif spec.kind == InputKind.USER_INPUT:
                roles.append(OutputRole("input", base.name))
            else:
                raise Unsupported(f"the graph writes to {spec.kind.name.lower()} {base.name!r}")
            updates.append(self.current[base])
        user_roles = [OutputRole("output") for _ in results]
        self.new.output(tuple(updates + results))
        self.new.lint()
        return torch.fx.GraphModule(self.ep.graph_module, self.new), roles + user_roles


def _freeze(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    return value


def _same_meta(a: torch.fx.Node, b: torch.fx.Node) -> bool:
    va, vb = a.meta.get("val"), b.meta.get("val")
    return (isinstance(va, torch.Tensor) and isinstance(vb, torch.Tensor) and va.dtype == vb.dtype
            and va.dim() == vb.dim() and all(map(_known_equal, va.shape, vb.shape)))


class _Builder:
    """What an inverse function adds nodes through: the rewriter's _emit, with `like`'s metadata."""

    def __init__(self, rewriter: _Rewriter, like: torch.fx.Node) -> None:
        self.rewriter = rewriter
        self.like = like

    def call_function(self, target: Any, args: tuple, kwargs: dict | None = None) -> torch.fx.Node:
        return self.rewriter._emit(target, args, kwargs, self.like)


def _view_twin(target: Any) -> Any | None:
    """The view op an in-place op that changes only a tensor's view of its storage (transpose_, t_,
    squeeze_, unsqueeze_, as_strided_, swapdims_: torch.Tag.inplace_view) stands for; None for others."""
    if not isinstance(target, torch._ops.OpOverload) or torch.Tag.inplace_view not in target.tags:
        return None
    twin = functional_twin(target)
    returns = twin._schema.returns if twin is not None else ()
    return twin if returns and returns[0].alias_info is not None else None


def _views_in_place_as_views(program: Program) -> Program:
    """transpose_() and its kind change how a tensor views its storage, never a value: on a tensor the model
    made (a view included, whose base keeps its shape) the result is that view (the node stands for the
    tensor from then on); written into an input or the model's state, whose shape an exported model cannot
    change, it is our error. (The rewrite took them for writes: it wrote the transposed values back into the
    base, a silent wrong answer.)"""
    gm = program.gm
    nodes = [n for n in gm.graph.nodes if n.op == "call_function" and _view_twin(n.target) is not None]
    if not nodes:
        return program
    for node in nodes:
        # detach_() keeps the shape: on an input it is the input (a tensor made in forward on the meta
        # device is a lifted constant that torch.tensor(...)'s detach_ reads directly)
        if isinstance(node.args[0], torch.fx.Node) and node.args[0].op == "placeholder" \
                and node.target is not aten.detach_.default:
            view = _view_twin(node.target)._schema.name.split("::")[1]
            raise ExportError(f"{node.name!r} at {source_of(node) or '?'}: {view}_() changes the shape of "
                              f"{node.args[0].name!r} in place, an input or the model's state, whose shape an exported "
                              f"model keeps; use the view instead (y = x.{view}(...))")
    graph = torch.fx.Graph()
    values: dict[torch.fx.Node, torch.fx.Node] = {}
    for node in gm.graph.nodes:
        values[node] = graph.node_copy(node, values.__getitem__)
        if node in nodes:
            values[node].target = _view_twin(node.target)
    return dataclasses.replace(program, gm=torch.fx.GraphModule(gm, graph, class_name=type(gm).__name__))


def functionalize(program: Program) -> Program:
    """The program with every in-place op rewritten. When this pass cannot prove a rewrite right,
    torch's own functionalization (run_decompositions with no decompositions) is used instead."""
    program = _views_in_place_as_views(program)
    if not needs_rewrite(program.gm):
        return program
    rewriter = _Rewriter(program.ep, program.gm)
    try:
        gm, roles = rewriter.run()
        return dataclasses.replace(program, gm=gm, roles=tuple(roles))
    except Unsupported as e:
        if rewriter.dropped_in:  # torch's functionalization takes eval dropout for a copy: the write would be lost
            node = rewriter.dropped_in[0]
            raise ExportError(f"{node.name!r} at {source_of(node) or '?'}: dropout outside training gives back its "
                              "input itself, and the model writes into it in place, which reaches the input in eager; "
                              f"aten2onnx's mutation rewrite does not handle this graph ({e}). Write into the tensor "
                              "before the dropout, or into a copy of the dropout's result (.clone())") from e
        try:
            functional = program.ep.run_decompositions({})
        except Exception as failure:  # torch's functionalization raises whatever its decompositions raise
            raise ExportError(f"the model writes in place in a way aten2onnx's rewrite does not handle ({e}), and "
                              f"torch's functionalization failed on it too: {type(failure).__name__}: "
                              f"{str(failure).splitlines()[0]}") from failure
        note = f"aten2onnx's mutation rewrite does not handle this graph ({e}); used torch's functionalization"
        return dataclasses.replace(Program.captured(functional), notes=program.notes + (note,))
