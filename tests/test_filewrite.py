"""The staged writer that saves models (aten2onnx.exporter.filewrite): the file holds each piece's bytes in
order, laid out as the tensor's contiguous copy, whatever the buffers' boundaries, with or without O_DIRECT;
the digest is the file's; a failure anywhere leaves no file."""

from __future__ import annotations

import errno
import hashlib
import os

import pytest
import torch

from aten2onnx.exporter import filewrite


def _bytes(piece: object) -> bytes:
    """A piece's bytes as numpy lays out its contiguous copy (the truth the file is held to)."""
    if not isinstance(piece, torch.Tensor):
        return bytes(piece)
    tensor = piece.contiguous()
    if tensor.dtype == torch.bfloat16:
        tensor = tensor.view(torch.int16)
    elif tensor.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        tensor = tensor.view(torch.uint8)
    return tensor.numpy().tobytes()


def _matrix(rows: int, cols: int, dtype: torch.dtype) -> torch.Tensor:
    g = torch.Generator().manual_seed(rows * 1000 + cols)
    if dtype == torch.bool:
        return torch.randint(0, 2, (rows, cols), generator=g).bool()
    if not dtype.is_floating_point and not dtype.is_complex:
        return torch.randint(-100, 100, (rows, cols), generator=g).to(dtype)
    return torch.randn(rows, cols, generator=g, dtype=torch.float32 if not dtype.is_complex else dtype).to(dtype)


# name: the pieces of one file (bytes, contiguous tensors, and views that are not contiguous)
CASES = {
    "bytes only": lambda: [b"head", bytes(range(256)) * 300, b"", b"tail"],
    "transposed float32": lambda: [b"abc", _matrix(700, 90, torch.float32).t(), _matrix(64, 33, torch.float32).t()],
    "transposed, 32-row blocks and a remainder": lambda: [_matrix(45, 1000, torch.float32).t()],
    "transposed float16 after an odd prefix": lambda: [b"x", _matrix(300, 200, torch.float16).t()],
    "transposed bfloat16": lambda: [_matrix(129, 257, torch.bfloat16).t()],
    "transposed bool": lambda: [_matrix(333, 77, torch.bool).t()],
    "transposed int8 and int64": lambda: [_matrix(100, 300, torch.int8).t(), _matrix(50, 60, torch.int64).t()],
    "transposed float8": lambda: [_matrix(90, 500, torch.float8_e4m3fn).t()],
    "transposed complex64": lambda: [_matrix(40, 70, torch.complex64).t()],
    "permuted 3-d": lambda: [torch.arange(4 * 50 * 70, dtype=torch.float32).reshape(4, 50, 70).permute(2, 0, 1)],
    "strided slices": lambda: [_matrix(200, 300, torch.float32)[::3, 1::2], _matrix(200, 300, torch.float32)[:, 5]],
    "contiguous, empty, scalar": lambda: [_matrix(300, 300, torch.float32), torch.empty(0, 5).t(), torch.tensor(3.5)],
    "one row wider than a buffer": lambda: [_matrix(3, 9000, torch.float32)[:, ::2], _matrix(9000, 2, torch.float32).t()],
}


@pytest.fixture(params=["direct", "buffered"])
def mode(request, monkeypatch):
    if request.param == "direct" and not filewrite._O_DIRECT:
        pytest.skip("no O_DIRECT here")
    if request.param == "buffered":
        monkeypatch.setattr(filewrite, "_O_DIRECT", 0)
    monkeypatch.setattr(filewrite, "BUFFER_BYTES", 16 << 10)  # many buffer boundaries in small files
    return request.param


@pytest.mark.parametrize("case", CASES)
def test_the_file_holds_each_pieces_bytes_in_order(case, mode, tmp_path):
    pieces = CASES[case]()
    want = b"".join(_bytes(p) for p in pieces)
    digest, counted = hashlib.sha256(), []
    path = filewrite.write_new(str(tmp_path), pieces, digest=digest, advance=counted.append)
    with open(path, "rb") as f:
        got = f.read()
    assert len(got) == len(want)
    assert got == want
    assert digest.hexdigest() == hashlib.sha256(want).hexdigest()
    assert sum(counted) == len(want)
    assert os.listdir(tmp_path) == [os.path.basename(path)]


def test_int4_values_are_packed_as_onnx_lays_them_out(tmp_path):
    values = torch.randint(-8, 8, (7, 9), dtype=torch.int8, generator=torch.Generator().manual_seed(0))
    path = filewrite.write_new(str(tmp_path), [values.view(torch.int4).t()])
    flat = values.t().flatten().tolist() + [0]  # (an odd count ends in half a byte)
    want = bytes((lo & 0xF) | (hi & 0xF) << 4 for lo, hi in zip(flat[0::2], flat[1::2]))
    with open(path, "rb") as f:
        assert f.read() == want


def test_a_failing_piece_leaves_no_file(tmp_path):
    def pieces():
        yield _matrix(500, 500, torch.float32).t()
        raise KeyError("a weight that could not be read")

    with pytest.raises(KeyError):
        filewrite.write_new(str(tmp_path), pieces(), digest=hashlib.sha256())
    assert os.listdir(tmp_path) == []


def test_a_failing_write_raises_in_the_caller_and_leaves_no_file(tmp_path, monkeypatch):
    monkeypatch.setattr(filewrite, "BUFFER_BYTES", 16 << 10)

    def full(fd: int, data: object, offset: int) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(filewrite.os, "pwrite", full)
    with pytest.raises(OSError, match="No space"):
        filewrite.write_new(str(tmp_path), [bytes(100 << 10), _matrix(300, 300, torch.float32).t()])
    assert os.listdir(tmp_path) == []


@pytest.mark.skipif(not filewrite._O_DIRECT, reason="no O_DIRECT here")
def test_a_write_o_direct_refuses_goes_on_buffered(tmp_path, monkeypatch):
    monkeypatch.setattr(filewrite, "BUFFER_BYTES", 16 << 10)
    pwrite, refused = os.pwrite, []

    def picky(fd: int, data: object, offset: int) -> int:
        import fcntl
        if fcntl.fcntl(fd, fcntl.F_GETFL) & filewrite._O_DIRECT:
            refused.append(offset)
            raise OSError(errno.EINVAL, "Invalid argument")
        return pwrite(fd, data, offset)

    monkeypatch.setattr(filewrite.os, "pwrite", picky)
    pieces = [b"odd", _matrix(123, 456, torch.float32).t()]
    path = filewrite.write_new(str(tmp_path), pieces)
    assert refused == [0]
    with open(path, "rb") as f:
        assert f.read() == b"".join(_bytes(p) for p in pieces)


def test_the_files_mode_follows_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        path = filewrite.write_new(str(tmp_path), [b"x"])
    finally:
        os.umask(old)
    assert os.stat(path).st_mode & 0o777 == 0o640


def test_no_tensor_given_is_changed(tmp_path):
    pieces = [_matrix(100, 200, torch.float32).t(), _matrix(64, 64, torch.bfloat16)]
    before = [p.clone() for p in pieces]
    filewrite.write_new(str(tmp_path), pieces)
    for p, b in zip(pieces, before):
        assert torch.equal(p, b)
