"""Shared test settings: a derandomized hypothesis profile for CI, and the runners we compare."""

import importlib.util
import os
import pathlib
import sys
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from hypothesis import HealthCheck, settings

ROOT = pathlib.Path(__file__).resolve().parent.parent


def load_script(name: str):
    """scripts/<name>.py, imported by path (the sweeps' models' lines are what an error must name)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module

settings.register_profile("ci", derandomize=True, max_examples=60, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=30, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", category=FutureWarning)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def run_ort(model: onnx.ModelProto, feeds: dict[str, torch.Tensor]) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, {k: v.numpy() for k, v in feeds.items()})


def flat_tensors(out) -> list[torch.Tensor]:
    leaves = torch.utils._pytree.tree_leaves(out)
    return [t for t in leaves if isinstance(t, torch.Tensor)]


@pytest.fixture
def without_builtin(monkeypatch):
    """hide(*keys): the built-in symbolics of these overloads are hidden for one test, so the fallback
    path is tested on real ATen ops however many of them get symbolics later."""
    from aten2onnx.registry import REGISTRY

    def hide(*keys: str) -> None:
        for key in keys:
            kept = [e for e in REGISTRY._entries.get(key, ()) if e.user or e.complex]
            monkeypatch.setitem(REGISTRY._entries, key, kept)

    return hide


@pytest.fixture
def without_decomposition(monkeypatch):
    """No op is decomposed before it falls back (torch's decompositions are hidden), so a test of the
    ATen fallback node keeps its fallback however many ops torch decomposes."""
    from aten2onnx.exporter import decompose

    monkeypatch.setattr(decompose, "decomposition", lambda op: None)
