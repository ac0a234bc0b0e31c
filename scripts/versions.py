"""Print the installed versions of what aten2onnx runs on (CI and the compat runs print them first):
python, torch, torchvision, onnx, onnxruntime, transformers, onnxruntime-genai, torchao, numpy."""

from __future__ import annotations

import importlib.metadata
import platform

PACKAGES = ("torch", "torchvision", "onnx", "onnxruntime", "transformers", "onnxruntime-genai", "torchao", "numpy",
            "hypothesis")


def main() -> None:
    print(f"python {platform.python_version()}")
    for name in PACKAGES:
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            version = "not installed"
        print(f"{name} {version}")


if __name__ == "__main__":
    main()
