"""Rewrites between the user's model and translation, in one place.

Two kinds, by when they can run:
- Tracing rewrites (tracing.py) act while torch.export traces the model: calls whose eager code reads
  tensor values into Python (torch.equal, cov's argument checks, narrow at a tensor start, ...)
  cannot be captured as written, so capture traces an equivalent instead. capture.py enters them.
- FX passes act on the captured graph, in the order of PIPELINE. Each is a `Pass`: a name and a
  function Program -> Program (program.py) that returns a new Program and leaves the graph module it
  was given untouched (it may be the user's ExportedProgram). A feature that needs another rewrite
  (exact mode, training capture) adds a Pass to the pipeline it runs, not code to the driver.

Rewrites of the ONNX graph live in its own layers: the builder folds constants as it emits (ir/),
and the runtime fuses node groups when it compiles a model (runtime/optimize.py).
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Iterable

from torch.export import ExportedProgram

from aten2onnx.exporter.passes.dead_code import drop_unused
from aten2onnx.exporter.passes.functionalize import functionalize
from aten2onnx.exporter.passes.program import OutputRole, Program, is_joint

__all__ = ["PIPELINE", "OutputRole", "Pass", "Program", "is_joint", "run"]


@dataclasses.dataclass(frozen=True)
class Pass:
    name: str
    run: Callable[[Program], Program]


PIPELINE: tuple[Pass, ...] = (
    # in-place ops become functional ones through views, inputs and buffers; written inputs and
    # buffers become extra outputs
    Pass("functionalize", functionalize),
    # runtime assertions and what feeds only them
    Pass("drop_unused", drop_unused),
)


def run(ep: ExportedProgram, passes: Iterable[Pass] = PIPELINE) -> Program:
    """The captured program through each pass in order."""
    program = Program.captured(ep)
    for step in passes:
        program = step.run(program)
    return program
