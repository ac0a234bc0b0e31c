"""Library code torch.export cannot capture as written, traced as equivalents while capturing (capture.py
enters `library_equivalents`). The user's code and the library's files are never edited: module attributes
are swapped for the capture and put back after, and only for libraries the model already imported
(aten2onnx imports none of them). Each equivalent computes what the library's function computes and names
the library version whose code it was checked against; tests/test_detection.py holds each to eager."""

from __future__ import annotations

import contextlib
import functools
import sys
from typing import Any, Callable, Iterator

import torch

from aten2onnx import _detection_ops  # noqa: F401  (defines aten2onnx::batched_nms, heatmaps_to_keypoints)
from aten2onnx.exporter.passes import library_longformer


# -- torchvision (checked against 0.29) ------------------------------------------------------------------

def _batched_nms(boxes: torch.Tensor, scores: torch.Tensor, idxs: torch.Tensor, iou_threshold: float) -> torch.Tensor:
    """torchvision.ops.batched_nms branches on the number of boxes (a size read from data) and, for no box at
    all, returns early: aten2onnx::batched_nms is both branches as one op."""
    return torch.ops.aten2onnx.batched_nms(boxes, scores, idxs, float(iou_threshold))


def _heatmaps_to_keypoints(maps: torch.Tensor, rois: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """detection.roi_heads.heatmaps_to_keypoints loops over the rois (a count read from data), resizing each
    one's heatmaps to its own size read from data: aten2onnx::heatmaps_to_keypoints is that loop as one op."""
    return torch.ops.aten2onnx.heatmaps_to_keypoints(maps, rois)


def _topk_min(input: torch.Tensor, orig_kval: int, axis: int) -> int:
    """detection._utils._topk_min: min(k, size) as a symbolic min (Python's min branches on a size that may
    be read from data, or be a dynamic image's)."""
    return torch.sym_min(orig_kval, input.size(axis))


def _box_decode(original: Callable[..., Any]) -> Callable[..., Any]:
    """detection._utils.BoxCoder.decode reshapes the codes to (count, -1, 4) only when the count of boxes
    (read from data) is above 0, since no -1 can be inferred for none. Codes of a static width (every
    torchvision detector's: a box, or a box per class) are reshaped to that width, for any count: the
    boxes are (count, width / 4, 4) also for no box, where the library leaves (0, width), which its callers
    reshape alike. Other codes go to the library's own method."""
    def decode(self: Any, rel_codes: torch.Tensor, boxes: list[torch.Tensor]) -> torch.Tensor:
        width = rel_codes.shape[-1] if rel_codes.dim() == 2 else None
        if not isinstance(width, int) or width % 4:
            return original(self, rel_codes, boxes)
        count = sum(b.size(0) for b in boxes)
        decoded = self.decode_single(rel_codes.reshape(count, width), torch.cat(boxes, dim=0))
        return decoded.reshape(count, width // 4, 4)
    return decode


def _example(size: int | torch.SymInt) -> int:
    """A size as the example inputs have it (a symbolic size's hint)."""
    return size.node.hint if isinstance(size, torch.SymInt) else size


def _resize_image_and_masks(original: Callable[..., Any]) -> Callable[..., Any]:
    """detection.transform._resize_image_and_masks scales an image by min(min_size / its shorter side,
    max_size / its longer side) with Python's min and max, which pick one side of a dynamic image for good
    (torch.export keeps the pick's guard to itself: the exported model resized every image as the example);
    here they are symbolic, the same float64 arithmetic, and the size interpolate computes from the scale the
    same. A target (training) or a fixed size goes to the library's own function."""
    def resize(image: torch.Tensor, self_min_size: int, self_max_size: int, target: Any = None,
               fixed_size: Any = None) -> tuple[torch.Tensor, Any]:
        if target is not None or fixed_size is not None:
            return original(image, self_min_size, self_max_size, target, fixed_size)
        h, w = image.shape[-2:]
        scale = torch.sym_min(self_min_size / torch.sym_min(h, w), self_max_size / torch.sym_max(h, w))
        image = torch.nn.functional.interpolate(image[None], size=None, scale_factor=scale, mode="bilinear",
                                                recompute_scale_factor=True, align_corners=False)[0]
        return image, target
    return resize


def _batch_images(original: Callable[..., Any]) -> Callable[..., Any]:
    """GeneralizedRCNNTransform.batch_images pads each image to the largest size rounded up to a multiple of
    size_divisible, rounding with int(math.ceil(float)), which made the padded size the example's constant;
    here the same multiple is an integer ceiling (equal for any int size), and each image is padded with
    zeros as the library's zero-filled batch holds it."""
    def batch_images(self: Any, images: list[torch.Tensor], size_divisible: int = 32) -> torch.Tensor:
        if not isinstance(size_divisible, int) or size_divisible <= 0:
            return original(self, images, size_divisible)
        largest = [functools.reduce(torch.sym_max, (img.shape[d] for img in images)) for d in range(images[0].dim())]
        for d in (1, 2):
            largest[d] = (largest[d] + size_divisible - 1) // size_divisible * size_divisible
        padded = [torch.nn.functional.pad(img, (0, largest[2] - img.shape[2], 0, largest[1] - img.shape[1],
                                                0, largest[0] - img.shape[0])) for img in images]
        return torch.stack(padded)
    return batch_images


def _roi_align_forward(self: Any, x: dict[str, torch.Tensor], boxes: list[torch.Tensor],
                       image_shapes: list[tuple[int, int]]) -> torch.Tensor:
    """MultiScaleRoIAlign.forward sets its scales on the first call from the sizes it sees (for a dynamic
    image, symbolic: torch.export fixes them), and keeps them on the module. Here scales not yet set are
    the library's own _setup_scales of the example's sizes, as eager's first call on the example would make
    them, and the module is left as it was."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily
    from torchvision.ops import poolers

    x_filtered = poolers._filter_input(x, self.featmap_names)
    scales, mapper = self.scales, self.map_levels
    if scales is None or mapper is None:
        with unset_fake_temporarily():
            stand_ins = [torch.empty(()).expand(_example(f.shape[-2]), _example(f.shape[-1])) for f in x_filtered]
            sizes = [(_example(h), _example(w)) for h, w in image_shapes]
            scales, mapper = poolers._setup_scales(stand_ins, sizes, self.canonical_scale, self.canonical_level)
    return poolers._multiscale_roi_align(x_filtered, boxes, self.output_size, self.sampling_ratio, scales, mapper)


def _linear_weights(start: torch.Tensor, end: torch.Tensor, size: int, length: int | torch.SymInt
                    ) -> tuple[torch.Tensor, ...]:
    """Along one axis of an image `length` long, for each box from start to end (ints, inclusive): where
    bilinear interpolation (align_corners=False) of `size` samples to the box's extent reads, as ATen's CPU
    kernel computes it in float32 (scale = size / extent; source = max(scale * (i + 0.5) - 0.5, 0), its floor
    and the next sample, their weights 1 - lambda and lambda), and which positions the box covers."""
    extent = torch.clamp(end - start + 1, min=1)
    scale = torch.tensor(float(size), dtype=torch.float32) / extent.to(torch.float32)
    position = torch.arange(length, device=start.device)
    offset = position[None, :] - start[:, None]
    source = torch.clamp(scale[:, None] * (offset.to(torch.float32) + 0.5) - 0.5, min=0)
    first = torch.clamp(source.floor().to(torch.int64), max=size - 1)
    weight = torch.clamp(source - first.to(torch.float32), 0, 1)
    second = first + (first < size - 1).to(torch.int64)
    covered = (offset >= 0) & (position[None, :] <= end[:, None])
    return first, second, 1 - weight, weight, covered


def _paste_masks_in_image(masks: torch.Tensor, boxes: torch.Tensor, img_shape: tuple[int, int],
                          padding: int = 1) -> torch.Tensor:
    """detection.roi_heads.paste_masks_in_image resizes each mask to its box in a Python loop over the
    detections (a count read from data) and pastes it into an empty image; here all at once: each image
    pixel inside a box reads the box's mask bilinearly as F.interpolate to the box's size computes it (rows
    then columns, ATen's weights and order), every other pixel 0. The library's own expand_masks and
    expand_boxes make the padded masks and integer boxes."""
    from torchvision.models.detection import roi_heads

    masks, scale = roi_heads.expand_masks(masks, padding=padding)
    boxes = roi_heads.expand_boxes(boxes, scale).to(dtype=torch.int64)
    im_h, im_w = img_shape
    masks = masks[:, 0]
    size = masks.shape[-1]
    row0, row1, top, bottom, rows_in = _linear_weights(boxes[:, 1], boxes[:, 3], size, im_h)
    col0, col1, left, right, cols_in = _linear_weights(boxes[:, 0], boxes[:, 2], size, im_w)
    across = masks.gather(2, col0[:, None, :].expand(-1, size, -1)) * left[:, None, :] \
        + masks.gather(2, col1[:, None, :].expand(-1, size, -1)) * right[:, None, :]
    width = across.shape[-1]
    pasted = across.gather(1, row0[:, :, None].expand(-1, -1, width)) * top[:, :, None] \
        + across.gather(1, row1[:, :, None].expand(-1, -1, width)) * bottom[:, :, None]
    inside = rows_in[:, :, None] & cols_in[:, None, :]
    return torch.where(inside, pasted, torch.zeros((), dtype=pasted.dtype))[:, None]


def _multiscale_roi_align(x_filtered: list[torch.Tensor], boxes: list[torch.Tensor], output_size: list[int],
                          sampling_ratio: int, scales: list[float] | None, mapper: Any) -> torch.Tensor:
    """ops.poolers._multiscale_roi_align: RoIAlign of each box at the level the mapper gives it, the results
    in the boxes' order. The library counts the boxes with len() (a Python int of a size read from data)
    and writes each level's results in place; here the count is the symbolic size and each level's results
    are put in functionally."""
    from torchvision.ops import poolers, roi_align

    if scales is None or mapper is None:
        raise ValueError("scales and mapper should not be None")
    rois = poolers._convert_to_roi_format(boxes)
    if len(x_filtered) == 1:
        return roi_align(x_filtered[0], rois, output_size=output_size, spatial_scale=scales[0],
                         sampling_ratio=sampling_ratio)
    levels = mapper(boxes)
    first = x_filtered[0]
    result = first.new_zeros((rois.shape[0], first.shape[1], *output_size))
    for level, (feature, scale) in enumerate(zip(x_filtered, scales)):
        idx_in_level = torch.where(levels == level)[0]
        pooled = roi_align(feature, rois[idx_in_level], output_size=output_size, spatial_scale=scale,
                           sampling_ratio=sampling_ratio)
        result = result.index_put((idx_in_level,), pooled.to(result.dtype))
    return result


def _torchvision() -> list[tuple[Any, str, Callable[..., Any]]]:
    """(module, attribute, equivalent) for torchvision's functions, where the module is loaded."""
    found = []
    boxes = sys.modules.get("torchvision.ops.boxes")
    if boxes is not None:
        found.append((boxes, "batched_nms", _batched_nms))
        ops = sys.modules.get("torchvision.ops")
        if ops is not None and getattr(ops, "batched_nms", None) is boxes.batched_nms:
            found.append((ops, "batched_nms", _batched_nms))
    utils = sys.modules.get("torchvision.models.detection._utils")
    if utils is not None:
        found.append((utils, "_topk_min", _topk_min))
        found.append((utils.BoxCoder, "decode", _box_decode(utils.BoxCoder.decode)))
    poolers = sys.modules.get("torchvision.ops.poolers")
    if poolers is not None:
        found.append((poolers, "_multiscale_roi_align", _multiscale_roi_align))
        found.append((poolers.MultiScaleRoIAlign, "forward", _roi_align_forward))
    heads = sys.modules.get("torchvision.models.detection.roi_heads")
    if heads is not None:
        found.append((heads, "paste_masks_in_image", _paste_masks_in_image))
        found.append((heads, "heatmaps_to_keypoints", _heatmaps_to_keypoints))
    transform = sys.modules.get("torchvision.models.detection.transform")
    if transform is not None:
        found.append((transform, "paste_masks_in_image", _paste_masks_in_image))
        found.append((transform, "_resize_image_and_masks", _resize_image_and_masks(transform._resize_image_and_masks)))
        found.append((transform.GeneralizedRCNNTransform, "batch_images",
                      _batch_images(transform.GeneralizedRCNNTransform.batch_images)))
    return found


# the libraries with equivalents, by the module whose import loads them
_LIBRARIES: dict[str, Callable[[], list[tuple[Any, str, Callable[..., Any]]]]] = {
    "torchvision": _torchvision,
    library_longformer.MODULE: library_longformer.equivalents,
}


@contextlib.contextmanager
def library_equivalents() -> Iterator[None]:
    """Every loaded library's functions swapped for their equivalents, put back after."""
    swapped = []
    for name, equivalents in _LIBRARIES.items():
        if name not in sys.modules:
            continue
        for module, attribute, equivalent in equivalents():
            if hasattr(module, attribute):
                swapped.append((module, attribute, getattr(module, attribute)))
                setattr(module, attribute, equivalent)
    try:
        yield
    finally:
        for module, attribute, original in reversed(swapped):
            setattr(module, attribute, original)
