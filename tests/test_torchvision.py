"""torchvision's detection ops (nms, batched_nms, roi_align, roi_pool) and classification models, exported
natively with dynamic sizes and run in onnxruntime and aten2onnx.runtime against eager torchvision: nms's
indices and roi_pool's values and argmax exactly, roi_align within float tolerance. Inputs include ties,
IoUs exactly at the threshold, inverted and degenerate boxes, rois partly outside the image, smaller than
a pixel or on half-pixel corners, several images, and empty sets."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import warnings
from typing import Callable

import pytest
import torch
from optable import Call, assert_runs_like_eager

import aten2onnx
from aten2onnx.errors import UnsupportedOperatorError

torchvision = pytest.importorskip("torchvision")

Dim = torch.export.Dim
ops = torchvision.ops


def export(fn: Callable, args: tuple, opset: int, dynamic: tuple) -> aten2onnx.ExportedModel:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return aten2onnx.export(Call(fn), args, opset=opset, dynamic_shapes=(dynamic,), fallback="error")


# -- nms ------------------------------------------------------------------------------------------------


def corners(xy: torch.Tensor, wh: torch.Tensor) -> torch.Tensor:
    return torch.cat([xy, xy + wh], 1)


def boxes_and_scores(kind: str, dtype: torch.dtype, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    if kind == "random":
        boxes = corners(torch.rand(40, 2, generator=g) * 20, torch.rand(40, 2, generator=g) * 8)
        scores = torch.rand(40, generator=g)
    elif kind == "grid_ties":  # integer boxes: IoUs exactly 1/2, 1/3, ...; scores in quarters: ties
        boxes = corners(torch.randint(0, 8, (60, 2), generator=g), torch.randint(0, 4, (60, 2), generator=g))
        scores = torch.randint(0, 4, (60,), generator=g) / 4
    elif kind == "at_threshold":  # IoU 1/3 (float32 0.33333334, above 1/3), then 1/2
        boxes = torch.tensor([[0, 0, 2, 1], [1, 0, 3, 1], [5, 5, 6, 6], [5, 5, 7, 6]])
        scores = torch.tensor([0.9, 0.8, 0.7, 0.6])
    elif kind == "identical":
        boxes, scores = torch.tensor([[1, 1, 4, 3]]).repeat(5, 1), torch.ones(5)
    elif kind == "inverted":  # x2 < x1 or y2 < y1: torchvision's IoU with such a box is 0
        boxes = corners(torch.rand(30, 2, generator=g) * 10, torch.rand(30, 2, generator=g) * 6 - 2)
        scores = torch.rand(30, generator=g)
    elif kind == "single":
        boxes, scores = torch.tensor([[0, 0, 1, 1]]), torch.tensor([0.5])
    elif kind == "many":  # over 1000 boxes: torchvision's batched_nms runs one nms per class, then orders
        # the kept boxes by an unstable sort (equal scores in no defined order): distinct scores
        boxes = corners(torch.rand(1200, 2, generator=g) * 60, torch.rand(1200, 2, generator=g) * 10)
        scores = torch.randperm(1200, generator=g) / 1200
    else:  # empty
        boxes, scores = torch.zeros(0, 4), torch.zeros(0)
    return boxes.to(dtype), scores.to(dtype)


BOX_SETS = ("random", "grid_ties", "at_threshold", "identical", "inverted", "single", "empty")


@dataclasses.dataclass
class NmsCase:
    fn: Callable
    dtype: torch.dtype
    opsets: tuple[int, ...]
    classes: bool = False  # batched_nms: a third input, each box's class


NMS = {
    "nms": NmsCase(lambda b, s: ops.nms(b, s, 0.5), torch.float32, (10, 18)),
    "threshold_not_a_float32": NmsCase(lambda b, s: ops.nms(b, s, 1 / 3), torch.float32, (11,)),
    "threshold_zero": NmsCase(lambda b, s: ops.nms(b, s, 0.0), torch.float32, (18,)),
    "threshold_above_one": NmsCase(lambda b, s: ops.nms(b, s, 1.5), torch.float32, (18,)),
    "threshold_negative": NmsCase(lambda b, s: ops.nms(b, s, -0.25), torch.float32, (18,)),  # by Loop
    "float64": NmsCase(lambda b, s: ops.nms(b, s, 0.5), torch.float64, (10, 18)),  # by Loop
    "batched_nms": NmsCase(lambda b, s, c: ops.batched_nms(b, s, c, 0.5), torch.float32, (11, 18), classes=True),
    "batched_nms_float64": NmsCase(lambda b, s, c: ops.batched_nms(b, s, c, 0.5), torch.float64, (18,), classes=True),
}


@pytest.mark.parametrize("name, opset", [(name, opset) for name, case in NMS.items() for opset in case.opsets])
def test_nms_keeps_eager_indices_exactly(name, opset):
    case = NMS[name]

    def inputs(kind: str, seed: int) -> tuple:
        boxes, scores = boxes_and_scores(kind, case.dtype, seed)
        if not case.classes:
            return boxes, scores
        return boxes, scores, torch.randint(0, 3, (len(boxes),), generator=torch.Generator().manual_seed(seed))

    n = Dim("n")
    example = inputs("random", 0)
    exported = export(case.fn, example, opset, tuple({0: n} for _ in example))
    assert exported.fallback_ops == []
    # batched_nms takes one of two ways by the number of boxes (above 1000, one nms per class): both
    for seed, kind in enumerate(BOX_SETS + (("many",) if case.classes else ()), 1):
        assert_runs_like_eager(exported, case.fn, inputs(kind, seed))


# -- roi_align, roi_pool --------------------------------------------------------------------------------


def rois(kind: str, images: int, height: int, width: int, scale: float, dtype: torch.dtype, seed: int) -> torch.Tensor:
    """[K, 5] rois (batch index, x1, y1, x2, y2) in input coordinates (feature-map ones / scale)."""
    g = torch.Generator().manual_seed(seed)
    k = 0 if kind == "empty" else 9
    size = torch.tensor([width, height], dtype=torch.float64)
    if kind == "inside":
        xy, wh = torch.rand(k, 2, generator=g) * size * 0.6, torch.rand(k, 2, generator=g) * size * 0.4 + 0.5
    elif kind == "outside":  # partly or wholly outside the image
        xy, wh = (torch.rand(k, 2, generator=g) * 1.6 - 0.4) * size, torch.rand(k, 2, generator=g) * size
    elif kind == "small":  # under a pixel, points, inverted
        xy, wh = torch.rand(k, 2, generator=g) * size, torch.rand(k, 2, generator=g) * 1.5 - 0.5
        wh[::3] = 0
    elif kind == "half_pixels":  # scaled corners on .5: round() half away from zero
        xy = torch.randint(-1, max(height, width), (k, 2), generator=g) + 0.5
        wh = torch.randint(0, 4, (k, 2), generator=g).double()
    else:  # empty
        xy = wh = torch.zeros(0, 2)
    batch = torch.randint(0, images, (k, 1), generator=g).double()
    return torch.cat([batch, corners(xy, wh) / scale], 1).to(dtype)


ROI_SETS = ("inside", "outside", "small", "half_pixels", "empty")


@dataclasses.dataclass
class RoiCase:
    fn: Callable
    scale: float
    dtypes: tuple[torch.dtype, ...]
    opsets: tuple[int, ...]
    exact: bool = False


F32, F64, F16 = torch.float32, torch.float64, torch.float16
ROIS = {
    "roi_align": RoiCase(lambda x, r: ops.roi_align(x, r, (3, 2), 0.5, -1, False), 0.5, (F32, F64), (10, 16)),
    "roi_align_two_samples_third_scale": RoiCase(lambda x, r: ops.roi_align(x, r, (2, 3), 1 / 3, 2, False), 1 / 3,
                                                 (F32, F64), (18,)),
    "roi_align_aligned": RoiCase(lambda x, r: ops.roi_align(x, r, 3, 0.25, 0, True), 0.25, (F32, F64), (16, 18)),
    "roi_pool": RoiCase(lambda x, r: ops.roi_pool(x, r, (3, 2), 0.5), 0.5, (F32, F64, F16), (9, 18), exact=True),
    # both outputs: the argmax is built from standard ops
    "roi_pool_argmax": RoiCase(lambda x, r: torch.ops.torchvision.roi_pool(x, r, 1 / 3, 2, 3), 1 / 3, (F32, F64, F16),
                               (9, 18), exact=True),
}


@pytest.mark.parametrize("name, dtype, opset", [
    pytest.param(name, dtype, opset, id=f"{name}-{str(dtype).removeprefix('torch.')}-{opset}")
    for name, case in ROIS.items() for dtype in case.dtypes for opset in case.opsets])
def test_roi_op_matches_eager(name, dtype, opset):
    case = ROIS[name]
    g = torch.Generator().manual_seed(0)

    def inputs(kind: str, images: int, height: int, width: int, seed: int) -> tuple:
        x = torch.randn(images, 3, height, width, generator=g).to(dtype)
        return x, rois(kind, images, height, width, case.scale, dtype, seed)

    example = inputs("inside", 2, 9, 11, 0)
    exported = export(case.fn, example, opset, ({0: Dim("n"), 2: Dim("h"), 3: Dim("w")}, {0: Dim("k")}))
    assert exported.fallback_ops == []
    for seed, kind in enumerate(ROI_SETS, 1):
        for images, height, width in ((2, 9, 11), (3, 6, 14)):
            assert_runs_like_eager(exported, case.fn, inputs(kind, images, height, width, seed),
                                   tol=(0, 0) if case.exact else None)


@pytest.mark.parametrize("opset, dtype, aligned, reason", [
    pytest.param(15, F32, True, "aligned=True is exported from opset 16", id="aligned_before_16"),
    # eager computes float16 in half steps, accumulating in float16
    pytest.param(18, F16, False, "exported for float32 and float64, not torch.float16", id="float16"),
])
def test_roi_align_falls_back_where_no_roi_align_computes_as_eager(opset, dtype, aligned, reason):
    def fn(x, r):
        return ops.roi_align(x, r, 2, 0.5, 2, aligned)

    args = (torch.randn(2, 3, 8, 8).to(dtype), rois("inside", 2, 8, 8, 0.5, dtype, 0))
    with pytest.raises(UnsupportedOperatorError, match=reason):
        export(fn, args, opset, ({0: Dim("n")}, {0: Dim("k")}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported = aten2onnx.export(Call(fn), args, opset=opset)
    assert exported.fallback_ops == ["torchvision::roi_align.default"]
    torch.testing.assert_close(exported.run(*args), fn(*args))


def test_importing_aten2onnx_does_not_import_torchvision():
    code = "import sys, aten2onnx; assert 'torchvision' not in sys.modules, 'imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_torchvision_handlers_match_the_loaded_schemas():
    from aten2onnx.registry import REGISTRY
    from aten2onnx.registry._schema import check_signature, resolve_overload

    keys = ["torchvision::nms.default", "torchvision::roi_align.default", "torchvision::roi_pool.default"]
    for key in keys:
        for handler in REGISTRY.builtin_handlers()[key].values():
            check_signature(handler, resolve_overload(key)._schema, key)


# -- classification models --------------------------------------------------------------------------------


def randomized(model: torch.nn.Module) -> torch.nn.Module:
    """Random batch-norm statistics, and the parameters initialized to zero (ViT's head, biases) drawn, so
    that outputs are not near 0 (MobileNetV3's and EfficientNet's are 1e-10 as initialized)."""
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
                module.running_mean.normal_(0, 0.1, generator=g)
                module.running_var.uniform_(0.5, 1.5, generator=g)
        for p in model.parameters():
            if not p.any():
                p.normal_(0, 0.1, generator=g)
    return model.eval()


models = torchvision.models
MODELS = {
    "resnet18": lambda: models.resnet18(weights=None, num_classes=10),
    "mobilenet_v3_small": lambda: models.mobilenet_v3_small(weights=None, num_classes=10),
    "efficientnet_b0": lambda: models.efficientnet_b0(weights=None, num_classes=10),
    "regnet_y_400mf": lambda: models.regnet_y_400mf(weights=None, num_classes=10),
    "convnext_tiny": lambda: models.convnext_tiny(weights=None, num_classes=10),
    "vit": lambda: models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32,
                                           mlp_dim=64, num_classes=10),
    # shifted windows: torch.roll over the spatial dims of a tensor with a dynamic batch
    "swin": lambda: models.SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 2],
                                           window_size=[4, 4], num_classes=10),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_classification_model_exports_natively_with_a_dynamic_batch(name):
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = randomized(MODELS[name]())
    g = torch.Generator().manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported = aten2onnx.export(model, (torch.randn(2, 3, 32, 32, generator=g),), opset=18,
                                    dynamic_shapes={"x": {0: Dim("batch")}}, fallback="error")
    assert exported.fallback_ops == []
    for batch in (2, 3):
        assert_runs_like_eager(exported, model, (torch.randn(batch, 3, 32, 32, generator=g),))
