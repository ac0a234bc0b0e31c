"""Export time and onnxruntime latency of torchvision's detectors: aten2onnx against torch.onnx's TorchScript
export (the only exporter of PyTorch's that captures them; its dynamo exporter fails at torch.export), both
with dynamic image height and width, on the same random-weight model (aten2onnx.testing.detection: weights
made lively, a score threshold that the example passes).

Each export runs --exports times, alternating between the exporters; a time is the median. Each file runs in
onnxruntime's CPU provider with one thread, two sessions per file made in mirrored order, rounds interleaving
the files (bench/ort_latency.py), on the example image (320 x 320) and on one of another size (417 x 301); a
ratio is the median of per-round ratios to torch.onnx's cell. Beside each time, the file's error against eager
on that image: whether its detections are eager's (count and labels) and the largest difference of a box
coordinate (pixels) and of a score. A speed-up counts only on right detections.

Needs torch 2.14 and torchvision (scripts/compat.sh builds that environment):

    python bench/detection.py [--models fasterrcnn_mobilenet_v3_large_320_fpn,retinanet_resnet50_fpn]
                              [--rounds 10] [--inner 3] [--exports 2]
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import time
import warnings

import torch
import torchvision

import aten2onnx
from aten2onnx.testing.detection import detector, matched

sys.path.insert(0, os.path.dirname(__file__))
from ort_latency import measure, mirrored_sessions, paired  # noqa: E402

Dim = torch.export.Dim


def export_ours(model: torch.nn.Module, image: torch.Tensor) -> bytes:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported = aten2onnx.export(model, ([image],), dynamic_shapes={"images": [{1: Dim("h", min=32, max=2048),
                                                                                   2: Dim("w", min=32, max=2048)}]})
    return exported.model_proto.SerializeToString()


def export_torchscript(model: torch.nn.Module, image: torch.Tensor) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, ([image],), buffer, dynamo=False, opset_version=18, input_names=["image"],
                          output_names=["boxes", "labels", "scores"], dynamic_axes={"image": {1: "h", 2: "w"}})
    return buffer.getvalue()


def error(session, model: torch.nn.Module, image: torch.Tensor) -> str:
    """Whether the file's detections on image are eager's (matched one by one, as aten2onnx.testing.detection
    matches them: detections whose scores differ by float noise may swap), and the largest box and score
    differences between matched ones."""
    with torch.no_grad():
        want = model([image])[0]
    got = {k: torch.as_tensor(v) for k, v in zip(want, session.run(None, {session.get_inputs()[0].name: image.numpy()}))}
    try:
        order = matched(got, want, atol=1e-2)
    except AssertionError as e:
        return f"WRONG: {e}"
    if not len(order):
        return "right (0 detections)"
    box = float((got["boxes"][order] - want["boxes"]).abs().max())
    score = float((got["scores"][order] - want["scores"]).abs().max())
    return f"right ({len(order)}), box {box:.1e} px, score {score:.1e}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="fasterrcnn_mobilenet_v3_large_320_fpn,retinanet_resnet50_fpn")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--inner", type=int, default=3)
    parser.add_argument("--exports", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(1)
    example, other = torch.rand(3, 320, 320, generator=g), torch.rand(3, 417, 301, generator=g)
    exporters = {"torch.onnx (TorchScript)": export_torchscript, "aten2onnx": export_ours}
    for name in args.models.split(","):
        model, _ = detector(torchvision.models.detection, name, example)
        times: dict[str, list[float]] = {label: [] for label in exporters}
        files: dict[str, bytes] = {}
        for _ in range(args.exports):
            for label, export in exporters.items():
                start = time.perf_counter()
                files[label] = export(model, example)
                times[label].append(time.perf_counter() - start)
        print(f"\n{name}: export time (median of {args.exports})")
        anchor = statistics.median(times["torch.onnx (TorchScript)"])
        for label, spent in times.items():
            print(f"  {label:26s} {statistics.median(spent):6.1f} s  {statistics.median(spent) / anchor:5.2f}x")
        sessions = mirrored_sessions(files)
        for title, image in (("320 x 320 (the example)", example), ("417 x 301", other)):
            feeds = {label: {s.get_inputs()[0].name: image.numpy()} for label, group in sessions.items() for s in group[:1]}
            calls = {label: [(lambda s=s, f=feeds[label]: s.run(None, f)) for s in group] for label, group in sessions.items()}
            cells = measure(calls, args.rounds, args.inner)
            print(f"  onnxruntime latency, {title}, 1 thread")
            for label in files:
                ms = statistics.median(cells[label]) * 1e3
                ratio = paired(cells, label, "torch.onnx (TorchScript)")
                print(f"    {label:26s} {ms:8.1f} ms  {ratio:5.2f}x  {error(sessions[label][0], model, image)}")


if __name__ == "__main__":
    main()
