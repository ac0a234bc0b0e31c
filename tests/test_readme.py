"""The README's Python examples run as written; an example importing a package this environment lacks
(torchvision installs only beside torch 2.14 here) is skipped, and runs in the compat run."""

import importlib.util
import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_example_runs(code, tmp_path, monkeypatch):
    for package in re.findall(r"^(?:import|from) (\w+)", code, flags=re.M):
        if importlib.util.find_spec(package) is None:
            pytest.skip(f"the example imports {package}, which is not installed")
    monkeypatch.chdir(tmp_path)
    # a name that is no file: the block's line numbers are its own, not the README's (hypothesis reads the
    # source of a test it runs, and found another line of the README there)
    exec(compile(code, "<README.md example>", "exec"), {"__name__": "readme"})


def test_readme_has_examples():
    assert len(BLOCKS) >= 4
