"""Random generators: Bernoulli and RandomUniform/Normal(Like). Each node owns a torch.Generator,
seeded from the `seed` attribute when given; values cannot match another runtime's, only the
distribution, shape and dtype."""

from __future__ import annotations

import torch

from aten2onnx.runtime.kernel import Kernel, kernel, runtime_dtype


def uniform(shape, low: float, high: float, dtype: torch.dtype, generator: torch.Generator,
            device: torch.device) -> torch.Tensor:
    """Uniform in [low, high), drawn in the output dtype: a float64 draw rounded to float32 can reach
    high itself."""
    y = torch.rand(shape, generator=generator, dtype=dtype, device=device)
    return y if (low, high) == (0.0, 1.0) else y * (high - low) + low


class _Random(Kernel):
    def _generator(self, seed: float | None) -> None:
        self.generator = torch.Generator(device=self.ctx.device)
        if seed is None:
            self.generator.seed()
        else:
            self.generator.manual_seed(int(seed))


@kernel("Bernoulli", since=15)
class Bernoulli(_Random):
    def setup(self, dtype: int | None = None, seed: float | None = None) -> None:
        self.dtype = None if dtype is None else runtime_dtype(dtype)
        self._generator(seed)

    def run(self, x):
        y = torch.bernoulli(x.to(torch.float64), generator=self.generator)
        return (y.to(self.dtype or x.dtype),)


@kernel("RandomUniform", since=1)
class RandomUniform(_Random):
    def setup(self, shape: list[int], dtype: int = 1, high: float = 1.0, low: float = 0.0, seed: float | None = None) -> None:
        self.shape, self.dtype, self.low, self.high = shape, runtime_dtype(dtype), low, high
        self._generator(seed)

    def run(self):
        return (uniform(self.shape, self.low, self.high, self.dtype, self.generator, self.ctx.device),)


@kernel("RandomUniformLike", since=1)
class RandomUniformLike(_Random):
    def setup(self, dtype: int | None = None, high: float = 1.0, low: float = 0.0, seed: float | None = None) -> None:
        self.dtype, self.low, self.high = None if dtype is None else runtime_dtype(dtype), low, high
        self._generator(seed)

    def run(self, x):
        return (uniform(x.shape, self.low, self.high, self.dtype or x.dtype, self.generator, x.device),)


@kernel("RandomNormal", since=1)
class RandomNormal(_Random):
    def setup(self, shape: list[int], dtype: int = 1, mean: float = 0.0, scale: float = 1.0, seed: float | None = None) -> None:
        self.shape, self.dtype, self.mean, self.scale = shape, runtime_dtype(dtype), mean, scale
        self._generator(seed)

    def run(self):
        y = torch.randn(self.shape, generator=self.generator, dtype=torch.float64, device=self.ctx.device)
        return ((y * self.scale + self.mean).to(self.dtype),)


@kernel("RandomNormalLike", since=1)
class RandomNormalLike(_Random):
    def setup(self, dtype: int | None = None, mean: float = 0.0, scale: float = 1.0, seed: float | None = None) -> None:
        self.dtype, self.mean, self.scale = None if dtype is None else runtime_dtype(dtype), mean, scale
        self._generator(seed)

    def run(self, x):
        y = torch.randn(x.shape, generator=self.generator, dtype=torch.float64, device=x.device)
        return ((y * self.scale + self.mean).to(self.dtype or x.dtype),)
