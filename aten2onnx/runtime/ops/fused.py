"""Kernels of the internal domain aten2onnx.fused: ATen ops the exporter decomposed, run whole
again (see runtime/optimize.py). Each runs its group's own nodes instead when its inputs are not
of the dtypes and ranks the fused op assumes, so fusing never changes what a model computes."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from aten2onnx.runtime.kernel import Kernel, kernel, runtime_dtype
from aten2onnx.runtime.optimize import DOMAIN
from aten2onnx.runtime.safety import check_op


class _Fused(Kernel):
    aten_op: torch._ops.OpOverload

    def _group(self, group) -> None:
        """The group's nodes, runnable on the fused node's inputs."""
        check_op(self.aten_op, self.ctx.allowed_aten_ops)
        self.group = self.ctx.compile_graph(group)
        order = list(self.node.input)
        self.group_inputs = [order.index(i.name) for i in group.input]

    def as_written(self, *inputs):
        return tuple(self.group.run([inputs[i] for i in self.group_inputs]))


@kernel("Gelu", since=1, domain=DOMAIN)
class Gelu(_Fused):
    aten_op = torch.ops.aten.gelu.default

    def setup(self, group, dtype: int, approximate: str = "none") -> None:
        self._group(group)
        self.approximate, self.dtype = approximate, runtime_dtype(dtype)

    def run(self, x):
        if x.dtype != self.dtype:
            return self.as_written(x)
        return (F.gelu(x, approximate=self.approximate),)


@kernel("Silu", since=1, domain=DOMAIN)
class Silu(_Fused):
    aten_op = torch.ops.aten.silu.default

    def setup(self, group) -> None:
        self._group(group)

    def run(self, x):
        if not x.is_floating_point():
            return self.as_written(x)
        return (F.silu(x),)


@kernel("Attention", since=1, domain=DOMAIN)
class Attention(_Fused):
    """scaled_dot_product_attention with an optional bool ("where") or additive ("add") mask."""

    aten_op = torch.ops.aten.scaled_dot_product_attention.default

    def setup(self, group, scale: torch.Tensor, mask: str, rank: int, dtype: int) -> None:
        self._group(group)
        self.scale, self.mask, self.rank, self.dtype = float(scale), mask, rank, runtime_dtype(dtype)

    def run(self, q, k, v, mask=None):
        mask_dtype = {"none": None, "where": torch.bool, "add": q.dtype}[self.mask]
        if any(t.dtype != self.dtype or t.dim() != self.rank for t in (q, k, v)) \
                or (mask.dtype if mask is not None else None) != mask_dtype \
                or (mask is not None and not 2 <= mask.dim() <= self.rank):
            return self.as_written(q, k, v, mask)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=self.scale)
        # A row whose scores are all -inf (fully masked) is zeros in torch's attention, NaN in the
        # written softmax; a NaN anywhere may have such a cause too. Either: run the nodes as written.
        if out.isnan().any() or (out == 0).all(-1).any():
            return self.as_written(q, k, v, mask)
        return (out,)
