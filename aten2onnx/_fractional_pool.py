"""`aten2onnx::fractional_max_pool`: the op fractional max pooling is captured as (see
exporter/passes/tracing.py), defined where both the exporter and its symbolic can import it. ATen's
fractional_max_pool2d/3d take their output size as plain ints, so torch.export writes a size computed from
a dynamic input size (`output_ratio`) as the example's constant, and its meta kernel of the 3-D op fixes
every input dim; this op takes symbolic sizes, and runs ATen's kernel in eager."""

from __future__ import annotations

from typing import Sequence

import torch


@torch.library.custom_op("aten2onnx::fractional_max_pool", mutates_args=())
def fractional_max_pool(input: torch.Tensor, kernel_size: Sequence[int], output_size: Sequence[int],
                        random_samples: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """ATen's fractional_max_pool2d (two kernel sizes) or fractional_max_pool3d (three): (output, indices)."""
    pool = torch.ops.aten.fractional_max_pool2d if len(kernel_size) == 2 else torch.ops.aten.fractional_max_pool3d
    return pool(input, list(kernel_size), list(output_size), random_samples)


@fractional_max_pool.register_fake
def _(input, kernel_size, output_size, random_samples):
    shape = (*input.shape[:input.dim() - len(kernel_size)], *output_size)
    return input.new_empty(shape), input.new_empty(shape, dtype=torch.int64)
