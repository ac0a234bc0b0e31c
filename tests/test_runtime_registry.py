"""The runtime's kernel table: each kernel's schema-version range agrees with onnx.defs, dispatch picks
the kernel for a model's opset as onnx.defs says it should, and registration refuses bad ranges at
import. (That the runtime imports neither the exporter nor itself in a cycle is tests/test_layers.py's.)"""

from __future__ import annotations


import numpy as np
import onnx
import onnx.defs
import pytest
from onnx import TensorProto, helper

from aten2onnx.errors import InvalidModelError
from aten2onnx.runtime import InferenceSession, kernel as kernel_module
from aten2onnx.runtime.kernel import CHECKED_OPSET, Kernel, all_kernels, find_kernel, kernel
from aten2onnx.runtime.ops import MAX_OPSET



def _onnx_versions() -> dict[tuple[str, str], list[int]]:
    """Every op's schema versions, read from onnx.defs here (not through the runtime's own index)."""
    versions: dict[tuple[str, str], set[int]] = {}
    for schema in onnx.defs.get_all_schemas_with_history():
        versions.setdefault((schema.domain, schema.name), set()).add(schema.since_version)
    return {key: sorted(v) for key, v in versions.items()}


def test_checked_opset_is_one_onnx_defines():
    assert CHECKED_OPSET <= onnx.defs.onnx_opset_version() == MAX_OPSET


def test_kernel_ranges_are_schema_versions():
    """An ai.onnx kernel registered from version v (up to u) starts and ends on versions onnx.defs lists for
    its op, and its op's kernels together run exactly the op's schema versions from the first kernel's v
    up to CHECKED_OPSET: no version is left without a kernel, none is run by two."""
    versions = _onnx_versions()
    problems = []
    for (domain, op), kernels in all_kernels().items():
        if domain != "":
            continue
        listed = versions[("", op)]
        for k in kernels:
            if k.since_version not in listed or (k.until is not None and k.until not in listed):
                problems.append(f"{op}: {k.__name__} [{k.since_version}, {k.until}) is not on versions {listed}")
        wanted = [v for v in listed if kernels[0].since_version <= v <= CHECKED_OPSET]
        run = {}
        for v in wanted:
            owners = [k for k in kernels if k.since_version <= v and (k.until is None or v < k.until)
                      and not any(k.since_version < later.since_version <= v for later in kernels)]
            if len(owners) != 1:
                problems.append(f"{op} version {v}: run by {[k.__name__ for k in owners]}")
            run[v] = owners
        assert run.keys() == set(wanted)
    assert not problems, problems


def test_dispatch_follows_onnx_defs():
    """For every op with a kernel and every opset a model may import, the session's kernel is the one whose
    range holds the op's schema version at that opset (onnx.defs.get_schema), or none where no range does."""
    wrong = []
    for (domain, op), kernels in all_kernels().items():
        if domain != "":
            continue
        for opset in range(1, MAX_OPSET + 1):
            try:
                version = onnx.defs.get_schema(op, opset, "").since_version
            except onnx.defs.SchemaError:
                version = None
            expected = None
            if version is not None and version <= CHECKED_OPSET:
                starts = [k for k in kernels if k.since_version <= version]
                if starts and (starts[-1].until is None or version < starts[-1].until):
                    expected = starts[-1]
            try:
                got = find_kernel("", op, opset)
            except InvalidModelError:
                got = None
            if got is not expected:
                wrong.append((op, opset, getattr(got, "__name__", None), getattr(expected, "__name__", None)))
    assert not wrong, wrong


@pytest.mark.parametrize("op, opset, name", [
    ("Mod", 28, "Mod"), ("Mod", 10, "Mod"), ("SpaceToDepth", 28, "SpaceToDepth28"), ("SpaceToDepth", 27, "SpaceToDepth"),
    ("Range", 27, "Range27"), ("Range", 26, "Range"), ("Cast", 28, "Cast"), ("Pad", 19, "Pad11"), ("Pad", 2, "Pad2"),
    ("Resize", 19, "Resize11"), ("Resize", 10, "Resize10"), ("TopK", 24, "TopK10"), ("TopK", 9, "TopK1"),
    ("ReduceSum", 12, "ReduceSum1"), ("ReduceSum", 13, "ReduceSum13"), ("Attention", 25, "Attention25"),
])
def test_kernel_for_opset(op, opset, name):
    assert find_kernel("", op, opset).__name__ == name


def _celu_model(opset):
    return helper.make_model(
        helper.make_graph([helper.make_node("Celu", ["x"], ["y"], name="c")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])]),
        opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def test_version_beyond_checked_opset_is_refused(monkeypatch):
    """Celu has versions 12 and 28: with kernels checked only through opset 27, version 28 is refused
    and version 12 still runs at opset 27."""
    x = np.array([-1.0, 1.0], np.float32)
    np.testing.assert_allclose(InferenceSession(_celu_model(28)).run(None, {"x": x})[0], [np.expm1(-1.0), 1.0],
                               rtol=1e-6)
    monkeypatch.setattr(kernel_module, "CHECKED_OPSET", 27)
    with pytest.raises(InvalidModelError, match=r"'c' \(Celu\).*opset 28 is version 28 of the op, newer than opset 27"):
        InferenceSession(_celu_model(28))
    InferenceSession(_celu_model(27)).run(None, {"x": x})


def test_until_ends_a_range(monkeypatch):
    celu = find_kernel("", "Celu", 12)
    monkeypatch.setattr(celu, "until", 28)
    InferenceSession(_celu_model(27))
    with pytest.raises(InvalidModelError, match=r"Celu at opset 28 is not supported; kernels exist from versions "
                                                r"\[12\], running versions 12-27"):
        InferenceSession(_celu_model(28))


@pytest.mark.parametrize("register, message", [
    (lambda: kernel("Relu", since=6)(type("R", (Kernel,), {})), "overlaps"),
    (lambda: kernel("Relu", since=7)(type("R", (Kernel,), {})), "has no schema version 7; onnx defines versions"),
    (lambda: kernel("Relu", since=13, until=6)(type("R", (Kernel,), {})), "is empty"),
    (lambda: kernel("Relu", since=13, until=15)(type("R", (Kernel,), {})), "has no schema version 15"),
])
def test_registration_refuses_bad_ranges(register, message):
    before = all_kernels()
    with pytest.raises(ValueError, match=message):
        register()
    assert all_kernels() == before
