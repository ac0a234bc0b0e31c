"""Every torch.nn layer exported at opset 18 with dynamic dims (scripts/nn_layers.py's table, run by
scripts/nn_sweep.py's check): native, or the outcome its recipe expects and says why; and the table and
docs/nn_layers.md cover every torch.nn class. The full sweep (both modes, opsets 17, 18, 23) is the script's."""

import re

import pytest
import torch
from conftest import ROOT, load_script
DOC = ROOT / "docs" / "nn_layers.md"



sweep = load_script("nn_sweep")
LAYERS = sweep.nn_layers.LAYERS
SKIPPED = sweep.nn_layers.SKIPPED


@pytest.fixture(autouse=True)
def _one_thread():
    """One thread, as the sweep runs: the export checks torch's decomposition of max_unpool on random indices,
    repeated ones among them, where eager's kernel races between threads, so with two the MaxUnpool layers
    are native or not by chance (reported; the exporter is not this file's to fix)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_exports_with_dynamic_dims_as_the_table_expects(name):
    if not hasattr(torch.nn, name):
        pytest.skip(f"torch {torch.__version__} has no torch.nn.{name}")
    recipe = LAYERS[name]
    outcome = sweep.run_cell(name, "dynamic", 18)
    assert outcome.text.startswith(recipe.expect), (
        f"{name} at opset 18, dynamic: {outcome.text}: {outcome.detail}\n"
        f"the table expects {recipe.expect!r}" + (f" ({recipe.reason})" if recipe.reason else "")
        + "; update its entry in scripts/nn_layers.py if the change is right")


def test_every_expected_failure_says_why():
    unexplained = sorted(name for name, r in LAYERS.items() if r.expect != "native" and not r.reason)
    assert not unexplained, f"expected non-native outcomes without a reason: {unexplained}"


def test_every_nn_class_has_a_recipe_or_a_reason_to_skip():
    classes = set(sweep.nn_classes())
    missing = sorted(classes - set(LAYERS) - set(SKIPPED))
    assert not missing, f"torch.nn classes in neither LAYERS nor SKIPPED (scripts/nn_layers.py): {missing}"
    assert not set(LAYERS) & set(SKIPPED)
    assert all(SKIPPED.values())


def test_docs_cover_every_layer_for_the_torch_ci_installs():
    """docs/nn_layers.md was generated from the whole table, with the torch the README's CI command pins (the
    results themselves depend on the run, so only the header and the rows are compared)."""
    text = DOC.read_text()
    pinned = re.search(r"pip install torch==([\d.]+)", (ROOT / "README.md").read_text()).group(1)
    generated = re.search(r"^- torch: (\S+)$", text, re.M).group(1)
    assert generated == pinned, f"{DOC.name} was generated with torch {generated}, CI installs {pinned}: rerun nn_sweep"
    rows = set(re.findall(r"^\| `(\w+)` \|", text, re.M))
    missing, extra = sorted(set(LAYERS) - rows), sorted(rows - set(LAYERS))
    assert not missing and not extra, (f"{DOC.name} is stale: rows missing {missing}, rows without a recipe {extra}; "
                                       "rerun python scripts/nn_sweep.py --opsets 17,18,23 --modes static,dynamic "
                                       "--out docs/nn_layers.md")
