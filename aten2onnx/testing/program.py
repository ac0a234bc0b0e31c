"""A `Program`: a random small model written as data (inputs, buffers, weights, and statements over them),
printable as the Python source of its module and built into one, with the input values eager and exported
models compute on alike. testing/generation.py draws programs, testing/models.py checks them."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import torch
import torch.nn.functional as F  # noqa: N812  (the programs' own spelling)


# -- programs -------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Tensor:
    """An input, buffer or weight: its name in the program, shape and dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: torch.dtype


@dataclasses.dataclass(frozen=True)
class Step:
    """One statement of forward: `target = code`, or a bare `code` that writes in place."""

    target: str | None
    code: str

    def line(self) -> str:
        return f"{self.target} = {self.code}" if self.target else self.code


@dataclasses.dataclass(frozen=True)
class Program:
    inputs: tuple[Tensor, ...]
    buffers: tuple[Tensor, ...]
    weights: tuple[Tensor, ...]
    steps: tuple[Step, ...]
    outputs: tuple[str, ...]
    dynamic: bool  # dim 0 of the inputs of the example batch size is exported as the dynamic dim "batch"
    batch: int
    seed: int

    def source(self) -> str:
        """The module as Python."""
        lines = ["class Model(torch.nn.Module):", "    def __init__(self):", "        super().__init__()"]
        lines += [f"        self.register_buffer({b.name!r}, torch.zeros({list(b.shape)}, dtype={b.dtype}))"
                  for b in self.buffers]
        lines += [f"        self.{w.name} = torch.nn.Parameter(torch.zeros({list(w.shape)}, dtype={w.dtype}))"
                  for w in self.weights]
        lines.append(f"    def forward(self, {', '.join(i.name for i in self.inputs)}):")
        lines += [f"        {step.line()}" for step in self.steps]
        lines.append(f"        return ({', '.join(self.outputs)},)" if self.outputs else "        return ()")
        return "\n".join(lines)

    def describe(self) -> str:
        """The source with what it is called on."""
        ins = ", ".join(f"{i.name}: {_dtype_name(i.dtype)}{list(i.shape)}" for i in self.inputs)
        dims = "; dim 0 of inputs of size {} is dynamic ('batch')".format(self.batch) if self.dynamic else ""
        return f"{self.source()}\n# called on {ins}{dims}; values from seed {self.seed} (Program.tensors)"

    def __repr__(self) -> str:
        return self.describe()

    def build(self) -> torch.nn.Module:
        """The module, with weights and buffers drawn from the seed."""
        namespace = {"torch": torch, "F": F}
        exec(compile(self.source(), "<aten2onnx.testing program>", "exec"), namespace)  # noqa: S102 (our own source)
        module = namespace["Model"]()
        generator = torch.Generator().manual_seed(self.seed + 7919)
        with torch.no_grad():
            for spec in self.buffers + self.weights:
                getattr(module, spec.name).copy_(tensor_values(spec.shape, spec.dtype, generator))
        return module.eval()

    def tensors(self, run: int = 0, batch: int | None = None, resized: Sequence[str] = ()) -> list[torch.Tensor]:
        """Input values for one run (run 0 is the example), with dim 0 of the inputs named in
        `resized` of size `batch`."""
        generator = torch.Generator().manual_seed(self.seed * 31 + run)
        out = []
        for spec in self.inputs:
            shape = spec.shape
            if batch is not None and spec.name in resized:
                shape = (batch, *shape[1:])
            out.append(tensor_values(shape, spec.dtype, generator))
        return out

    def dynamic_shapes(self) -> dict[str, dict[int, str]] | None:
        if not self.dynamic:
            return None
        return {i.name: {0: "batch"} for i in self.inputs if i.shape and i.shape[0] == self.batch}


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def tensor_values(shape: tuple[int, ...], dtype: torch.dtype, generator: torch.Generator) -> torch.Tensor:
    """Values eager and exported models compute on alike: floats on a grid of quarters in [-4, 4]
    (sums and products of a few are exact), integers across their range for narrow types (wrapping
    is part of the semantics) and small otherwise, bools half true."""
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=generator).bool()
    if dtype.is_floating_point:
        return (torch.randint(-16, 17, shape, generator=generator) / 4).to(dtype)
    low, high = {torch.uint8: (0, 256), torch.int8: (-128, 128)}.get(dtype, (-20, 21))
    return torch.randint(low, high, shape, generator=generator).to(dtype)
