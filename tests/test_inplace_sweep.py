"""The in-place sweep's CI profile (scripts/inplace_sweep.py): every second OpInfo with an in-place variant, in
op_db's order, and every one with a known failure, written into each of the five targets (input, view, buffer,
attribute, global). Each cell is right, our error naming the model's line, or eager refuses; a wrong answer or
an escape fails unless KNOWN lists it with its reason. The whole sweep is the script's."""

import importlib.util
import pathlib
import sys

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parent.parent


def load_sweep():
    """scripts/inplace_sweep.py, imported by path (its models' lines are what an error must name)."""
    spec = importlib.util.spec_from_file_location("inplace_sweep", ROOT / "scripts" / "inplace_sweep.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


sweep = load_sweep()
STATE = ("buffer", "attribute", "global")

# Why cells fail, most serious first; each is the start of the outcome's text (Outcome.text) and the cause.
VIEW_SCATTER = ("escape: run: KernelError", "a metadata in-place op (squeeze_, as_strided_) on a view is taken "
                "for a write of values: the rewrite scatters the re-shaped view into its base, which fails at run")
TRANSPOSED_INTO_BASE = ("wrong: call 1, x, the view's base", "transpose_ of a view changes the view's strides "
                        "only; the rewrite scatters the transposed values into the base, whose values eager keeps")
RANK_CHANGED = ("escape: run: InvalidModelError: metadata aten2onnx.state_updates", "a rank-changing in-place op "
                "(squeeze_, unsqueeze_, resize_, as_strided_) on an input or buffer exports; its `.updated` output "
                "has another rank than the input, which aten2onnx.runtime refuses to load: the export should refuse")
SHAPE_CHANGED = ("escape: run: InvalidModelError: state update", "as_strided_ to another shape on an input or "
                 "buffer exports; its `.updated` output has another size than the input, which the run refuses")
GUARDS_INDEX_ERROR = ("escape: CaptureError: torch.export could not capture the model. non-strict capture: "
                      "IndexError", "torch.export's produce_guards raises IndexError on a rank-changing in-place "
                      "op of an input with a dynamic dim (torch's bug); the CaptureError names no line")
NO_TWIN = ("escape: ExportError: the model writes in place in a way aten2onnx's rewrite does not handle",
           "functional_twin finds no twin for polygamma_(Tensor(a!) self, int n): polygamma(int n, Tensor self) "
           "takes its arguments in another order; torch's functionalization fails too, and the error names no line")
COMPOUNDED = ("wrong: call 2, the state after the write", "not a bug: the first call's state is 1 ulp from "
              "eager's, and the second call's expm1 (at 63) or digamma (near a pole) amplifies it past "
              "assert_close's rtol of 1.3e-6")

KNOWN = {
    ("transpose", "view"): TRANSPOSED_INTO_BASE,
    **{(op, "view"): VIEW_SCATTER for op in ("as_strided", "as_strided.partial_views", "squeeze", "squeeze.multiple")},
    **{(op, target): RANK_CHANGED for op in ("squeeze", "squeeze.multiple") for target in ("input", "buffer")},
    **{(op, "buffer"): RANK_CHANGED for op in ("as_strided.partial_views", "resize_", "unsqueeze")},
    **{("as_strided", target): SHAPE_CHANGED for target in ("input", "buffer")},
    **{(op, "input"): GUARDS_INDEX_ERROR for op in ("as_strided.partial_views", "unsqueeze")},
    **{(f"polygamma.polygamma_n_{n}", target): NO_TWIN for n in range(5) for target in sweep.TARGETS},
    **{(op, target): COMPOUNDED for op in ("expm1", "digamma") for target in STATE},
}

OPS = {sweep.opinfo_name(op): op for op in sweep.inplace_ops()}
KNOWN_OPS = {name for name, _ in KNOWN}
CI_OPS = [name for i, name in enumerate(OPS) if i % 2 == 0 or name in KNOWN_OPS]


@pytest.fixture(autouse=True)
def _one_thread():
    """One thread, as the script runs."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("name", CI_OPS)
def test_inplace_variant_into_every_target_is_right_or_our_error(name):
    cells = sweep.sweep_op(OPS[name])
    if isinstance(cells, str):
        pytest.skip(cells)  # random, or no sample with 2 rows
    problems = []
    for target, outcome in cells.items():
        expect, why = KNOWN.get((name, target), (None, None))
        if expect is None and outcome.kind in ("wrong", "escape"):
            problems.append(f"{target}: {outcome.text}")
        elif expect is not None and not outcome.text.startswith(expect):
            problems.append(f"{target}: {outcome.text}\n  KNOWN expects {expect!r} ({why}); update its entry if "
                            "the change is right")
    assert not problems, f"{name}:\n" + "\n".join(problems)


def test_every_known_failure_is_a_wrong_or_escape_cell_with_its_reason():
    for (name, target), (expect, why) in KNOWN.items():
        assert target in sweep.TARGETS, (name, target)
        assert expect.split(":")[0] in ("wrong", "escape") and why, (name, target)


def test_summary_counts_every_kind():
    outcome = sweep.Outcome
    results = {"a": {"input": outcome("right"), "view": outcome("wrong", "x")},
               "b": {"input": outcome("our error", "e"), "view": outcome("escape", "f")},
               "c": {"input": outcome("eager refuses", "g"), "view": outcome("eager refuses", "g")}}
    assert sweep.summary(results) == ("3 ops, 6 cells: right 1, our error 1, wrong 1, escape 1, eager refuses 2")
