"""Object detection: NonMaxSuppression, greedy per batch and class as the spec defines it."""

from __future__ import annotations

import torch

from aten2onnx.runtime.kernel import Kernel, kernel
from aten2onnx.runtime.ops._util import scalar


def _corners(boxes: torch.Tensor, center_point_box: bool) -> torch.Tensor:
    """[N, 4] boxes as (y1, x1, y2, x2) with y1 <= y2 and x1 <= x2."""
    if center_point_box:
        xc, yc, w, h = boxes.unbind(-1)
        return torch.stack([yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2], -1)
    y1, x1, y2, x2 = boxes.unbind(-1)
    return torch.stack([torch.minimum(y1, y2), torch.minimum(x1, x2), torch.maximum(y1, y2), torch.maximum(x1, x2)], -1)


def _iou(box: torch.Tensor, others: torch.Tensor) -> torch.Tensor:
    top = torch.maximum(box[0], others[:, 0])
    left = torch.maximum(box[1], others[:, 1])
    bottom = torch.minimum(box[2], others[:, 2])
    right = torch.minimum(box[3], others[:, 3])
    inter = torch.clamp(bottom - top, min=0) * torch.clamp(right - left, min=0)
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (others[:, 2] - others[:, 0]) * (others[:, 3] - others[:, 1])
    union = area + areas - inter
    return torch.where(union > 0, inter / union, torch.zeros_like(inter))


@kernel("NonMaxSuppression", since=10)  # 11 only rewords the docs
class NonMaxSuppression(Kernel):
    def setup(self, center_point_box: int = 0) -> None:
        self.center_point_box = bool(center_point_box)

    def run(self, boxes, scores, max_output_boxes_per_class=None, iou_threshold=None, score_threshold=None):
        limit = int(scalar(max_output_boxes_per_class, 0))
        iou_max = float(scalar(iou_threshold, 0.0))
        min_score = scalar(score_threshold)
        selected: list[tuple[int, int, int]] = []
        for b in range(boxes.shape[0]):
            corners = _corners(boxes[b].to(torch.float64), self.center_point_box)
            for c in range(scores.shape[1]):
                if limit == 0:
                    break
                s = scores[b, c].to(torch.float64)
                order = torch.argsort(s, descending=True, stable=True).tolist()
                if min_score is not None:
                    order = [i for i in order if s[i] > min_score]
                kept: list[int] = []
                for i in order:
                    if len(kept) >= limit:
                        break
                    if kept and bool((_iou(corners[i], corners[kept]) > iou_max).any()):
                        continue
                    kept.append(i)
                selected.extend((b, c, i) for i in kept)
        out = torch.tensor(selected, dtype=torch.int64, device=boxes.device).reshape(-1, 3)
        return (out,)
