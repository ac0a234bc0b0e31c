"""Object detection: NonMaxSuppression, greedy per batch and class as the spec defines it; RoiAlign and
MaxRoiPool, pooling regions of interest as onnxruntime's (Caffe2's and Caffe's) kernels do. Each computes in
its input's dtype, in the kernels' order of operations: a box's IoU, a sample's coordinates and a bin's
edges round as theirs do."""

from __future__ import annotations

import math

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


def _suppresses(kept: torch.Tensor, candidate: torch.Tensor, iou_max: float) -> torch.Tensor:
    """Whether each kept box's IoU with the candidate, (inter / (area_kept + area_candidate - inter)),
    exceeds iou_max; never where the intersection, an area or the union is not positive."""
    top = torch.maximum(kept[:, 0], candidate[0])
    left = torch.maximum(kept[:, 1], candidate[1])
    bottom = torch.minimum(kept[:, 2], candidate[2])
    right = torch.minimum(kept[:, 3], candidate[3])
    inter = torch.clamp(bottom - top, min=0) * torch.clamp(right - left, min=0)
    areas = (kept[:, 2] - kept[:, 0]) * (kept[:, 3] - kept[:, 1])
    area = (candidate[2] - candidate[0]) * (candidate[3] - candidate[1])
    union = areas + area - inter
    positive = (inter > 0) & (areas > 0) & (area > 0) & (union > 0)
    return positive & (inter / torch.where(positive, union, torch.ones_like(union)) > iou_max)


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
            corners = _corners(boxes[b], self.center_point_box)
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
                    if kept and bool(_suppresses(corners[kept], corners[i], iou_max).any()):
                        continue
                    kept.append(i)
                selected.extend((b, c, i) for i in kept)
        out = torch.tensor(selected, dtype=torch.int64, device=boxes.device).reshape(-1, 3)
        return (out,)


def _batch_index(value, batch: int) -> int:
    index = int(value)
    if not 0 <= index < batch:
        raise ValueError(f"a roi's batch index {index} is outside the input's batch of {batch}")
    return index


def _samples(start: torch.Tensor, bin_size: torch.Tensor, bins: int, grid: int) -> torch.Tensor:
    """The [bins * grid] sample coordinates along one axis: start + p * bin + (i + .5) * bin / grid."""
    dtype = start.dtype
    p = torch.arange(bins, dtype=dtype)[:, None]
    i = torch.arange(grid, dtype=dtype)[None, :] + 0.5
    return ((start + p * bin_size) + i * bin_size / grid).reshape(-1)


def _interpolation(coords: torch.Tensor, size: int):
    """Per sample coordinate: the two neighbours' indices and weights (0 and index 0 outside [-1, size])."""
    inside = (coords >= -1.0) & (coords <= size)
    c = torch.where(inside & (coords > 0), coords, torch.zeros_like(coords))
    low = c.to(torch.int64)
    top = low >= size - 1
    low = torch.where(top, size - 1, low)
    high = torch.where(top, size - 1, low + 1)
    c = torch.where(top, low.to(coords.dtype), c)
    far = c - low.to(coords.dtype)
    near = 1.0 - far
    zero = torch.zeros_like(c)
    return (torch.where(inside, low, 0), torch.where(inside, high, 0),
            torch.where(inside, near, zero), torch.where(inside, far, zero))


class _RoiAlign(Kernel):
    half_pixel_by_default: bool

    def setup(self, coordinate_transformation_mode: str | None = None, mode: str = "avg", output_height: int = 1,
              output_width: int = 1, sampling_ratio: int = 0, spatial_scale: float = 1.0) -> None:
        transform = coordinate_transformation_mode or ("half_pixel" if self.half_pixel_by_default else
                                                       "output_half_pixel")
        if transform not in ("half_pixel", "output_half_pixel") or mode not in ("avg", "max"):
            raise ValueError(f"RoiAlign: unknown coordinate_transformation_mode {transform!r} or mode {mode!r}")
        self.half_pixel, self.mode = transform == "half_pixel", mode
        self.pooled = (output_height, output_width)
        self.sampling_ratio, self.spatial_scale = sampling_ratio, spatial_scale

    def run(self, x, rois, batch_indices):
        batch, channels, height, width = x.shape
        pooled_h, pooled_w = self.pooled
        out = x.new_zeros(rois.shape[0], channels, pooled_h, pooled_w)
        scale = torch.tensor(self.spatial_scale, dtype=x.dtype)
        offset = 0.5 if self.half_pixel else 0.0
        for r in range(rois.shape[0]):
            image = x[_batch_index(batch_indices[r], batch)]
            start_w, start_h, end_w, end_h = rois[r].to(x.dtype) * scale - offset
            roi_w, roi_h = end_w - start_w, end_h - start_h
            if not self.half_pixel:
                roi_w, roi_h = torch.clamp(roi_w, min=1.0), torch.clamp(roi_h, min=1.0)
            bin_h, bin_w = roi_h / pooled_h, roi_w / pooled_w
            grid_h = self.sampling_ratio if self.sampling_ratio > 0 else math.ceil(float(roi_h / pooled_h))
            grid_w = self.sampling_ratio if self.sampling_ratio > 0 else math.ceil(float(roi_w / pooled_w))
            if grid_h <= 0 or grid_w <= 0:
                continue  # no samples: the bins stay 0
            y_low, y_high, wy_low, wy_high = _interpolation(_samples(start_h, bin_h, pooled_h, grid_h), height)
            x_low, x_high, wx_low, wx_high = _interpolation(_samples(start_w, bin_w, pooled_w, grid_w), width)
            # the corners in the kernel's order: (low, low), (low, high), (high, low), (high, high)
            rows, columns = ((wy_low, y_low), (wy_high, y_high)), ((wx_low, x_low), (wx_high, x_high))
            terms = [(wy[:, None] * wx[None, :]) * image[:, ys][:, :, xs] for wy, ys in rows for wx, xs in columns]
            shape = (channels, pooled_h, grid_h, pooled_w, grid_w)
            if self.mode == "avg":
                values = (terms[0] + terms[1] + terms[2] + terms[3]).reshape(shape)
                out[r] = values.sum((2, 4)) / max(grid_h * grid_w, 1)
            else:
                out[r] = torch.stack(terms).amax(0).reshape(shape).amax((2, 4))
        return (out,)


@kernel("RoiAlign", since=10)  # rois are at least 1x1, samples not shifted (output_half_pixel)
class RoiAlign10(_RoiAlign):
    half_pixel_by_default = False


@kernel("RoiAlign", since=16)  # coordinate_transformation_mode, half_pixel by default; 22: types
class RoiAlign16(_RoiAlign):
    half_pixel_by_default = True


def _rounded_away(x: torch.Tensor) -> torch.Tensor:
    """C's round(): half away from zero, exactly."""
    whole = torch.floor(x.abs())
    return torch.copysign(whole + (x.abs() - whole >= 0.5).to(x.dtype), x)


def _bin_masks(start: int, end: int, bins: int, size: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """[bins, size] bool: the positions each bin spans along one axis; [bins] bool: the bins that are empty."""
    bin_size = torch.tensor(float(max(end - start + 1, 1)), dtype=dtype) / bins
    first = torch.floor(torch.arange(bins, dtype=dtype) * bin_size).to(torch.int64) + start
    last = torch.ceil(torch.arange(1, bins + 1, dtype=dtype) * bin_size).to(torch.int64) + start
    first, last = first.clamp(0, size), last.clamp(0, size)
    positions = torch.arange(size)
    return (positions >= first[:, None]) & (positions < last[:, None]), last <= first


@kernel("MaxRoiPool", since=1)  # 22: types
class MaxRoiPool(Kernel):
    """Each bin's maximum over the positions it spans, not below -FLT_MAX (NaN skipped); an empty bin 0."""

    def setup(self, pooled_shape: list[int], spatial_scale: float = 1.0) -> None:
        self.pooled = tuple(pooled_shape)
        self.spatial_scale = spatial_scale

    def run(self, x, rois):
        batch, channels, height, width = x.shape
        pooled_h, pooled_w = self.pooled
        out = x.new_zeros(rois.shape[0], channels, pooled_h, pooled_w)
        lowest = torch.tensor(-torch.finfo(torch.float32).max, dtype=x.dtype)
        scale = torch.tensor(self.spatial_scale, dtype=x.dtype)
        x = torch.where(torch.isnan(x), -math.inf, x)
        for r in range(rois.shape[0]):
            image = x[_batch_index(rois[r, 0], batch)]
            start_w, start_h, end_w, end_h = (int(v) for v in _rounded_away(rois[r, 1:].to(x.dtype) * scale))
            rows, rows_empty = _bin_masks(start_h, end_h, pooled_h, height, x.dtype)
            columns, columns_empty = _bin_masks(start_w, end_w, pooled_w, width, x.dtype)
            by_column = torch.where(columns[None, None], image[:, :, None, :], -math.inf).amax(-1)  # [C, H, PW]
            best = torch.where(rows[None, :, :, None], by_column[:, None], -math.inf).amax(2)  # [C, PH, PW]
            empty = rows_empty[:, None] | columns_empty[None, :]
            out[r] = torch.where(empty, 0.0, torch.maximum(best, lowest))
        return (out,)
