"""Detection and segmentation end to end: outputs whose size the data decides (boxes passing a score
threshold, top-k of what survived, per-class nms), on images of dynamic size, exported natively and run in
onnxruntime and aten2onnx.runtime against eager, as detections: their count, labels and indices exactly,
scores and boxes within float tolerance, on the example image, on images of other sizes and on one with
no detection at all.

The first part needs no torchvision (CI): a detector written as torchvision writes its post-processing.
The second runs torchvision's own detectors (their library code captured through
aten2onnx/exporter/passes/libraries.py); torchvision installs only beside torch 2.14 here, so it runs in
the compat run (scripts/compat.sh torch-2.14) and skips without it."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F

import aten2onnx
from aten2onnx.testing.detection import detector, lively, matched

torchvision = None  # imported by the tests that need it (it installs only beside torch 2.14 here)
from conftest import flat_tensors, run_ort

Dim = torch.export.Dim


def outputs_of(exported: aten2onnx.ExportedModel, args: tuple) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """(aten2onnx.runtime's outputs, onnxruntime's)."""
    ours = flat_tensors(exported.run(*args))
    theirs = [torch.as_tensor(x) for x in run_ort(exported.model_proto, dict(zip(exported.input_names, flat_tensors(args))))]
    return ours, theirs


def assert_same_detections(got: list[torch.Tensor], want: list[torch.Tensor], *, atol: float) -> None:
    """Detections alike: every output's shape (the count first), integer outputs exactly, float ones
    within atol (coordinates, scores)."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert tuple(g.shape) == tuple(w.shape), (g.shape, w.shape)
        if w.dtype.is_floating_point:
            torch.testing.assert_close(g.to(w.dtype), w, rtol=1e-4, atol=atol)
        else:
            assert torch.equal(g.to(w.dtype), w)


# -- written as torchvision writes it (no torchvision) ------------------------------------------------------


class TinyDetector(torch.nn.Module):
    """A one-level anchor-free detector whose post-processing is torchvision's in miniature: the image
    normalized and padded to a multiple of 32 (symbolic widths), a score per location and class, those
    above a threshold kept (torch.where), the top k of what survived (k = min(k, survivors)), boxes
    decoded around their locations, reshaped through a dim of 1 and flattened (which must hold for no box)."""

    def __init__(self, classes: int = 3, k: int = 20, threshold: float = 0.6) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.body = torch.nn.Conv2d(3, 8, 3, stride=4, padding=1)
        self.cls = torch.nn.Conv2d(8, classes, 1)
        self.reg = torch.nn.Conv2d(8, 4, 1)
        with torch.no_grad():  # scores spread around the threshold: a blank image keeps no box
            self.cls.weight.mul_(15)
            self.cls.bias.fill_(-1.5)
        self.classes, self.k, self.threshold = classes, k, threshold

    def forward(self, image: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        h, w = image.shape[-2:]
        padded = F.pad(image - 0.5, (0, (w + 31) // 32 * 32 - w, 0, (h + 31) // 32 * 32 - h))
        features = torch.relu(self.body(padded[None]))
        scores = torch.sigmoid(self.cls(features))[0].permute(1, 2, 0).flatten()  # location-major, then class
        keep = torch.where(scores > self.threshold)[0]
        top, order = scores[keep].topk(torch.sym_min(self.k, keep.shape[0]))
        chosen = keep[order]
        location, labels = chosen // self.classes, chosen % self.classes
        width = features.shape[-1]
        centre = torch.stack([location % width, location // width], 1).float() * 4 + 2
        deltas = self.reg(features)[0].permute(1, 2, 0).reshape(-1, 4)[location]
        boxes = torch.cat([centre - deltas[:, :2].exp() * 4, centre + deltas[:, 2:].exp() * 4], 1)
        return boxes.reshape(-1, 1, 4).flatten(1), labels, top


def test_detector_written_like_torchvisions_exports_with_data_dependent_outputs():
    model = TinyDetector().eval()
    g = torch.Generator().manual_seed(1)
    example = (torch.rand(3, 96, 128, generator=g),)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported = aten2onnx.export(model, example, dynamic_shapes={"image": {1: Dim("h", min=8, max=1024),
                                                                              2: Dim("w", min=8, max=1024)}},
                                    fallback="error")
    counts = set()
    for image in (example[0], torch.rand(3, 70, 45, generator=g), torch.rand(3, 160, 96, generator=g) * 2,
                  torch.full((3, 64, 64), 0.5)):
        with torch.no_grad():
            want = flat_tensors(model(image))
        for got in outputs_of(exported, (image,)):
            assert_same_detections(got, want, atol=1e-4)
        counts.add(len(want[1]))
    assert 0 in counts and len(counts) >= 3, counts  # the images cover none, some and the cap


# -- torchvision's detectors ----------------------------------------------------------------------------------


DETECTORS = ("fasterrcnn_mobilenet_v3_large_320_fpn", "fasterrcnn_resnet50_fpn", "retinanet_resnet50_fpn",
             "fcos_resnet50_fpn", "ssdlite320_mobilenet_v3_large", "maskrcnn_resnet50_fpn", "keypointrcnn_resnet50_fpn")


def images(seed: int) -> list[torch.Tensor]:
    """The example (320 x 320) and two of other sizes and shapes."""
    g = torch.Generator().manual_seed(seed)
    return [torch.rand(3, 320, 320, generator=g), torch.rand(3, 240, 352, generator=g),
            torch.rand(3, 417, 301, generator=g)]


def assert_same_detections_as(got: list[torch.Tensor], want: dict[str, torch.Tensor], *, atol: float) -> None:
    """Exported outputs (eager's keys, in order) against eager's detections: matched one by one, the
    matched ones' other outputs alike: keypoints (coordinates) within atol, masks and keypoint scores
    within 1e-4."""
    got = dict(zip(want, got))
    assert len(got) == len(want)
    order = matched(got, want, atol=atol)
    for key, value in want.items():
        if key not in ("boxes", "labels", "scores"):
            assert_same_detections([got[key][order]], [value], atol=atol if key == "keypoints" else 1e-4)


@pytest.mark.parametrize("name", DETECTORS)
def test_torchvision_detector_exports_with_dynamic_image_size(name):
    global torchvision
    torchvision = pytest.importorskip("torchvision")
    example, *others = images(1)
    model, blank = detector(torchvision.models.detection, name, example)
    h, w = Dim("h", min=32, max=2048), Dim("w", min=32, max=2048)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported = aten2onnx.export(model, ([example],), dynamic_shapes={"images": [{1: h, 2: w}]}, fallback="error")
    counts = []
    for image in (example, *others, torch.full((3, 288, 320), blank)):
        with torch.no_grad():
            want = model([image])[0]
        for got in outputs_of(exported, ([image],)):
            assert_same_detections_as(got, want, atol=1e-2)  # pixels of a 320-pixel image
        counts.append(len(want["boxes"]))
    assert counts[-1] == 0 and any(counts), counts


SEGMENTERS = ("fcn_resnet50", "deeplabv3_mobilenet_v3_large", "lraspp_mobilenet_v3_large")


@pytest.mark.parametrize("name", SEGMENTERS)
def test_torchvision_segmenter_exports_with_dynamic_batch_and_image_size(name):
    global torchvision
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    model = getattr(torchvision.models.segmentation, name)(weights=None, weights_backbone=None).eval()
    g = torch.Generator().manual_seed(2)
    example = torch.rand(1, 3, 224, 224, generator=g)
    lively(model, example)
    dims = {0: Dim("batch", max=16), 2: Dim("h", min=32, max=1024), 3: Dim("w", min=32, max=1024)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported = aten2onnx.export(model, (example,), dynamic_shapes=(dims,), fallback="error")
    for image in (example, torch.rand(2, 3, 200, 288, generator=g), torch.rand(1, 3, 97, 131, generator=g)):
        with torch.no_grad():
            want = model(image)
        for got in outputs_of(exported, (image,)):
            for g_out, w_out in zip(got, want.values()):
                assert g_out.shape == w_out.shape
                torch.testing.assert_close(g_out, w_out, rtol=0, atol=1e-4 * float(w_out.abs().max()))


class YoloStyle(torch.nn.Module):
    """A single-stage detector with its non-maximum suppression in forward, written as ultralytics writes its
    export-time post-processing: a prediction [4 + classes, anchors] per image, the anchors whose best class
    clears a confidence threshold kept by a boolean mask, boxes moved apart by class by a constant offset
    (max_wh) for one torchvision nms, then the first max_det kept."""

    def __init__(self, classes: int = 4, conf: float = 0.5, iou: float = 0.45, max_det: int = 5) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.body = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, 2, 1), torch.nn.SiLU(), torch.nn.Conv2d(16, 16, 3, 2, 1),
                                        torch.nn.SiLU())
        self.head = torch.nn.Conv2d(16, 4 + classes, 1)
        self.classes, self.conf, self.iou, self.max_det = classes, conf, iou, max_det

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        features = self.head(self.body(images))  # [1, 4 + classes, h, w]
        h, w = features.shape[-2:]
        prediction = features.flatten(2)[0].transpose(0, 1)  # [anchors, 4 + classes]
        grid_y, grid_x = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
        centre = (torch.stack([grid_x, grid_y], -1).reshape(-1, 2).float() + 0.5) * 4
        half = prediction[:, 2:4].sigmoid() * 32
        boxes = torch.cat([centre + prediction[:, :2].tanh() * 4 - half, centre + prediction[:, :2].tanh() * 4 + half], 1)
        conf, label = prediction[:, 4:].sigmoid().max(1, keepdim=True)
        x = torch.cat([boxes, conf, label.float()], 1)[conf.view(-1) > self.conf]
        keep = torchvision.ops.nms(x[:, :4] + x[:, 5:6] * 7680, x[:, 4], self.iou)[: self.max_det]
        return x[keep]


def test_yolo_style_detector_with_nms_in_forward_exports_with_dynamic_image_size():
    global torchvision
    torchvision = pytest.importorskip("torchvision")
    model = YoloStyle().eval()
    g = torch.Generator().manual_seed(3)
    example = torch.rand(1, 3, 128, 160, generator=g)
    lively(model, example)
    with torch.no_grad():  # class scores spread around the threshold: a uniform image clears none
        model.head.weight[4:].mul_(2)
        model.head.bias[4:] = -6
    dims = {2: Dim("h", min=32, max=1024), 3: Dim("w", min=32, max=1024)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported = aten2onnx.export(model, (example,), dynamic_shapes=(dims,), fallback="error")
    counts = []
    for image in (example, torch.rand(1, 3, 96, 224, generator=g), torch.rand(1, 3, 256, 256, generator=g),
                  torch.full((1, 3, 64, 64), 0.5)):
        with torch.no_grad():
            want = model(image)
        for got in outputs_of(exported, (image,)):
            assert_same_detections(got, [want], atol=1e-4)
        counts.append(len(want))
    assert counts[-1] == 0 and 0 < min(counts[:-1]) < model.max_det == max(counts), counts  # none, some, the cap


def test_detr_exports_with_dynamic_batch_and_image_size():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    backbone = transformers.ResNetConfig(embedding_size=16, hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1],
                                         out_features=["stage4"])
    config = transformers.DetrConfig(use_timm_backbone=False, use_pretrained_backbone=False, backbone_config=backbone,
                                     d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                                     decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, num_queries=10,
                                     num_labels=5)
    config.backbone = None
    model = transformers.DetrForObjectDetection(config).eval()
    g = torch.Generator().manual_seed(4)
    example = torch.rand(1, 3, 224, 224, generator=g)
    dims = {0: Dim("batch", max=8), 2: Dim("h", min=64, max=1024), 3: Dim("w", min=64, max=1024)}
    with warnings.catch_warnings():
        warnings.simplefilter("error", aten2onnx.NarrowedExportWarning)  # no dim narrowed
        warnings.filterwarnings("ignore", category=UserWarning)
        warnings.filterwarnings("ignore", category=FutureWarning)
        exported = aten2onnx.export(model, (example,), dynamic_shapes={"pixel_values": dims}, fallback="error")
    for image in (example, torch.rand(2, 3, 160, 256, generator=g), torch.rand(1, 3, 320, 192, generator=g)):
        with torch.no_grad():
            out = model(image)
        for got in outputs_of(exported, (image,)):
            for g_out, w_out in zip(got, (out.logits, out.pred_boxes)):
                assert g_out.shape == w_out.shape
                torch.testing.assert_close(g_out, w_out, rtol=1e-4, atol=1e-5)


def test_capturing_a_detector_leaves_torchvision_and_the_model_as_they_were():
    global torchvision
    torchvision = pytest.importorskip("torchvision")
    from torchvision.models.detection import _utils, roi_heads, transform
    from torchvision.ops import boxes, poolers

    library = {(module, name): getattr(module, name) for module, name in (
        (boxes, "batched_nms"), (torchvision.ops, "batched_nms"), (_utils, "_topk_min"), (_utils.BoxCoder, "decode"),
        (poolers, "_multiscale_roi_align"), (poolers.MultiScaleRoIAlign, "forward"), (roi_heads, "paste_masks_in_image"),
        (roi_heads, "heatmaps_to_keypoints"), (transform, "paste_masks_in_image"),
        (transform, "_resize_image_and_masks"), (transform.GeneralizedRCNNTransform, "batch_images"))}
    torch.manual_seed(0)
    model = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(weights=None, weights_backbone=None).eval()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        aten2onnx.export(model, ([torch.rand(3, 320, 320)],))
    assert all(getattr(module, name) is original for (module, name), original in library.items())
    # eager sets the pooler's scales on its first call; capturing is no call of the user's
    assert model.roi_heads.box_roi_pool.scales is None and model.roi_heads.box_roi_pool.map_levels is None
    assert all(torch.equal(v, state[k]) for k, v in model.state_dict().items())
