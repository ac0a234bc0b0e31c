"""The `aten2onnx` command (also `python -m aten2onnx`): export, run, verify, info and ops. An error is
our message and exit status 1, or 2 for a command line that cannot work; --verbose adds the traceback."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import re
import sys
import traceback
import warnings
from typing import Any, Iterator

import aten2onnx
from aten2onnx.errors import Aten2OnnxError

RUNTIMES = ("onnxruntime", "aten2onnx")
_DYNAMIC = re.compile(r"(?P<input>[A-Za-z_]\w*):(?P<axis>\d+)=(?P<name>[A-Za-z_]\w*)")


class UsageError(Exception):
    """A command line that cannot work: a SPEC or file that does not exist, a malformed option."""


def main(argv: list[str] | None = None) -> int:
    options = _parser().parse_args(argv)  # argparse itself exits with status 2 on a malformed command line
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            return options.handler(options)
        except BrokenPipeError:  # `aten2onnx ops | head`: the reader has what it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's flush at exit would fail
            return 141
        except UsageError as e:
            return _fail(e, options, 2, "error")
        except Aten2OnnxError as e:
            return _fail(e, options, 1, type(e).__name__)
        except Exception as e:  # the user's factory, onnxruntime, the file system: their message, one line
            return _fail(e, options, 1, f"error: {type(e).__name__}")


def _fail(e: BaseException, options: argparse.Namespace, status: int, label: str) -> int:
    if options.verbose:
        traceback.print_exception(e, file=sys.stderr)
        details = getattr(e, "details", ())
        if details:
            print(f"details ({len(details)}):", *details, sep="\n", file=sys.stderr)
    print(f"aten2onnx: {label}: {e}", file=sys.stderr)
    if getattr(e, "details", ()) and not options.verbose:
        print(f"aten2onnx: --verbose shows the traceback and the {len(e.details)} details", file=sys.stderr)
    return status


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: Any = None, line: str | None = None) -> None:
    """A warning as one line: the command's user did not write the line Python would show."""
    print(f"aten2onnx: warning: {message}", file=sys.stderr)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="aten2onnx", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"aten2onnx {aten2onnx.__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-v", "--verbose", action="store_true", help="on an error, show the traceback and details")
    spec_help = "path/to/file.py:factory or package.module:factory; factory() returns (model, args[, kwargs])"

    export = commands.add_parser("export", parents=[common], help="export a model to an ONNX file")
    export.add_argument("spec", metavar="SPEC", help=spec_help)
    export.add_argument("-o", "--output", required=True, metavar="OUT.onnx")
    export.add_argument("--opset", type=int, default=18)
    export.add_argument("--dynamic", action="append", default=[], type=_dynamic_dim, metavar="INPUT:AXIS=NAME",
                        help="a dynamic dim, e.g. x:0=batch (repeatable)")
    export.add_argument("--fallback", choices=("aten", "error"), default="aten",
                        help="ops without a symbolic: ATen nodes, or one error listing them")
    export.add_argument("--external-data", action="store_true", help="weights in a data file beside the model")
    export.add_argument("--exact", action="store_true",
                        help="exact mode: aten2onnx.runtime runs the model bit for bit like eager PyTorch")
    export.add_argument("--functions", type=_class_names, default=False, metavar="CLASS[,CLASS...]",
                        help="module classes whose calls become ONNX local functions (names, e.g. GPT2Block), "
                             "or 'all' for every class called more than once")
    export.add_argument("--no-optimize", dest="optimize", action="store_false",
                        help="write the graph as translated, without the graph optimizer")
    export.set_defaults(handler=_export)

    run = commands.add_parser("run", parents=[common], help="run an ONNX file on .npy inputs")
    run.add_argument("model", metavar="MODEL.onnx")
    run.add_argument("--input", action="append", default=[], type=_named_file, metavar="NAME=FILE.npy")
    run.add_argument("--output-dir", default=".", metavar="DIR", help="where <output name>.npy files go")
    run.add_argument("--runtime", choices=RUNTIMES, default="aten2onnx")
    run.set_defaults(handler=_run)

    verify = commands.add_parser("verify", parents=[common], help="export and compare with eager PyTorch")
    verify.add_argument("spec", metavar="SPEC", help=spec_help)
    verify.add_argument("--opset", type=int, default=18)
    verify.add_argument("--runtime", action="append", choices=RUNTIMES, help="a runtime to check (default: both)")
    verify.add_argument("--json", action="store_true", help="the report as JSON")
    verify.add_argument("--exact", action="store_true",
                        help="export in exact mode and hold aten2onnx.runtime to bitwise equality")
    verify.set_defaults(handler=_verify)

    llm = commands.add_parser("export-llm", parents=[common],
                              help="export a transformers causal LM folder for onnxruntime-genai")
    llm.add_argument("model", metavar="HF_DIR", help="a local folder AutoModelForCausalLM.from_pretrained loads")
    llm.add_argument("out_dir", metavar="OUT_DIR")
    llm.add_argument("--opset", type=int, default=None,
                     help="default 18 (21 for --precision int4/int8 without --optimize)")
    llm.add_argument("--optimize", choices=["onnxruntime"], default=None,
                     help="emit onnxruntime's fused contrib ops (GroupQueryAttention, SkipSimplifiedLayerNormalization, ...)")
    llm.add_argument("--precision", choices=["float32", "float16", "bfloat16", "int8", "int4"], default=None,
                     help="the weights' precision: int4/int8 quantize each linear layer's weight per block as "
                          "onnxruntime-genai's model builder does")
    llm.add_argument("--block-size", type=int, default=32, help="int4/int8: values per quantization block")
    llm.add_argument("--asymmetric", action="store_true", help="int4/int8: zero points per block")
    llm.add_argument("--accuracy-level", type=int, default=4, choices=range(5),
                     help="int4/int8 with --optimize onnxruntime: MatMulNBits' accuracy level")
    llm.add_argument("--max-length", type=int, default=None, help="genai's context length")
    llm.set_defaults(handler=_export_llm)

    info = commands.add_parser("info", parents=[common], help="what an ONNX file holds")
    info.add_argument("model", metavar="MODEL.onnx")
    info.set_defaults(handler=_info)

    ops = commands.add_parser("ops", parents=[common], help="operator coverage, or what one op gets")
    ops.add_argument("query", nargs="?", metavar="QUERY", help="an overload (aten::relu.default), an op (relu), or part of one")
    ops.set_defaults(handler=_ops)
    return parser


def _dynamic_dim(text: str) -> tuple[str, int, str]:
    match = _DYNAMIC.fullmatch(text)
    if match is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not INPUT:AXIS=NAME (e.g. x:0=batch)")
    return match["input"], int(match["axis"]), match["name"]


def _class_names(text: str) -> bool | list[str]:
    if text == "all":
        return True
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"{text!r}: give class names separated by commas, e.g. GPT2Block,GPT2MLP")
    return names


def _named_file(text: str) -> tuple[str, str]:
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=FILE.npy")
    return name, path


# -- SPEC --------------------------------------------------------------------------------------------
def load_spec(spec: str) -> tuple[Any, tuple, dict | None]:
    """(model, args, kwargs) from the factory a SPEC names."""
    target, sep, name = spec.rpartition(":")
    if not sep or not target or not name.isidentifier():
        raise UsageError(f"SPEC {spec!r} is not path/to/file.py:factory or package.module:factory")
    module = _module_file(target) if target.endswith(".py") or os.sep in target else _module(target)
    factory = getattr(module, name, None)
    if not callable(factory):
        raise UsageError(f"{target} has no function {name!r}")
    made = factory()
    if not isinstance(made, tuple) or len(made) not in (2, 3):
        raise UsageError(f"{spec} returned {type(made).__name__}; a factory returns (model, args) or (model, args, kwargs)")
    model, args, kwargs = made if len(made) == 3 else (*made, None)
    return model, args if isinstance(args, tuple) else (args,), kwargs


def _module_file(path: str) -> Any:
    if not os.path.isfile(path):
        raise UsageError(f"{path}: no such file")
    path = os.path.abspath(path)
    sys.path.insert(0, os.path.dirname(path))  # as `python file.py` does: the file may import its neighbours
    name = "_aten2onnx_spec_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
    loader = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(loader)
    sys.modules[name] = module  # dataclasses and pickling look a class's module up there
    loader.loader.exec_module(module)
    return module


def _module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name is not None and (name == e.name or name.startswith(e.name + ".")):
            raise UsageError(f"no module named {name!r} (a file SPEC ends in .py)") from e
        raise


def _existing(path: str) -> str:
    if not os.path.isfile(path):
        raise UsageError(f"{path}: no such file")
    return path


# -- commands ----------------------------------------------------------------------------------------
def _export(options: argparse.Namespace) -> int:
    from aten2onnx.verification import verify_export

    model, args, kwargs = load_spec(options.spec)
    dynamic: dict[str, dict[int, str]] = {}
    for name, axis, label in options.dynamic:
        dynamic.setdefault(name, {})[axis] = label
    exported, report = verify_export(model, args, kwargs, opset=options.opset, runtimes=RUNTIMES, inputs=(),
                                     custom_symbolics=None, dynamic_shapes=dynamic or None,
                                     fallback=options.fallback, progress=None, exact=options.exact,
                                     functions=options.functions, optimize=options.optimize)
    exported.save(options.output, external_data=True if options.external_data else None)
    errors = {runtime: max((e[0] for e in per.values() if e[0] is not None), default=None)
              for runtime, per in report.max_errors().items()}
    print(f"aten2onnx {aten2onnx.__version__}: {options.spec}")
    print(f"  opset {options.opset}, {sum(report.node_counts.values())} nodes, exported in {report.export_seconds:.2f} s")
    print(f"  fallback ops: {', '.join(report.fallback_ops) or 'none'}")
    print("  " + "; ".join(f"max |{runtime} - eager| = {err:.2e}" if err is not None else f"{runtime}: no output compared"
                           for runtime, err in errors.items()))
    for runtime, why in report.skipped.items():
        print(f"  {runtime} not run: {why}")
    if not report.ok:  # which outputs differ, and the first node that does
        print("\n".join(report.to_text().splitlines()[2:]))
    print(f"  {'PASS' if report.ok else 'MISMATCH'}; saved to {options.output}")
    return 0


def _run(options: argparse.Namespace) -> int:
    import numpy as np

    path = _existing(options.model)
    feeds = {name: np.load(_existing(file), allow_pickle=False) for name, file in options.input}
    if options.runtime == "aten2onnx":
        from aten2onnx.runtime import InferenceSession

        session = InferenceSession(path)
    else:
        import onnxruntime

        session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    results = session.run(None, feeds)
    os.makedirs(options.output_dir, exist_ok=True)
    for name, value in zip(names, results):
        for suffix, array in _arrays(value):
            file = os.path.join(options.output_dir, _file_name(name) + suffix + ".npy")
            np.save(file, array, allow_pickle=False)
            print(f"{name}{suffix}: {array.dtype}{list(array.shape)} -> {file}")
    return 0


def _arrays(value: Any) -> Iterator[tuple[str, Any]]:
    """("", array) for a tensor output; (".<i>", array) per element of a sequence output."""
    if isinstance(value, list):
        for i, item in enumerate(value):
            yield f".{i}", item
    else:
        yield "", value


def _file_name(output: str) -> str:
    """An output's name as one file name in the output folder: no separators, no `..`."""
    safe = re.sub(r"[^\w.-]", "_", output)
    return "_" + safe if safe.startswith(".") or not safe else safe


def _verify(options: argparse.Namespace) -> int:
    model, args, kwargs = load_spec(options.spec)
    report = aten2onnx.verify(model, args, kwargs, opset=options.opset, runtimes=tuple(options.runtime or RUNTIMES),
                              exact=options.exact)
    print(report.to_json() if options.json else report.to_text())
    return 0 if report.ok else 1


def _export_llm(options: argparse.Namespace) -> int:
    if not os.path.isdir(options.model):
        raise UsageError(f"{options.model}: no such folder (export-llm takes a local transformers model folder)")
    path = aten2onnx.export_llm(options.model, options.out_dir, opset=options.opset, optimize=options.optimize,
                                precision=options.precision, block_size=options.block_size,
                                symmetric=not options.asymmetric, accuracy_level=options.accuracy_level,
                                max_length=options.max_length)
    print(f"wrote {path} and {os.path.join(options.out_dir, 'genai_config.json')}")
    return 0


def _info(options: argparse.Namespace) -> int:
    from aten2onnx import modelinfo

    print("\n".join(modelinfo.describe(_existing(options.model))))
    return 0


def _ops(options: argparse.Namespace) -> int:
    from aten2onnx import coverage

    if options.query is None:
        print("\n".join(_table(coverage)))
        return 0
    keys = sorted(set(coverage.builtin_handlers()) | set(coverage.builtin_handlers(on_complex=True))
                  | {u.key for u in coverage.unavailable()})
    hits = coverage.matching(options.query, keys) or coverage.known_overloads(options.query)
    if not hits:
        print(f"aten2onnx: no operator matches {options.query!r}; `aten2onnx ops` lists every one with a symbolic",
              file=sys.stderr)
        return 1
    for key in hits:
        print("\n".join(coverage.describe(key)))
    return 0


def _table(coverage: Any) -> list[str]:
    """The coverage table of docs/operators.md, as text."""
    from aten2onnx.symbolic import MAX_OPSET, MIN_OPSET

    rows = coverage.entries()
    complex_keys = set(coverage.builtin_handlers(on_complex=True))
    width = max(len(e.key) for e in rows)
    lines = [f"{'overload':<{width}}  {'opsets':<12} {'native':<7} {'fallback':<8} complex partial"]
    for e in rows:
        fallback = coverage.span(MIN_OPSET, e.opsets[0] - 1) if e.opsets[0] > MIN_OPSET else "-"
        lines.append(f"{e.key:<{width}}  {', '.join(map(str, e.opsets)):<12} {coverage.span(e.opsets[0], MAX_OPSET):<7} "
                     f"{fallback:<8} {'yes' if e.key in complex_keys else '':<7} {'yes' if e.limitations else ''}".rstrip())
    lines.append(f"{len(rows)} overloads with a built-in symbolic, {len(complex_keys)} with one for complex tensors, "
                 f"{sum(bool(e.limitations) for e in rows)} partial; `aten2onnx ops QUERY` for one op's details")
    aside = coverage.unavailable()
    if aside:
        lines.append(f"{len(aside)} built-in symbolic(s) unavailable with torch {torch_version()}:")
        lines += [f"  {u.key} (opsets {', '.join(map(str, u.opsets))}): {coverage.why_unavailable(u)}" for u in aside]
    return lines


def torch_version() -> str:
    import torch

    return torch.__version__
