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
    """What one entry of the graph's output node is: a user output, the loss or the gradient of a
    parameter (named by its state_dict key) of a joint forward-backward program, or the new value of a
    buffer (named by its state_dict key) or of a user input (named by its placeholder)."""

    kind: str  # "output", "loss", "grad", "buffer" or "input"
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


def is_joint(ep: ExportedProgram) -> bool:
    """Whether ep is a joint forward-backward program (torch's _export_forward_backward makes them)."""
    return any(spec.kind == OutputKind.LOSS_OUTPUT for spec in ep.graph_signature.output_specs)


def roles_from_signature(ep: ExportedProgram) -> list[OutputRole]:
    roles = []
    for spec in ep.graph_signature.output_specs:
        if spec.kind == OutputKind.USER_OUTPUT:
            roles.append(OutputRole("output"))
        elif spec.kind in (OutputKind.BUFFER_MUTATION, OutputKind.PARAMETER_MUTATION):
            # a parameter is written by a training export's optimizer step: state as a buffer is
            roles.append(OutputRole("buffer", spec.target))
        elif spec.kind == OutputKind.USER_INPUT_MUTATION:
            roles.append(OutputRole("input", spec.target))
        elif spec.kind == OutputKind.LOSS_OUTPUT:
            roles.append(OutputRole("loss"))
        elif spec.kind == OutputKind.GRADIENT_TO_PARAMETER:
            roles.append(OutputRole("grad", spec.target))
        else:
            raise ExportError(f"output {spec.arg.name!r} is a {spec.kind.name}, which aten2onnx does not export")
    return roles
