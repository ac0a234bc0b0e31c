"""docs/operators.md is generated from the registry; this fails when it is stale."""

import difflib
import importlib.util
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "gen_operators.py"


def load_generator():
    spec = importlib.util.spec_from_file_location("gen_operators", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_operators_doc_matches_the_registry():
    from aten2onnx import coverage

    if coverage.unavailable():  # the doc is generated where every built-in is available (CI's torch)
        pytest.skip(f"this torch lacks {len(coverage.unavailable())} overload(s) the registry has symbolics for: "
                    "the doc, generated with the torch CI installs, lists them")
    gen = load_generator()
    expected = gen.render()
    current = gen.DOC.read_text() if gen.DOC.exists() else ""
    if current != expected:
        diff = "\n".join(list(difflib.unified_diff(current.splitlines(), expected.splitlines(), "on disk",
                                                   "from the registry", lineterm="", n=0))[:40])
        raise AssertionError(f"docs/operators.md is stale; run `{gen.COMMAND}` and commit it.\n{diff}")


def test_generator_is_deterministic_and_lists_every_builtin():
    from aten2onnx.registry import REGISTRY

    gen = load_generator()
    text = gen.render()
    assert text == gen.render()
    for key in REGISTRY.builtin_table():
        assert f"| `{key}` |" in text


def test_partial_handlers_quote_their_not_implemented_messages():
    from aten2onnx.coverage import limitations

    def helper(g, x):
        raise NotImplementedError(f"helper cannot do {x.dtype}")

    def handler(g, self, dim):
        if dim:
            raise NotImplementedError("no dim at this opset")
        return helper(g, self)

    helper.__module__ = handler.__module__ = "aten2onnx.symbolic.fake"
    handler.__globals__["helper"] = helper
    try:
        notes = limitations(handler, 11)
    finally:
        del handler.__globals__["helper"]
    assert [(n.opset, n.function, n.message) for n in notes] == [
        (11, "handler", "no dim at this opset"), (11, "helper", "helper cannot do {x.dtype}")]


def test_check_flag_fails_on_a_stale_file_and_says_what_to_run(tmp_path, monkeypatch, capsys):
    gen = load_generator()
    stale = tmp_path / "operators.md"
    stale.write_text("# Operator coverage\n")
    monkeypatch.setattr(gen, "DOC", stale)
    assert gen.main(["--check"]) == 1
    assert gen.COMMAND in capsys.readouterr().err
    monkeypatch.setattr(gen, "ROOT", tmp_path)
    assert gen.main([]) == 0 and gen.main(["--check"]) == 0


def load_sweep():
    spec = importlib.util.spec_from_file_location("opinfo_sweep", ROOT / "scripts" / "opinfo_sweep.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def result(name, status, **extra):
    return {"name": name, "dtype": "int8", "opsets": {"9": {"status": status, "fallback_ops": [], **extra}}}


def test_recorded_sweeps_accumulate_per_dtype_and_opset_and_render_as_tables(tmp_path):
    gen, sweep = load_generator(), load_sweep()
    path = tmp_path / "sweep.json"
    int8 = [result("add", "native"), result("sort", "native", ties=True),
            result("gcd", "fallback", fallback_ops=["aten::gcd.default"]),
            result("cov", "fail", category="capture error"), {"name": "rand", "dtype": "int8", "skipped": "random"}]
    sweep.record(str(path), {"int8": int8}, [9], 1, "python scripts/opinfo_sweep.py --dtypes int8 --opsets 9")
    bool_ = [{**result("add", "native"), "dtype": "bool"}]
    sweep.record(str(path), {"bool": bool_}, [9], 1, "python scripts/opinfo_sweep.py --dtypes bool --opsets 9")
    text = "\n".join(gen.sweep_section(path))
    assert "| int8 | 2/4 (50.0%), 1 fallback, 1 fail |" in text
    assert "| bool | 1/1 (100.0%), 0 fallback, 0 fail |" in text
    assert "| `gcd` | fallback: aten::gcd.default |" in text and "| `cov` | capture error |" in text
    assert "Native by ties (indices of equal values): `sort`." in text
    assert "- `python scripts/opinfo_sweep.py --dtypes int8 --opsets 9` (commit " in text
    assert gen.sweep_section(tmp_path / "none.json") == []
