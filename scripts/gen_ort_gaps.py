"""Write aten2onnx/ir/ort_gaps.py: the element types ONNX allows an op but onnxruntime's CPU build
has no kernel for, found by asking onnxruntime to plan a one-node model per (op version, type).

    python scripts/gen_ort_gaps.py            # regenerate the table for the installed onnxruntime
    python scripts/gen_ort_gaps.py --check    # exit 1 if the table differs from what it finds
"""

from __future__ import annotations

import argparse
import pathlib
import pprint
import sys

import numpy as np
import onnx
import onnx.numpy_helper
import onnxruntime as ort
from onnx import helper

TARGET = pathlib.Path(__file__).resolve().parent.parent / "aten2onnx" / "exporter" / "ort_gaps.py"
MIN_OPSET, MAX_OPSET = 9, 26
NO_KERNEL = "Could not find an implementation"
# Value types a probe can feed; sub-byte and float8 types are left out (the exporter never makes them
# from torch's dtypes but the float8 ones, which ONNX allows only in a few ops).
PROBED = {f"tensor({name})" for name in ("float", "double", "float16", "bfloat16", "int8", "int16", "int32", "int64",
                                         "uint8", "uint16", "uint32", "uint64", "bool")}
ATTRIBUTE_STUBS = {onnx.AttributeProto.INT: 1, onnx.AttributeProto.INTS: [1], onnx.AttributeProto.FLOAT: 1.0,
                   onnx.AttributeProto.FLOATS: [1.0]}


def _elem(type_str: str) -> int:
    return onnx.TensorProto.DataType.Value(type_str[len("tensor("):-1].upper())


def _probe(schema: onnx.defs.OpSchema, constraint: str, type_str: str) -> bool | None:
    """True: onnxruntime plans the op with `constraint` bound to type_str; False: it has no kernel, for
    the op or for what its optimizer rewrites the op into when inputs after the first are constants
    (Clip with constant bounds becomes int16 Where, which has none); None: the probe model was refused
    for another reason (a stub attribute), which says nothing."""
    results = [_plan(schema, constraint, type_str, constants, optional) for constants in (False, True)
               for optional in (False, True)]
    return False if False in results else True if True in results else None


def _plan(schema: onnx.defs.OpSchema, constraint: str, type_str: str, constants: bool, optional: bool) -> bool | None:
    allowed = {c.type_param_str: sorted(c.allowed_type_strs) for c in schema.type_constraints}
    inputs = []
    for formal in schema.inputs:
        if formal.option == onnx.defs.OpSchema.FormalParameterOption.Optional and not optional:
            break  # later inputs are optional too, or would need this one named
        if formal.type_str == constraint:
            chosen = type_str
        elif formal.type_str in allowed:
            options = [t for t in allowed[formal.type_str] if t in PROBED]
            if not options:
                return None
            chosen = "tensor(float)" if "tensor(float)" in options else "tensor(int64)" if "tensor(int64)" in options \
                else options[0]
        else:
            chosen = formal.type_str
        if chosen not in PROBED:
            return None
        repeats = 2 if formal.option == onnx.defs.OpSchema.FormalParameterOption.Variadic else 1
        inputs.extend([chosen] * repeats)
    outputs = sum(1 for o in schema.outputs if o.option != onnx.defs.OpSchema.FormalParameterOption.Optional) or 1
    attrs = {}
    for name, attr in schema.attributes.items():
        if attr.required:
            if attr.type not in ATTRIBUTE_STUBS:
                return None
            attrs[name] = ATTRIBUTE_STUBS[attr.type]
    node = helper.make_node(schema.name, [f"i{k}" for k in range(len(inputs))], [f"o{k}" for k in range(outputs)], **attrs)
    fed = inputs[:1] if constants else inputs
    initializers = [onnx.numpy_helper.from_array(np.ones(1, dtype=helper.tensor_dtype_to_np_dtype(_elem(t))), f"i{k}")
                    for k, t in enumerate(inputs) if constants and k > 0]
    graph = helper.make_graph([node], "probe", [helper.make_tensor_value_info(f"i{k}", _elem(t), None)
                                                for k, t in enumerate(fed)],
                              [helper.make_value_info(f"o{k}", onnx.TypeProto()) for k in range(outputs)],
                              initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", schema.since_version)])
    model.ir_version = 10
    options = ort.SessionOptions()
    options.log_severity_level = 4
    try:
        ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        return True
    except Exception as e:  # onnxruntime raises its own pybind exception types
        return False if NO_KERNEL in str(e) else None


def find_gaps() -> dict[tuple[str, int, str], list[str]]:
    gaps: dict[tuple[str, int, str], list[str]] = {}
    for schema in onnx.defs.get_all_schemas_with_history():
        if schema.domain not in ("", "ai.onnx") or not MIN_OPSET <= schema.since_version <= MAX_OPSET \
                and not (schema.since_version < MIN_OPSET and _live_at(schema, MIN_OPSET)):
            continue
        if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in schema.attributes.values()):
            continue
        input_constraints = {f.type_str for f in schema.inputs}
        for constraint in schema.type_constraints:
            name = constraint.type_param_str
            if name not in input_constraints:
                continue
            missing = sorted(t for t in constraint.allowed_type_strs if t in PROBED and _probe(schema, name, t) is False)
            if missing:
                gaps[(schema.name, schema.since_version, name)] = missing
    return gaps


def _run_scatter(op: str, since: int, reduction: str, type_str: str) -> bool:
    """Whether onnxruntime runs a ScatterND/ScatterElements with a reduction on data of type_str (it
    checks the pair only when it runs)."""
    dtype = helper.tensor_dtype_to_np_dtype(_elem(type_str))
    shapes = ([1, 1], [1]) if op == "ScatterND" else ([1], [1])
    attrs = {"reduction": reduction} if op == "ScatterND" else {"reduction": reduction, "axis": 0}
    node = helper.make_node(op, ["d", "i", "u"], ["o"], **attrs)
    graph = helper.make_graph([node], "probe", [helper.make_tensor_value_info("d", _elem(type_str), [2]),
                                                helper.make_tensor_value_info("i", onnx.TensorProto.INT64, shapes[0]),
                                                helper.make_tensor_value_info("u", _elem(type_str), shapes[1])],
                              [helper.make_tensor_value_info("o", _elem(type_str), [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", since)])
    model.ir_version = 10
    options = ort.SessionOptions()
    options.log_severity_level = 4
    try:
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        session.run(None, {"d": np.ones(2, dtype), "i": np.zeros(shapes[0], np.int64), "u": np.ones(shapes[1], dtype)})
        return True
    except Exception:  # onnxruntime's pybind exception types
        return False


def find_reduction_gaps() -> dict[tuple[str, int, str], list[str]]:
    """(op, since_version, reduction) -> data types onnxruntime refuses when it runs the scatter."""
    gaps: dict[tuple[str, int, str], list[str]] = {}
    for schema in onnx.defs.get_all_schemas_with_history():
        if schema.domain not in ("", "ai.onnx") or schema.name not in ("ScatterND", "ScatterElements") \
                or "reduction" not in schema.attributes or schema.since_version > MAX_OPSET:
            continue
        types = next(c.allowed_type_strs for c in schema.type_constraints if c.type_param_str == "T")
        reductions = ["add", "mul"] + (["max", "min"] if schema.since_version >= 18 else [])
        for reduction in reductions:
            missing = sorted(t for t in types if t in PROBED and not _run_scatter(schema.name, schema.since_version,
                                                                                   reduction, t))
            if missing:
                gaps[(schema.name, schema.since_version, reduction)] = missing
    return gaps


def _live_at(schema: onnx.defs.OpSchema, opset: int) -> bool:
    """Whether `schema` is the version of its op that a model at `opset` uses."""
    try:
        return onnx.defs.get_schema(schema.name, opset, "").since_version == schema.since_version
    except onnx.defs.SchemaError:
        return False


def render(gaps: dict, reduction_gaps: dict) -> str:
    def table(entries: dict) -> str:
        return pprint.pformat({k: tuple(v) for k, v in sorted(entries.items())}, width=116)

    return (f'"""Generated by `python scripts/gen_ort_gaps.py` with onnxruntime {ort.__version__}; do not edit.\n\n'
            "GAPS: (op type, since_version, type constraint) -> the types ONNX allows there that onnxruntime's CPU\n"
            "build has no kernel for. REDUCTION_GAPS: (op type, since_version, reduction) -> the data types its\n"
            'scatter kernels refuse, when they run, with that reduction."""\n\n'
            f"ORT_VERSION = {ort.__version__!r}\n\n"
            f"GAPS: dict[tuple[str, int, str], tuple[str, ...]] = {table(gaps)}\n\n"
            f"REDUCTION_GAPS: dict[tuple[str, int, str], tuple[str, ...]] = {table(reduction_gaps)}\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed table instead of writing it")
    args = parser.parse_args()
    text = render(find_gaps(), find_reduction_gaps())
    if args.check:
        same = TARGET.read_text() == text
        print("up to date" if same else f"{TARGET} is stale; run python scripts/gen_ort_gaps.py")
        return 0 if same else 1
    TARGET.write_text(text)
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
