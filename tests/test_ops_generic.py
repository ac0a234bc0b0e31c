"""The generic op test: every entry of every family table (tests/optables/) run through the real dispatch
at each of its samples x dtypes x opsets, compared with eager in aten2onnx.runtime and onnxruntime, its
declared registry keys checked against what the export dispatched."""

from __future__ import annotations

import pytest
from optable import Entry, cases, check
from optables import FAMILIES

CASES = [case for family, table in FAMILIES.items() for case in cases(family, table)]


@pytest.mark.parametrize("entry, sample, dtype, opset", CASES)
def test_op(entry: Entry, sample, dtype, opset):
    check(entry, sample, dtype, opset)


def test_every_entry_declares_the_keys_it_exercises():
    undeclared = [f"{family}.{e.name}" for family, table in FAMILIES.items() for e in table if e.keys is None]
    assert not undeclared, f"entries without keys=(...): {undeclared}"

