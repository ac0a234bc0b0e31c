"""Data movement, indexing and counting ops: their OpInfos exporting natively (the op table is
tests/optables/data.py)."""

from __future__ import annotations

import pytest
from optable import assert_opinfo_native

NATIVE = [
    "_chunk_cat",
    "_segment_reduce.lengths", "_segment_reduce.offsets", "_unsafe_masked_index", "_unsafe_masked_index_put_accumulate",
    "bincount", "histc", "histogram", "histogramdd", "nonzero_static", "put", "repeat_interleave", "resize_",
    "resize_as_", "unique_consecutive", "combinations", "nn.functional.embedding_bag", "nn.functional.unfold",
    "unfold_copy", "masked_scatter",
]


@pytest.mark.parametrize("name", NATIVE)
def test_opinfo_native(name):
    assert_opinfo_native(name, [9, 13, 18, 26])


def test_opinfo_max_pool2d_with_indices_backward_native():
    # the forward max_pool2d_with_indices is native from opset 10 (dilated MaxPool)
    assert_opinfo_native("max_pool2d_with_indices_backward", [10, 13, 18, 26])
