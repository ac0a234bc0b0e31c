"""The ops torchvision's detection functions are captured as (see exporter/passes/libraries.py), defined where
both the exporter and its symbolic can import it.

`aten2onnx::batched_nms`: torchvision's `batched_nms`. torchvision (checked against 0.29) suppresses boxes
per class in one of two ways, chosen by the number of boxes, a size read from data that torch.export cannot
branch on: above 4000 coordinates (on the CPU) one nms per class, the kept boxes sorted by score; otherwise
one nms over boxes moved apart by class (each class offset by its index times the largest coordinate + 1),
whose float rounding differs. This op is that choice as one call, its size a symbol from 0 up; its eager
kernel runs torchvision's nms as torchvision's function does, and its translation is an If over the same
two computations.

`aten2onnx::heatmaps_to_keypoints`: Keypoint R-CNN's heatmap decoding, below."""

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


@torch.library.custom_op("aten2onnx::heatmaps_to_keypoints", mutates_args=())
def heatmaps_to_keypoints(maps: torch.Tensor, rois: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """torchvision's detection.roi_heads.heatmaps_to_keypoints (checked against 0.29): each roi's heatmaps
    [K, N, H, W] resized bicubically to the roi's size rounded up, each keypoint where its map peaks (the
    first peak), as (x, y, 1) in the image [K, N, 3], and the map's value there [K, N]. One roi at a time, a
    size read from data each: the op keeps the loop whole for capture."""
    count, keypoints = maps.shape[0], maps.shape[1]
    widths = (rois[:, 2] - rois[:, 0]).clamp(min=1)
    heights = (rois[:, 3] - rois[:, 1]).clamp(min=1)
    xy = torch.zeros((count, keypoints, 3), dtype=torch.float32, device=maps.device)
    scores = torch.zeros((count, keypoints), dtype=torch.float32, device=maps.device)
    for i in range(count):
        width, height = int(widths[i].ceil().item()), int(heights[i].ceil().item())
        roi_map = torch.nn.functional.interpolate(maps[i][:, None], size=(height, width), mode="bicubic",
                                                  align_corners=False)[:, 0]
        peak = roi_map.reshape(keypoints, -1).argmax(dim=1)
        x_int = peak % width
        y_int = torch.div(peak - x_int, width, rounding_mode="floor")
        xy[i, :, 0] = (x_int.float() + 0.5) * (widths[i] / width) + rois[i, 0]
        xy[i, :, 1] = (y_int.float() + 0.5) * (heights[i] / height) + rois[i, 1]
        xy[i, :, 2] = 1
        scores[i] = roi_map[torch.arange(keypoints, device=maps.device), y_int, x_int]
    return xy, scores


@heatmaps_to_keypoints.register_fake
def _(maps, rois):
    return maps.new_empty((maps.shape[0], maps.shape[1], 3), dtype=torch.float32), \
        maps.new_empty((maps.shape[0], maps.shape[1]), dtype=torch.float32)
