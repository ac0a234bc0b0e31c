"""Registry: floor dispatch, the user layer, import-time validation, schema binding, in-place twins."""

import importlib.util

import pytest
import torch

import aten2onnx
from aten2onnx.errors import RegistrationError
from aten2onnx.registry import REGISTRY, Registry, bind, functional_twin, overload_key
from aten2onnx.registry._schema import LIBRARIES, check_signature, is_python_key, resolve_overload


def h9(g, self):
    return self


def h13(g, self):
    return self


def user(g, self):
    return self


def test_floor_dispatch_picks_newest_at_or_below_target():
    reg = Registry()
    reg.add("aten::relu.default", 9, h9, user=False)
    reg.add("aten::relu.default", 13, h13, user=False)
    relu = torch.ops.aten.relu.default
    assert reg.resolve(relu, 8) is None
    assert [reg.resolve(relu, v).handler for v in (9, 12, 13, 26)] == [h9, h9, h13, h13]
    assert reg.resolve(relu, 12).opset == 9
    assert reg.registered_opsets("aten::relu.default") == (9, 13)


def test_user_layer_wins_at_and_above_its_opset_even_over_newer_builtins():
    reg = Registry()
    reg.add("aten::relu.default", 9, h9, user=False)
    reg.add("aten::relu.default", 14, h13, user=False)
    reg.add("aten::relu.default", 11, user, user=True)
    relu = torch.ops.aten.relu.default
    assert reg.resolve(relu, 10).handler is h9
    assert all(reg.resolve(relu, v).handler is user for v in (11, 14, 26))
    reg.remove_user("aten::relu.default")
    assert reg.resolve(relu, 26).handler is h13


def test_real_and_complex_entries_are_one_table_dispatched_apart():
    reg = Registry()
    reg.add("aten::relu.default", 9, h9, user=False)
    reg.add("aten::relu.default", 9, h13, user=False, complex=True)  # another kind: not a duplicate
    reg.add("aten::relu.default", 11, user, user=True)  # a user symbolic is real unless it says complex
    relu = torch.ops.aten.relu.default
    assert reg.resolve(relu, 12).handler is user
    assert reg.resolve(relu, 12, complex=True).handler is h13
    assert [(e.opset, e.complex, e.user) for e in reg.entries(complex=None, user=None)] == [
        (9, False, False), (9, True, False), (11, False, True)]
    assert reg.builtin_handlers(complex=True) == {"aten::relu.default": {9: h13}}
    reg.add("aten::relu.default", 9, user, user=True, complex=True)
    assert reg.resolve(relu, 9, complex=True).handler is user
    reg.remove_user("aten::relu.default", complex=True)
    assert reg.resolve(relu, 9, complex=True).handler is h13
    assert reg.resolve(relu, 12).handler is user


@pytest.mark.parametrize("name, fn, message", [
    ("aten::not_an_op.default", h9, "no operator aten::not_an_op"),
    ("aten::relu.nope", h9, "has no overload 'nope'"),
    ("relu", h9, "not a qualified op name"),
    ("aten::add.Tensor", lambda g, x, y: x, "name the parameters (g, self, other, alpha)"),
    ("aten::add.Tensor", lambda g, self, other, alpha=1: self, "must come after '*'"),
    ("aten::add.Tensor", lambda g, self, other, *, alpha: self, "needs the schema's default"),
    ("aten::add.Tensor", lambda g, self, other, *, alpha=2: self, "defaults to 2, the schema to 1"),
    ("aten::relu.default", lambda: None, "must take the graph builder first"),
])
def test_registration_is_validated(name, fn, message):
    with pytest.raises(RegistrationError, match=None) as info:
        Registry().add(name, 9, fn, user=True)
    assert message in str(info.value)


@pytest.mark.parametrize("name, fn, message, exists", [
    ("aten::not_an_op.default", h9, "no operator aten::not_an_op", False),
    ("aten::relu.nope", h9, "has no overload 'nope'", False),
    ("aten::add.Tensor", lambda g, x, y: x, "name the parameters (g, self, other, alpha)", True),
])
def test_a_builtin_this_torch_cannot_take_is_kept_aside_not_raised(name, fn, message, exists):
    """A built-in registered for an overload another torch has (or with another torch's schema) never breaks
    import: it is kept aside with the reason, reported by unavailable(), and never dispatched."""
    reg = Registry()
    reg.add(name, 9, fn, user=False)
    reg.add(name, 13, fn, user=False)
    [kept] = reg.unavailable()
    assert (kept.key, kept.opsets, kept.exists) == (name, (9, 13), exists) and message in kept.reason
    assert reg.keys() == [] and reg.builtin_handlers() == {}
    if exists:
        assert reg.resolve(torch.ops.aten.add.Tensor, 18) is None


def test_a_library_op_checked_when_loaded_is_kept_aside_when_the_library_lacks_it(monkeypatch):
    from aten2onnx.registry import _schema

    monkeypatch.setitem(_schema.LIBRARIES, "a2o_missing_lib", "json")  # a module that defines no such op
    reg = Registry()
    reg.add("a2o_missing_lib::op.default", 9, h9, user=False)
    assert reg.keys() == ["a2o_missing_lib::op.default"] and reg.unavailable() == []
    assert reg._check_loaded("a2o_missing_lib::op.default") is False
    assert reg.keys() == [] and [u.key for u in reg.unavailable()] == ["a2o_missing_lib::op.default"]


def test_every_builtin_kept_aside_names_an_overload_this_torch_lacks():
    """On the running torch, a built-in is kept aside only because its overload is not here (a schema that
    changed under a handler is a bug to fix, not a registration to skip)."""
    from aten2onnx import symbolic  # noqa: F401

    drifted = [(u.key, u.reason) for u in REGISTRY.unavailable() if u.exists]
    assert drifted == []
    assert all(not hasattr(torch.ops.aten, u.key.split("::")[1].rsplit(".", 1)[0])
               or u.key.rsplit(".", 1)[1] not in getattr(torch.ops.aten, u.key.split("::")[1].rsplit(".", 1)[0]).overloads()
               for u in REGISTRY.unavailable() if u.key.startswith("aten::"))


def test_duplicate_builtin_registration_raises():
    reg = Registry()
    reg.add("aten::relu.default", 9, h9, user=False)
    with pytest.raises(RegistrationError, match="registered twice at opset 9"):
        reg.add("aten::relu.default", 9, h13, user=False)


def test_every_builtin_handler_matches_its_schema():
    from aten2onnx import symbolic  # noqa: F401

    table = REGISTRY.builtin_handlers()
    assert len(table) > 100 and len(REGISTRY.builtin_handlers(complex=True)) > 100
    for key, handlers in [*table.items(), *REGISTRY.builtin_handlers(complex=True).items()]:
        if is_python_key(key):  # Python operators on SymInts have no schema
            continue
        library = LIBRARIES.get(key.split("::", 1)[0])
        if library is not None and importlib.util.find_spec(library.split(".", 1)[0]) is None:
            continue  # an op of a library not installed here (torchvision): checked where it is
        try:
            schema = resolve_overload(key)._schema
        except RegistrationError as e:
            if library is not None and "there is no operator" in str(e):
                continue  # the installed release of the library has no such op yet (kept aside on dispatch)
            raise
        for handler in handlers.values():
            check_signature(handler, schema, key)


def test_bind_uses_schema_names_for_tensor_and_scalar_overloads():
    x, y = object(), object()
    assert bind(torch.ops.aten.add.Tensor._schema, (x, y), {"alpha": 2}) == {"self": x, "other": y, "alpha": 2}
    assert bind(torch.ops.aten.add.Scalar._schema, (x, 3.5, 2), {}) == {"self": x, "other": 3.5, "alpha": 2}
    assert bind(torch.ops.aten.add.Tensor._schema, (x, y), {}) == {"self": x, "other": y, "alpha": 1}
    with pytest.raises(TypeError, match="missing argument 'other'"):
        bind(torch.ops.aten.add.Tensor._schema, (x,), {})


def test_add_tensor_and_add_scalar_export_through_one_binding():
    def f(x, y):
        return torch.ops.aten.add.Scalar(x, 2.5, 3) + torch.ops.aten.add.Tensor(x, y, alpha=2)

    x, y = torch.randn(3), torch.randn(3)
    exported = aten2onnx.export(f, (x, y))
    torch.testing.assert_close(exported.run(x, y), f(x, y))


def test_lifted_complex_entries_apply_a_registered_real_translation():
    from aten2onnx import symbolic  # noqa: F401

    lifted = [e for e in REGISTRY.entries(complex=True) if e.lifts]
    assert len(lifted) > 100 and all(e.lifting for e in lifted)
    missing = [e.key for e in lifted if not REGISTRY.registered_opsets(e.lifts)]
    assert missing == []


def test_a_lifting_row_builds_a_handler_of_the_schema_and_checks_the_real_overload():
    from aten2onnx.symbolic._lifting import _handler

    seen = []
    handler = _handler("aten::gather.default", "aten::gather.default", ("self",),
                       lambda g, real, spec, arguments: seen.append((real, spec, arguments)))
    check_signature(handler, torch.ops.aten.gather.default._schema, "aten::gather.default")
    handler("g", "x", 1, "i")  # positional, as a handler calling another would
    assert seen == [("aten::gather.default", ("self",), {"self": "x", "dim": 1, "index": "i", "sparse_grad": False})]
    with pytest.raises(RegistrationError, match="arguments differ"):
        _handler("aten::vdot.default", "aten::dot.default", None, lambda *a: None)


@pytest.mark.parametrize("op, twin", [
    (torch.ops.aten.add_.Tensor, torch.ops.aten.add.Tensor),
    (torch.ops.aten.add.out, torch.ops.aten.add.Tensor),
    (torch.ops.aten.relu_.default, torch.ops.aten.relu.default),
    (torch.ops.aten.index_put_.default, torch.ops.aten.index_put.default),
    (torch.ops.aten.mul_.Scalar, torch.ops.aten.mul.Scalar),
    (torch.ops.aten.relu.default, None),
])
def test_functional_twin_comes_from_the_schema(op, twin):
    assert functional_twin(op) is twin


def test_overload_keys():
    assert overload_key(torch.ops.aten.add.Tensor) == "aten::add.Tensor"
    assert overload_key(torch.ops.aten.relu.default) == "aten::relu.default"
    import operator

    assert overload_key(operator.mul) == "_operator::mul"
