"""Progress bars on stderr for long exports and saves (tqdm): capture, rewrite, translation, saving.

progress=None shows them when stderr is a terminal, True always, False never.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, Callable, Iterator

from tqdm import tqdm


class Progress:
    """The stages of one export or save, each a bar that closes when its stage ends."""

    def __init__(self, progress: bool | None) -> None:
        # tqdm's own reading of disable=None is "on a terminal only"
        self.disable = None if progress is None else not progress

    @contextlib.contextmanager
    def stage(self, name: str, total: int | None = None, **options: Any) -> Iterator[tqdm]:
        """A bar for one stage; without a total it shows the stage's name and time. The bar writes to
        the stderr of the moment it starts, so torch output captured inside the stage does not take it."""
        if total is None:  # a stage of unknown length: its name and time
            options.setdefault("bar_format", "{desc}: {elapsed}")
        columns, rows = _size(sys.stderr)
        bar = tqdm(total=total, desc=f"aten2onnx: {name}", disable=self.disable, file=sys.stderr, leave=True,
                   ncols=columns, nrows=rows, **options)
        try:
            yield bar
        finally:
            bar.close()

    @contextlib.contextmanager
    def saving(self, total: int) -> Iterator[Callable[[int], Any]]:
        """A bar of MB written of total; yields the function that advances it by a number of bytes."""
        with self.stage("saving", total=total, unit="B", unit_scale=True, unit_divisor=1024,
                        bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}B/{total_fmt}B [{elapsed}, {rate_fmt}]") as bar:
            yield bar.update


def _size(file: object) -> tuple[int | None, int | None]:
    """The terminal's columns and rows; 80 x 24 for a terminal that reports 0 x 0 (a pseudo-terminal nobody
    sized, where tqdm would hide its bars); None off a terminal (tqdm's defaults)."""
    try:
        size = os.get_terminal_size(file.fileno())
    except (AttributeError, OSError, ValueError):
        return None, None
    return size.columns or 80, size.lines or 24
