"""`python -m aten2onnx`: the aten2onnx command (aten2onnx/cli.py)."""

from aten2onnx.cli import main

raise SystemExit(main())
