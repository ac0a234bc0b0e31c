"""The aten2onnx command, driven as a user drives it: a subprocess in a fresh temporary folder, checked
against eager PyTorch and onnxruntime run here."""

from __future__ import annotations

import importlib.metadata
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

import aten2onnx

ROOT = pathlib.Path(aten2onnx.__file__).resolve().parent.parent

SPEC = textwrap.dedent('''
    import torch

    @torch.library.custom_op("cli_test::shifted", mutates_args=())
    def shifted(x: torch.Tensor) -> torch.Tensor:
        return x + 3

    @shifted.register_fake
    def _(x):
        return torch.empty_like(x)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 3)

        def forward(self, x, scale=None):
            y = torch.relu(self.lin(x)).cumsum(0)
            return y if scale is None else y * scale

    def make():
        torch.manual_seed(0)
        return Net().eval(), (torch.randn(5, 4),)

    def with_kwargs():
        model, args = make()
        return model, args, {"scale": torch.tensor(2.0)}

    def custom():
        return (lambda x: shifted(x.sin()) * 2), (torch.randn(3, 2),)

    def wrong():
        import aten2onnx
        aten2onnx.register_symbolic("aten::relu.default", opset=9)(lambda g, self: g.op("Abs", self))
        return make()

    def branching():
        class Branching(torch.nn.Module):
            def forward(self, x):
                if x.sum() > 0:
                    return x + 1
                return x - 1
        return Branching(), (torch.randn(3),)

    def not_a_pair():
        return Net()
''')


def net(tmp_path: pathlib.Path):
    """The spec file's Net with make()'s weights, built here by running the file."""
    scope: dict = {}
    exec(compile(SPEC, str(tmp_path / "spec.py"), "exec"), scope)
    return scope["make"]()[0]


@pytest.fixture
def folder(tmp_path: pathlib.Path) -> pathlib.Path:
    (tmp_path / "spec.py").write_text(SPEC)
    return tmp_path


def cli(folder: pathlib.Path, *argv: str, module: bool = True) -> subprocess.CompletedProcess:
    """`python -m aten2onnx ARGV` (or the installed `aten2onnx` script) run in folder."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="100")
    command = [sys.executable, "-m", "aten2onnx"] if module else [_script()]
    return subprocess.run([*command, *argv], cwd=folder, env=env, capture_output=True, text=True, timeout=300)


def _script() -> str:
    """The installed `aten2onnx` script; skips where the installed metadata predates it (pip install -e .
    writes it, as CI does)."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert declared == {"aten2onnx": "aten2onnx.cli:main"}
    installed = [e for e in importlib.metadata.entry_points(group="console_scripts") if e.name == "aten2onnx"]
    path = pathlib.Path(sys.executable).parent / "aten2onnx"
    if not installed or not path.exists():
        pytest.skip("the installed aten2onnx predates its script: pip install -e . writes it")
    assert installed[0].value == "aten2onnx.cli:main"
    return str(path)


def test_export_a_file_spec_with_a_dynamic_dim_then_run_it_in_onnxruntime_on_another_batch(folder):
    done = cli(folder, "export", "spec.py:make", "-o", "net.onnx", "--dynamic", "x:0=batch")
    assert done.returncode == 0, done.stderr
    assert "PASS" in done.stdout and "net.onnx" in done.stdout and "fallback ops: none" in done.stdout
    model = onnx.load(folder / "net.onnx")
    onnx.checker.check_model(model, full_check=True)
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    x = torch.randn(11, 4)
    (got,) = ort.InferenceSession(str(folder / "net.onnx"), providers=["CPUExecutionProvider"]).run(None, {"x": x.numpy()})
    torch.testing.assert_close(torch.from_numpy(got), net(folder)(x).detach())


def test_export_with_kwargs_and_external_data(folder):
    done = cli(folder, "export", "spec.py:with_kwargs", "-o", "net.onnx", "--external-data", "--opset", "13")
    assert done.returncode == 0, done.stderr
    assert [p.name for p in folder.glob("net.onnx.*.data")]
    model = onnx.load(folder / "net.onnx")
    assert model.opset_import[0].version == 13 and [i.name for i in model.graph.input] == ["x", "scale"]
    x = torch.randn(5, 4)
    session = ort.InferenceSession(str(folder / "net.onnx"), providers=["CPUExecutionProvider"])
    (got,) = session.run(None, {"x": x.numpy(), "scale": np.array(2.0, np.float32)})
    torch.testing.assert_close(torch.from_numpy(got), net(folder)(x, torch.tensor(2.0)).detach())


@pytest.mark.parametrize("runtime", ["aten2onnx", "onnxruntime"])
def test_run_writes_each_output_as_npy(folder, runtime):
    assert cli(folder, "export", "spec.py:make", "-o", "net.onnx", "--dynamic", "x:0=batch").returncode == 0
    x = torch.randn(7, 4)
    np.save(folder / "x.npy", x.numpy())
    done = cli(folder, "run", "net.onnx", "--input", "x=x.npy", "--output-dir", "outs", "--runtime", runtime)
    assert done.returncode == 0, done.stderr
    assert "output: float32[7, 3]" in done.stdout
    got = np.load(folder / "outs" / "output.npy")
    torch.testing.assert_close(torch.from_numpy(got), net(folder)(x).detach())


def test_export_exact_then_run_gives_eagers_bits_and_info_says_exact(folder):
    assert cli(folder, "export", "spec.py:make", "-o", "net.onnx", "--exact").returncode == 0
    x = torch.randn(5, 4)
    np.save(folder / "x.npy", x.numpy())
    done = cli(folder, "run", "net.onnx", "--input", "x=x.npy", "--output-dir", "outs")
    assert done.returncode == 0, done.stderr
    with torch.no_grad():
        want = net(folder)(x)
    assert torch.equal(torch.from_numpy(np.load(folder / "outs" / "output.npy")), want)
    info = cli(folder, "info", "net.onnx")
    assert "exact mode (aten2onnx.exact): yes" in info.stdout
    verified = cli(folder, "verify", "spec.py:make", "--exact", "--json")
    assert verified.returncode == 0 and json.loads(verified.stdout)["ok"], verified.stdout


def test_verify_json_reports_the_match_and_a_wrong_symbolic_with_its_node(folder):
    done = cli(folder, "verify", "spec.py:make", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is True and {o["runtime"] for o in report["outputs"]} == {"onnxruntime", "aten2onnx"}
    wrong = cli(folder, "verify", "spec.py:wrong", "--json", "--runtime", "onnxruntime")
    assert wrong.returncode == 1, wrong.stderr
    report = json.loads(wrong.stdout)
    d = report["first_divergence"]
    assert report["ok"] is False and d["op_type"] == "Abs" and d["aten_op"] == "aten::relu.default"
    spec_lines = SPEC.splitlines()
    (line,) = [i + 1 for i, text in enumerate(spec_lines) if "torch.relu(" in text]
    assert d["source"] == f"{folder / 'spec.py'}:{line}"


def test_verify_text(folder):
    done = cli(folder, "verify", "spec.py:make")
    assert done.returncode == 0 and done.stdout.startswith("aten2onnx.verify: OK"), done.stderr


def test_info_names_the_aten_fallback_ops_and_what_the_file_holds(folder):
    done = cli(folder, "export", "spec.py:custom", "-o", "custom.onnx")
    assert done.returncode == 0, done.stderr
    assert "fallback ops: cli_test::shifted.default" in done.stdout and "onnxruntime not run" in done.stdout
    info = cli(folder, "info", "custom.onnx")
    assert info.returncode == 0, info.stderr
    model = onnx.load(folder / "custom.onnx")
    counts: dict[str, int] = {}
    for node in model.graph.node:  # op types outside the default domain are shown as domain:op_type
        key = f"{node.domain}:{node.op_type}" if node.domain else node.op_type
        counts[key] = counts.get(key, 0) + 1
    lines = info.stdout.splitlines()
    for op_type, count in counts.items():
        assert f"    {op_type}: {count}" in lines
    assert counts["org.pytorch.aten:ATen"] == 1
    assert "cli_test::shifted.default" in info.stdout and "org.pytorch.aten" in info.stdout
    assert f"IR version {model.ir_version}" in info.stdout


@pytest.mark.parametrize("query, expected", [
    ("aten::cumsum.default", ["aten::cumsum.default", "opsets 9, 11"]),
    ("cumsum", ["aten::cumsum.default"]),
    ("max_pool2d", ["aten::max_pool2d.default"]),
])
def test_ops_shows_an_ops_entries_from_the_registry(folder, query, expected):
    done = cli(folder, "ops", query)
    assert done.returncode == 0, done.stderr
    for text in expected:
        assert text in done.stdout
    from aten2onnx import coverage

    handlers = coverage.builtin_handlers()
    for line in done.stdout.splitlines():
        if line.startswith("aten::"):
            key = line.strip()
            opsets = ", ".join(map(str, handlers[key]))
            assert f"handlers at opsets {opsets};" in done.stdout


def test_ops_table_lists_every_builtin_overload(folder):
    from aten2onnx import coverage

    done = cli(folder, "ops")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    summary = next(i for i, line in enumerate(lines) if "overloads with a built-in symbolic" in line)
    listed = {line.split()[0] for line in lines[1:summary]}
    assert listed == {e.key for e in coverage.entries()}
    aside = lines[summary + 1:]
    assert len(aside) == (len(coverage.unavailable()) + 1 if coverage.unavailable() else 0)


def test_ops_reports_a_builtin_this_torch_lacks(monkeypatch, capsys):
    """A built-in kept aside because its overload is not in the running torch is listed under the table, and
    `ops QUERY` says why, instead of `import aten2onnx` failing."""
    from aten2onnx import cli as command, coverage
    from aten2onnx.registry import REGISTRY

    coverage.unavailable()  # the built-ins are registered
    monkeypatch.setattr(REGISTRY, "_unavailable", dict(REGISTRY._unavailable))
    REGISTRY.add("aten::gone_in_this_torch.default", 9, lambda g, self: self, user=False)
    assert command.main(["ops"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert any(line.startswith("  aten::gone_in_this_torch.default (opsets 9): torch ") and "has no such overload" in line
               for line in table)
    assert command.main(["ops", "gone_in_this_torch"]) == 0
    assert "unavailable: built-in symbolic at opsets 9" in capsys.readouterr().out


# (argv, exit status, what the one-line error says)
ERRORS = [
    (["export", "missing.py:make", "-o", "a.onnx"], 2, "missing.py: no such file"),
    (["export", "spec.py:nothing", "-o", "a.onnx"], 2, "has no function 'nothing'"),
    (["export", "spec.py:not_a_pair", "-o", "a.onnx"], 2, "returns (model, args)"),
    (["export", "no_such_package.mod:make", "-o", "a.onnx"], 2, "no module named"),
    (["export", "spec.py:make", "-o", "a.onnx", "--dynamic", "x0=batch"], 2, "INPUT:AXIS=NAME"),
    (["export", "spec.py:custom", "-o", "a.onnx", "--fallback", "error"], 1, "cli_test::shifted.default"),
    (["run", "nothing.onnx"], 2, "nothing.onnx: no such file"),
    (["ops", "no_op_like_this"], 1, "no operator matches"),
]


@pytest.mark.parametrize("argv, status, message", ERRORS, ids=[" ".join(e[0][:2]) + f" {i}" for i, e in enumerate(ERRORS)])
def test_errors_are_one_clear_line_and_an_exit_status(folder, argv, status, message):
    done = cli(folder, *argv)
    assert done.returncode == status
    assert message in done.stderr and "Traceback" not in done.stderr
    assert not (folder / "a.onnx").exists()


def test_output_piped_into_a_reader_that_stops_early_is_no_error(folder):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(f"{sys.executable} -m aten2onnx ops | head -n 1", shell=True, cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.stdout.startswith("overload") and done.stderr == ""


def test_a_failing_capture_writes_at_most_ten_lines_and_verbose_shows_the_details(folder):
    done = cli(folder, "export", "spec.py:branching", "-o", "a.onnx")
    assert done.returncode == 1 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) <= 10 and "DataDependentError" in lines[0] and "spec.py:" in lines[0]
    verbose = cli(folder, "export", "spec.py:branching", "-o", "a.onnx", "--verbose")
    assert verbose.returncode == 1 and "Traceback" in verbose.stderr and "details (" in verbose.stderr
    assert len(verbose.stderr.splitlines()) > len(lines)


def test_a_failing_capture_in_the_library_prints_nothing(folder):
    code = textwrap.dedent('''
        import sys, aten2onnx, spec
        model, args = spec.branching()
        try:
            aten2onnx.export(model, args)
        except aten2onnx.CaptureError as e:
            print(len(e.details), file=sys.stdout)
    ''')
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{folder}")
    done = subprocess.run([sys.executable, "-c", code], cwd=folder, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and int(done.stdout) > 0
    assert done.stderr.strip() == ""


def test_the_installed_script_is_the_same_command(folder):
    done = cli(folder, "--version", module=False)
    assert done.returncode == 0 and done.stdout.strip() == f"aten2onnx {aten2onnx.__version__}"
