"""The differential model fuzzer (aten2onnx.testing.models) on a derandomized few hundred programs,
with every bug it found pinned as an example; and the fuzzer's own machinery."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
from hypothesis import HealthCheck, example, given, settings

from aten2onnx.testing import Program, ProgramMismatch, check_program, programs
from aten2onnx.testing.models import RandomDraw, Step, Tensor, examine, generate, shrink


def program(inputs: list[tuple[str, tuple[int, ...], torch.dtype]], steps: list[tuple[str | None, str]],
            outputs: tuple[str, ...], *, buffers: tuple[Tensor, ...] = (), dynamic: bool = False, batch: int = 2,
            seed: int = 0) -> Program:
    return Program(tuple(Tensor(*i) for i in inputs), buffers, (), tuple(Step(*s) for s in steps), outputs, dynamic,
                   batch, seed)


# Bugs the fuzzer found, each fixed, pinned here (the programs it printed, shrunk).
FOUND = [
    # bool arithmetic was Add/Mul on tensor(bool), which the checker and onnxruntime reject
    program([("x0", (3, 2), torch.bool)], [("v0", "x0 + x0"), ("v1", "v0 * x0")], ("v1",)),
    # a buffer written from a constant was folded to its default: its state never accumulated
    program([("x0", (2,), torch.float32)], [(None, "self.b0.add_(2)"), ("v0", "x0 * self.b0")], ("v0",),
            buffers=(Tensor("b0", (), torch.float32),)),
]


@settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "150")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs())
@example(FOUND[0])
@example(FOUND[1])
def test_random_programs_export_right_or_raise_our_error(prog):
    check_program(prog)


def test_programs_print_as_the_python_they_run():
    prog = generate(RandomDraw(3))
    source = prog.source()
    namespace = {"torch": torch, "F": torch.nn.functional}
    exec(compile(source, "<test>", "exec"), namespace)
    assert isinstance(namespace["Model"](), torch.nn.Module)
    assert f"seed {prog.seed}" in prog.describe()


def test_a_wrong_translation_is_found_and_shrunk(monkeypatch):
    """A deliberately wrong symbolic (relu as abs) is a mismatch; shrinking keeps only what shows it."""
    import aten2onnx

    aten2onnx.register_symbolic("aten::relu.default", opset=9)(lambda g, self: g.op("Abs", self))
    try:
        prog = program([("x0", (2, 3), torch.float32)],
                       [("v0", "x0 * 2"), ("v1", "torch.exp(x0)"), ("v2", "torch.relu(v0)"), ("v3", "v2 + v1")],
                       ("v3", "v1"))
        with pytest.raises(ProgramMismatch, match="mismatch"):
            check_program(prog, opsets=[18])
        small = shrink(prog, lambda p: any(o.status == "mismatch" for o in examine(p, opsets=[18])))
        assert "torch.relu" in small.source() and "torch.exp" not in small.source()
    finally:
        aten2onnx.unregister_symbolic("aten::relu.default")


def test_the_fuzz_script_reports_its_counts_last():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, os.path.join(root, "scripts", "fuzz_models.py"), "--n", "3", "--seed", "5"],
                          capture_output=True, text=True, env=env, timeout=600)
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("3 models, ") and last.endswith(" mismatches"), done.stdout + done.stderr
