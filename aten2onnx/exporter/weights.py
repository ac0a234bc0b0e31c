"""Weights bound to a model exported without them: from a state dict, or read from safetensors files one
tensor at a time, the process holding one weight at once. On Linux a tensor is read through a mapping of its
file (no copy: its pages are the page cache's), and the pages of the one read before are handed back when
the next is read (madvise MADV_DONTNEED: they leave this process's resident memory and stay in the page
cache; should the earlier tensor be read again, they are mapped again from the file). Elsewhere each
tensor's bytes are read into memory of its own, freed with it."""

from __future__ import annotations

import json
import mmap
import os
import struct
import sys
from typing import Any, Callable, Mapping

import torch

from aten2onnx.errors import ArgumentError

Loader = Callable[[str, torch.Tensor], torch.Tensor]

# safetensors' dtype names
_DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
           "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
           "BOOL": torch.bool, "F8_E4M3": torch.float8_e4m3fn, "F8_E5M2": torch.float8_e5m2,
           "U16": torch.uint16, "U32": torch.uint32, "U64": torch.uint64}


class Safetensors:
    """The tensors of safetensors files by name: where each lies, read on demand."""

    def __init__(self, paths: list[str]) -> None:
        self.entries: dict[str, tuple[str, torch.dtype, list[int], int, int]] = {}
        for path in paths:
            with open(path, "rb") as f:
                head = f.read(8)
                if len(head) != 8:
                    raise ArgumentError(f"{path} is not a safetensors file (it is shorter than its header)")
                (length,) = struct.unpack("<Q", head)
                try:
                    header = json.loads(f.read(length))
                except ValueError as e:
                    raise ArgumentError(f"{path} is not a safetensors file: its header is not JSON ({e})") from e
            for key, entry in header.items():
                if key == "__metadata__":
                    continue
                dtype = _DTYPES.get(entry.get("dtype"))
                if dtype is None:
                    raise ArgumentError(f"{path}: tensor {key!r} has dtype {entry.get('dtype')!r}, which torch does "
                                        f"not read; known: {sorted(_DTYPES)}")
                start, end = entry["data_offsets"]
                self.entries[key] = (path, dtype, list(entry["shape"]), 8 + length + start, end - start)
        self._maps: dict[str, mmap.mmap] = {}
        self._held: mmap.mmap | None = None  # the mapping of the last tensor read through one

    @classmethod
    def at(cls, location: str | os.PathLike) -> Safetensors:
        """The safetensors file, or every *.safetensors file of a folder (a sharded checkpoint)."""
        location = os.fspath(location)
        if os.path.isdir(location):
            paths = sorted(os.path.join(location, f) for f in os.listdir(location) if f.endswith(".safetensors"))
            if not paths:
                raise ArgumentError(f"{location!r} holds no .safetensors file")
            return cls(paths)
        if not os.path.isfile(location):
            raise ArgumentError(f"{location!r} is neither a safetensors file nor a folder of them")
        return cls([location])

    def __contains__(self, key: str) -> bool:
        return key in self.entries

    def shape(self, key: str) -> list[int]:
        return self.entries[key][2]

    def read(self, key: str) -> torch.Tensor:
        path, dtype, shape, offset, size = self.entries[key]
        if size == 0:
            return torch.empty(shape, dtype=dtype)
        if offset + size > os.path.getsize(path):
            raise ArgumentError(f"{path}: tensor {key!r} lies beyond the end of the file")
        mapped = self._map(path) if MAPPED and offset % dtype.itemsize == 0 else None
        if mapped is None:
            buffer = bytearray(size)
            with open(path, "rb") as f:
                f.seek(offset)
                if f.readinto(buffer) != size:
                    raise ArgumentError(f"{path}: tensor {key!r} lies beyond the end of the file")
            return torch.frombuffer(buffer, dtype=dtype).reshape(shape)
        self.give_back()
        low = offset - offset % mmap.PAGESIZE
        mapped.madvise(mmap.MADV_WILLNEED, low, offset + size - low)  # (read ahead in large reads)
        self._held = mapped
        return torch.frombuffer(mapped, dtype=dtype, count=size // dtype.itemsize, offset=offset).reshape(shape)

    def give_back(self) -> None:
        """Hand back the pages of the last tensor read through a mapping (they stay in the page cache)."""
        if self._held is not None:
            # the whole file's: reading a page maps its neighbours too (the kernel's fault-around, or a
            # large folio of the page cache), beyond the tensor's pages
            self._held.madvise(mmap.MADV_DONTNEED)
            self._held = None

    def _map(self, path: str) -> mmap.mmap | None:
        if path not in self._maps:
            try:
                with open(path, "rb") as f:
                    # copy-on-write: the file is never written, and the tensors are writable as any
                    self._maps[path] = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
            except (OSError, ValueError):
                return None
        return self._maps[path]


# Whether tensors are read through mappings (where madvise hands their pages back at once).
MAPPED = sys.platform == "linux" and hasattr(mmap, "MADV_DONTNEED")


def loader(weights: Any, aliases: Mapping[str, list[str]] | None = None
           ) -> tuple[Loader, Callable[[str], bool], Callable[[], None]]:
    """(load(key, like), has(key), done()) for a state dict (a mapping of names to tensors), a safetensors file
    or a folder of them; done() hands back what the last load holds (the pages of a mapped tensor). aliases:
    other names a weight may be stored under (a tied weight saved once)."""
    done: Callable[[], None] = _nothing
    if isinstance(weights, (str, os.PathLike)):
        files = Safetensors.at(weights)
        has, read, done = files.__contains__, files.read, files.give_back
    elif isinstance(weights, Mapping):
        if not all(isinstance(v, torch.Tensor) for v in weights.values()):
            raise ArgumentError("weights: a state dict maps names to tensors")
        has, read = weights.__contains__, lambda key: weights[key].detach()
    else:
        raise ArgumentError(f"weights are a state dict (model.state_dict()), a .safetensors file or a folder of "
                            f"them, not {type(weights).__name__}")

    def stored(key: str) -> str | None:
        return next((name for name in [key, *(aliases or {}).get(key, [])] if has(name)), None)

    def load(key: str, like: torch.Tensor) -> torch.Tensor:
        name = stored(key)
        if name is None:
            raise ArgumentError(f"the weights given hold no {key!r}")
        return read(name)

    return load, lambda key: stored(key) is not None, done


def _nothing() -> None:
    return None
