"""String ops in plain Python over numpy object arrays, the runtime's string tensors (torch has no
strings): StringNormalizer, StringSplit, StringConcat, RegexFullMatch."""

from __future__ import annotations

import re

import numpy as np
import torch

from aten2onnx.runtime.kernel import Kernel, kernel


def _text(value) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _strings(x: np.ndarray) -> np.ndarray:
    out = np.empty(x.shape, dtype=object)
    for idx, v in np.ndenumerate(x):
        out[idx] = _text(v)
    return out


@kernel("StringNormalizer", since=10)
class StringNormalizer(Kernel):
    def setup(self, case_change_action: str = "NONE", is_case_sensitive: int = 0, locale: str = "",
              stopwords: list[str] | None = None) -> None:
        if case_change_action not in ("NONE", "LOWER", "UPPER"):
            raise ValueError(f"case_change_action must be NONE, LOWER or UPPER, not {case_change_action!r}")
        self.action, self.case_sensitive = case_change_action, bool(is_case_sensitive)
        words = stopwords or []
        self.stopwords = set(words) if self.case_sensitive else {w.lower() for w in words}

    def run(self, x):
        values = [_text(v) for v in x.reshape(-1).tolist()]
        kept = [v for v in values if (v if self.case_sensitive else v.lower()) not in self.stopwords]
        if self.action == "LOWER":
            kept = [v.lower() for v in kept]
        elif self.action == "UPPER":
            kept = [v.upper() for v in kept]
        if not kept:
            kept = [""]
        y = np.array(kept, dtype=object)
        return (y.reshape(1, -1) if x.ndim == 2 else y,)


@kernel("StringSplit", since=20)
class StringSplit(Kernel):
    def setup(self, delimiter: str = "", maxsplit: int | None = None) -> None:
        self.delimiter = delimiter or None  # None: runs of whitespace, as str.split()
        self.maxsplit = -1 if maxsplit is None else maxsplit

    def run(self, x):
        parts = [_text(v).split(self.delimiter, self.maxsplit) for v in x.reshape(-1).tolist()]
        width = max((len(p) for p in parts), default=0)
        y = np.full((len(parts), width), "", dtype=object)
        for i, p in enumerate(parts):
            y[i, :len(p)] = p
        counts = torch.tensor([len(p) for p in parts], dtype=torch.int64).reshape(x.shape)
        return (y.reshape(*x.shape, width), counts)


@kernel("StringConcat", since=20)
class StringConcat(Kernel):
    def run(self, x, y):
        a, b = np.broadcast_arrays(_strings(x), _strings(y))
        out = np.empty(a.shape, dtype=object)
        for idx in np.ndindex(a.shape):
            out[idx] = a[idx] + b[idx]
        return (out,)


@kernel("RegexFullMatch", since=20)
class RegexFullMatch(Kernel):
    def setup(self, pattern: str) -> None:
        try:
            self.pattern = re.compile(pattern)
        except re.error as e:
            raise ValueError(f"pattern {pattern!r} is not a valid regular expression: {e}") from e

    def run(self, x):
        flat = [self.pattern.fullmatch(_text(v)) is not None for v in x.reshape(-1).tolist()]
        return (torch.tensor(flat, dtype=torch.bool).reshape(x.shape),)
