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
