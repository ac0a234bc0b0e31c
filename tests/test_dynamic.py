"""Dynamic shapes: exported once, right on other shapes (1 and larger than the example included)."""

import warnings

import onnx
import pytest
import torch

import aten2onnx
from conftest import flat_tensors, run_ort
from optable import assert_runs_like_eager
from models import CNN, MLP, bert, gpt2, llama, token_ids

Dim = torch.export.Dim


class HalfReshape(torch.nn.Module):
    def forward(self, x):
        return x.reshape(x.shape[0], 2, x.size(1) // 2).sum(-1)


class Positions(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(64, 8)

    def forward(self, x):
        return x + self.embed(torch.arange(x.shape[1]))[None]


def check_shapes(model, example, dynamic_shapes, others, opset=18):
    model.eval()
    exported = aten2onnx.export(model, example, dynamic_shapes=dynamic_shapes, opset=opset, fallback="error")
    onnx.checker.check_model(exported.model_proto, full_check=True)
    for args in others:
        with torch.no_grad():
            expected = flat_tensors(model(*args))
        got_ort = run_ort(exported.model_proto, dict(zip(exported.input_names, args)))
        got_ours = flat_tensors(exported.run(*args))
        for want, a, b in zip(expected, got_ort, got_ours):
            torch.testing.assert_close(torch.from_numpy(a), want, rtol=1e-4, atol=1e-5)
            torch.testing.assert_close(b, want, rtol=1e-4, atol=1e-5)
    return exported


class CausalAttention(torch.nn.Module):
    """is_causal with a dynamic sequence length, and SymInt arithmetic (%, //) on it."""

    def forward(self, q, k, v):
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return out * (q.shape[2] % 3 + 1) + q.shape[2] // 2


class SizesAndStrides(torch.nn.Module):
    """numel() and stride() of dynamic tensors are SymInts in the graph (sym_numel, sym_stride)."""

    def forward(self, x):
        return x.flatten() * x.numel() + x.stride(0) + x.stride(1) - x.transpose(0, 1).contiguous().stride(0)


class ShiftedWindows(torch.nn.Module):
    """torch.roll over static dims of a tensor with a dynamic batch (Swin's shifted windows)."""

    def forward(self, x):
        return torch.roll(x, (2, -1), (1, 2)) + x


SEQ = Dim("seq", min=2, max=64)
CASES = {
    "mlp": (MLP, lambda b, s: (torch.randn(b, 8),), {"x": {0: Dim("batch")}}, False),
    "cnn": (CNN, lambda b, s: (torch.randn(b, 3, 16, 16),), {"x": {0: Dim("batch")}}, False),
    "half_reshape": (HalfReshape, lambda b, s: (torch.randn(b, 2 * s),), {"x": {0: Dim("batch"), 1: Dim("half") * 2}}, True),
    "positions": (Positions, lambda b, s: (torch.randn(b, s, 8),), {"x": {0: Dim("batch"), 1: Dim("seq", max=64)}}, True),
    "causal_attention": (CausalAttention, lambda b, s: tuple(torch.randn(b, 2, s, 8) for _ in range(3)),
                         {"q": {0: Dim("batch"), 2: SEQ}, "k": {0: Dim("batch"), 2: SEQ}, "v": {0: Dim("batch"), 2: SEQ}},
                         True),
    "roll_static_dims": (ShiftedWindows, lambda b, s: (torch.randn(b, 5, 6, 3),), {"x": {0: Dim("batch")}}, False),
    "sizes_strides": (SizesAndStrides, lambda b, s: (torch.randn(b, s, 3),), {"x": {0: Dim("batch"), 1: Dim("seq")}}, True),
    "gpt2": (gpt2, lambda b, s: (token_ids(b, s),), {"input_ids": {0: "batch", 1: "seq"}}, True),
    "llama": (llama, lambda b, s: (token_ids(b, s),), {"input_ids": {0: "batch", 1: "seq"}}, True),
    "bert": (bert, lambda b, s: (token_ids(b, s),), {"input_ids": {0: "batch", 1: "seq"}}, True),
}


@pytest.mark.parametrize("name", list(CASES))
def test_dynamic_model_is_right_on_other_shapes(name):
    factory, make, spec, has_seq = CASES[name]
    others = [make(1, 2 if has_seq else 4), make(3, 5), make(9, 40)]
    check_shapes(factory(), make(2, 16), spec, others)


def test_plain_names_become_dim_params():
    exported = aten2onnx.export(gpt2().eval(), (token_ids(2, 16),), dynamic_shapes={"input_ids": {0: "batch", 1: "seq"}})
    dims = [[d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]
            for v in list(exported.model_proto.graph.input) + list(exported.model_proto.graph.output)]
    assert dims == [["batch", "seq"], ["batch", "seq", 64]]


def test_no_reshape_bakes_the_example_size():
    exported = aten2onnx.export(HalfReshape(), (torch.randn(2, 16),),
                                dynamic_shapes={"x": {0: Dim("batch"), 1: Dim("half") * 2}})
    consts = {tuple(onnx.numpy_helper.to_array(i).tolist()) for i in exported.model_proto.graph.initializer
              if i.data_type == onnx.TensorProto.INT64 and len(i.dims) == 1}
    assert (2, 2, 8) not in consts and (2, 8) not in consts


class SqueezeBatch(torch.nn.Module):
    def forward(self, x):
        return x.squeeze(0) + 1


class BatchStatistics(torch.nn.Module):
    """Reads the batch size, reduces over the batch, concatenates along it."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        y = self.fc(x).softmax(-1) * x.shape[0]
        return torch.cat([y, y.sum(0, keepdim=True)]), y.sum(0)


@pytest.mark.parametrize("example", [0, 1], ids=["size0", "size1"])
@pytest.mark.parametrize("spec", ["batch", Dim.AUTO, Dim("batch")], ids=["name", "auto", "dim"])
def test_example_size_0_or_1_stays_dynamic(example, spec):
    """A dim declared dynamic whose example size is 0 or 1 (which torch takes for a constant) is captured
    size-obliviously: the model stays dynamic and right on sizes 0, 1 and more, in both runtimes."""
    model = BatchStatistics().eval()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no specialization warning
        exported = aten2onnx.export(model, (torch.randn(example, 4),), dynamic_shapes={"x": {0: spec}})
    assert not exported.model_proto.graph.input[0].type.tensor_type.shape.dim[0].HasField("dim_value")
    for size in (0, 1, 5):
        x = torch.randn(size, 4)
        want = model(x)
        got = exported.run(x)
        ort = run_ort(exported.model_proto, {"x": x})
        for w, g, o in zip(want, got, ort):
            assert g.shape == w.shape and o.shape == tuple(w.shape)
            torch.testing.assert_close(g, w.detach())
            torch.testing.assert_close(torch.from_numpy(o), w.detach())


def test_specialized_dynamic_dim_is_reported():
    """Where a result's rank depends on the size being 1 (a squeeze of that dim), the capture stays
    specialized, as torch makes it: with a warning, and other sizes refused by run()."""
    with pytest.warns(aten2onnx.NarrowedExportWarning, match=r"input 'x' dim 0 \(batch\) was declared dynamic, but the export fixed it at 1"):
        exported = aten2onnx.export(SqueezeBatch(), (torch.randn(1, 4),), dynamic_shapes={"x": {0: "batch"}})
    assert exported.model_proto.graph.input[0].type.tensor_type.shape.dim[0].dim_value == 1
    with pytest.raises(aten2onnx.InvalidInputError):
        exported.run(torch.randn(3, 4))


def test_dynamic_export_does_not_warn_when_dims_stay_dynamic():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        aten2onnx.export(MLP().eval(), (torch.randn(3, 8),), dynamic_shapes={"x": {0: "batch"}})


class NormOverDynamicDims(torch.nn.Module):
    """layer_norm whose normalized shape is the input's own dynamic trailing sizes (no weight)."""

    def forward(self, x):
        return torch.nn.functional.layer_norm(x, x.shape[-2:]) + torch.nn.functional.layer_norm(x, (x.shape[-1],))


@pytest.mark.parametrize("opset", [13, 18, 26])
def test_layer_norm_over_dynamic_normalized_sizes_is_native(opset):
    check_shapes(NormOverDynamicDims(), (torch.randn(2, 3, 4),), {"x": {0: Dim("b"), 1: Dim("r"), 2: Dim("c")}},
                 [(torch.randn(3, 5, 7),), (torch.randn(1, 2, 9),)], opset=opset)


class SqueezeAll(torch.nn.Module):
    def forward(self, x):
        return x.squeeze() * 2


def test_a_squeeze_of_dynamic_dims_is_warned_of_and_size_1_refused_when_run():
    """x.squeeze() with dims declared dynamic whose example sizes are not 1: the graph keeps them (it cannot
    change rank), so an input with a 1 there gave a result of another rank than eager's, silently. The export
    warns naming each dim and the line; aten2onnx.runtime refuses a 1 there; other sizes are right."""
    with pytest.warns(aten2onnx.NarrowedExportWarning, match=r"input 'x' dim 1 \(x_dim1\) meets a squeeze at .*"
                      r"test_dynamic\.py:\d+"):
        exported = aten2onnx.export(SqueezeAll(), (torch.randn(2, 3, 4),),
                                    dynamic_shapes=({0: torch.export.Dim.AUTO, 1: torch.export.Dim.AUTO},))
    with pytest.raises(aten2onnx.InvalidInputError, match=r"size 1 in dim 1 \(x_dim1\)"):
        exported.run(torch.randn(3, 1, 4))
    x = torch.randn(5, 6, 4)
    torch.testing.assert_close(exported.run(x), SqueezeAll()(x))
    torch.testing.assert_close(torch.from_numpy(run_ort(exported.model_proto, {"x": x})[0]), SqueezeAll()(x))


class StridedThenFractional(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 3, 3, stride=2)
        self.pool = torch.nn.FractionalMaxPool2d(2, output_ratio=0.5, _random_samples=torch.rand(1, 3, 2))

    def forward(self, x):
        return self.pool(self.conv(x))


def with_nans(shape):
    """Values with NaNs in some windows and whole -inf rows (eager keeps a window's last NaN, and its first
    element where every one is -inf)."""
    x = torch.randn(shape)
    x.view(-1)[::11] = float("nan")
    x[..., 0, :] = float("-inf")
    return x


# name: (layer, example shape, other shapes, make an input); fixed random samples (8 rows: more than a batch)
FRACTIONAL = {
    "ratio_2d": (lambda: torch.nn.FractionalMaxPool2d(2, output_ratio=0.5, _random_samples=torch.rand(8, 3, 2)),
                 (1, 3, 8, 10), [(2, 3, 12, 10), (3, 3, 5, 7)], torch.randn),
    "ratio_2d_uneven_indices": (lambda: torch.nn.FractionalMaxPool2d((3, 2), output_ratio=(0.4, 0.7),
                                                                     return_indices=True,
                                                                     _random_samples=torch.rand(8, 3, 2)),
                                (2, 3, 11, 9), [(4, 3, 17, 6), (1, 3, 8, 8)], with_nans),
    "ratio_3d": (lambda: torch.nn.FractionalMaxPool3d(2, output_ratio=0.5, _random_samples=torch.rand(8, 3, 3)),
                 (2, 3, 6, 6, 8), [(1, 3, 6, 7, 10), (3, 3, 9, 4, 5)], torch.randn),
    "size_3d_indices": (lambda: torch.nn.FractionalMaxPool3d((2, 1, 3), output_size=(2, 3, 2), return_indices=True,
                                                             _random_samples=torch.rand(8, 3, 3)),
                        (2, 3, 4, 6, 7), [(3, 3, 8, 5, 6), (1, 3, 4, 4, 5)], with_nans),
    "unbatched_2d": (lambda: torch.nn.FractionalMaxPool2d(2, output_size=(3, 2), _random_samples=torch.rand(1, 3, 2)),
                     (3, 8, 10), [(3, 5, 4)], torch.randn),
    "after_strided_conv": (StridedThenFractional, (1, 3, 17, 17), [(1, 3, 21, 17), (1, 3, 9, 30)], torch.randn),
}


@pytest.mark.parametrize("opset", [9, 18, 23])
@pytest.mark.parametrize("name", list(FRACTIONAL))
def test_a_fractional_pool_keeps_its_dims_dynamic(name, opset):
    """FractionalMaxPool with dynamic dims: given output_ratio, torch.export wrote the example's output size
    as a constant (the export then fixed the dims it came from, with a warning); the 3-D pool's meta kernel
    fixed every dim; and the op was an ATen node. Its size stays symbolic, int(size * ratio) as torch
    computes it, and the windows each plane's samples place are gathered natively: eager's values and
    indices on other sizes, NaN windows included."""
    make, example, others, make_input = FRACTIONAL[name]
    torch.manual_seed(0)
    model = make().eval()
    auto = torch.export.Dim.AUTO
    channels = len(example) - (4 if "3d" in name else 3)  # (the channel dim stays static: the samples hold 3)
    dims = {d: auto for d in range(len(example)) if d != channels}
    with warnings.catch_warnings():
        warnings.simplefilter("error", aten2onnx.NarrowedExportWarning)
        exported = aten2onnx.export(model, (make_input(example),), opset=opset, dynamic_shapes=(dims,),
                                    fallback="error")
    shape = exported.model_proto.graph.input[0].type.tensor_type.shape.dim
    assert all(shape[d].dim_param for d in dims)
    for size in [example] + others:
        assert_runs_like_eager(exported, model, (make_input(size),), equal_nan=True)
