"""Custom ops torchvision defines, from opset 16: RoiAlign's coordinate_transformation_mode says aligned=True
(half_pixel: rois shifted by half a pixel, any size) as well as aligned=False (output_half_pixel, the default
before 16, no longer at 16)."""

from __future__ import annotations

import functools

from aten2onnx import registry
from aten2onnx.symbolic.opset10_torchvision import roi_align

register = functools.partial(registry.register, opset=16, library="torchvision")


@register("torchvision::roi_align.default")
def torchvision_roi_align(g, input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned):
    """roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width, int sampling_ratio, bool aligned) -> Tensor"""
    return roi_align(g, input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio,
                     coordinate_transformation_mode="half_pixel" if aligned else "output_half_pixel")
