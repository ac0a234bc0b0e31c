"""The one walk over an ONNX graph's bodies (aten2onnx/_onnx_graphs.py), checked against a model whose
nesting is known, and what reads ATen fallback keys from a file through it."""

from __future__ import annotations

import onnx
from onnx import helper

from aten2onnx import _aten_node, modelinfo
from aten2onnx._onnx_graphs import bodies, graphs


def _aten(op: str, out: str, **text) -> onnx.NodeProto:
    return helper.make_node("ATen", [], [out], domain=_aten_node.DOMAIN, operator=op, **text)


def _nested() -> onnx.GraphProto:
    """If (then: Loop whose body has an ATen node; else: an ATen node) and a node with a GRAPHS
    attribute holding one more body."""
    loop_body = helper.make_graph([_aten("relu", "r")], "loop_body", [], [])
    then = helper.make_graph([helper.make_node("Loop", ["n", "c"], ["l"], body=loop_body)], "then", [], [])
    otherwise = helper.make_graph([_aten("add", "a", overload_name="Tensor")], "else", [], [])
    if_node = helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=otherwise)
    extra = helper.make_graph([_aten("sort", "s", overload_name="stable")], "extra", [], [])
    custom = helper.make_node("Custom", [], ["z"], domain="example")
    custom.attribute.append(helper.make_attribute("bodies", [extra]))
    return helper.make_graph([if_node, custom], "main", [], [])


def test_graphs_visits_every_body_outermost_first():
    names = [g.name for g in graphs(_nested())]
    assert names == ["main", "else", "then", "extra", "loop_body"]
    assert [g.name for g in bodies(_nested().node[0])] == ["else", "then"]  # attribute order (make_node sorts them)


def test_overload_keys_reads_every_body():
    assert _aten_node.overload_keys(_nested()) == {"aten::relu.default", "aten::add.Tensor", "aten::sort.stable"}


def test_a_fallback_node_without_a_text_operator_names_no_key(tmp_path):
    """A hostile file's ATen node whose operator is an int (or missing) is read as naming nothing, not
    a crash of `aten2onnx info`."""
    broken = helper.make_node("ATen", [], ["b"], domain=_aten_node.DOMAIN, operator=3)
    missing = helper.make_node("ATen", [], ["m"], domain=_aten_node.DOMAIN)
    graph = helper.make_graph([broken, missing, _aten("relu", "r")], "main", [],
                              [helper.make_tensor_value_info("r", onnx.TensorProto.FLOAT, None)])
    assert _aten_node.overload_keys(graph) == {"aten::relu.default"}
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), str(path))
    assert any("aten::relu.default" in line for line in modelinfo.describe(str(path)))
