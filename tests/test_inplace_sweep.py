"""The in-place sweep's CI profile (scripts/inplace_sweep.py): every second OpInfo with an in-place variant, in
op_db's order, and every one with a known failure, written into each of the five targets (input, view, buffer,
attribute, global). Each cell is right, our error naming the model's line, or eager refuses; a wrong answer or
an escape fails unless KNOWN lists it with its reason. The whole sweep is the script's."""

import pytest
import torch
from conftest import load_script



sweep = load_script("inplace_sweep")
STATE = ("buffer", "attribute", "global")

# Why cells fail, most serious first; each is the start of the outcome's text (Outcome.text) and the cause.
COMPOUNDED = ("wrong: call 2, the state after the write", "not a bug: the first call's state is 1 ulp from "
              "eager's, and the second call's expm1 (at 63) or digamma (near a pole) amplifies it past "
              "assert_close's rtol of 1.3e-6")

# Fixed since the first run, each now right or our error naming the line: transpose_ of a view wrote the
# transposed values into the base (wrong); squeeze_/unsqueeze_/as_strided_ of a view failed at run; the same
# ops and resize_ on an input or buffer exported a state of another shape, refused at run; polygamma_ found no
# functional twin (polygamma takes its arguments in another order); unsqueeze_/as_strided_ that change an input's
# rank made torch.export's produce_guards raise IndexError (our CaptureError naming no line), now our ExportError
# naming the op and line, found by running the forward on copies.
KNOWN = {
    **{(op, target): COMPOUNDED for op in ("expm1", "digamma") for target in STATE},
}
FIXED = ("transpose", "as_strided", "as_strided.partial_views", "squeeze", "squeeze.multiple", "unsqueeze", "resize_",
         *(f"polygamma.polygamma_n_{n}" for n in range(5)))

OPS = {sweep.opinfo_name(op): op for op in sweep.inplace_ops()}
KNOWN_OPS = {name for name, _ in KNOWN} | set(FIXED)
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
