"""The program the passes hand each other: an FX graph, the ExportedProgram it reads its inputs
and weights from, and what each of its outputs is."""

from __future__ import annotations

import dataclasses

import torch.fx
from torch.export import ExportedProgram
from torch.export.graph_signature import OutputKind

from aten2onnx.errors import ExportError


@dataclasses.dataclass(frozen=True)
class OutputRole:
    """What one entry of the graph's output node is: a user output, or the new value of a buffer
    (named by its state_dict key) or of a user input (named by its placeholder)."""

    kind: str  # "output", "buffer" or "input"
    name: str | None = None


@dataclasses.dataclass(frozen=True)
class Program:
    """An FX graph on its way from capture to translation: what every pass takes and returns.

    A pass returns a new Program (dataclasses.replace) and never edits the graph module it was given:
    that may be the ExportedProgram the user passed to export, or share submodules with it."""

    ep: ExportedProgram  # the program whose inputs, weights and signature the graph reads
    gm: torch.fx.GraphModule
    roles: tuple[OutputRole, ...]  # one per entry of gm's output node
    notes: tuple[str, ...] = ()  # what a pass wants the user told (a warning at export, kept on the model)

    @staticmethod
    def captured(ep: ExportedProgram) -> Program:
        """The program as torch.export made it."""
        return Program(ep, ep.graph_module, tuple(roles_from_signature(ep)))


def roles_from_signature(ep: ExportedProgram) -> list[OutputRole]:
    roles = []
    for spec in ep.graph_signature.output_specs:
        if spec.kind == OutputKind.USER_OUTPUT:
            roles.append(OutputRole("output"))
        elif spec.kind == OutputKind.BUFFER_MUTATION:
            roles.append(OutputRole("buffer", spec.target))
        elif spec.kind == OutputKind.USER_INPUT_MUTATION:
            roles.append(OutputRole("input", spec.target))
        elif spec.kind in (OutputKind.LOSS_OUTPUT, OutputKind.GRADIENT_TO_PARAMETER, OutputKind.GRADIENT_TO_USER_INPUT):
            raise ExportError(f"output {spec.arg.name!r} is a {spec.kind.name}: the program is a joint forward-backward "
                              "graph, which aten2onnx.export does not take; export the forward program (before "
                              "_export_forward_backward) instead")
        else:
            raise ExportError(f"output {spec.arg.name!r} is a {spec.kind.name}, which aten2onnx does not export")
    return roles
