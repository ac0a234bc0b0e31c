"""Complex tensors end to end: LLaMA's rotary embedding and complex weights, and the complex OpInfos
exporting natively (the op table is tests/optables/complex.py)."""

from __future__ import annotations

import pytest
import torch
from optable import assert_opinfo_native, run_both
from optables.complex import C64

# -- real models ------------------------------------------------------------------------------------------


def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0) -> torch.Tensor:
    """Meta LLaMA's rotary frequencies, as a complex tensor."""
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    freqs = torch.outer(torch.arange(end), freqs).float()
    return torch.polar(torch.ones_like(freqs), freqs)


def apply_rotary_emb(xq, xk, freqs_cis):
    """Meta LLaMA's apply_rotary_emb, as written there."""
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    shape = [d if i == 1 or i == xq_.ndim - 1 else 1 for i, d in enumerate(xq_.shape)]
    freqs_cis = freqs_cis.view(*shape)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


class RotaryAttention(torch.nn.Module):
    def __init__(self, dim: int = 32, heads: int = 4, max_seq: int = 16) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.wq = torch.nn.Linear(dim, dim, bias=False)
        self.wk = torch.nn.Linear(dim, dim, bias=False)
        self.register_buffer("freqs_cis", precompute_freqs_cis(self.head_dim, max_seq * 2))

    def forward(self, x, start_pos: int = 2):
        b, s, _ = x.shape
        xq = self.wq(x).view(b, s, self.heads, self.head_dim)
        xk = self.wk(x).view(b, s, self.heads, self.head_dim)
        q, k = apply_rotary_emb(xq, xk, self.freqs_cis[start_pos: start_pos + s])
        return q.transpose(1, 2) @ k.transpose(1, 2).transpose(2, 3)


class ComplexWeights(torch.nn.Module):
    """A complex parameter and buffer, used with real inputs."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4, 4, dtype=C64))
        self.register_buffer("b", torch.randn(4, dtype=C64))

    def forward(self, x):
        y = torch.complex(x, x.flip(-1)) @ self.w + self.b
        return y.abs(), torch.view_as_real(y * 1j).sum(-1), (y.conj() * y).real, y


@pytest.mark.parametrize("opset", [9, 13, 17, 18])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_llama_rotary_embedding(opset, dtype):
    torch.manual_seed(0)
    model = RotaryAttention().eval().to(dtype)
    run_both(model, (torch.randn(2, 6, 32, dtype=dtype),), opset)


@pytest.mark.parametrize("opset", [9, 13, 17, 18])
def test_complex_parameter_and_buffer(opset):
    torch.manual_seed(0)
    run_both(ComplexWeights().eval(), (torch.randn(3, 4),), opset)


# -- OpInfos --------------------------------------------------------------------------------------------------

NATIVE_COMPLEX = [
    "add", "sub", "mul", "div.no_rounding_mode", "true_divide", "rsub", "neg", "reciprocal", "abs", "angle", "sgn", "exp",
    "exp2", "log", "log2", "log10", "sqrt", "rsqrt", "pow", "float_power", "square", "sin", "cos", "tan", "sinh", "cosh",
    "tanh", "sigmoid", "asin", "acos", "atan", "asinh", "acosh", "atanh", "sinc", "conj", "conj_physical",
    "resolve_conj", "resolve_neg", "real", "imag", "view_as_real", "isnan", "isinf", "isfinite", "isreal", "eq", "ne",
    "isclose", "nan_to_num", "where", "masked_fill", "sum", "mean", "prod", "var", "std", "var_mean",
    "linalg.vector_norm", "matmul", "bmm", "mv", "outer", "einsum", "cat", "stack", "permute", "transpose", "reshape",
    "view", "squeeze", "unsqueeze", "flip", "roll", "index_select", "tril", "triu", "diagonal", "diag_embed",
    "constant_pad_nd", "full_like", "zeros_like", "new_full", "fill", "to", "cfloat", "clone", "addcmul", "lerp",
]
NATIVE_REAL_INPUT = ["cfloat", "cdouble", "chalf", "complex", "polar", "view_as_complex", "angle"]


@pytest.mark.parametrize("name", NATIVE_COMPLEX)
def test_opinfo_native_complex(name):
    opsets = [12, 18] if name == "einsum" else [9, 18]
    assert_opinfo_native(name, opsets, dtype="complex64")


@pytest.mark.parametrize("name", NATIVE_REAL_INPUT)
def test_opinfo_native_real_input(name):
    assert_opinfo_native(name, [9, 18])
