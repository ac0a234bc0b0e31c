"""`aten2onnx::batched_nms`: the op torchvision's `batched_nms` is captured as (see
exporter/passes/libraries.py), defined where both the exporter and its symbolic can import it.

torchvision (checked against 0.29) suppresses boxes per class in one of two ways, chosen by the number of
boxes, a size read from data that torch.export cannot branch on: above 4000 coordinates (on the CPU) one
nms per class, the kept boxes sorted by score; otherwise one nms over boxes moved apart by class (each
class offset by its index times the largest coordinate + 1), whose float rounding differs. This op is
that choice as one call, its size a symbol from 0 up; its eager kernel runs torchvision's nms as
torchvision's function does, and its translation is an If over the same two computations."""

from __future__ import annotations

import torch

# torchvision's batched_nms on the CPU: above this many coordinates, one nms per class
PER_CLASS_ABOVE = 4000


def offsets_apart(boxes: torch.Tensor, idxs: torch.Tensor) -> torch.Tensor:
    """The boxes moved apart by class as torchvision's coordinate trick moves them (the largest coordinate
    taken over the boxes and -inf, so that no box is no error)."""
    top = torch.cat([boxes.reshape(-1), boxes.new_full((1,), float("-inf"))]).max()
    return boxes + (idxs.to(boxes) * (top + torch.tensor(1).to(boxes)))[:, None]


@torch.library.custom_op("aten2onnx::batched_nms", mutates_args=())
def batched_nms(boxes: torch.Tensor, scores: torch.Tensor, idxs: torch.Tensor, iou_threshold: float) -> torch.Tensor:
    """The indices of the boxes kept, no box suppressing one of another class, in descending score order
    (torchvision's per-class way orders equal scores by an unstable sort; here by index)."""
    nms = torch.ops.torchvision.nms
    if boxes.numel() > PER_CLASS_ABOVE:
        kept = torch.zeros_like(scores, dtype=torch.bool)
        for c in torch.unique(idxs):
            members = torch.where(idxs == c)[0]
            kept[members[nms(boxes[members], scores[members], iou_threshold)]] = True
        keep = torch.where(kept)[0]
        return keep[scores[keep].sort(descending=True, stable=True)[1]]
    if boxes.numel() == 0:
        return torch.empty((0,), dtype=torch.int64, device=boxes.device)
    return nms(offsets_apart(boxes, idxs), scores, iou_threshold)


@batched_nms.register_fake
def _(boxes, scores, idxs, iou_threshold):
    count = torch.library.get_ctx().new_dynamic_size()
    return boxes.new_empty((count,), dtype=torch.int64)
