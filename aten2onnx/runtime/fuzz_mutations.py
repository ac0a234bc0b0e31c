"""The runtime fuzzer's mutations (runtime/fuzz.py runs and judges the mutants): a model changed as an
attacker would change it (attributes, initializers, dtypes, dims, wiring, deleted and duplicated nodes, op
types, opsets, metadata, forged ATen calls, flipped bytes), and the inputs a mutant is fed."""

from __future__ import annotations

import functools
import json
import random
from typing import Any, Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from aten2onnx._onnx_graphs import graphs


# -- mutations ---------------------------------------------------------------------------------------
# Each takes the model (mutated in place) and a Random, and returns what it did, or None when it found
# nothing to mutate.

_INTS = (0, 1, -1, 2, 3, -2, 7, 2**31 - 1, -(2**31), 2**62, 10**6)
_FLOATS = (0.0, -1.0, 1.0, 2.0, 0.5, 1e-30, 1e30, float("nan"), float("inf"), -float("inf"))
_STRINGS = ("", "constant", "reflect", "edge", "linear", "nearest", "cubic", "floor", "ceil", "none", "tanh",
            "sum", "mean", "max", "min", "left", "right", "NOTSET", "SAME_UPPER", "half_pixel", "float32",
            "from_file", "_reshape_alias", "as_strided", "copy_", "empty", "_sparse_coo_tensor_unsafe", "add",
            "Tensor", "default", "mylib", "self", "other", "\xff")
_ELEM_TYPES = tuple(v for v in TensorProto.DataType.values())


def _graphs(model: onnx.ModelProto) -> list[onnx.GraphProto]:
    """The main graph and every subgraph, outermost first."""
    return list(graphs(model.graph))


def _nodes(model: onnx.ModelProto) -> list[tuple[onnx.GraphProto, onnx.NodeProto]]:
    return [(g, n) for g in _graphs(model) for n in g.node]


def _pick(rng: random.Random, items: list) -> Any:
    return rng.choice(items) if items else None


def _number(rng: random.Random, value: float, choices: tuple) -> float:
    return rng.choice(choices + (value + 1, value - 1, value * 2, -value))


def mutate_attribute(model: onnx.ModelProto, rng: random.Random) -> str | None:
    picked = _pick(rng, [(n, a) for _, n in _nodes(model) for a in n.attribute])
    if picked is None:
        return None
    node, attr = picked
    kind = attr.type
    if kind == onnx.AttributeProto.INT:
        attr.i = int(_number(rng, attr.i, _INTS))
    elif kind == onnx.AttributeProto.FLOAT:
        attr.f = float(np.float32(_number(rng, attr.f, _FLOATS)))
    elif kind == onnx.AttributeProto.STRING:
        attr.s = rng.choice(_STRINGS).encode("utf-8", "surrogateescape")
    elif kind == onnx.AttributeProto.INTS and attr.ints:
        values = list(attr.ints)
        action = rng.randrange(3)
        if action == 0:
            values[rng.randrange(len(values))] = int(_number(rng, values[0], _INTS))
        elif action == 1:
            values.pop(rng.randrange(len(values)))
        else:
            values.append(rng.choice(_INTS))
        del attr.ints[:]
        attr.ints.extend(v if -(2**63) <= v < 2**63 else 0 for v in values)
    elif kind == onnx.AttributeProto.FLOATS and attr.floats:
        attr.floats[rng.randrange(len(attr.floats))] = float(np.float32(rng.choice(_FLOATS)))
    elif kind == onnx.AttributeProto.STRINGS and attr.strings:
        attr.strings[rng.randrange(len(attr.strings))] = rng.choice(_STRINGS).encode("utf-8", "surrogateescape")
    elif kind == onnx.AttributeProto.TENSOR:
        return _mutate_tensor(attr.t, rng) and f"{node.op_type}.{attr.name}: tensor"
    elif kind == onnx.AttributeProto.GRAPH:
        sub = onnx.ModelProto()
        sub.graph.CopyFrom(attr.g)
        done = rng.choice([mutate_attribute, swap_inputs, delete_node, retype_value, reshape_value])(sub, rng)
        attr.g.CopyFrom(sub.graph)
        return done and f"{node.op_type}.{attr.name}: {done}"
    else:
        node.attribute.remove(attr)
        return f"{node.op_type}: removed attribute {attr.name}"
    return f"{node.op_type}.{attr.name} = {helper.get_attribute_value(attr)!r}"[:160]


def add_or_drop_attribute(model: onnx.ModelProto, rng: random.Random) -> str | None:
    _, node = _pick(rng, _nodes(model)) or (None, None)
    if node is None:
        return None
    if node.attribute and rng.random() < 0.5:
        attr = rng.choice(list(node.attribute))
        node.attribute.remove(attr)
        return f"{node.op_type}: dropped {attr.name}"
    name = rng.choice(["axis", "perm", "to", "mode", "keepdims", "alpha", "operator", "overload_name", "bogus"])
    node.attribute.append(helper.make_attribute(name, rng.choice([rng.choice(_INTS), "x", [0, 1], 0.5])))
    return f"{node.op_type}: added {name}"


def _mutate_tensor(tensor: onnx.TensorProto, rng: random.Random) -> bool:
    action = rng.randrange(4)
    if action == 0 and tensor.dims:
        tensor.dims[rng.randrange(len(tensor.dims))] = rng.choice((0, 1, 2, 3, 1000, 2**40))
    elif action == 1:
        tensor.data_type = rng.choice(_ELEM_TYPES)
    elif action == 2 and tensor.raw_data:
        raw = bytearray(tensor.raw_data)
        i = rng.randrange(len(raw))
        raw[i] = rng.randrange(256)
        tensor.raw_data = bytes(raw)
    else:
        try:
            array = numpy_helper.to_array(tensor)
        except Exception:
            return False
        if array.size == 0 or array.dtype.kind not in "iuf":
            return False
        flat = array.reshape(-1).copy()
        choices = _INTS[:7] if array.dtype.kind in "iu" else _FLOATS
        flat[rng.randrange(flat.size)] = np.array(rng.choice(choices)).astype(array.dtype)
        tensor.CopyFrom(numpy_helper.from_array(flat.reshape(array.shape), tensor.name))
    return True


def mutate_initializer(model: onnx.ModelProto, rng: random.Random) -> str | None:
    tensor = _pick(rng, [t for g in _graphs(model) for t in g.initializer])
    if tensor is None or not _mutate_tensor(tensor, rng):
        return None
    return f"initializer {tensor.name}"


def retype_value(model: onnx.ModelProto, rng: random.Random) -> str | None:
    infos = [i for g in _graphs(model) for i in list(g.input) + list(g.output) + list(g.value_info)
             if i.type.HasField("tensor_type")]
    info = _pick(rng, infos)
    if info is None:
        return None
    info.type.tensor_type.elem_type = rng.choice((TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16,
                                                  TensorProto.INT64, TensorProto.INT32, TensorProto.BOOL,
                                                  TensorProto.UINT8, TensorProto.BFLOAT16, 0, 99))
    return f"{info.name}: elem_type {info.type.tensor_type.elem_type}"


def reshape_value(model: onnx.ModelProto, rng: random.Random) -> str | None:
    infos = [i for g in _graphs(model) for i in list(g.input) + list(g.output)
             if i.type.HasField("tensor_type") and i.type.tensor_type.HasField("shape")]
    info = _pick(rng, infos)
    if info is None:
        return None
    dims = info.type.tensor_type.shape.dim
    action = rng.randrange(3)
    if action == 0 and len(dims):
        dim = dims[rng.randrange(len(dims))]
        dim.dim_value = rng.choice((0, 1, 2, 5, 64))
    elif action == 1 and len(dims):
        dims.pop()
    else:
        dims.add().dim_value = rng.choice((1, 2))
    return f"{info.name}: shape {[d.dim_value or d.dim_param for d in dims]}"


def swap_inputs(model: onnx.ModelProto, rng: random.Random) -> str | None:
    graph, node = _pick(rng, _nodes(model)) or (None, None)
    if node is None or not node.input:
        return None
    names = [i.name for i in graph.input] + [t.name for t in graph.initializer] + \
        [o for n in graph.node for o in n.output if o]
    action = rng.randrange(3)
    if action == 0 and len(node.input) >= 2:
        i, j = rng.sample(range(len(node.input)), 2)
        node.input[i], node.input[j] = node.input[j], node.input[i]
        return f"{node.op_type}: swapped inputs {i} and {j}"
    i = rng.randrange(len(node.input))
    node.input[i] = "" if action == 1 else rng.choice(names)  # may wire a cycle: on purpose
    return f"{node.op_type}: input {i} <- {node.input[i]!r}"


def delete_node(model: onnx.ModelProto, rng: random.Random) -> str | None:
    graph, node = _pick(rng, _nodes(model)) or (None, None)
    if node is None:
        return None
    if rng.random() < 0.5 and node.input and node.input[0]:
        for other in graph.node:  # rewire its readers to its first input
            for k, name in enumerate(other.input):
                if name in node.output:
                    other.input[k] = node.input[0]
    graph.node.remove(node)
    return f"deleted {node.op_type} {node.name!r}"


def duplicate_node(model: onnx.ModelProto, rng: random.Random) -> str | None:
    graph, node = _pick(rng, _nodes(model)) or (None, None)
    if node is None:
        return None
    copy = onnx.NodeProto()
    copy.CopyFrom(node)
    graph.node.insert(rng.randrange(len(graph.node) + 1), copy)
    return f"duplicated {node.op_type}"


_SAME_ARITY = [("Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "MatMul", "Equal", "Greater", "Mod"),
               ("Relu", "Sigmoid", "Tanh", "Exp", "Log", "Neg", "Abs", "Sqrt", "Erf", "Identity", "Softmax", "Not",
                "Shape", "Size", "NonZero", "Floor"),
               ("Reshape", "Expand", "Tile", "Gather", "Unsqueeze", "Squeeze", "ReduceSum", "ConstantOfShape")]


def change_op(model: onnx.ModelProto, rng: random.Random) -> str | None:
    _, node = _pick(rng, [(g, n) for g, n in _nodes(model) if any(n.op_type in group for group in _SAME_ARITY)]) \
        or (None, None)
    if node is None:
        return None
    before = node.op_type
    node.op_type = rng.choice(next(group for group in _SAME_ARITY if before in group))
    return f"{before} -> {node.op_type}"


def change_opset(model: onnx.ModelProto, rng: random.Random) -> str | None:
    entry = _pick(rng, list(model.opset_import))
    if entry is None:
        return None
    entry.version = rng.choice((0, 1, 7, 9, 13, 17, 18, 21, 26, entry.version + 1, entry.version - 1, 99))
    return f"opset {entry.domain or 'ai.onnx'} = {entry.version}"


def mutate_metadata(model: onnx.ModelProto, rng: random.Random) -> str | None:
    """aten2onnx's own metadata: state updates, and the aten_op stamps fusion reads."""
    stamped = [n for _, n in _nodes(model) if n.metadata_props]
    if model.metadata_props and rng.random() < 0.5:
        entry = rng.choice(list(model.metadata_props))
        try:
            value = json.loads(entry.value)
        except ValueError:
            value = None
        if isinstance(value, list) and value and isinstance(value[0], dict) and value[0]:
            item = value[0] if len(value) == 1 else rng.choice([v for v in value if isinstance(v, dict) and v] or [value[0]])
            key = rng.choice(list(item))
            item[key] = rng.choice(["output", "buffer", "input", "x", "nope", 3, None])
            entry.value = json.dumps(value)
        else:
            entry.value = rng.choice(["", "[", "{}", "[{}]", '[{"output": 1}]'])
        return f"metadata {entry.key}"
    node = _pick(rng, stamped)
    if node is None:
        return None
    op = rng.choice(["aten::gelu.default", "aten::silu.default", "aten::scaled_dot_product_attention.default"])
    for _, other in _nodes(model):
        if other.name.split("/", 1)[0] == node.name.split("/", 1)[0] or rng.random() < 0.3:
            for prop in other.metadata_props:
                if prop.key == "aten_op":
                    prop.value = op
            other.name = node.name.split("/", 1)[0] + "/" + other.op_type
    return f"stamped a group as {op}"


@functools.cache
def _admitted_overloads() -> list:
    """Every aten overload the safety rule admits: what a model file can make the runtime call."""
    import torch

    from aten2onnx.runtime.safety import refusal

    found = []
    for name in sorted(torch._C._dispatch_get_all_op_names()):
        if not name.startswith("aten::"):
            continue
        op_name, _, overload = name[len("aten::"):].partition(".")
        try:
            op = getattr(getattr(torch.ops.aten, op_name), overload or "default")
        except (AttributeError, RuntimeError):
            continue
        if refusal(op) is None:
            found.append(op)
    return found


def _aten_argument(arg, values: list[str], rng: random.Random) -> tuple[list[str], Any] | None:
    """(inputs, attribute value) for one schema argument of a synthesized ATen node; None leaves it out."""
    from aten2onnx._aten_node import schema_kind

    kind, is_list, optional = schema_kind(arg)
    if (optional or arg.has_default_value()) and rng.random() < 0.5:
        return None
    count = rng.randint(1, 3) if is_list else 1
    if kind == "Tensor":
        return [rng.choice(values) for _ in range(count)], None
    pools = {"int": _INTS[:8] + (64, -64), "SymInt": _INTS[:8] + (64,), "float": _FLOATS, "bool": (0, 1),
             "number": _INTS[:6] + _FLOATS[:6], "str": _STRINGS[:20],
             "ScalarType": ("float32", "float64", "int64", "int32", "bool", "float16", "uint8", "complex64")}
    if kind not in pools:
        return None
    picked = [rng.choice(pools[kind]) for _ in range(count)]
    return [], picked if is_list else picked[0]


def _forged_call(op, values: list[str], outputs: list[str], rng: random.Random) -> tuple[onnx.NodeProto, list[str], dict]:
    """An ATen node calling op on the graph's values and arguments drawn from edge cases (_aten_argument),
    with its input_args and attributes."""
    from aten2onnx._aten_node import DOMAIN

    schema = op._schema
    inputs, input_args, attrs = [], [], {}
    for arg in schema.arguments:
        picked = _aten_argument(arg, values, rng)
        if picked is None:
            continue
        names, attr = picked
        inputs += names
        input_args += [arg.name] * len(names)
        if not names:
            attrs[arg.name] = attr
    node = helper.make_node("ATen", inputs, outputs, domain=DOMAIN, operator=schema.name.split("::")[1],
                            overload_name=schema.overload_name, **({"input_args": input_args} if input_args else {}),
                            **attrs)
    return node, input_args, attrs


def synthesize_aten(model: onnx.ModelProto, rng: random.Random) -> str | None:
    """A new ATen node calling any overload the safety rule admits, on the graph's own values and
    arguments drawn from edge cases: the rule's promise is that whatever it admits is safe to call."""
    from aten2onnx._aten_node import DOMAIN

    graph = model.graph
    values = [i.name for i in graph.input] + [t.name for t in graph.initializer] + \
        [o for n in graph.node for o in n.output if o]
    if not values:
        return None
    op = rng.choice(_admitted_overloads())
    schema = op._schema
    outputs = [f"aten_fuzz_{k}" for k in range(len(schema.returns))]
    node, input_args, attrs = _forged_call(op, values, outputs, rng)
    graph.node.append(node)
    graph.output.extend(helper.make_empty_tensor_value_info(o) for o in outputs)
    if not any(o.domain == DOMAIN for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid(DOMAIN, 1))
    return f"ATen {schema.name}.{schema.overload_name or 'default'}({', '.join(input_args)}; {attrs})"[:240]


def mutate_exact(model: onnx.ModelProto, rng: random.Random) -> str | None:
    """An exact export's call metadata (an ATen call the runtime runs in place of a node group): garbled,
    re-aimed at any overload the safety rule admits with forged arguments, rewired to other values, or
    moved to another node."""
    from aten2onnx._aten_node import EXACT_CALL, decode_call, encode_call

    stamped = [(g, n) for g, n in _nodes(model) if any(p.key == EXACT_CALL for p in n.metadata_props)]
    if not stamped:
        return None
    graph, node = rng.choice(stamped)
    prop = next(p for p in node.metadata_props if p.key == EXACT_CALL)
    how = rng.randrange(4)
    if how == 0:
        prop.value = rng.choice(["", "AAAA", "%%%", prop.value[:len(prop.value) // 2], prop.value[::-1]])
        return f"exact call of {node.name!r} garbled"
    try:
        call = decode_call(prop.value)
    except ValueError:  # garbled by an earlier mutation
        return None
    values = [i.name for i in graph.input] + [t.name for t in model.graph.initializer] + \
        [o for n in graph.node for o in n.output if o]
    if how == 1:
        op = rng.choice(_admitted_overloads())
        outputs = (list(call.output) + [""] * len(op._schema.returns))[:max(1, len(op._schema.returns))]
        prop.value = encode_call(_forged_call(op, values, outputs, rng)[0])
        return f"exact call of {node.name!r} made {op._schema.name}.{op._schema.overload_name or 'default'}"[:240]
    if how == 2 and values:
        field = call.input if (call.input and rng.random() < 0.5) else call.output
        if field:
            field[rng.randrange(len(field))] = rng.choice(values + [""])
        prop.value = encode_call(call)
        return f"exact call of {node.name!r} rewired"
    other = rng.choice([n for _, n in _nodes(model)])
    entry = other.metadata_props.add()
    entry.key, entry.value = EXACT_CALL, prop.value
    return f"exact call of {node.name!r} copied to {other.name!r}"


STRUCTURED: dict[str, Callable[[onnx.ModelProto, random.Random], str | None]] = {
    "aten": synthesize_aten,
    "exact": mutate_exact,
    "attribute": mutate_attribute,
    "attribute set": add_or_drop_attribute,
    "initializer": mutate_initializer,
    "dtype": retype_value,
    "dims": reshape_value,
    "wiring": swap_inputs,
    "delete": delete_node,
    "duplicate": duplicate_node,
    "op": change_op,
    "opset": change_opset,
    "metadata": mutate_metadata,
}


def flip_bytes(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    raw = bytearray(data)
    action = rng.randrange(3)
    if action == 0:
        for _ in range(rng.randint(1, 8)):
            raw[rng.randrange(len(raw))] = rng.randrange(256)
        return bytes(raw), "flipped bytes"
    if action == 1:
        return bytes(raw[:rng.randrange(len(raw))]), "truncated"
    i = rng.randrange(len(raw))
    return bytes(raw[:i] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 16))) + raw[i:]), "inserted bytes"


def mutant(seed: onnx.ModelProto, rng: random.Random, kinds: tuple[str, ...] = ()) -> tuple[bytes, list[str]]:
    """One mutant of seed: one to three structured mutations (of the given kinds, default all), or
    (one time in eight, when no kinds are named) flipped bytes."""
    if not kinds and rng.random() < 0.125:
        data, what = flip_bytes(seed.SerializeToString(), rng)
        return data, [what]
    model = onnx.ModelProto()
    model.CopyFrom(seed)
    done = []
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        kind = rng.choice(list(kinds or STRUCTURED))
        what = STRUCTURED[kind](model, rng)
        if what:
            done.append(f"{kind}: {what}")
    return model.SerializeToString(), done


def feeds_for(data: bytes, example: dict[str, np.ndarray], rng: random.Random) -> dict[str, Any]:
    """Inputs for a mutant: the seed's example where the mutant still declares it so, else random
    values of the declared type and shape (dynamic dims as in the example)."""
    try:
        model = onnx.load_from_string(data)
    except Exception:
        return dict(example)
    initializers = {t.name for t in model.graph.initializer}
    feeds = {}
    for info in model.graph.input:
        if info.name in initializers:
            continue
        tt = info.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
        old = example.get(info.name)
        if old is not None and _fits(old, tt.elem_type, dims):
            feeds[info.name] = old
            continue
        shape = [d if d is not None else (old.shape[i] if old is not None and i < old.ndim else 2)
                 for i, d in enumerate(dims)]
        feeds[info.name] = _random_array(tt.elem_type, [min(s, 64) for s in shape], rng)
    return feeds


def _fits(array: np.ndarray, elem: int, dims: list[int | None]) -> bool:
    try:
        dtype = helper.tensor_dtype_to_np_dtype(elem)
    except Exception:
        return False
    return array.dtype == dtype and array.ndim == len(dims) and all(d is None or d == s for d, s in zip(dims, array.shape))


def _random_array(elem: int, shape: list[int], rng: random.Random) -> np.ndarray:
    try:
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(elem))
    except Exception:
        dtype = np.dtype(np.float32)
    generator = np.random.default_rng(rng.randrange(2**32))
    if dtype.kind == "b":
        return generator.random(shape) < 0.5
    if dtype.kind in "iu":
        return generator.integers(0, 3, shape).astype(dtype)
    if dtype.kind == "f":
        return generator.standard_normal(shape).astype(dtype)
    return np.zeros(shape, dtype)
