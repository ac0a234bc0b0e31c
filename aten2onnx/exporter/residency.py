"""Resident memory a save gives back as it writes weights.

A model loaded from a file by mapping it (transformers maps safetensors; `torch.load(mmap=True)`) holds its
weights in pages that become resident when first read, and stay resident. Saving reads every weight once, so
without care the process ends up holding the whole model on top of what it held before. Once a weight mapped
from a file is written, its pages are handed back to the kernel (Linux `madvise(MADV_PAGEOUT)`), as memory
pressure would do: the values do not change, and the next read maps them again from the file. A weight in
anonymous memory (a model built or loaded into RAM) is left alone: giving it back would mean swapping it out.
Elsewhere than Linux (or on a kernel without MADV_PAGEOUT, before 5.4) nothing is given back.
"""

from __future__ import annotations

import bisect
import ctypes
import mmap
import sys

import torch

MADV_PAGEOUT = 21  # linux/mman.h
_PAGE = mmap.PAGESIZE
_madvise = None
_unsupported = sys.platform != "linux"


def _file_mappings() -> list[tuple[int, int]]:
    """The address ranges this process maps from regular files, sorted, adjacent ones merged."""
    try:
        with open("/proc/self/maps") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    ranges: list[tuple[int, int]] = []
    for line in lines:
        fields = line.split(maxsplit=5)
        if len(fields) < 6 or fields[4] == "0" or not fields[5].startswith("/"):
            continue  # anonymous memory, the heap, the stack, [vdso]...
        start, end = (int(x, 16) for x in fields[0].split("-"))
        if ranges and ranges[-1][1] == start:
            ranges[-1] = (ranges[-1][0], end)
        else:
            ranges.append((start, end))
    return ranges


class Releaser:
    """Gives back the pages of tensors mapped from files; the mappings are read once, when made."""

    def __init__(self) -> None:
        ranges = [] if _unsupported else _file_mappings()
        self._starts = [start for start, _ in ranges]
        self._ends = [end for _, end in ranges]

    def release(self, tensor: torch.Tensor) -> None:
        """Hand back the pages of tensor's storage if a file maps all of it; otherwise nothing."""
        global _madvise, _unsupported
        if _unsupported or not self._starts or tensor.device.type != "cpu" or tensor.is_sparse:
            return
        try:
            storage = tensor.untyped_storage()
        except (RuntimeError, NotImplementedError):
            return
        begin, size = storage.data_ptr(), storage.nbytes()
        at = bisect.bisect_right(self._starts, begin) - 1
        if size == 0 or at < 0 or begin + size > self._ends[at]:
            return
        low = begin - begin % _PAGE
        high = min(-(-(begin + size) // _PAGE) * _PAGE, self._ends[at])
        if _madvise is None:
            libc = ctypes.CDLL(None, use_errno=True)
            _madvise = libc.madvise
            _madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
            _madvise.restype = ctypes.c_int
        if _madvise(low, high - low, MADV_PAGEOUT) != 0:
            _unsupported = True  # EINVAL: a kernel before 5.4; the save goes on as before
