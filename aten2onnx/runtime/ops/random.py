"""Random generators: Bernoulli and RandomUniform/Normal(Like). Each node owns a torch.Generator,
seeded from the `seed` attribute when given; values cannot match another runtime's, only the
distribution, shape and dtype."""

from __future__ import annotations

import torch

from aten2onnx.runtime.kernel import Kernel, runtime_dtype


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


class Bernoulli(_Random):
    op_type, since_version = "Bernoulli", 15
    covers = (22,)

    def setup(self, dtype: int | None = None, seed: float | None = None) -> None:
        self.dtype = None if dtype is None else runtime_dtype(dtype)
        self._generator(seed)

    def run(self, x):
        y = torch.bernoulli(x.to(torch.float64), generator=self.generator)
        return (y.to(self.dtype or x.dtype),)


class RandomUniform(_Random):
    op_type, since_version = "RandomUniform", 1
    covers = (22,)

    def setup(self, shape: list[int], dtype: int = 1, high: float = 1.0, low: float = 0.0, seed: float | None = None) -> None:
        self.shape, self.dtype, self.low, self.high = shape, runtime_dtype(dtype), low, high
        self._generator(seed)

    def run(self):
        return (uniform(self.shape, self.low, self.high, self.dtype, self.generator, self.ctx.device),)


class RandomUniformLike(_Random):
    op_type, since_version = "RandomUniformLike", 1
    covers = (22,)

    def setup(self, dtype: int | None = None, high: float = 1.0, low: float = 0.0, seed: float | None = None) -> None:
        self.dtype, self.low, self.high = None if dtype is None else runtime_dtype(dtype), low, high
        self._generator(seed)

    def run(self, x):
        return (uniform(x.shape, self.low, self.high, self.dtype or x.dtype, self.generator, x.device),)


class RandomNormal(_Random):
    op_type, since_version = "RandomNormal", 1
    covers = (22,)

    def setup(self, shape: list[int], dtype: int = 1, mean: float = 0.0, scale: float = 1.0, seed: float | None = None) -> None:
        self.shape, self.dtype, self.mean, self.scale = shape, runtime_dtype(dtype), mean, scale
        self._generator(seed)

    def run(self):
        y = torch.randn(self.shape, generator=self.generator, dtype=torch.float64, device=self.ctx.device)
        return ((y * self.scale + self.mean).to(self.dtype),)


class RandomNormalLike(_Random):
    op_type, since_version = "RandomNormalLike", 1
    covers = (22,)

    def setup(self, dtype: int | None = None, mean: float = 0.0, scale: float = 1.0, seed: float | None = None) -> None:
        self.dtype, self.mean, self.scale = None if dtype is None else runtime_dtype(dtype), mean, scale
        self._generator(seed)

    def run(self, x):
        y = torch.randn(x.shape, generator=self.generator, dtype=torch.float64, device=x.device)
        return ((y * self.scale + self.mean).to(self.dtype or x.dtype),)


KERNELS = (Bernoulli, RandomUniform, RandomUniformLike, RandomNormal, RandomNormalLike)
