"""Sweep every torch.nn layer through aten2onnx: export each (in eval mode) with static and with dynamic dims
at several opsets, run it in aten2onnx.runtime and onnxruntime, and compare with eager PyTorch.

    python scripts/nn_sweep.py --opsets 17,18,23 --modes static,dynamic --out docs/nn_layers.md
    python scripts/nn_sweep.py --layers Conv2d,LSTM --opsets 18 --modes dynamic -v

The layers, their inputs and their dynamic dims are the table in scripts/nn_layers.py; a torch.nn class in
neither that table nor its SKIPPED list is reported as "no recipe", so a class a new torch adds shows up.
Each (layer, mode, opset) cell is one of:

- native: no ATen node, and right in both runtimes;
- fallback: <ops>: right in aten2onnx.runtime, with ATen nodes for these ops (onnxruntime cannot run them);
- wrong: <runtime>[, second size]: a result differs from eager's, or onnxruntime refused the model;
- fixed dim: <input[dim] (size)>: a dim declared dynamic is a dim_value in the ONNX input, not a dim_param;
- error: <class>: one of our errors (aten2onnx.Aten2OnnxError), raised by the export or by our runtime;
- escape: <type>: any other exception, InternalError included (with the type of the exception it chains);
- timeout: the cell took longer than --timeout.

With dynamic dims a cell is checked on the example and on a second size (SECOND in nn_layers.py: another
batch and another size on every dynamic dim). Outputs are compared with torch.testing.assert_close's
default tolerances, except where a recipe sets one (the RNNs, as tests/test_rnn.py does). No recipe is
random: dropout is the identity in eval, RReLU takes its mean slope, and fractional max pooling is given
its samples. Torch runs on one thread, as in tests/test_nn_layers.py: the export checks torch's decomposition
of max_unpool on random indices, repeated ones among them, where eager's kernel races between threads, so
with more the MaxUnpool layers' dynamic cells are native or fallback by chance. --jobs N runs N layers at
once, in N processes. The last line printed is the summary: `N layers, K cells, native M (P%), ...`.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import importlib.util
import inspect
import pathlib
import signal
import sys
import warnings
from typing import Any

import torch
import torch.utils._pytree as pytree

KINDS = ("native", "fallback", "fixed dim", "wrong", "error", "escape", "timeout")
COLUMN_ORDER = {"static": 0, "dynamic": 1}
SERIOUSNESS = ("escape", "wrong", "fixed dim", "error", "timeout", "fallback")  # the order the report lists them in


def _load_layers():
    """scripts/nn_layers.py, by path: this script is also imported by path (tests/test_nn_layers.py)."""
    if "nn_layers" not in sys.modules:
        spec = importlib.util.spec_from_file_location("nn_layers", pathlib.Path(__file__).with_name("nn_layers.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # its dataclasses look their module up there
        spec.loader.exec_module(module)
    return sys.modules["nn_layers"]


nn_layers = _load_layers()


@dataclasses.dataclass(frozen=True)
class Outcome:
    """One cell: kind (KINDS), label (what the table shows after the kind), detail (the reason, for the list)."""

    kind: str
    label: str = ""
    detail: str = ""

    @property
    def text(self) -> str:
        return f"{self.kind}: {self.label}" if self.label else self.kind


def nn_classes() -> list[str]:
    """Every torch.nn module class, by the name torch.nn exports it under."""
    return sorted(name for name in dir(torch.nn)
                  if inspect.isclass(getattr(torch.nn, name)) and issubclass(getattr(torch.nn, name), torch.nn.Module))


# -- one layer --------------------------------------------------------------------------------------


def example_inputs(recipe, sizes, seed: int) -> tuple:
    torch.manual_seed(seed)
    return tuple(recipe.inputs(recipe.at(sizes)))


def dynamic_dims(recipe) -> list[dict[int, str]]:
    """Per input, {dim: size name} for the dims written as a size: those that change when that size alone does."""
    base = [t.shape for t in example_inputs(recipe, nn_layers.EXAMPLE, 0)]
    dims: list[dict[int, str]] = [{} for _ in base]
    example, second = recipe.at(nn_layers.EXAMPLE), recipe.at(nn_layers.SECOND)
    for name in nn_layers.Sizes._fields:
        if getattr(example, name) == getattr(second, name):
            continue
        torch.manual_seed(0)
        changed = recipe.inputs(example._replace(**{name: getattr(second, name)}))
        for spec, before, after in zip(dims, base, changed):
            spec.update({d: name for d, (a, b) in enumerate(zip(before, after.shape)) if a != b})
    return [dict(sorted(spec.items())) for spec in dims]


def build(recipe, inputs: tuple) -> torch.nn.Module:
    """The layer in eval mode, lazy parameters materialized by one call, weights and running statistics
    moved off their initial values (ones and zeros would hide a wrong scale or shift)."""
    torch.manual_seed(0)
    model = recipe.make()
    if isinstance(model, torch.nn.modules.lazy.LazyModuleMixin):
        with torch.no_grad():
            model(*inputs)
    with torch.no_grad():
        for p in model.parameters():
            if p.is_floating_point():
                p.add_(0.1 * torch.randn_like(p))
        for name, b in model.named_buffers():
            if name.endswith("running_mean"):
                b.copy_(0.1 * torch.randn_like(b))
            elif name.endswith("running_var"):
                b.copy_(0.5 + torch.rand_like(b))
    return model.eval()


def shapes_spec(model: torch.nn.Module, inputs: tuple, dims: list[dict[int, str]]) -> dict[str, Any]:
    """dynamic_shapes by forward's parameter names, only those with dynamic dims (a *args parameter takes a tuple)."""
    signature = inspect.signature(model.forward)
    specs, position = {}, 0
    for name, value in signature.bind(*inputs).arguments.items():
        if signature.parameters[name].kind == inspect.Parameter.VAR_POSITIONAL:
            spec = tuple(dims[position + i] or None for i in range(len(value)))
            position += len(value)
        else:
            spec = dims[position]
            position += 1
        if (any(spec) if isinstance(spec, tuple) else spec):
            specs[name] = spec
    return specs


def eager(model: torch.nn.Module, inputs: tuple) -> list[torch.Tensor]:
    with torch.no_grad():
        return leaves(model(*[t.clone() for t in inputs]))


def leaves(out: Any) -> list[torch.Tensor]:
    """The tensors and numbers of an output structure (onnxruntime's arrays too), as tensors."""
    import numpy as np

    kept = (torch.Tensor, np.ndarray, np.generic, bool, int, float)
    return [torch.as_tensor(t) for t in pytree.tree_leaves(out) if isinstance(t, kept)]


def first_line(e: BaseException, n: int = 240) -> str:
    text = str(e).strip().splitlines()
    return (text[0] if text else "")[:n]


def failure(e: BaseException, where: str) -> Outcome:
    """Our error (error) or anything else (escape), raised in `where`; an InternalError names what it chains."""
    import aten2onnx

    if isinstance(e, aten2onnx.Aten2OnnxError) and not isinstance(e, aten2onnx.InternalError):
        return Outcome("error", type(e).__name__, f"{where}: {first_line(e)}")
    cause = e.__cause__ if isinstance(e, aten2onnx.InternalError) else None
    label = type(e).__name__ + (f" ({type(cause).__name__})" if cause is not None else "")
    return Outcome("escape", label, f"{where}: {first_line(cause or e)}")


def mismatch(got: list, want: list, tolerance) -> str | None:
    """Why got is not want (assert_close's first lines), or None."""
    if len(got) != len(want):
        return f"{len(got)} outputs, eager has {len(want)}"
    rtol, atol = tolerance or (None, None)
    for i, (g, w) in enumerate(zip(got, want)):
        try:
            torch.testing.assert_close(torch.as_tensor(g), w, rtol=rtol, atol=atol, equal_nan=True)
        except AssertionError as e:
            return f"output {i}: " + " ".join(str(e).split("\n")[:4])[:300]
    return None


def ort_outputs(exported, inputs: tuple) -> list:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 4
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(exported.model_proto.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}
    feeds = {k: v.numpy() for k, v in exported.feeds(*[t.clone() for t in inputs]).items() if k in names}
    return leaves(exported.structure_outputs(session.run(list(exported.output_names), feeds)))


def check(exported, inputs: tuple, want: list, tolerance, second: bool) -> Outcome | None:
    """None when both runtimes (onnxruntime only without ATen nodes) give eager's results on inputs."""
    suffix = ", second size" if second else ""
    try:
        got = leaves(exported.run(*[t.clone() for t in inputs]))
    except Exception as e:
        return failure(e, "aten2onnx.runtime" + suffix)
    why = mismatch(got, want, tolerance)
    if why:
        return Outcome("wrong", "aten2onnx.runtime" + suffix, why)
    if exported.fallback_ops:
        return None
    try:
        got = ort_outputs(exported, inputs)
    except Exception as e:
        return Outcome("wrong", "onnxruntime" + suffix, f"onnxruntime raised {type(e).__name__}: {first_line(e)}")
    why = mismatch(got, want, tolerance)
    return Outcome("wrong", "onnxruntime" + suffix, why) if why else None


def fixed_dims(exported, inputs: tuple, dims: list[dict[int, str]]) -> list[str]:
    """The declared dynamic dims that are dim_values in the ONNX graph's inputs, as 'name[dim] (size)'."""
    feeds = exported.feeds(*inputs)
    graph_inputs = {i.name: i.type.tensor_type.shape.dim for i in exported.model_proto.graph.input}
    fixed = []
    for t, spec in zip(inputs, dims):
        name = next((n for n, v in feeds.items() if v is t), None)
        if name is None or name not in graph_inputs:
            continue  # not a graph input: the graph does not read it
        for d, size in sorted(spec.items()):
            if not graph_inputs[name][d].HasField("dim_param"):
                fixed.append(f"{name}[{d}] ({size})")
    return fixed


def run_cell(name: str, mode: str, opset: int) -> Outcome:
    """Export layer `name` at `opset` with static or dynamic dims, and check it (the module docstring's outcomes)."""
    import aten2onnx

    recipe = nn_layers.LAYERS[name]
    inputs = example_inputs(recipe, nn_layers.EXAMPLE, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated classes (NLLLoss2d), lazy layers' empty initialization
        model = build(recipe, inputs)
    want = eager(model, inputs)
    dims = dynamic_dims(recipe) if mode == "dynamic" else []
    spec = shapes_spec(model, inputs, dims) if dims else None
    more = example_inputs(recipe, nn_layers.SECOND, 1) if dims else None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            exported = aten2onnx.export(model, inputs, opset=opset, fallback="aten", dynamic_shapes=spec)
        except Exception as e:
            return failure(e, "export")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bad = check(exported, inputs, want, recipe.tolerance, second=False)
        if not bad and dims:
            fixed = fixed_dims(exported, inputs, dims)
            if fixed:
                return Outcome("fixed dim", ", ".join(fixed), narrowed(caught))
            bad = check(exported, more, eager(model, more), recipe.tolerance, second=True)
    if bad and bad.kind == "wrong":
        bad = dataclasses.replace(bad, detail=bad.detail + divergence(model, inputs, spec, opset, more))
    if bad:
        return bad
    if exported.fallback_ops:
        return Outcome("fallback", ", ".join(sorted(exported.fallback_ops)))
    return Outcome("native")


def narrowed(caught: list) -> str:
    """What the export's NarrowedExportWarnings say it fixed ("input 'x' dim 2 (length) ... fixed it at 5")."""
    import aten2onnx

    said = [str(w.message).split(":")[0] for w in caught if issubclass(w.category, aten2onnx.NarrowedExportWarning)]
    return "; ".join(said) or "no warning said so"


def divergence(model, inputs: tuple, spec, opset: int, more: tuple | None) -> str:
    """aten2onnx.verify's first divergent node for a wrong cell: the ATen op whose ONNX value first differs."""
    import aten2onnx

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            report = aten2onnx.verify(model, inputs, inputs=[more] if more else (), dynamic_shapes=spec, opset=opset)
    except Exception as e:
        return f"; verify raised {type(e).__name__}"
    d = report.first_divergence
    return f"; first divergence: {d.aten_op} (FX node {d.fx_node}, ONNX {d.op_type})" if d else ""


class Timeout(BaseException):
    """A cell over --timeout: a BaseException, so that no `except Exception` on the way takes it for the layer's."""


def _alarm(signum, frame):
    raise Timeout()


def sweep_layer(task: tuple) -> tuple[str, dict[tuple[str, int], Outcome]]:
    name, modes, opsets, timeout = task
    torch.set_num_threads(1)
    cells = {}
    for mode in modes:
        for opset in opsets:
            signal.signal(signal.SIGALRM, _alarm)
            signal.alarm(timeout)
            try:
                cells[mode, opset] = run_cell(name, mode, opset)
            except Timeout:
                cells[mode, opset] = Outcome("timeout", "", f"over {timeout}s")
            finally:
                signal.alarm(0)
    return name, cells


# -- the report -------------------------------------------------------------------------------------


def inputs_text(name: str) -> str:
    """The example inputs' shapes, dynamic dims by their size name: '(batch, 3, length)'."""
    recipe = nn_layers.LAYERS[name]
    dims = dynamic_dims(recipe)
    shapes = [t.shape for t in example_inputs(recipe, nn_layers.EXAMPLE, 0)]
    return ", ".join("(" + ", ".join(spec.get(d, str(n)) for d, n in enumerate(shape)) + ")"
                     for shape, spec in zip(shapes, dims))


def summary(results: dict[str, dict], columns: list[tuple[str, int]], no_recipe: list[str]) -> str:
    cells = [c for r in results.values() for c in r.values()]
    counts = collections.Counter(c.kind for c in cells)
    n = len(cells) or 1
    parts = [f"{len(results) + len(no_recipe)} layers", f"{len(cells)} cells"]
    parts += [f"{k} {counts[k]} ({100 * counts[k] / n:.1f}%)" for k in ("native", "fallback")]
    parts += [f"{k} {counts[k]}" for k in KINDS[2:]]
    return ", ".join(parts) + f", no recipe {len(no_recipe)}"


def column_lines(results: dict[str, dict], columns: list[tuple[str, int]]) -> list[str]:
    lines = []
    for mode, opset in columns:
        counts = collections.Counter(r[mode, opset].kind for r in results.values())
        n = len(results) or 1
        rest = ", ".join(f"{k} {counts[k]}" for k in KINDS[1:] if counts[k])
        lines.append(f"{mode:7s} opset {opset}: native {counts['native']}/{len(results)} "
                     f"({100 * counts['native'] / n:.1f}%)" + (f"; {rest}" if rest else ""))
    return lines


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render(results: dict[str, dict], columns: list[tuple[str, int]], no_recipe: list[str], command: str) -> str:
    """docs/nn_layers.md: deterministic for the same results."""
    import onnx
    import onnxruntime

    out = [
        "# torch.nn layers",
        "",
        f"<!-- Generated by `{command}`. Do not edit by hand. -->",
        "",
        f"- torch: {torch.__version__.split('+')[0]}",
        f"- onnx: {onnx.__version__}, onnxruntime: {onnxruntime.__version__}",
        f"- command: `{command}`",
        "",
        ("Every torch.nn module class, built small (`scripts/nn_layers.py`), exported in eval mode with static dims "
         "and with dynamic dims (the dims named in the *inputs* column: the batch always, sequence and spatial "
         "dims where the layer allows), then run in `aten2onnx.runtime` and, without ATen nodes, onnxruntime, "
         "and compared with eager PyTorch (`torch.testing.assert_close`'s default tolerances; the RNNs at "
         "(1e-4, 1e-5)), torch on one thread. A dynamic export is checked on the example and on a second size of "
         "every dynamic dim. "
         "*native*: no ATen node and right in both runtimes; *fallback*: right in aten2onnx.runtime with ATen "
         "nodes for the ops named; *wrong*: a result differs from eager's (or onnxruntime refused the model); "
         "*fixed dim*: a dim declared dynamic is static in the ONNX input; *error*: one of aten2onnx's errors; "
         "*escape*: any other exception, `InternalError` included. `tests/test_nn_layers.py` checks the "
         "opset-18 dynamic column on every CI run."),
        "",
        "## Summary",
        "",
        summary(results, columns, no_recipe),
        "",
        "| mode | opset | " + " | ".join(KINDS) + " |",
        "| --- | --- | " + " | ".join("---" for _ in KINDS) + " |",
    ]
    for mode, opset in columns:
        counts = collections.Counter(r[mode, opset].kind for r in results.values())
        out.append(f"| {mode} | {opset} | " + " | ".join(str(counts[k]) for k in KINDS) + " |")
    out += ["", "## Layers", "",
            "| layer | inputs | " + " | ".join(f"{m} {o}" for m, o in columns) + " |",
            "| --- | --- | " + " | ".join("---" for _ in columns) + " |"]
    for name in sorted(set(results) | set(no_recipe)):
        if name in no_recipe:
            out.append(f"| `{name}` | | " + " | ".join("no recipe" for _ in columns) + " |")
            continue
        texts = [_cell(results[name][c].text) for c in columns]
        out.append(f"| `{name}` | {inputs_text(name)} | " + " | ".join(texts) + " |")
    out += ["", "## Not native", "", "Every other cell, grouped by outcome, the most serious first, with its reason."]
    listed = [(name, column, results[name][column]) for name in sorted(results) for column in columns
              if results[name][column].kind != "native"]
    for kind in SERIOUSNESS:
        cells = [(name, column, o) for name, column, o in listed if o.kind == kind]
        if cells:
            out += ["", f"### {kind} ({len(cells)})", ""]
        for name, (mode, opset), o in cells:
            reason = f": {_cell(o.detail)}" if o.detail else ""
            out.append(f"- `{name}`, {mode} {opset}: {_cell(o.text)}{reason}")
    if not listed:
        out += ["", "Every cell is native."]
    out += ["", "## Not swept", ""]
    out += [f"- `{name}`: {reason}" for name, reason in sorted(nn_layers.SKIPPED.items()) if hasattr(torch.nn, name)]
    out += [f"- `{name}`: no recipe in scripts/nn_layers.py" for name in no_recipe]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--opsets", default="17,18,23")
    parser.add_argument("--modes", default="static,dynamic")
    parser.add_argument("--layers", default="", help="comma-separated torch.nn class names (default: all)")
    parser.add_argument("--jobs", type=int, default=1, help="processes (one per layer at a time)")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per cell")
    parser.add_argument("--out", default="", help="write the markdown report here (docs/nn_layers.md)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print each non-native cell as it comes")
    args = parser.parse_args(argv)

    opsets = [int(o) for o in args.opsets.split(",") if o]
    modes = sorted({m for m in args.modes.split(",") if m}, key=COLUMN_ORDER.__getitem__)
    columns = [(m, o) for m in modes for o in opsets]
    classes = nn_classes()
    wanted = [n for n in args.layers.split(",") if n] or [n for n in classes if n not in nn_layers.SKIPPED]
    unknown = [n for n in wanted if n not in classes]
    if unknown:
        parser.error(f"--layers: not torch.nn module classes: {unknown}")
    no_recipe = sorted(n for n in wanted if n not in nn_layers.LAYERS)
    tasks = [(n, modes, opsets, args.timeout) for n in sorted(wanted) if n in nn_layers.LAYERS]

    results: dict[str, dict] = {}
    if args.jobs > 1 and len(tasks) > 1:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(args.jobs, maxtasksperchild=20) as pool:
            done = pool.imap_unordered(sweep_layer, tasks)
            for name, cells in done:
                results[name] = cells
                report(name, cells, args.verbose)
    else:
        for task in tasks:
            name, cells = sweep_layer(task)
            results[name] = cells
            report(name, cells, args.verbose)
    for name in no_recipe:
        print(f"{name}: no recipe", flush=True)
    print("\n".join(column_lines(results, columns)))
    if args.out:
        given = list(argv if argv is not None else sys.argv[1:])
        # what the results depend on: not how they were printed or in how many processes
        kept = [a for i, a in enumerate(given) if a not in ("-v", "--verbose") and not a.startswith("--jobs")
                and not (i and given[i - 1] == "--jobs")]
        command = " ".join(["python scripts/nn_sweep.py", *kept])
        pathlib.Path(args.out).write_text(render(results, columns, no_recipe, command))
    print(summary(results, columns, no_recipe))
    return 0


def report(name: str, cells: dict, verbose: bool) -> None:
    if verbose:
        for (mode, opset), o in cells.items():
            if o.kind != "native":
                print(f"{name} [{mode} {opset}] {o.text}" + (f": {o.detail}" if o.detail else ""), flush=True)
    else:
        print(f"{name}: " + ", ".join(sorted({o.kind for o in cells.values()})), flush=True)


if __name__ == "__main__":
    sys.exit(main())
