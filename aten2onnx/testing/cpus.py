"""onnxruntime as it runs on x86 CPUs other than this one: a CPU without VNNI (AVX2, as most deployed x86
machines have), emulated by qemu's user mode, so that a test on any x86-64 machine sees what those see.

onnxruntime picks its integer kernels by the CPU it runs on (MLAS's dispatch), and they do not all compute
the same sums: its uint8 x int8 matmul adds pairs of products in saturating 16-bit arithmetic on AVX2
without VNNI, exactly with VNNI. A file is exported once and run anywhere, so its answers must be right on
both; this runs them where the saturating kernels are chosen.

    from aten2onnx.testing import cpus
    if cpus.available():
        outputs, = cpus.run_onnxruntime([(model_bytes, {"x": x})])

Needs `qemu-x86_64` (Debian's qemu-user) on an x86-64 Linux machine; `available()` says whether it runs
here and whether the emulated CPU really takes the saturating path (a canary matmul that saturates).
Emulation is slow (tens of times): use it for answers, never for timings.
"""

from __future__ import annotations

import functools
import os
import pathlib
import platform
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence

import numpy as np
import onnx
from onnx import helper, numpy_helper

# a Haswell: AVX2 and FMA, no AVX-512, no VNNI (qemu 7.2 emulates AVX2)
CPU = "Haswell"

_RUNNER = r"""
import sys, numpy as np, onnxruntime as ort
folder = sys.argv[1]
paths = open(f"{folder}/models.txt", encoding="utf-8").read().splitlines()
for i, path in enumerate(paths):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    feeds = dict(np.load(f"{folder}/{i}.in.npz"))
    outputs = session.run(None, feeds)
    np.savez(f"{folder}/{i}.out.npz", *outputs)
"""


class EmulationError(RuntimeError):
    """The emulated onnxruntime failed (its stderr's tail is the message)."""


def emulator() -> str | None:
    """The qemu user-mode emulator for this machine's architecture, if installed (x86-64 Linux only)."""
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        return None
    return shutil.which("qemu-x86_64")


@functools.cache
def available() -> bool:
    """Whether onnxruntime runs here as a CPU without VNNI runs it: the emulator exists and a canary
    uint8 x int8 MatMulInteger whose pair sums exceed 16 bits comes out saturated under it."""
    if emulator() is None:
        return False
    a = np.full((1, 2), 255, dtype=np.uint8)
    b = np.full((2, 1), 127, dtype=np.int8)
    graph = helper.make_graph([helper.make_node("MatMulInteger", ["a", "b"], ["y"])], "canary",
                              [helper.make_tensor_value_info("a", onnx.TensorProto.UINT8, [1, 2])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.INT32, [1, 1])],
                              [numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    try:
        (y,), = run_onnxruntime([(model.SerializeToString(), {"a": a})], timeout=300)
    except (EmulationError, subprocess.TimeoutExpired, OSError):
        return False
    return int(y[0, 0]) == 32767  # 255 * 127 * 2 = 64770 exactly; saturated to int16's maximum


def run_onnxruntime(models: Sequence[tuple[bytes | onnx.ModelProto | str | os.PathLike, Mapping[str, np.ndarray]]],
                    *, cpu: str = CPU, timeout: float = 1800) -> list[list[np.ndarray]]:
    """Each model's outputs for its feeds, from onnxruntime's CPU provider (one thread, default graph
    optimizations) in one process emulating `cpu`. A model is its bytes, a ModelProto, or a path (its
    external data beside it)."""
    qemu = emulator()
    if qemu is None:
        raise EmulationError("qemu-x86_64 is not installed (Debian: apt-get install qemu-user)")
    with tempfile.TemporaryDirectory() as folder:
        paths = []
        for i, (model, feeds) in enumerate(models):
            if isinstance(model, (str, os.PathLike)):
                paths.append(str(pathlib.Path(model).resolve()))  # read where it is, with its external data
            else:
                target = pathlib.Path(folder, f"{i}.onnx")
                target.write_bytes(model.SerializeToString() if isinstance(model, onnx.ModelProto) else model)
                paths.append(str(target))
            np.savez(pathlib.Path(folder, f"{i}.in.npz"), **{k: np.asarray(v) for k, v in feeds.items()})
        pathlib.Path(folder, "models.txt").write_text("\n".join(paths), encoding="utf-8")
        done = subprocess.run([qemu, "-cpu", cpu, sys.executable, "-c", _RUNNER, folder],
                              capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            tail = "\n".join(line for line in done.stderr.splitlines() if "TCG doesn't support" not in line)[-2000:]
            raise EmulationError(f"onnxruntime under qemu-x86_64 -cpu {cpu} failed:\n{tail}")
        results = []
        for i in range(len(models)):
            with np.load(pathlib.Path(folder, f"{i}.out.npz")) as saved:
                results.append([saved[f"arr_{j}"] for j in range(len(saved.files))])
        return results
