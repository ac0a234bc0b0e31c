"""Progress bars: on stderr when it is a terminal (a pseudo-terminal here), never with progress=False,
always with progress=True; export's stages and save's bytes."""

from __future__ import annotations

import os
import pathlib
import pty
import re
import subprocess
import sys
import textwrap

import pytest

import aten2onnx

ROOT = pathlib.Path(aten2onnx.__file__).resolve().parent.parent

SCRIPT = textwrap.dedent('''
    import sys, torch, aten2onnx
    progress = {"None": None, "True": True, "False": False}[sys.argv[1]]
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 4))
    exported = aten2onnx.export(model, (torch.randn(2, 256),), progress=progress)
    exported.save(sys.argv[2], external_data=sys.argv[3] == "external", progress=progress)
    print("saved", file=sys.stdout)
''')


def run(tmp_path: pathlib.Path, progress: str, terminal: bool, external: bool = False) -> tuple[str, str]:
    """(stdout, stderr) of the script, its stderr a pseudo-terminal or a pipe."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    argv = [sys.executable, "-c", SCRIPT, progress, str(tmp_path / "m.onnx"), "external" if external else "inline"]
    if not terminal:
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout, done.stderr
    leader, follower = pty.openpty()
    try:
        process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=follower, text=True)
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closes with the process (EIO on Linux)
                break
            if not chunk:
                break
            chunks.append(chunk)
        out = process.stdout.read()
        assert process.wait(timeout=300) == 0, b"".join(chunks).decode(errors="replace")
    finally:
        os.close(leader)
    return out, b"".join(chunks).decode(errors="replace")


STAGES = ["aten2onnx: capture", "aten2onnx: rewrite", "aten2onnx: translation", "aten2onnx: saving"]


@pytest.mark.parametrize("external", [False, True], ids=["inline", "external data"])
def test_a_terminal_shows_each_stage_and_the_bytes_saved(tmp_path, external):
    out, err = run(tmp_path, "None", terminal=True, external=external)
    assert out == "saved\n"
    for stage in STAGES:
        assert stage in err
    nodes = re.findall(r"aten2onnx: translation: 100%\|.*?\| (\d+)/(\d+)", err)
    assert nodes and nodes[-1][0] == nodes[-1][1]
    assert re.search(r"aten2onnx: saving: 100%", err)
    assert os.path.getsize(tmp_path / "m.onnx") > 0


def test_progress_false_shows_nothing_on_a_terminal(tmp_path):
    out, err = run(tmp_path, "False", terminal=True)
    assert out == "saved\n" and "aten2onnx:" not in err


def test_no_terminal_no_bars_unless_asked(tmp_path):
    assert "aten2onnx:" not in run(tmp_path, "None", terminal=False)[1]
    err = run(tmp_path, "True", terminal=False)[1]
    for stage in STAGES:
        assert stage in err
