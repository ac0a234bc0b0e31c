"""If, Loop and Scan: bodies are compiled once, at session creation, by the subgraph compiler the session
gives (SessionContext.compile_graph); the values a body reads from enclosing scopes arrive in `outer`
and are passed on to it."""

from __future__ import annotations

import time

import torch

from aten2onnx import _dtypes
from aten2onnx.errors import InvalidModelError, RunTimeoutError
from aten2onnx.runtime.kernel import Kernel, kernel


def _arity(what: str, count: int, expected: int) -> None:
    """A body's inputs or outputs must match the node's, as the op's spec relates them."""
    if count != expected:
        raise InvalidModelError(f"{what} is {count}; the node's inputs and outputs make it {expected}")


def _empty_scan_output(info, device, axis: int = 0) -> torch.Tensor:
    """A scan output of a loop that ran zero times, of the body output's dtype: no steps along axis, and the
    body output's shape across the others where the body declares every dim of it, else shape (0,)."""
    try:
        dtype = _dtypes.to_torch(info.type.tensor_type.elem_type)
    except TypeError:
        dtype = torch.float32
    tensor_type = info.type.tensor_type
    dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor_type.shape.dim] \
        if tensor_type.HasField("shape") else [None]
    if None in dims:
        return torch.empty((0,), dtype=dtype, device=device)
    axis = axis + len(dims) + 1 if axis < 0 else axis
    return torch.empty(dims[:axis] + [0] + dims[axis:], dtype=dtype, device=device)


@kernel("If", since=1)  # 11: branch shapes may differ; then types
class If(Kernel):
    def setup(self, then_branch, else_branch) -> None:
        _arity("then_branch's output count", len(then_branch.output), len(self.node.output))
        _arity("else_branch's output count", len(else_branch.output), len(self.node.output))
        self.then_branch = self.ctx.compile_graph(then_branch)
        self.else_branch = self.ctx.compile_graph(else_branch)

    def run(self, cond, outer=None):
        branch = self.then_branch if bool(cond) else self.else_branch
        return tuple(branch.run([], outer))


@kernel("Loop", since=1)  # 11 rewords loop-carried values; 13: sequences; 16: optionals
class Loop(Kernel):
    """Loop: runs the body while the trip count M (if given) is not reached and cond holds; returns
    the final loop-carried values, then each scan output stacked along a new first axis."""

    def setup(self, body) -> None:
        carried = len(self.node.input) - 2
        _arity("the body's input count (iteration, condition, carried values)", len(body.input), 2 + carried)
        _arity("the body's output count (condition, carried values, scan outputs)", len(body.output),
               1 + len(self.node.output))
        if len(self.node.output) < carried:
            raise InvalidModelError(f"the node has {len(self.node.output)} outputs for {carried} loop-carried values")
        self.body = self.ctx.compile_graph(body)
        self.body_proto = body

    def run(self, trip_count=None, cond=None, *carried, outer=None):
        max_trip = None if trip_count is None else int(trip_count)
        keep = True if cond is None else bool(cond)
        n_carried = len(carried)
        scans: list[list[torch.Tensor]] = [[] for _ in range(len(self.body_proto.output) - 1 - n_carried)]
        i = 0
        device = self.ctx.device
        while keep and (max_trip is None or i < max_trip):
            if self.ctx.deadline is not None and time.monotonic() > self.ctx.deadline:
                raise RunTimeoutError(f"the run took longer than its timeout; it stopped in loop {self.node.name!r} "
                                      f"after {i} iterations")
            outs = self.body.run([torch.tensor(i, dtype=torch.int64, device=device),
                                  torch.tensor(keep, device=device), *carried], outer)
            keep = bool(outs[0])
            carried = tuple(outs[1:1 + n_carried])
            for acc, value in zip(scans, outs[1 + n_carried:]):
                acc.append(value)
            i += 1
        stacked = tuple(
            torch.stack(acc) if acc else _empty_scan_output(self.body_proto.output[1 + n_carried + j], device)
            for j, acc in enumerate(scans)
        )
        return tuple(carried) + stacked


def _scan(body, body_proto, state, scan_inputs, in_axes, in_dirs, out_axes, out_dirs, outer):
    steps = scan_inputs[0].shape[in_axes[0]] if scan_inputs else 0
    n_state = len(state)
    if steps == 0:  # no step ran: the state as given, and empty scan outputs
        return tuple(state) + tuple(_empty_scan_output(info, scan_inputs[0].device, axis)
                                    for info, axis in zip(body_proto.output[n_state:], out_axes))
    collected: list[list[torch.Tensor]] = []
    for t in range(steps):
        slices = [x.select(axis, steps - 1 - t if d else t) for x, axis, d in zip(scan_inputs, in_axes, in_dirs)]
        outs = body.run(list(state) + slices, outer)
        state = outs[:n_state]
        if not collected:
            collected = [[] for _ in outs[n_state:]]
        for acc, value in zip(collected, outs[n_state:]):
            acc.append(value)
    results = []
    for j, acc in enumerate(collected):
        if out_dirs[j]:
            acc = acc[::-1]
        axis = out_axes[j]
        rank = acc[0].dim() + 1
        results.append(torch.stack(acc, axis + rank if axis < 0 else axis))
    return tuple(state) + tuple(results)


def _scan_arity(node, body, num_scan_inputs: int, values: int, per_input: list, per_output: list = ()) -> None:
    """Scan: the node's `values` state and scan inputs are the body's inputs; its outputs, the body's."""
    if not 1 <= num_scan_inputs <= values:
        raise InvalidModelError(f"num_scan_inputs is {num_scan_inputs}, but the node has {values} state and scan inputs")
    _arity("the body's input count", len(body.input), values)
    _arity("the body's output count", len(body.output), len(node.output))
    n_scan_out = len(body.output) - (values - num_scan_inputs)
    if n_scan_out < 0:
        raise InvalidModelError(f"the body has fewer outputs than the {values - num_scan_inputs} state values")
    for attribute in per_input:
        if attribute is not None:
            _arity("a per-scan-input attribute's length", len(attribute), num_scan_inputs)
    for attribute in per_output:
        if attribute is not None:
            _arity("a per-scan-output attribute's length", len(attribute), n_scan_out)


@kernel("Scan", since=8)
class Scan8(Kernel):
    """Scan at opset 8: a leading batch axis, then time on axis 1; sequence_lens must be full."""

    def setup(self, body, num_scan_inputs: int, directions: list[int] | None = None) -> None:
        _scan_arity(self.node, body, num_scan_inputs, len(self.node.input) - 1, [directions])
        self.body = self.ctx.compile_graph(body)
        self.body_proto = body
        self.n, self.directions = num_scan_inputs, directions

    def run(self, sequence_lens, *inputs, outer=None):
        n_state = len(inputs) - self.n
        dirs = self.directions or [0] * self.n
        per_batch = []
        for b in range(inputs[0].shape[0]):
            state = [x[b] for x in inputs[:n_state]]
            scans = [x[b] for x in inputs[n_state:]]
            n_out = len(self.body.output_names) - n_state
            per_batch.append(_scan(self.body, self.body_proto, state, scans, [0] * self.n, dirs, [0] * n_out,
                                   [0] * n_out, outer))
        return tuple(torch.stack(vals) for vals in zip(*per_batch))


@kernel("Scan", since=9)  # 11: negative axes; then types
class Scan9(Kernel):
    def setup(self, body, num_scan_inputs: int, scan_input_axes: list[int] | None = None,
              scan_input_directions: list[int] | None = None, scan_output_axes: list[int] | None = None,
              scan_output_directions: list[int] | None = None) -> None:
        _scan_arity(self.node, body, num_scan_inputs, len(self.node.input),
                    [scan_input_axes, scan_input_directions], [scan_output_axes, scan_output_directions])
        self.body = self.ctx.compile_graph(body)
        self.body_proto = body
        self.n = num_scan_inputs
        n_out = len(body.output) - (len(body.input) - num_scan_inputs)
        self.in_axes = scan_input_axes or [0] * num_scan_inputs
        self.in_dirs = scan_input_directions or [0] * num_scan_inputs
        self.out_axes = scan_output_axes or [0] * n_out
        self.out_dirs = scan_output_directions or [0] * n_out

    def run(self, *inputs, outer=None):
        n_state = len(inputs) - self.n
        scans = inputs[n_state:]
        axes = [a + x.dim() if a < 0 else a for a, x in zip(self.in_axes, scans)]
        return _scan(self.body, self.body_proto, inputs[:n_state], scans, axes, self.in_dirs, self.out_axes,
                     self.out_dirs, outer)
