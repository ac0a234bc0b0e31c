"""Resize and Upsample, computed one axis at a time (ONNX's nearest, linear and cubic modes are
separable): per output index, a source coordinate from the coordinate-transformation mode, then a
few taps and weights, gathered with index_select and summed."""

from __future__ import annotations

import math

import torch

from aten2onnx.runtime.kernel import Kernel, kernel
from aten2onnx.runtime.ops._util import norm_axes

_COORD_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                "tf_crop_and_resize")


def _source_coords(out_size: int, in_size: int, scale: float, mode: str, roi: tuple[float, float]) -> torch.Tensor:
    i = torch.arange(out_size, dtype=torch.float64)
    if mode == "half_pixel":
        return (i + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        adjustment = out_size / (scale * in_size)
        offset = in_size / 2 * (1 - adjustment)
        return offset + (i + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (i + 0.5) / scale - 0.5 if out_size > 1 else torch.zeros_like(i)
    if mode == "align_corners":
        # the resized length as a float (in_size * scale), not the rounded output size, as ONNX specifies
        length = in_size * scale
        return i * (in_size - 1) / (length - 1) if out_size > 1 else torch.zeros_like(i)
    if mode == "asymmetric":
        return i / scale
    start, end = roi
    if out_size > 1:
        return start * (in_size - 1) + i * (end - start) * (in_size - 1) / (out_size - 1)
    return torch.full_like(i, 0.5 * (start + end) * (in_size - 1))


def _nearest(coords: torch.Tensor, nearest_mode: str) -> torch.Tensor:
    if nearest_mode == "round_prefer_floor":
        return torch.ceil(coords - 0.5)
    if nearest_mode == "round_prefer_ceil":
        return torch.floor(coords + 0.5)
    if nearest_mode == "floor":
        return torch.floor(coords)
    return torch.ceil(coords)


def _cubic_kernel(t: torch.Tensor, a: float) -> torch.Tensor:
    t = t.abs()
    near = ((a + 2) * t - (a + 3)) * t * t + 1
    far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return torch.where(t <= 1, near, torch.where(t < 2, far, torch.zeros_like(t)))


def _taps(coords: torch.Tensor, in_size: int, scale: float, mode: str, cubic_a: float, exclude_outside: bool,
          antialias: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """(indices, weights), both (out, taps): the input positions each output reads and their weights."""
    support = 1.0 if mode == "linear" else 2.0
    s = min(scale, 1.0) if antialias else 1.0
    radius = math.ceil(support / s)
    base = torch.floor(coords)
    offsets = torch.arange(-radius + 1, radius + 1, dtype=torch.float64)
    positions = base.unsqueeze(1) + offsets  # (out, taps)
    distance = (positions - coords.unsqueeze(1)) * s
    if mode == "linear":
        weights = torch.clamp(1 - distance.abs(), min=0)
    else:
        weights = _cubic_kernel(distance, cubic_a)
    if exclude_outside:
        weights = torch.where((positions < 0) | (positions > in_size - 1), torch.zeros_like(weights), weights)
    if antialias or exclude_outside:
        weights = weights / weights.sum(1, keepdim=True)
    return positions.clamp(0, in_size - 1).to(torch.int64), weights


def _resize_axis(x: torch.Tensor, axis: int, out_size: int, scale: float, p: dict, roi: tuple[float, float]) -> torch.Tensor:
    in_size = x.shape[axis]
    coords = _source_coords(out_size, in_size, scale, p["coord"], roi)
    outside = None
    if p["coord"] == "tf_crop_and_resize":
        outside = (coords < 0) | (coords > in_size - 1)
    if p["mode"] == "nearest":
        idx = _nearest(coords, p["nearest_mode"]).clamp(0, in_size - 1).to(torch.int64)
        y = x.index_select(axis, idx.to(x.device))
    else:
        idx, weights = _taps(coords, in_size, scale, p["mode"], p["cubic_a"], p["exclude_outside"], p["antialias"])
        taps = idx.shape[1]
        gathered = x.index_select(axis, idx.reshape(-1).to(x.device))
        gathered = gathered.reshape(x.shape[:axis] + (out_size, taps) + x.shape[axis + 1:])
        w = weights.to(x.dtype).to(x.device).reshape((out_size, taps) + (1,) * (x.dim() - axis - 1))
        y = (gathered * w).sum(axis + 1)
    if outside is not None and bool(outside.any()):
        shape = [1] * x.dim()
        shape[axis] = out_size
        y = torch.where(outside.to(y.device).reshape(shape), torch.tensor(p["extrapolation"], dtype=y.dtype), y)
    return y


def _resize(x: torch.Tensor, roi, scales, sizes, axes, p: dict) -> torch.Tensor:
    rank = x.dim()
    axes = list(range(rank)) if axes is None else norm_axes(axes, rank)
    in_sizes = [x.shape[a] for a in axes]
    if sizes is not None and sizes.numel() > 0:
        target = [int(v) for v in sizes.tolist()]
        policy = p.get("policy", "stretch")
        if policy == "stretch":
            scale_list = [t / i for t, i in zip(target, in_sizes)]
        else:
            pick = min if policy == "not_larger" else max
            common = pick(t / i for t, i in zip(target, in_sizes))
            scale_list = [common] * len(axes)
            target = [int(math.floor(common * i + 0.5)) for i in in_sizes]
    else:
        scale_list = [float(v) for v in scales.tolist()]
        if len(scale_list) == rank and len(axes) != rank:
            scale_list = [scale_list[a] for a in axes]
        target = [int(math.floor(i * s)) for i, s in zip(in_sizes, scale_list)]
    roi_list = [float(v) for v in roi.tolist()] if roi is not None and roi.numel() > 0 else None
    dtype = x.dtype
    work = x if dtype.is_floating_point else x.to(torch.float32)
    n = len(axes)
    for j, (axis, out_size, scale) in enumerate(zip(axes, target, scale_list)):
        if out_size == work.shape[axis] and scale == 1.0 and p["coord"] != "tf_crop_and_resize":
            continue
        if roi_list is None:
            r = (0.0, 1.0)
        elif len(roi_list) == 2 * n:
            r = (roi_list[j], roi_list[n + j])
        else:
            r = (roi_list[axis], roi_list[rank + axis])
        work = _resize_axis(work, axis, out_size, scale, p, r)
    if dtype.is_floating_point:
        return work
    return torch.round(work).clamp(torch.iinfo(dtype).min, torch.iinfo(dtype).max).to(dtype)


@kernel("Resize", since=10)
class Resize10(Kernel):
    """Resize at opset 10: scales only; nearest takes floor(i / scale), linear is asymmetric."""

    def setup(self, mode: str = "nearest") -> None:
        self.params = {"mode": mode, "coord": "asymmetric", "nearest_mode": "floor", "cubic_a": -0.75,
                       "exclude_outside": False, "antialias": False, "extrapolation": 0.0}

    def run(self, x, scales):
        return (_resize(x, None, scales, None, None, self.params),)


@kernel("Resize", since=11)  # 13: roi and scales optional; 18: antialias, axes, keep_aspect_ratio_policy;
# 19: half_pixel_symmetric
class Resize11(Kernel):
    """Resize from opset 11 (roi, scales, sizes inputs); antialias, axes and keep_aspect_ratio_policy
    from 18, half_pixel_symmetric from 19."""

    def setup(self, antialias: int = 0, axes: list[int] | None = None,
              coordinate_transformation_mode: str = "half_pixel", cubic_coeff_a: float = -0.75,
              exclude_outside: int = 0, extrapolation_value: float = 0.0,
              keep_aspect_ratio_policy: str = "stretch", mode: str = "nearest",
              nearest_mode: str = "round_prefer_floor") -> None:
        if coordinate_transformation_mode not in _COORD_MODES:
            raise ValueError(f"Resize coordinate_transformation_mode {coordinate_transformation_mode!r} is not supported")
        if mode not in ("nearest", "linear", "cubic"):
            raise ValueError(f"Resize mode {mode!r} is not supported")
        self.axes = axes
        self.params = {"mode": mode, "coord": coordinate_transformation_mode, "nearest_mode": nearest_mode,
                       "cubic_a": cubic_coeff_a, "exclude_outside": bool(exclude_outside),
                       "antialias": bool(antialias) and mode != "nearest", "extrapolation": extrapolation_value,
                       "policy": keep_aspect_ratio_policy}

    def run(self, x, roi=None, scales=None, sizes=None):
        return (_resize(x, roi, scales, sizes, self.axes, self.params),)


_UPSAMPLE = {"coord": "asymmetric", "nearest_mode": "floor", "cubic_a": -0.75, "exclude_outside": False,
             "antialias": False, "extrapolation": 0.0}


@kernel("Upsample", since=7)
class Upsample7(Kernel):
    def setup(self, scales: list[float], mode: str = "nearest") -> None:
        self.scales = torch.tensor(scales, dtype=torch.float32)
        self.params = dict(_UPSAMPLE, mode=mode)

    def run(self, x):
        return (_resize(x, None, self.scales, None, None, self.params),)


@kernel("Upsample", since=9)  # 10 deprecates it, same semantics
class Upsample9(Kernel):
    def setup(self, mode: str = "nearest") -> None:
        self.params = dict(_UPSAMPLE, mode=mode)

    def run(self, x, scales):
        return (_resize(x, None, scales, None, None, self.params),)
