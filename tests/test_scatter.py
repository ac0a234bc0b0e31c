"""Scatter family (writes into tensors) against eager, in onnxruntime and aten2onnx.runtime."""

import dataclasses
from typing import Callable

import onnx
import pytest
import torch

import aten2onnx
from aten2onnx.symbolic import MAX_OPSET
from conftest import run_ort

aten = torch.ops.aten
r = torch.randn


@dataclasses.dataclass
class Case:
    name: str
    fn: Callable
    make: Callable[[], tuple]
    opsets: tuple = (11, 16, 18, MAX_OPSET)


def idx(*values, dtype=torch.int64):
    return torch.tensor(values, dtype=dtype)


CASES = [
    Case("index_put_rows", lambda x, i, v: aten.index_put(x, [i], v), lambda: (r(5, 3), idx(4, 0), r(2, 3))),
    Case("index_put_broadcast_scalar", lambda x, i, v: aten.index_put(x, [i], v), lambda: (r(5, 3), idx(1, 3), r(()))),
    Case("index_put_int32_last_dim", lambda x, i, v: aten.index_put(x, [None, None, i], v),
         lambda: (r(2, 3, 5), idx(1, 3, dtype=torch.int32), r(2, 3, 2))),
    Case("index_put_adjacent_middle", lambda x, i, j, v: aten.index_put(x, [None, i, j], v),
         lambda: (r(2, 4, 5, 3), idx(0, 3), idx(4, 1), r(2, 2, 3))),
    Case("index_put_non_adjacent", lambda x, i, j, v: aten.index_put(x, [i, None, j], v),
         lambda: (r(4, 2, 5), idx(0, 3), idx(4, -1), r(2, 2))),
    Case("index_put_broadcast_indices", lambda x, i, j, v: aten.index_put(x, [i, j], v),
         lambda: (r(4, 5), idx(0, 3).reshape(2, 1), idx(1, 2, 4), r(3))),
    Case("index_put_mask_scalar", lambda x, v: aten.index_put(x, [x > 0], v), lambda: (r(3, 4), r(()))),
    Case("index_put_mask_values", lambda x, v: aten.index_put(x, [x > 0], v[: int((x > 0).sum())]),
         lambda: (torch.tensor([[1.0, -1], [2, 3]]), r(3))),
    Case("index_put_accumulate", lambda x, i, v: aten.index_put(x, [i], v, True), lambda: (r(5, 3), idx(1, 1, 4), r(3, 3)),
         (16, 18, MAX_OPSET)),
    Case("index_copy", lambda x, i, s: x.index_copy(1, i, s), lambda: (r(3, 5), idx(4, 0), r(3, 2))),
    Case("index_fill_scalar", lambda x, i: x.index_fill(1, i, -2.0), lambda: (r(3, 5), idx(4, 0))),
    Case("index_fill_tensor", lambda x, i, v: x.index_fill(0, i, v), lambda: (r(4, 2), idx(3), r(()))),
    Case("index_copy_scalar_self", lambda x, i, s: x.index_copy(0, i, s), lambda: (r(()), idx(0), r(()))),
    Case("index_add_alpha", lambda x, i, s: x.index_add(0, i, s, alpha=2), lambda: (r(4, 3), idx(1, 1, 3), r(3, 3)),
         (16, 18, MAX_OPSET)),
    Case("scatter_src", lambda x, i, s: x.scatter(1, i, s), lambda: (r(3, 5), idx(0, 4, 2, 1, 3, 0).reshape(3, 2), r(3, 4)),
         (9, 11, 16, 18, MAX_OPSET)),
    Case("scatter_value", lambda x, i: x.scatter(0, i, 2.5), lambda: (r(4, 2), idx(3, 0, 1, 2).reshape(2, 2)),
         (9, 11, 16, 18, MAX_OPSET)),
    Case("scatter_add", lambda x, i, s: x.scatter_add(0, i, s), lambda: (r(3, 2), idx(0, 0, 2, 0).reshape(2, 2), r(2, 2)),
         (16, 18, MAX_OPSET)),
    Case("scatter_reduce_prod", lambda x, i, s: x.scatter_reduce(0, i, s, "prod"),
         lambda: (r(3, 2), idx(0, 1, 2, 0).reshape(2, 2), r(2, 2)), (16, 18, MAX_OPSET)),
    Case("scatter_reduce_amax", lambda x, i, s: x.scatter_reduce(0, i, s, "amax"),
         lambda: (r(3, 2), idx(0, 1, 2, 0).reshape(2, 2), r(2, 2)), (18, MAX_OPSET)),
    Case("scatter_reduce_mean_exclude_self", lambda x, i, s: x.scatter_reduce(0, i, s, "mean", include_self=False),
         lambda: (r(3, 2), idx(0, 0, 2, 0).reshape(2, 2), r(2, 2)), (16, 18, MAX_OPSET)),
    Case("scatter_reduce_amin_exclude_self", lambda x, i, s: x.scatter_reduce(0, i, s, "amin", include_self=False),
         lambda: (r(3, 2), idx(0, 1, 0, 0).reshape(2, 2), r(2, 2)), (18, MAX_OPSET)),
    Case("index_reduce_prod_exclude_self", lambda x, i, s: x.index_reduce(0, i, s, "prod", include_self=False),
         lambda: (r(4, 3), idx(1, 1, 3), r(3, 3)), (16, 18, MAX_OPSET)),
    Case("index_reduce_mean", lambda x, i, s: x.index_reduce(0, i, s, "mean"),
         lambda: (r(4, 3), idx(1, 1, 3), r(3, 3)), (16, 18, MAX_OPSET)),
    Case("select_scatter_dim0", lambda x, s: aten.select_scatter(x, s, 0, 2), lambda: (r(4, 3), r(3))),
    Case("select_scatter_negative_dim1", lambda x, s: aten.select_scatter(x, s, 1, -1), lambda: (r(4, 3), r(4))),
    Case("slice_scatter_middle", lambda x, s: aten.slice_scatter(x, s, 1, 1, 3), lambda: (r(2, 5), r(2, 2))),
    Case("slice_scatter_step", lambda x, s: aten.slice_scatter(x, s, 0, 0, None, 2), lambda: (r(5, 2), r(3, 2))),
    Case("slice_scatter_to_end", lambda x, s: aten.slice_scatter(x, s, 0, -2), lambda: (r(5, 2), r(2, 2))),
    Case("diagonal_scatter", lambda x, s: aten.diagonal_scatter(x, s, 1), lambda: (r(3, 4), r(3))),
    Case("as_strided_scatter", lambda x, s: aten.as_strided_scatter(x, s, [2, 2], [1, 3], 1), lambda: (r(3, 3), r(2, 2))),
    Case("copy_broadcast_cast", lambda x, s: aten.copy(x, s), lambda: (r(3, 4), torch.arange(4))),
    Case("item_scales", lambda x: x / x.abs().max().item(), lambda: (r(5),)),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=f"{c.name}") for c in CASES])
def test_scatter_matches_eager(case):
    args = case.make()
    expected = case.fn(*args)
    for opset in case.opsets:
        exported = aten2onnx.export(case.fn, args, opset=opset, fallback="error")
        onnx.checker.check_model(exported.model_proto, full_check=True)
        feeds = {n: a for n, a in zip(exported.input_names, args)}
        torch.testing.assert_close(torch.from_numpy(run_ort(exported.model_proto, feeds)[0]), expected)
        torch.testing.assert_close(exported.run(*args), expected)


def test_accumulate_before_opset_16_falls_back_with_the_reason():
    x, i, v = r(5, 3), idx(1, 1), r(2, 3)
    with pytest.raises(aten2onnx.UnsupportedOperatorError, match="export at opset 16 or later"):
        aten2onnx.export(lambda x, i, v: aten.index_put(x, [i], v, True), (x, i, v), opset=13, fallback="error")
