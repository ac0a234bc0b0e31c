"""The generic op test: every entry of every family table (tests/optables/) run through the real dispatch
at each of its samples x dtypes x opsets, compared with eager in aten2onnx.runtime and onnxruntime, its
declared registry keys checked against what the export dispatched; and every built-in registry key either
in some entry's keys or in UNTESTED with a reason."""

from __future__ import annotations

import pytest
from optable import Entry, cases, check, registered_keys
from optables import FAMILIES, UNTESTED

CASES = [case for family, table in FAMILIES.items() for case in cases(family, table)]


@pytest.mark.parametrize("entry, sample, dtype, opset", CASES)
def test_op(entry: Entry, sample, dtype, opset):
    check(entry, sample, dtype, opset)


def test_every_entry_declares_the_keys_it_exercises():
    undeclared = [f"{family}.{e.name}" for family, table in FAMILIES.items() for e in table if e.keys is None]
    assert not undeclared, f"entries without keys=(...): {undeclared}"


def test_every_registered_key_is_in_a_table_or_untested_with_a_reason():
    declared = {key for table in FAMILIES.values() for e in table for key in e.keys or ()}
    registered = registered_keys()
    missing = sorted(registered - declared - set(UNTESTED))
    assert not missing, "registered keys in no table's entry keys and not in UNTESTED:\n" + "\n".join(missing)
    stale = sorted((declared | set(UNTESTED)) - registered)
    assert not stale, f"keys in tables or UNTESTED that are not registered: {stale}"
    both = sorted(declared & set(UNTESTED))
    assert not both, f"keys both in a table and in UNTESTED: {both}"
    assert all(UNTESTED.values()), "every UNTESTED key needs a reason"
