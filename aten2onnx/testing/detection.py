"""Detectors with random weights that behave like trained ones where a test needs them to: features that
neither vanish nor explode through a deep backbone, scores spread apart, and a score threshold that some
images pass and a uniform one does not (tests/test_detection.py, bench/detection.py)."""

from __future__ import annotations

from typing import Any

import torch


def lively(model: torch.nn.Module, example: list) -> torch.nn.Module:
    """model with every Conv2d and Linear rescaled, in the order a forward on example runs them, so that its
    output has std 1 there (random initialization leaves a deep detector's features near 0 and its scores
    all equal): distinct features, scores spread apart."""
    done: set[torch.nn.Module] = set()

    def rescale(module: torch.nn.Module, inputs: tuple, output: torch.Tensor) -> torch.Tensor | None:
        if module in done or not isinstance(output, torch.Tensor) or output.numel() < 2:
            return None
        done.add(module)
        spread = output.std()
        module.weight.div_(spread)
        if module.bias is not None:
            module.bias.div_(spread)
        return output / spread

    hooks = [m.register_forward_hook(rescale) for m in model.modules() if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))]
    with torch.no_grad():
        model(example)
    for hook in hooks:
        hook.remove()
    return model


BLANKS = (0.5, 0.0, 1.0)  # uniform images: one of them is what a detector here finds nothing in


def score_threshold(model: torch.nn.Module, value: float | None = None) -> float:
    """The model's score threshold (set to value when given): the roi heads' for R-CNNs, the model's own else."""
    owner = model.roi_heads if hasattr(model, "roi_heads") else model
    if value is not None:
        owner.score_thresh = value
    return owner.score_thresh


def detector(models: Any, name: str, example: torch.Tensor) -> tuple[torch.nn.Module, float]:
    """torchvision's detector `name` (of `models`, torchvision.models.detection: aten2onnx imports no
    torchvision), random weights made lively, and the value of the uniform image it scores lowest; its
    score threshold a quarter of the way from the best score it gives that image to the best it gives
    example (so that the uniform image finds nothing, and example some)."""
    torch.manual_seed(0)
    sizes = {} if name.startswith("ssd") else {"min_size": 320, "max_size": 320}
    model = getattr(models, name)(weights=None, weights_backbone=None, **sizes).eval()
    lively(model, [torch.rand(3, 320, 320)])
    score_threshold(model, 0.0)
    with torch.no_grad():
        best = float(model([example])[0]["scores"].max())
        blank, value = min((float(model([torch.full((3, 320, 320), v)])[0]["scores"].max()), v) for v in BLANKS)
    if best <= blank:
        raise ValueError(f"{name}: the example scores no higher than a uniform image ({best} <= {blank}): pick another")
    score_threshold(model, blank + (best - blank) / 4)
    return model, value


def matched(got: dict[str, torch.Tensor], want: dict[str, torch.Tensor], *, atol: float) -> torch.Tensor:
    """For each of eager's detections, the index of the exported one that is it: the same label, score
    within 1e-4 and box within atol. Two detections whose scores differ by float noise may come in either
    order (as may equal scores: torchvision orders them by an unstable sort), so each is looked for among
    all; none may be found twice, and the exported scores must come in descending order. AssertionError
    says which detection is missing."""
    if tuple(got["boxes"].shape) != tuple(want["boxes"].shape):
        raise AssertionError(f"{len(got['boxes'])} detections, eager {len(want['boxes'])}")
    scores = got["scores"].to(want["scores"].dtype)
    if not bool((scores[:-1] >= scores[1:] - 1e-4).all()):
        raise AssertionError("scores out of order")
    close = (got["labels"][None, :] == want["labels"][:, None]) \
        & ((scores[None, :] - want["scores"][:, None]).abs() <= 1e-4) \
        & ((got["boxes"][None, :, :].to(want["boxes"].dtype) - want["boxes"][:, None, :]).abs().amax(-1) <= atol)
    order = []
    for i in range(len(want["boxes"])):
        candidates = [j for j in torch.where(close[i])[0].tolist() if j not in order]
        if not candidates:
            raise AssertionError(f"eager's detection {i} (label {int(want['labels'][i])}, score "
                                 f"{float(want['scores'][i]):.6f}, box {want['boxes'][i].tolist()}) is not among the exported ones")
        order.append(min(candidates, key=lambda j: abs(j - i)))
    return torch.tensor(order, dtype=torch.int64)
