"""Walking an ONNX graph's bodies (If branches, Loop and Scan bodies, any graph attribute), the one
walk every layer uses. Iterative: a model file may nest bodies deeper than Python's recursion limit."""

from __future__ import annotations

import collections
from typing import Iterator

import onnx


def bodies(node: onnx.NodeProto) -> list[onnx.GraphProto]:
    """The graphs node's attributes hold, in attribute order (a `g` field counts whatever the
    attribute's declared type, so no graph a file carries is missed)."""
    found: list[onnx.GraphProto] = []
    for attr in node.attribute:
        if attr.HasField("g"):
            found.append(attr.g)
        found.extend(attr.graphs)
    return found


def graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """graph and every graph nested in it, outermost first."""
    queue = collections.deque([graph])
    while queue:
        current = queue.popleft()
        yield current
        for node in current.node:
            queue.extend(bodies(node))
